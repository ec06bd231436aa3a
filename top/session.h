// `perf persistent top`'s session: the persistent events to show (named
// with -e, or every running one for the overview), attached read-only
// through record/'s engine exactly as record attaches (the events are never
// paused or changed; other readers see no difference), drained every
// kDrainIntervalMs into report/'s TopModel, and shown every -d seconds on a
// terminal screen (top/screen.h), as text blocks (--stdio) or as one JSON
// object per line (--json).
//
//   poll(signals, keyboard, output) --drain--> TopModel --refresh--> screen
//                                                                   | text
//                                                                   | JSON
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "pmu/model.h"

namespace pp::top {

enum class Output { kScreen, kStdio, kJson };

struct TopRequest {
  std::vector<std::string> events;  // -e; empty: the overview of every event
  std::string cpus;                 // -C
  std::string delay = "2";          // -d: seconds, 0.1 to 3600 ("0.5")
  Output output = Output::kScreen;
  std::string sort;    // -s
  std::string filter;  // --filter
  size_t rows = 0;     // -n; 0: as many as the screen holds (10 in text and JSON)
  bool per_cpu = false;
  pmu::Roots roots;
  persistent::BackendOptions backend;
};

// How often the buffers are drained between refreshes.
inline constexpr int kDrainIntervalMs = 100;

// Runs until `q`, SIGINT, SIGTERM or SIGHUP, or until the output's reader
// goes away (a closed pipe). Errors before anything is shown (a bad event,
// sort key or filter, no terminal for the screen) are returned; so is one
// that stops a running session.
Status run_top(const TopRequest& request, std::ostream& out);

}  // namespace pp::top

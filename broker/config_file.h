// The broker's config file (default /etc/perf-persistent.conf): persistent
// events to create when the broker starts, as the kernel creates mce_record
// at boot. One section per event, named by the event's name:
//
//   # RAS: never miss a machine-check record.
//   [mce_record]
//   event = mce:mce_record
//   pages = 64            # optional: data pages per CPU, a power of two
//   cpus = 0-3            # optional: default every online CPU
//   filter = bank == 4    # optional: a tracepoint filter
//   backend = ftrace      # optional: perf (the default) or ftrace, whose
//                         # instance holds the records (tracepoints only)
//   optional = yes        # optional: yes when this host may lack the event
//                         # (a VM without mce): then it is "unavailable",
//                         # no failure (default no)
//
// The file is INI as base/ini.h reads it: '#' starts a comment (a whole
// line, or after a space), keys and values are trimmed. The broker makes the events at start and at
// every reload (persistent/broker.h says how a reload applies the difference).
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"

namespace pp::broker {

inline constexpr const char* kDefaultConfigFile = "/etc/perf-persistent.conf";

// One section.
struct ConfigEvent {
  persistent::CreateRequest request;  // its name is the section's
  bool optional = false;
  int line = 0;  // of the section header
};

// Pure: an error of kind kConfig (EINVAL) names `path`, the line and what
// is wrong.
Result<std::vector<ConfigEvent>> parse_config(std::string_view text, std::string_view path);

// The config file's text (at most 1 MiB): the error of the read as it is
// (ENOENT when there is none), for the caller to say whether that matters.
// The broker reads it for its events, the daemon for [previous boot].
Result<std::string> read_config_file(const std::string& path);

}  // namespace pp::broker

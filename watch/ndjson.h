// watch's --ndjson: every record as one line of JSON on an output stream
// (standard output), for jq and log shippers; the object is record_json()'s
// (Documentation/perf-persistent-watch.txt, NDJSON).
//
//   NdjsonSink sink(std::cout);
//   {"origin":"live","event":"mce_record","tracepoint":"mce:mce_record",...,"key":"..."}
//   {"lost":{"event":"mce_record","cpu":1,"records":12,"wall_time":"2026-12-04T03:00:00.000000000Z"}}
//
// Lines are flushed at every tick (at least every second). When the output
// fails (its reader closed the pipe: `watch --ndjson | head`; a full disk),
// record, lost and tick return an ErrorKind::kOutput error and the watcher
// stops. The watcher must ignore SIGPIPE for the error to be seen.
#pragma once

#include <cstdint>
#include <ostream>

#include "base/result.h"
#include "watch/record.h"

namespace pp::watch {

class NdjsonSink final : public Sink {
 public:
  explicit NdjsonSink(std::ostream& out) : out_(out) {}

  Status record(const WatchRecord& record, const nlohmann::ordered_json& json) override;
  // The object's text alone: no tree is made.
  Status take(const WatchRecord& record, const RecordJson& json) override;
  Status lost(const LostNotice& notice) override;
  Status tick(uint64_t now_ms, bool final) override;

 private:
  Status check();

  std::ostream& out_;
};

// A lost notice's line, without the newline.
std::string lost_json_line(const LostNotice& notice);

}  // namespace pp::watch

#include "record/summary_json.h"

#include <signal.h>
#include <string.h>

namespace pp::record {

json summary_json(const RecordResult& r) {
  uint64_t not_completed = 0;
  for (const RecordResult::LeftOut& left : r.left_out)
    not_completed += left.records;
  json j = json::object();
  j["output"] = r.output;
  j["files"] = r.files;
  j["removed"] = r.removed;
  j["samples"] = r.samples;
  j["records"] = r.records;
  j["bytes"] = r.bytes;
  j["lost"] = {{"total", r.kernel_lost + r.kernel_lost_samples + r.overwritten},
               {"overwritten", r.overwritten},
               {"overwritten_bytes", r.overwritten_bytes},
               {"kernel_lost", r.kernel_lost},
               {"kernel_lost_samples", r.kernel_lost_samples},
               {"not_written", r.dropped},
               {"not_completed", not_completed}};
  j["buffers"] = json::array();
  for (const BufferResult& b : r.per_buffer)
    j["buffers"].push_back({{"event", b.event},
                            {"cpu", b.cpu},
                            {"id", b.id},
                            {"records", b.records},
                            {"samples", b.samples},
                            {"bytes", b.bytes},
                            {"overwritten", b.overwritten},
                            {"kernel_lost", b.kernel_lost},
                            {"kernel_lost_samples", b.kernel_lost_samples}});
  j["exit_reason"] = exit_reason(r);
  if (r.signal) {
    const char* abbrev = sigabbrev_np(r.signal);
    j["signal"] = abbrev ? "SIG" + std::string(abbrev) : std::to_string(r.signal);
  } else {
    j["signal"] = nullptr;
  }
  j["command_status"] = r.command_status ? json(*r.command_status) : json(nullptr);
  std::optional<Error> error = final_error(r);
  j["error"] = error ? error_object(*error) : json(nullptr);
  j["exit_status"] = exit_status(r);
  return j;
}

}  // namespace pp::record

#include "watch/ndjson.h"

#include <cerrno>

#include "base/json.h"
#include "base/wall_time.h"

namespace pp::watch {

std::string lost_json_line(const LostNotice& n) {
  std::string line;
  JsonWriter w(line);
  w.begin_object();
  w.key("lost");
  w.begin_object();
  w.key("event");
  w.string(n.event);
  w.key("cpu");
  w.signed_number(n.cpu);
  w.key("records");
  w.number(n.records);
  if (n.wall_ns) {
    w.key("wall_time");
    w.string(format_wall_time(n.wall_ns));
  }
  w.end_object();
  w.end_object();
  return line;
}

Status NdjsonSink::check() {
  if (out_.good())
    return ok_status();
  int err = errno ? errno : EIO;
  return Error(ErrorKind::kOutput, err,
               "writing --ndjson output failed (" + std::string(errno_name(err)) +
                   "): its reader went away or the disk is full; watch stops");
}

Status NdjsonSink::record(const WatchRecord& /*record*/, const nlohmann::ordered_json& json) {
  errno = 0;
  out_ << dump_json(json) << '\n';
  return check();
}

Status NdjsonSink::take(const WatchRecord& /*record*/, const RecordJson& json) {
  errno = 0;
  out_ << json.text() << '\n';
  return check();
}

Status NdjsonSink::lost(const LostNotice& notice) {
  errno = 0;
  out_ << lost_json_line(notice) << '\n';
  return check();
}

Status NdjsonSink::tick(uint64_t /*now_ms*/, bool /*final*/) {
  errno = 0;
  out_.flush();
  return check();
}

}  // namespace pp::watch

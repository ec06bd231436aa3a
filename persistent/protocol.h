// The broker protocol, version 3 (Documentation/protocol.txt is the full
// description). A client and the broker exchange frames on a Unix stream
// socket, strictly one request then one reply:
//
//   offset  size  field
//   0       4     magic "PPBR"
//   4       2     protocol version, little-endian (3)
//   6       2     kind, little-endian: 1 request, 2 reply
//   8       4     payload length, little-endian (requests at most 64 KiB,
//                 replies at most 16 MiB)
//   12      n     payload: one JSON object, UTF-8
//
// Requests:  {"op": "ping"}
//            {"op": "list", "verbose": false, "after": 0}
//            {"op": "create", "event": "sched:sched_switch", "name": "ctxsw",
//             "pages": 128, "cpus": "0-3", "filter": ""}
//            {"op": "kill", "ref": "ctxsw"}
//            {"op": "open", "id": 7, "cpu": 0, "keep": false, "hangup": true,
//             "hangup_perf": true}
//                 ("keep": true: the keeper's, which holds buffers mapped
//                 across broker restarts and is no reader; "hangup": true:
//                 with an ftrace-backend event's shared ring, pass the
//                 reader end of a pipe that hangs up when the ring is
//                 written no more, and say "hangup": true in the reply;
//                 "hangup_perf": true: the same pipe with a perf event's fd,
//                 hanging up when the event is killed or the broker exits)
//            {"op": "reload"}
//            {"op": "handover", "after": 0, "token": "<hex>"}
//                 (daemon --replace, page by page; the token is the run
//                 directory's handover.token)
//            {"op": "handover-done"}
//            {"op": "handover-listener"}   (once the new broker holds the lock)
//            Any request may carry "deadline_ms": the wall-clock time (ms since
//            the epoch) after which the client no longer waits; a broker that
//            gets to it in that ms or later answers ETIMEDOUT, doing nothing.
//            A list reply holds the events with ids above "after", up to
//            kListPageBytes, and "more": true when there are others: the
//            client asks again with "after" the last id it got.
// Replies:   {"ok": true, ...}   (an open reply carries the event's fd for
//                                 that CPU as SCM_RIGHTS with its first byte)
//            {"ok": false, "error": {"kind": "name-taken", "exit_status": 3,
//                                    "errno": "EEXIST", "message": "..."}}
//            (the one error shape, base/json.h; the client reads "kind",
//            "errno" and "message" and ends with its kind's exit status)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/json.h"
#include "base/result.h"
#include "persistent/event.h"

namespace pp::persistent {

inline constexpr char kFrameMagic[4] = {'P', 'P', 'B', 'R'};
inline constexpr uint16_t kProtocolVersion = 3;
inline constexpr size_t kFrameHeaderSize = 12;
inline constexpr uint32_t kMaxRequestPayload = 64 * 1024;
inline constexpr uint32_t kMaxReplyPayload = 16 * 1024 * 1024;

enum class FrameKind : uint16_t { kRequest = 1, kReply = 2 };

// A whole frame: header and payload.
std::string encode_frame(FrameKind kind, std::string_view payload);

// Cuts frames out of a byte stream as it arrives. An error means the stream
// can no longer be trusted (bad magic, a version this side does not speak, a
// frame of the wrong kind, an oversized length): reply if possible, then close.
//   EPROTO           bad magic, or a frame of the wrong kind (out of order)
//   EPROTONOSUPPORT  another protocol version; the message names both
//   EMSGSIZE         a payload longer than the limit
class FrameReader {
 public:
  FrameReader(FrameKind expected, uint32_t max_payload)
      : expected_(expected), max_payload_(max_payload) {}

  void append(std::span<const uint8_t> bytes);
  // The next complete frame's payload, or nullopt when more bytes are needed.
  Result<std::optional<std::string>> next();
  // Bytes received and not yet returned as a frame.
  size_t pending() const { return buffer_.size() - offset_; }
  // Offsets in the stream since the reader was made: the bytes appended so
  // far, and the bytes returned as frames (headers included). The frame
  // next() returns spans [consumed() before, consumed() after).
  uint64_t received() const { return consumed_ + pending(); }
  uint64_t consumed() const { return consumed_; }

 private:
  FrameKind expected_;
  uint32_t max_payload_;
  std::string buffer_;
  size_t offset_ = 0;
  uint64_t consumed_ = 0;
};

enum class Op {
  kPing,
  kList,
  kCreate,
  kKill,
  kOpen,
  kReload,
  kHandover,
  kHandoverDone,
  kHandoverListener
};

std::string_view op_name(Op op);

struct Request {
  Op op = Op::kPing;
  bool verbose = false;      // list
  uint64_t after = 0;        // list: only the events with larger ids; handover: fds sent so far
  int64_t deadline_ms = 0;   // any: 0 for none (see above)
  CreateRequest create;      // create
  std::string reference;     // kill: an id or a name (persistent/names.h)
  uint64_t id = 0;           // open
  int cpu = 0;               // open
  bool keep = false;         // open: the keeper's (no reader)
  bool hangup = false;       // open: a shared ring comes with a hangup pipe
  bool hangup_perf = false;  // open: a perf event's fd too (a client before it takes one fd)
  std::string token;         // handover: the run directory's handover.token
};

// The JSON payload of a request.
std::string encode_request(const Request& request);
// Validates every field: an unknown op, a missing or mistyped field, a CPU
// out of range, a repeated key, a create over the bounds of
// persistent/limits.h: a usage error (EINVAL) naming the field.
Result<Request> decode_request(std::string_view payload);

// The JSON payloads of replies: `body` gets "ok": true added.
std::string encode_ok_reply(json body);
std::string encode_error_reply(const Error& error);
// The body of an ok reply, or the Error an error reply carries (kind, code
// and message as the broker sent them). EPROTO when the payload is not a reply.
Result<json> decode_reply(std::string_view payload);

}  // namespace pp::persistent

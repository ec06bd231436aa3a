// One request on a raw connection to a broker, as a careless or hostile
// client would speak the protocol (persistent/protocol.h), for the broker's
// tests (header only; no library code uses it). BrokerConnection::call()
// takes a Request it encodes itself; tests need to send any payload.
//
//   auto reply = raw_call(socket, R"({"op":"ping"})");  // the reply's body
#pragma once

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/result.h"
#include "persistent/protocol.h"
#include "sys/fd.h"
#include "sys/unix_socket.h"

namespace pp::persistent::testing {

// Sends `payload` as a request frame on `socket` and reads until the reply
// frame is whole: the reply's body, or the error it carries (ECONNRESET when
// the broker closed the connection first). Descriptors that come with the
// reply are appended to `fds` (closed when it is null). Blocks: the broker
// runs in another process or thread.
inline Result<json> raw_call(sys::UnixSocket& socket, const std::string& payload,
                             std::vector<sys::Fd>* fds = nullptr) {
  std::string frame = encode_frame(FrameKind::kRequest, payload);
  PP_RETURN_IF_ERROR(socket.send(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size())));
  FrameReader reader(FrameKind::kReply, kMaxReplyPayload);
  for (;;) {
    PP_ASSIGN_OR_RETURN(auto next, reader.next());
    if (next)
      return decode_reply(*next);
    uint8_t buf[4096];
    PP_ASSIGN_OR_RETURN(size_t n, socket.receive(buf, fds));
    if (n == 0)
      return Error(ECONNRESET, "the broker closed the connection");
    reader.append(std::span<const uint8_t>(buf, n));
  }
}

}  // namespace pp::persistent::testing

// libFuzzer target for everything the broker and its clients decode from
// bytes they do not control: the frame stream, request and reply payloads,
// event JSON, the state file and the config file. None may crash, hang or
// read out of bounds, whatever the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "persistent/config_file.h"
#include "persistent/event_json.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"

using namespace pp::persistent;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  // The stream, cut into chunks whose size the first byte chooses, as a
  // broker (requests) and as a client (replies) read it.
  size_t chunk = size ? (data[0] % 17) + 1 : 1;
  for (FrameKind kind : {FrameKind::kRequest, FrameKind::kReply}) {
    FrameReader reader(kind, kind == FrameKind::kRequest ? kMaxRequestPayload : 4096);
    for (size_t i = 0; i < size; i += chunk) {
      reader.append(std::span<const uint8_t>(data + i, std::min(chunk, size - i)));
      bool stop = false;
      while (!stop) {
        auto frame = reader.next();
        if (!frame.ok()) {
          stop = true;
          i = size;
          break;
        }
        if (!frame->has_value())
          break;
        auto request = decode_request(**frame);
        if (request.ok())
          (void)encode_request(*request);
        (void)decode_reply(**frame);
      }
    }
  }

  // Payloads on their own.
  auto request = decode_request(text);
  if (request.ok())
    (void)decode_request(encode_request(*request));
  auto reply = decode_reply(text);
  if (reply.ok() && reply->is_object()) {
    auto it = reply->find("event");
    if (it != reply->end())
      (void)event_from_json(*it, "fuzz");
    it = reply->find("events");
    if (it != reply->end() && it->is_array())
      for (const pp::json& e : *it)
        (void)event_from_json(e, "fuzz");
  }
  auto state = decode_state(text, "fuzz");
  if (state.ok())
    (void)decode_state(encode_state(*state), "fuzz");
  (void)parse_config(text, "fuzz");
  return 0;
}

// libFuzzer target for everything the broker and its clients decode from
// bytes they do not control: the frame stream, request and reply payloads,
// event JSON, the state file and the config file. None may crash, hang or
// read out of bounds, whatever the input. Beyond the raw bytes it builds
// what the hardening cases need: the input's first object with a key
// repeated (which must be refused), and a list of many large events cut into
// pages the way the broker pages a list reply, and the input sent to the
// broker's receiving call with up to 200 descriptors riding on it (more than
// it takes): each is counted or the cut is said, and none leaks.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config_file.h"
#include "persistent/event_json.h"
#include "persistent/limits.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"
#include "sys/unix_socket.h"

using namespace pp;

namespace {

// The lowest free descriptor: the same before and after means none leaked.
int lowest_free_fd() {
  int fd = ::fcntl(0, F_DUPFD, 0);
  if (fd >= 0)
    ::close(fd);
  return fd;
}

// Sends `bytes` with `count` descriptors (copies of one /dev/null) the way a
// hostile client can, past what UnixSocket::send allows, and receives them as
// the broker does.
void many_descriptors(std::string_view bytes, size_t count) {
  int before = lowest_free_fd();
  auto pair = pp::sys::UnixSocket::pair();
  if (!pair.ok())
    return;
  int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0)
    return;
  std::vector<int> fds(count, null);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * (count ? count : 1)), 0);
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (count) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * count);
  }
  (void)pair->second.pass_credentials();  // as the broker's sockets do
  if (::sendmsg(pair->first.fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
    uint8_t buf[16384];
    auto got = pair->second.receive_message(buf);
    // Never more than were sent; all of them unless the cut is said (the
    // broker then answers with an error and closes the connection).
    if (got.ok() &&
        (got->fds_received > count || (!got->fds_truncated && got->fds_received != count)))
      __builtin_trap();
  }
  pair->first.close();
  pair->second.close();
  ::close(null);
  if (lowest_free_fd() != before)
    __builtin_trap();  // a descriptor that came with the message leaked
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  // The stream, cut into chunks whose size the first byte chooses, as a
  // broker (requests) and as a client (replies) read it.
  size_t chunk = size ? (data[0] % 17) + 1 : 1;
  for (persistent::FrameKind kind :
       {persistent::FrameKind::kRequest, persistent::FrameKind::kReply}) {
    persistent::FrameReader reader(
        kind, kind == persistent::FrameKind::kRequest ? persistent::kMaxRequestPayload : 4096);
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
        auto request = persistent::decode_request(**frame);
        if (request.ok())
          (void)persistent::encode_request(*request);
        (void)persistent::decode_reply(**frame);
      }
    }
  }

  // Payloads on their own.
  auto request = persistent::decode_request(text);
  if (request.ok())
    (void)persistent::decode_request(persistent::encode_request(*request));
  auto reply = persistent::decode_reply(text);
  if (reply.ok() && reply->is_object()) {
    auto it = reply->find("event");
    if (it != reply->end())
      (void)persistent::event_from_json(*it, "fuzz");
    it = reply->find("events");
    if (it != reply->end() && it->is_array())
      for (const pp::json& e : *it)
        (void)persistent::event_from_json(e, "fuzz");
  }
  auto state = persistent::decode_state(text, "fuzz");
  if (state.ok())
    (void)persistent::decode_state(persistent::encode_state(*state), "fuzz");
  (void)broker::parse_config(text, "fuzz");

  // Duplicate keys: the payload with its first key repeated is never a
  // request, whatever the payload was.
  if (size > 2 && data[0] == '{') {
    size_t colon = text.find(':');
    size_t comma = text.find(',');
    if (colon != std::string_view::npos && colon > 1) {
      std::string key(text.substr(1, colon - 1));
      std::string doubled = "{" + key + ":1," + key + ":2}";
      if (persistent::decode_request(doubled).ok() && key.size() > 2 && key.front() == '"')
        __builtin_trap();  // a key the parser took twice
      if (comma != std::string_view::npos && comma > colon)
        (void)persistent::decode_request(std::string(text.substr(0, comma)) + "," +
                                         std::string(text.substr(1)));
    }
  }

  // A big registry: events as large as the bounds allow, serialised and
  // paged as handle_list() does, each page a reply the client decodes. A
  // few megabytes of JSON per input: one input in about 256 (by the sum of
  // its bytes) builds it, so that the fuzzer keeps its pace on the rest.
  unsigned sum = 0;
  for (size_t i = 0; i < size; i++)
    sum += data[i];
  if (size >= 3 && sum % 256 == 17) {
    size_t events = size_t(data[0] % 64) * 5 + 1;  // up to 316, past the 280 that broke list
    size_t page_bytes = (size_t(data[1]) + 1) * 1024;
    std::string filter(std::min(persistent::kMaxFilterBytes, size * 16), 'f');
    std::string page = "{\"ok\":true,\"events\":[";
    size_t in_page = 0, pages = 0;
    for (size_t id = 1; id <= events; id++) {
      persistent::EventInfo e;
      e.id = id;
      e.name = "e" + std::to_string(id);
      e.event = "sys:" + std::string(text.substr(0, persistent::kMaxEventStringBytes - 4));
      e.filter = filter;
      std::string one = pp::dump_json(persistent::event_to_json(e));
      if (in_page && page.size() + one.size() > page_bytes) {
        auto paged = persistent::decode_reply(page + "],\"more\":true}");
        if (!paged.ok())
          __builtin_trap();
        page = "{\"ok\":true,\"events\":[";
        in_page = 0;
        pages++;
      }
      page += (in_page ? "," : "") + one;
      in_page++;
    }
    if (!persistent::decode_reply(page + "]}").ok() || pages > events)
      __builtin_trap();
  }

  if (size > 3 && size <= 4096)
    many_descriptors(text, data[2] % 201);
  return 0;
}

#include "persistent/protocol.h"

#include <cstring>

#include "base/cpu_list.h"
#include "persistent/limits.h"

namespace pp::persistent {
namespace {

void put_u16(std::string& out, uint16_t v) {
  out += char(v & 0xff);
  out += char(v >> 8);
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; i++)
    out += char((v >> (8 * i)) & 0xff);
}

uint16_t get_u16(const char* p) {
  return uint16_t(uint8_t(p[0]) | uint8_t(p[1]) << 8);
}

uint32_t get_u32(const char* p) {
  return uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 | uint32_t(uint8_t(p[2])) << 16 |
         uint32_t(uint8_t(p[3])) << 24;
}

const char* kind_name(uint16_t kind) {
  return kind == uint16_t(FrameKind::kRequest) ? "request"
         : kind == uint16_t(FrameKind::kReply) ? "reply"
                                               : "unknown";
}

}  // namespace

std::string encode_frame(FrameKind kind, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderSize + payload.size());
  out.append(kFrameMagic, sizeof(kFrameMagic));
  put_u16(out, kProtocolVersion);
  put_u16(out, uint16_t(kind));
  put_u32(out, uint32_t(payload.size()));
  out.append(payload);
  return out;
}

void FrameReader::append(std::span<const uint8_t> bytes) {
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  }
  buffer_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Result<std::optional<std::string>> FrameReader::next() {
  if (pending() < kFrameHeaderSize) {
    // A wrong magic is known as soon as its bytes arrive.
    size_t have = std::min(pending(), sizeof(kFrameMagic));
    if (std::memcmp(buffer_.data() + offset_, kFrameMagic, have) != 0)
      return Error(EPROTO, "not a perf-persistent broker frame (bad magic)");
    return std::optional<std::string>();
  }
  const char* h = buffer_.data() + offset_;
  if (std::memcmp(h, kFrameMagic, sizeof(kFrameMagic)) != 0)
    return Error(EPROTO, "not a perf-persistent broker frame (bad magic)");
  uint16_t version = get_u16(h + 4);
  uint16_t kind = get_u16(h + 6);
  uint32_t length = get_u32(h + 8);
  if (version != kProtocolVersion)
    return errorf(EPROTONOSUPPORT,
                  "broker protocol version %u is not spoken here (this side speaks version %u); "
                  "the broker and the client must come from the same perf-persistent: restart the "
                  "broker with this one ('perf persistent daemon')",
                  unsigned(version), unsigned(kProtocolVersion));
  if (kind != uint16_t(expected_))
    return errorf(EPROTO, "a %s frame (kind %u) arrived where a %s was expected (out of order)",
                  kind_name(kind), unsigned(kind), kind_name(uint16_t(expected_)));
  if (length > max_payload_)
    return errorf(EMSGSIZE, "a %s of %u bytes is over the limit of %u", kind_name(kind), length,
                  max_payload_);
  if (pending() < kFrameHeaderSize + length)
    return std::optional<std::string>();
  std::string payload = buffer_.substr(offset_ + kFrameHeaderSize, length);
  offset_ += kFrameHeaderSize + length;
  consumed_ += kFrameHeaderSize + length;
  if (offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > 4096 && offset_ * 2 > buffer_.size()) {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }
  return std::optional<std::string>(std::move(payload));
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kPing:
      return "ping";
    case Op::kList:
      return "list";
    case Op::kCreate:
      return "create";
    case Op::kKill:
      return "kill";
    case Op::kOpen:
      return "open";
    case Op::kReload:
      return "reload";
    case Op::kHandover:
      return "handover";
    case Op::kHandoverDone:
      return "handover-done";
    case Op::kHandoverListener:
      return "handover-listener";
  }
  return "?";
}

std::string encode_request(const Request& r) {
  json j = {{"op", std::string(op_name(r.op))}};
  switch (r.op) {
    case Op::kPing:
      break;
    case Op::kList:
      j["verbose"] = r.verbose;
      if (r.after)
        j["after"] = r.after;
      break;
    case Op::kCreate:
      j["event"] = r.create.event;
      j["name"] = r.create.name;
      j["pages"] = r.create.pages;
      j["cpus"] = r.create.cpus;
      j["filter"] = r.create.filter;
      j["context"] = r.create.context;
      j["clockid"] = r.create.clockid;
      if (r.create.backend != kRingPerf)  // what a broker before ftrace also reads
        j["backend"] = r.create.backend;
      break;
    case Op::kKill:
      j["ref"] = r.reference;
      break;
    case Op::kOpen:
      j["id"] = r.id;
      j["cpu"] = r.cpu;
      if (r.keep)
        j["keep"] = true;
      if (r.hangup)  // a broker before it ignores it and passes one fd
        j["hangup"] = true;
      if (r.hangup_perf)  // a separate key: a client that sent "hangup" alone takes one perf fd
        j["hangup_perf"] = true;
      break;
    case Op::kReload:
    case Op::kHandoverDone:
    case Op::kHandoverListener:
      break;
    case Op::kHandover:
      j["after"] = r.after;
      j["token"] = r.token;
      break;
  }
  if (r.deadline_ms)
    j["deadline_ms"] = r.deadline_ms;
  return dump_json(j);
}

namespace {

Result<Request> decode_request_fields(std::string_view payload) {
  PP_ASSIGN_OR_RETURN(json doc, parse_json(payload, "the request"));
  JsonFields f(doc, "the request");
  PP_ASSIGN_OR_RETURN(std::string op, f.str("op"));
  Request r;
  PP_ASSIGN_OR_RETURN(r.deadline_ms, f.i64_or("deadline_ms", 0));
  if (op == "ping") {
    r.op = Op::kPing;
  } else if (op == "list") {
    r.op = Op::kList;
    PP_ASSIGN_OR_RETURN(r.verbose, f.boolean_or("verbose", false));
    PP_ASSIGN_OR_RETURN(r.after, f.u64_or("after", 0));
  } else if (op == "create") {
    r.op = Op::kCreate;
    JsonFields c(doc, "the create request");
    PP_ASSIGN_OR_RETURN(r.create.event, c.str("event"));
    PP_ASSIGN_OR_RETURN(r.create.name, c.str_or("name", ""));
    PP_ASSIGN_OR_RETURN(r.create.pages, c.u64_or("pages", 0));
    PP_ASSIGN_OR_RETURN(r.create.cpus, c.str_or("cpus", ""));
    PP_ASSIGN_OR_RETURN(r.create.filter, c.str_or("filter", ""));
    PP_ASSIGN_OR_RETURN(r.create.context, c.boolean_or("context", true));
    PP_ASSIGN_OR_RETURN(r.create.backend, c.str_or("backend", kRingPerf));
    if (r.create.backend != kRingPerf && r.create.backend != kRingFtrace)
      return errorf(ErrorKind::kUsage, EINVAL,
                    "the create request: \"backend\" must be \"perf\" or \"ftrace\", not "
                    "\"%s\"",
                    r.create.backend.substr(0, 64).c_str());
    PP_RETURN_IF_ERROR(check_create_limits(r.create));
    PP_ASSIGN_OR_RETURN(int64_t clockid, c.i64_or("clockid", sys::kDefaultClockId));
    PP_ASSIGN_OR_RETURN(r.create.clockid, sys::parse_clockid(std::to_string(clockid)));
  } else if (op == "kill") {
    r.op = Op::kKill;
    PP_ASSIGN_OR_RETURN(r.reference, JsonFields(doc, "the kill request").str("ref"));
  } else if (op == "open") {
    r.op = Op::kOpen;
    JsonFields o(doc, "the open request");
    PP_ASSIGN_OR_RETURN(r.id, o.u64("id"));
    PP_ASSIGN_OR_RETURN(uint64_t cpu, o.u64("cpu"));
    if (cpu >= uint64_t(kMaxCpu))
      return errorf(EINVAL, "the open request: \"cpu\" %llu is not a CPU number (0 to %d)",
                    (unsigned long long)cpu, kMaxCpu - 1);
    r.cpu = int(cpu);
    PP_ASSIGN_OR_RETURN(r.keep, o.boolean_or("keep", false));
    PP_ASSIGN_OR_RETURN(r.hangup, o.boolean_or("hangup", false));
    PP_ASSIGN_OR_RETURN(r.hangup_perf, o.boolean_or("hangup_perf", false));
  } else if (op == "reload") {
    r.op = Op::kReload;
  } else if (op == "handover") {
    r.op = Op::kHandover;
    PP_ASSIGN_OR_RETURN(r.after, f.u64_or("after", 0));
    PP_ASSIGN_OR_RETURN(r.token, f.str_or("token", ""));
    if (r.token.size() > 128)
      return Error(EINVAL, "the handover request: \"token\" is longer than 128 characters");
  } else if (op == "handover-done") {
    r.op = Op::kHandoverDone;
  } else if (op == "handover-listener") {
    r.op = Op::kHandoverListener;
  } else {
    return Error(EINVAL, "unknown request \"" + op.substr(0, 64) +
                             "\"; the broker knows ping, list, create, kill, open, reload, "
                             "handover, handover-done and handover-listener");
  }
  return r;
}

}  // namespace

Result<Request> decode_request(std::string_view payload) {
  auto r = decode_request_fields(payload);
  if (!r.ok())  // whatever the field, the request is what is wrong
    return std::move(r).error().with_kind(ErrorKind::kUsage);
  return r;
}

std::string encode_ok_reply(json body) {
  if (!body.is_object())
    body = json::object();
  body["ok"] = true;
  return dump_json(body);
}

std::string encode_error_reply(const Error& error) {
  json j = error_json(error);
  j["ok"] = false;
  return dump_json(j);
}

Result<json> decode_reply(std::string_view payload) {
  auto doc = parse_json(payload, "the broker's reply");
  if (!doc.ok())
    return Error(EPROTO, doc.error().message());
  JsonFields f(*doc, "the broker's reply");
  auto ok = f.boolean("ok");
  if (!ok.ok())
    return Error(EPROTO, ok.error().message());
  if (*ok)
    return std::move(*doc);
  auto error = f.object("error");
  if (!error.ok())
    return Error(EPROTO, "the broker's error reply has no \"error\" object");
  return error_from_json(**error, "the broker's error reply");
}

}  // namespace pp::persistent

#include "persistent/protocol.h"

#include <gtest/gtest.h>

namespace pp::persistent {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(Protocol, CreateCarriesTheBackendOnlyWhenItIsNotPerf) {
  Request create;
  create.op = Op::kCreate;
  create.create.event = "syscalls:sys_enter_getppid";
  EXPECT_EQ(encode_request(create).find("backend"), std::string::npos)
      << "a broker before ftrace reads a perf create unchanged";
  create.create.backend = kRingFtrace;
  auto back = decode_request(encode_request(create));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->create.backend, "ftrace");
  auto bad =
      decode_request(R"({"op":"create","event":"syscalls:sys_enter_getppid","backend":"bpf"})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("\"backend\" must be"), std::string::npos)
      << bad.error().message();
}

TEST(Protocol, FrameLayoutIsTheDocumentedOne) {
  std::string frame = encode_frame(FrameKind::kRequest, "{}");
  ASSERT_EQ(frame.size(), kFrameHeaderSize + 2);
  EXPECT_EQ(frame.substr(0, 4), "PPBR");
  EXPECT_EQ(frame[4], 3);  // version, little-endian
  EXPECT_EQ(frame[5], 0);
  EXPECT_EQ(frame[6], 1);  // kind: request
  EXPECT_EQ(frame[7], 0);
  EXPECT_EQ(frame[8], 2);  // length
  EXPECT_EQ(frame.substr(9, 3), std::string(3, '\0'));
  EXPECT_EQ(frame.substr(12), "{}");
}

TEST(Protocol, ReaderCutsFramesFromAnyChunking) {
  std::string stream = encode_frame(FrameKind::kRequest, "{\"op\":\"ping\"}") +
                       encode_frame(FrameKind::kRequest, "") +
                       encode_frame(FrameKind::kRequest, std::string(5000, 'x'));
  for (size_t chunk : {size_t(1), size_t(5), size_t(13), stream.size()}) {
    FrameReader reader(FrameKind::kRequest, kMaxRequestPayload);
    std::vector<std::string> frames;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      reader.append(bytes(stream.substr(i, chunk)));
      for (;;) {
        auto next = reader.next();
        ASSERT_TRUE(next.ok()) << next.error().message();
        if (!next->has_value())
          break;
        frames.push_back(**next);
      }
    }
    ASSERT_EQ(frames.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(frames[0], "{\"op\":\"ping\"}");
    EXPECT_EQ(frames[1], "");
    EXPECT_EQ(frames[2], std::string(5000, 'x'));
    EXPECT_EQ(reader.pending(), 0u);
  }
}

TEST(Protocol, BadMagicIsKnownFromItsFirstByte) {
  FrameReader reader(FrameKind::kRequest, kMaxRequestPayload);
  reader.append(bytes("G"));
  auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EPROTO);
  EXPECT_NE(r.error().message().find("bad magic"), std::string::npos);
}

TEST(Protocol, UnknownVersionIsRefusedNamingBoth) {
  std::string frame = encode_frame(FrameKind::kRequest, "{}");
  frame[4] = 7;
  FrameReader reader(FrameKind::kRequest, kMaxRequestPayload);
  reader.append(bytes(frame));
  auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EPROTONOSUPPORT);
  EXPECT_NE(r.error().message().find("version 7"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("speaks version 3"), std::string::npos);
  EXPECT_NE(r.error().message().find("perf persistent daemon"), std::string::npos);
}

TEST(Protocol, WrongKindIsOutOfOrder) {
  FrameReader reader(FrameKind::kRequest, kMaxRequestPayload);
  reader.append(bytes(encode_frame(FrameKind::kReply, "{}")));
  auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EPROTO);
  EXPECT_NE(r.error().message().find("out of order"), std::string::npos);
}

TEST(Protocol, OversizedFrameIsRefusedBeforeItArrives) {
  std::string header = encode_frame(FrameKind::kRequest, "").substr(0, 8);
  header += std::string("\x01\x00\x01\x00", 4);  // 65537 bytes
  FrameReader reader(FrameKind::kRequest, kMaxRequestPayload);
  reader.append(bytes(header));
  auto r = reader.next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EMSGSIZE);
}

TEST(Protocol, RequestsRoundTrip) {
  Request list;
  list.op = Op::kList;
  list.verbose = true;
  Request create;
  create.op = Op::kCreate;
  create.create = {"sched:sched_switch", "ctxsw", 64, "0-3", "prev_pid != 0", 4};
  Request kill;
  kill.op = Op::kKill;
  kill.reference = "ctxsw";
  Request open;
  open.op = Op::kOpen;
  open.id = 7;
  open.cpu = 1;
  open.hangup = true;
  open.hangup_perf = true;
  for (const Request& r : {Request{}, list, create, kill, open}) {
    auto back = decode_request(encode_request(r));
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back->op, r.op);
    EXPECT_EQ(back->verbose, r.verbose);
    EXPECT_EQ(back->create.event, r.create.event);
    EXPECT_EQ(back->create.name, r.create.name);
    EXPECT_EQ(back->create.pages, r.create.pages);
    EXPECT_EQ(back->create.cpus, r.create.cpus);
    EXPECT_EQ(back->create.filter, r.create.filter);
    EXPECT_EQ(back->create.clockid, r.create.clockid);
    EXPECT_EQ(back->reference, r.reference);
    EXPECT_EQ(back->id, r.id);
    EXPECT_EQ(back->cpu, r.cpu);
    EXPECT_EQ(back->hangup, r.hangup);
    EXPECT_EQ(back->hangup_perf, r.hangup_perf);
  }
  // Sent only when asked for: an open without it is what a broker before
  // the hangup pipe has always read.
  Request plain = open;
  plain.hangup = false;
  plain.hangup_perf = false;
  EXPECT_EQ(encode_request(plain).find("hangup"), std::string::npos);
}

TEST(Protocol, MalformedRequestsNameTheProblem) {
  struct Case {
    const char* payload;
    const char* expect;
  } cases[] = {
      {"", "not valid JSON"},
      {"{", "not valid JSON"},
      {"[]", "not a JSON object"},
      {"{}", "has no \"op\""},
      {"{\"op\": 3}", "\"op\" must be a string"},
      {"{\"op\": \"format-disk\"}", "unknown request \"format-disk\""},
      {"{\"op\": \"create\"}", "has no \"event\""},
      {"{\"op\": \"create\", \"event\": \"x\", \"pages\": -1}", "non-negative integer"},
      {"{\"op\": \"create\", \"event\": \"x\", \"pages\": 1.5}", "non-negative integer"},
      {"{\"op\": \"create\", \"event\": 5}", "\"event\" must be a string"},
      {"{\"op\": \"kill\"}", "has no \"ref\""},
      {"{\"op\": \"open\", \"id\": 1}", "has no \"cpu\""},
      {"{\"op\": \"open\", \"id\": 1, \"cpu\": 100000}", "not a CPU number"},
      {"{\"op\": \"open\", \"id\": \"1\", \"cpu\": 0}", "\"id\" must be a non-negative integer"},
      {"{\"op\": \"list\", \"verbose\": 1}", "\"verbose\" must be true or false"},
      {"{\"op\": \"open\", \"id\": 1, \"cpu\": 0, \"hangup\": 1}",
       "\"hangup\" must be true or false"},
      {"{\"op\": \"open\", \"id\": 1, \"cpu\": 0, \"hangup_perf\": \"yes\"}",
       "\"hangup_perf\" must be true or false"},
      {"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "nests deeper"},
  };
  for (const Case& c : cases) {
    auto r = decode_request(c.payload);
    ASSERT_FALSE(r.ok()) << c.payload;
    EXPECT_EQ(r.error().code(), EINVAL) << c.payload;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos)
        << c.payload << ": " << r.error().message();
  }
}

TEST(Protocol, RepliesCarryBodiesOrErrors) {
  auto ok = decode_reply(encode_ok_reply({{"events", json::array()}}));
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE((*ok)["events"].is_array());
  auto err = decode_reply(
      encode_error_reply(Error(ErrorKind::kNameTaken, EEXIST, "the name 'x' is taken")));
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().kind(), ErrorKind::kNameTaken) << "the broker's kind reaches the client";
  EXPECT_EQ(err.error().code(), EEXIST);
  EXPECT_EQ(err.error().message(), "the name 'x' is taken");
  for (const char* bad :
       {R"({})", R"({"ok": false})", R"({"ok": false, "errno": 0, "error": ""})",
        R"({"ok": false, "error": {"kind": "usage", "errno": "EBOGUS", "message": ""}})",
        "nonsense"}) {
    auto r = decode_reply(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), EPROTO) << bad;
  }
}

TEST(Protocol, InvalidUtf8NeverThrows) {
  Request r;
  r.op = Op::kCreate;
  r.create.event = "bad\xff\xfe";
  std::string payload = encode_request(r);
  auto back = decode_request(payload);
  ASSERT_TRUE(back.ok());
  EXPECT_NE(back->create.event, r.create.event) << "replaced, not passed through";
  EXPECT_EQ(back->create.event, "bad\\xff\\xfe") << "each bad byte as the text \\xNN";
  std::string reply = encode_error_reply(Error(EINVAL, "bad \xc3 byte"));
  auto err = decode_reply(reply);
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().message(), "bad \\xc3 byte");
  EXPECT_EQ(err.error().code(), EINVAL);
  auto ok = decode_reply(encode_ok_reply({{"event", {{"name", "n\x80"}}}}));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["event"]["name"], "n\\x80");
}

// The protocol's error reply is the one error shape (base/json.h) plus "ok".
TEST(Protocol, ErrorRepliesHaveTheOneErrorShape) {
  json reply = json::parse(encode_error_reply(not_found_error("no persistent event 'x'")));
  json expected = error_json(not_found_error("no persistent event 'x'"));
  expected["ok"] = false;
  EXPECT_EQ(reply, expected);
  EXPECT_EQ(reply["error"]["kind"], "not-found");
  EXPECT_EQ(reply["error"]["exit_status"], 4);
  EXPECT_EQ(reply["error"]["errno"], "ENOENT");
}

}  // namespace
}  // namespace pp::persistent

namespace pp::persistent {
namespace {

// The example in Documentation/protocol.txt, byte for byte.
TEST(Protocol, TheDocumentedExampleIsWhatGoesOnTheWire) {
  std::string request = encode_frame(FrameKind::kRequest, "{\"op\":\"list\"}");
  EXPECT_EQ(request, std::string("PPBR\x03\x00\x01\x00\x0d\x00\x00\x00", 12) + "{\"op\":\"list\"}");
  auto decoded = decode_request("{\"op\":\"list\"}");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->op, Op::kList);
  std::string reply = encode_frame(FrameKind::kReply, encode_ok_reply({{"events", json::array()}}));
  EXPECT_EQ(reply, std::string("PPBR\x03\x00\x02\x00\x17\x00\x00\x00", 12) +
                       "{\"events\":[],\"ok\":true}");
}

}  // namespace
}  // namespace pp::persistent

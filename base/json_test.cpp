#include "base/json.h"

#include <gtest/gtest.h>
#include <limits>

namespace pp {
namespace {

TEST(JsonWriter, LaysOutAsNlohmannDoesForValidText) {
  json doc = {{"name", "ctxsw"},
              {"ids", {1, 2, 3}},
              {"empty", json::object()},
              {"none", json::array()},
              {"signed", -4},
              {"scale", 0.5},
              {"flag", true},
              {"null", nullptr},
              {"text", "tab\there \"quoted\" back\\slash \x01 é"}};
  EXPECT_EQ(dump_json(doc), doc.dump());
  EXPECT_EQ(dump_json(doc, 2), doc.dump(2));
  ordered_json ordered = {{"z", 1}, {"a", "x"}};
  EXPECT_EQ(dump_json(ordered, 2), ordered.dump(2));
}

TEST(JsonWriter, InvalidUtf8IsEscapedByteByByteAndNeverThrows) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"\xff", "\\xff"},
      {"a\xc3", "a\\xc3"},                           // cut-off sequence
      {"\xc0\xaf", "\\xc0\\xaf"},                    // overlong '/'
      {"\xed\xa0\x80", "\\xed\\xa0\\x80"},           // a UTF-16 surrogate
      {"\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},  // above U+10FFFF
      {"ok \xe2\x82\xac", "ok \xe2\x82\xac"},        // the euro sign stays
  };
  for (const Case& c : cases) {
    EXPECT_EQ(escape_invalid_utf8(c.in), c.out);
    std::string text = dump_json(json{{"name", c.in}});
    json back = json::parse(text, nullptr, false);
    ASSERT_FALSE(back.is_discarded()) << text;
    EXPECT_EQ(back["name"], c.out) << text;
  }
  // Keys too.
  json back = json::parse(dump_json(json{{"\xfe", 1}}), nullptr, false);
  ASSERT_FALSE(back.is_discarded());
  EXPECT_TRUE(back.contains("\\xfe"));
}

TEST(JsonWriter, RegistersAreHexStringsThatKeepEveryBit) {
  EXPECT_EQ(hex_u64(0), "0x0");
  EXPECT_EQ(hex_u64(0x8000000000000001), "0x8000000000000001");
  EXPECT_EQ(u64_from_hex_json(json(hex_u64(~uint64_t(0)))), ~uint64_t(0));
  EXPECT_EQ(u64_from_hex_json(json(42)), 42u) << "numbers from before still read";
  EXPECT_FALSE(u64_from_hex_json(json("0x")));
  EXPECT_FALSE(u64_from_hex_json(json("0x1g")));
  EXPECT_FALSE(u64_from_hex_json(json("0x10000000000000000")));
  EXPECT_FALSE(u64_from_hex_json(json(-1)));
}

TEST(JsonErrorShape, OneShapeWithKindStatusErrnoAndMessage) {
  json e = error_json(Error(ErrorKind::kNotFound, ENOENT, "no persistent event 'x'"));
  EXPECT_EQ(e, json::parse(R"({"error": {"kind": "not-found", "exit_status": 4,
                                          "errno": "ENOENT",
                                          "message": "no persistent event 'x'"}})"));
  // A refusal keeps the kernel's errno as detail.
  EXPECT_EQ(error_object(Error(EINVAL, "perf_event_open"))["kind"], "refused");
  EXPECT_EQ(error_object(Error(EINVAL, "perf_event_open"))["exit_status"], 2);
}

TEST(JsonErrorShape, ReadsBackWhatItWrites) {
  for (const ErrorKindInfo& info : kErrorKinds) {
    Error e = error_from_json(error_object(Error(info.kind, EACCES, "why")), "a reply");
    EXPECT_EQ(e.kind(), info.kind);
    EXPECT_EQ(e.code(), EACCES);
    EXPECT_EQ(e.message(), "why");
  }
  for (const char* bad : {R"({})", R"({"kind": "usage", "errno": "EINVAL"})",
                          R"({"kind": "odd", "errno": "EINVAL", "message": ""})",
                          R"({"kind": "usage", "errno": "ENOSUCH", "message": ""})", "[]"}) {
    Error e = error_from_json(json::parse(bad), "a reply");
    EXPECT_EQ(e.code(), EPROTO) << bad;
    EXPECT_EQ(e.kind(), ErrorKind::kRefused) << bad;
  }
}

}  // namespace
}  // namespace pp

namespace pp {
namespace {

// nlohmann keeps the last of two equal keys: {"op":"ping","op":"kill"} would
// read as a kill. A repeated key, at any depth, is refused and named.
TEST(JsonParse, DuplicateKeysAreRefusedAtAnyDepth) {
  auto top = parse_json(R"({"op":"ping","op":"kill","ref":"1"})", "the request");
  ASSERT_FALSE(top.ok());
  EXPECT_EQ(top.error().code(), EINVAL);
  EXPECT_EQ(top.error().message(),
            "the request has the key \"op\" twice; each key may appear once");
  auto nested = parse_json(R"({"a":{"b":1,"b":2}})", "x");
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().message().find("\"b\" twice"), std::string::npos);
  // The same key in sibling objects, or an object in an array, is fine.
  auto siblings = parse_json(R"({"a":{"b":1},"c":{"b":2},"d":[{"b":1},{"b":2}]})", "x");
  ASSERT_TRUE(siblings.ok()) << siblings.error().message();
  EXPECT_EQ((*siblings)["c"]["b"], 2);
}

// dump_json() as it was: every string and key through escape_invalid_utf8()
// in a copy of the tree, then nlohmann's dump. The compact form is now
// written without the copy and must give the same bytes.
template <typename Json>
Json reference_copy(const Json& value) {
  if (value.is_string())
    return escape_invalid_utf8(value.template get_ref<const std::string&>());
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& element : value)
      out.push_back(reference_copy(element));
    return out;
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      out[escape_invalid_utf8(it.key())] = reference_copy(it.value());
    return out;
  }
  return value;
}

// A random value of every JSON kind, strings of any bytes, `depth` deep.
template <typename Json>
Json random_value(uint64_t& state, int depth, bool odd_keys) {
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  auto text = [&] {
    std::string out(next() % 12, ' ');
    for (char& c : out)
      c = next() % 3 ? char(0x20 + next() % 95) : char(next() % 256);
    return out;
  };
  switch (depth > 0 ? next() % 10 : next() % 8) {
    case 0:
      return Json(text());
    case 1:
      return Json(uint64_t(next()) << (next() % 32));
    case 2:
      return Json(-int64_t(next() % 100000) - 1);
    case 3:
      return Json(double(int64_t(next() % 20000) - 10000) / 8.0 * (next() % 2 ? 1e-300 : 1e10));
    case 4:
      return Json(next() % 2 == 0);
    case 5:
      return Json(nullptr);
    case 6:
      return Json(UINT64_MAX);
    case 7:
      return Json(INT64_MIN);
    case 8: {
      Json out = Json::array();
      for (uint64_t i = next() % 4; i > 0; i--)
        out.push_back(random_value<Json>(state, depth - 1, odd_keys));
      return out;
    }
    default: {
      Json out = Json::object();
      for (uint64_t i = next() % 4; i > 0; i--) {
        std::string key = odd_keys ? text() : "k" + std::to_string(next() % 50);
        out[key] = random_value<Json>(state, depth - 1, odd_keys);
      }
      return out;
    }
  }
}

TEST(JsonWriter, CompactDumpIsTheCopyAndDumpOfBefore) {
  uint64_t state = 30;
  for (int i = 0; i < 20000; i++) {
    bool odd_keys = i % 4 == 0;
    json value = random_value<json>(state, 4, odd_keys);
    ASSERT_EQ(dump_json(value), reference_copy(value).dump()) << i;
    ordered_json ordered = random_value<ordered_json>(state, 4, odd_keys);
    ASSERT_EQ(dump_json(ordered), reference_copy(ordered).dump()) << i;
  }
  // Two keys that escape to the same text: one of them stays, as before.
  ordered_json twins = {{"\\xff", 1}, {"\xff", 2}};
  EXPECT_EQ(dump_json(twins), reference_copy(twins).dump());
  EXPECT_EQ(dump_json(json(-0.0)), "-0.0");
  EXPECT_EQ(dump_json(json(std::numeric_limits<double>::quiet_NaN())), "null");
}

// append_json_string() reads eight bytes at a time while none needs care:
// every byte value, at every place around and across those words, and
// two-byte UTF-8 split by a word's end, come out as nlohmann's copy says.
TEST(JsonWriter, EveryByteAtEveryPlaceOfTheWordScan) {
  for (size_t length : {1u, 7u, 8u, 9u, 16u, 19u}) {
    for (size_t at = 0; at < length; at++) {
      for (int byte = 0; byte < 256; byte++) {
        std::string text(length, 'a');
        text[at] = char(byte);
        std::string out;
        append_json_string(out, text);
        ASSERT_EQ(out, reference_copy(json(text)).dump()) << length << " " << at << " " << byte;
      }
      std::string text(length, 'b');
      text.insert(at, "\xc3\xa9");  // é, from `at` on
      std::string out;
      append_json_string(out, text);
      ASSERT_EQ(out, reference_copy(json(text)).dump()) << length << " " << at;
    }
  }
}

}  // namespace
}  // namespace pp

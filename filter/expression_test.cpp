// The filter language on its own: records are maps of values, keys are
// declared here. What `top --filter` decided before the language was shared
// (its cases are kept below, under the keys top declares), what declared
// keys refuse, how `~` chooses between "contains" and a glob, and values.
// watch/match_test.cpp runs the language through watch's records, and
// tests/unit/filter_fronts_test.cpp checks that top and watch agree.
#include "filter/expression.h"

#include <gtest/gtest.h>
#include <map>

#include "mce/decode.h"

namespace pp::filter {
namespace {

using Fields = std::map<std::string, Value, std::less<>>;

class MapRecord final : public Record {
 public:
  explicit MapRecord(Fields fields) : fields_(std::move(fields)) {}
  std::optional<Value> field(std::string_view key) const override {
    auto found = fields_.find(key);
    if (found == fields_.end())
      return std::nullopt;
    return found->second;
  }

 private:
  Fields fields_;
};

Value num(uint64_t n) {
  return Value::of_unsigned(n);
}
Value neg(int64_t n) {
  return Value::of_signed(n);
}
Value text(std::string t) {
  return Value::of_text(std::move(t));
}

// The keys top declares for an mce_record, a sched_switch and a sampled
// event shown together, plus the names the cases below use.
Keys top_like_keys() {
  Keys keys;
  for (const char* k : {"pid", "tid", "cpu", "comm", "sym", "dso", "ip"})
    keys.add(k);
  keys.add("severity", &mce_severity_scale()).add("bank").add("error_class").add("class");
  for (const char* k : {"prev_comm", "next_pid", "status", "delta", "n"})
    keys.add(k);
  return keys;
}

Expression parse_ok(std::string_view text, const Keys& keys = top_like_keys()) {
  auto e = Expression::parse(text, keys, "--filter");
  EXPECT_TRUE(e.ok()) << text << ": " << e.error().message();
  return e.ok() ? std::move(*e) : Expression();
}

bool matches(const Expression& e, Fields fields) {
  return e.matches(MapRecord(std::move(fields)));
}

// top's filter, before the language was shared: each of its tests, with
// the same records and the same answers.

TEST(TopCases, EmptyMatchesEverything) {
  Expression e = parse_ok("   ");
  EXPECT_TRUE(e.empty());
  EXPECT_TRUE(matches(e, {}));
}

TEST(TopCases, TermsJoinedByAnd) {
  Expression e = parse_ok("prev_comm==bash && next_pid>100");
  EXPECT_EQ(e.keys(), (std::vector<std::string>{"prev_comm", "next_pid"}));
  EXPECT_TRUE(matches(e, {{"prev_comm", text("bash")}, {"next_pid", num(101)}}));
  EXPECT_FALSE(matches(e, {{"prev_comm", text("bash")}, {"next_pid", num(100)}}));
  EXPECT_FALSE(matches(e, {{"prev_comm", text("zsh")}, {"next_pid", num(101)}}));
  // A sample without the key does not match.
  EXPECT_FALSE(matches(e, {{"prev_comm", text("bash")}}));
}

TEST(TopCases, NumbersCompareAsNumbersHexAndSigned) {
  Expression e = parse_ok("status>=0x10&&delta<-5");
  EXPECT_TRUE(matches(e, {{"status", num(16)}, {"delta", neg(-6)}}));
  EXPECT_FALSE(matches(e, {{"status", num(15)}, {"delta", neg(-6)}}));
  EXPECT_FALSE(matches(e, {{"status", num(16)}, {"delta", neg(-5)}}));
  // 9 < 10 as numbers, though "9" > "10" as text.
  EXPECT_TRUE(matches(parse_ok("n<10"), {{"n", num(9)}}));
}

TEST(TopCases, ContainsQuotesAndNotEqual) {
  Expression e = parse_ok("sym~lock && dso != '[kernel.kallsyms]' && comm=='kworker/0:1 x'");
  EXPECT_TRUE(matches(e, {{"sym", text("_raw_spin_lock")},
                          {"dso", text("/usr/lib/libc.so.6")},
                          {"comm", text("kworker/0:1 x")}}));
  EXPECT_FALSE(matches(e, {{"sym", text("_raw_spin_lock")},
                           {"dso", text("[kernel.kallsyms]")},
                           {"comm", text("kworker/0:1 x")}}));
}

TEST(TopCases, SeveritiesCompareByHowBad) {
  Expression e = parse_ok("severity>=ucna");
  EXPECT_FALSE(matches(e, {{"severity", text("corrected")}}));
  EXPECT_FALSE(matches(e, {{"severity", text("deferred")}}));
  EXPECT_TRUE(matches(e, {{"severity", text("ucna")}}));
  EXPECT_TRUE(matches(e, {{"severity", text("srar")}}));
  EXPECT_TRUE(matches(e, {{"severity", text("fatal")}}));
  EXPECT_GT(mce::mce_severity_rank("fatal"), mce::mce_severity_rank("uncorrected"));
  EXPECT_EQ(mce::mce_severity_rank("bad"), -1);
  std::span<const std::string_view> order = mce::mce_severities_by_rank();
  EXPECT_EQ(std::vector<std::string_view>(order.begin(), order.end()),
            (std::vector<std::string_view>{"invalid", "corrected", "deferred", "ucna", "srao",
                                           "srar", "uncorrected", "fatal"}));
  for (size_t i = 0; i < order.size(); i++) {
    EXPECT_EQ(mce::mce_severity_rank(order[i]), int(i)) << order[i];
    EXPECT_EQ(mce_severity_scale().rank(order[i]), int(i)) << order[i];
  }
  auto bad = Expression::parse("severity>=awful", top_like_keys(), "--filter");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("unknown severity 'awful'; least to most severe: invalid, "
                                       "corrected, deferred, ucna, srao, srar, uncorrected, fatal"),
            std::string::npos)
      << bad.error().message();
}

// top's old messages said "<what> was expected at column N; a filter is
// KEY OP VALUE terms..."; the language says where in perf's caret form.
TEST(TopCases, ErrorsSayWhereAndWhatATermIs) {
  struct Case {
    const char* text;
    size_t column;
    const char* says;
  } cases[] = {
      {"==3", 1, "expected a field name (pid, tid, cpu, comm, sym, dso, ip, severity, bank"},
      {"pid 3", 5, "expected an operator (==, !=, <, <=, >, >=, ~)"},
      {"pid==", 6, "expected a value (a number, a word or a quoted string)"},
      {"pid==3 | pid==4", 8, "expected '&&', '||' or the end"},
      {"comm=='bash", 7, "the quote ' is not closed"},
  };
  for (const Case& c : cases) {
    auto e = Expression::parse(c.text, top_like_keys(), "--filter");
    ASSERT_FALSE(e.ok()) << c.text;
    EXPECT_EQ(e.error().kind(), ErrorKind::kUsage) << c.text;
    const std::string& message = e.error().message();
    EXPECT_EQ(message.rfind("--filter '" + std::string(c.text) + "': at column " +
                                std::to_string(c.column) + ": " + c.says,
                            0),
              0u)
        << message;
    EXPECT_EQ(message.substr(message.rfind('\n') + 1), std::string(c.column + 1, ' ') + "^")
        << message;
  }
  // What top refused, `||`, is the language's.
  Expression either = parse_ok("pid==3 || pid==4");
  EXPECT_TRUE(matches(either, {{"pid", num(4)}}));
  EXPECT_FALSE(matches(either, {{"pid", num(5)}}));
}

// Declared keys.

TEST(Keys, AnUndeclaredFieldIsRefusedWhereItIsNamingTheDeclaredOnes) {
  Keys keys;
  keys.add("pid").add("comm").add("severity", &mce_severity_scale());
  auto e = Expression::parse("pid == 1 && (comm ~ sh || no_such == 1)", keys, "--filter");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind(), ErrorKind::kUsage);
  EXPECT_EQ(e.error().message(),
            "--filter 'pid == 1 && (comm ~ sh || no_such == 1)': at column 27: unknown field "
            "'no_such'; the fields are: pid, comm, severity\n"
            "  pid == 1 && (comm ~ sh || no_such == 1)\n"
            "                            ^");
  EXPECT_TRUE(Expression::parse("comm ~ sh", keys, "--filter").ok());
  auto none = Expression::parse("pid == 1", Keys(), "--filter");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("unknown field 'pid'; the fields are: none"),
            std::string::npos)
      << none.error().message();
}

TEST(Keys, OpenKeysTakeEveryNameAndRankOnlyTheDeclared) {
  Keys keys = Keys::open("severity, a tracepoint field...");
  keys.add("severity", &mce_severity_scale());
  EXPECT_TRUE(keys.has("anything"));
  EXPECT_EQ(keys.scale("anything"), nullptr);
  EXPECT_EQ(keys.scale("severity"), &mce_severity_scale());
  EXPECT_TRUE(Expression::parse("anything == 1", keys, "--match").ok());
  auto bad = Expression::parse("== 1", keys, "--match");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(
                "at column 1: expected a field name (severity, a tracepoint field...)"),
            std::string::npos)
      << bad.error().message();
}

TEST(Keys, DeclaringAgainKeepsThePlaceAndTheScale) {
  Keys keys;
  keys.add("severity", &mce_severity_scale()).add("pid").add("severity");
  EXPECT_EQ(keys.names(), (std::vector<std::string>{"severity", "pid"}));
  EXPECT_EQ(keys.scale("severity"), &mce_severity_scale()) << "a field's own name stays ranked";
  keys.add("pid", &kernel_severity_scale());
  EXPECT_EQ(keys.scale("pid"), &kernel_severity_scale());
}

TEST(Keys, Scales) {
  EXPECT_EQ(mce_severity_scale().names_text(),
            "invalid, corrected, deferred, ucna, srao, srar, uncorrected, fatal");
  EXPECT_EQ(kernel_severity_scale().names_text(),
            "no, deferred, ucna, keep, some, ao, uc, ar, panic");
  for (std::string_view name : {"no", "ucna", "keep", "ar", "panic"})
    EXPECT_EQ(kernel_severity_scale().rank(name), mce::kernel_severity_rank(name)) << name;
  EXPECT_EQ(kernel_severity_scale().rank("fatal"), -1);
  Scale s({"low", "high"});
  EXPECT_EQ(s.rank("high"), 1);
  EXPECT_EQ(s.rank("HIGH"), -1);
}

TEST(Keys, ARankedValueOffTheScaleMatchesNothing) {
  Keys keys;
  keys.add("severity", &mce_severity_scale());
  Expression e = parse_ok("severity >= invalid", keys);
  EXPECT_TRUE(matches(e, {{"severity", text("corrected")}}));
  EXPECT_FALSE(matches(e, {{"severity", text("awful")}}));
  EXPECT_FALSE(matches(e, {{"severity", num(7)}})) << "a number is on no scale";
  EXPECT_TRUE(matches(parse_ok("severity ~ rr", keys), {{"severity", text("corrected")}}));
}

// `~`: what top's users wrote (contains) and what watch's wrote (globs).

struct MatchCase {
  const char* pattern;
  const char* text;
  bool matches;
};

class Tilde : public ::testing::TestWithParam<MatchCase> {};

TEST_P(Tilde, ContainsWithoutMetacharactersElseAGlobOfTheWhole) {
  const MatchCase& c = GetParam();
  Keys keys;
  keys.add("sym");
  std::string text_quoted = std::string("sym ~ '") + c.pattern + "'";
  EXPECT_EQ(matches(parse_ok(text_quoted, keys), {{"sym", text(c.text)}}), c.matches)
      << text_quoted << " on " << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Patterns, Tilde,
    ::testing::Values(
        // no * ? [: the text contains the pattern
        MatchCase{"lock", "_raw_spin_lock", true}, MatchCase{"spin", "_raw_spin_lock", true},
        MatchCase{"_raw_spin_lock", "_raw_spin_lock", true},
        MatchCase{"Lock", "_raw_spin_lock", false},
        MatchCase{"kernel.kallsyms]", "[kernel.kallsyms]", true},
        // the same as contains, written as a glob
        MatchCase{"*lock*", "_raw_spin_lock", true}, MatchCase{"*spin*", "_raw_spin_lock", true},
        // a glob matches the whole text
        MatchCase{"*lock", "_raw_spin_lock", true}, MatchCase{"lock*", "_raw_spin_lock", false},
        MatchCase{"_raw_?pin_lock", "_raw_spin_lock", true},
        MatchCase{"[kernel.kallsyms]", "[kernel.kallsyms]", false},
        // a metacharacter itself: in brackets
        MatchCase{"[[]kernel*", "[kernel.kallsyms]", true}, MatchCase{"*[*]*", "operator*", true},
        MatchCase{"*[*]*", "operator", false}));

TEST(Tilde, NumbersMatchTheirDecimalTextAndListsAnElement) {
  Keys keys = Keys::open("any");
  EXPECT_TRUE(matches(parse_ok("pid ~ 12", keys), {{"pid", num(4123)}}));
  EXPECT_TRUE(matches(parse_ok("pid ~ '-1'", keys), {{"pid", neg(-17)}}));
  EXPECT_TRUE(matches(parse_ok("ip ~ ffff", keys), {{"ip", text("0xffffffff81000000")}}));
  Value bits = Value::of_list({text("VAL"), text("UC"), text("PCC")});
  EXPECT_TRUE(matches(parse_ok("bits ~ 'P?C'", keys), {{"bits", bits}}));
  EXPECT_TRUE(matches(parse_ok("bits != AR", keys), {{"bits", bits}}));
  EXPECT_FALSE(matches(parse_ok("bits != UC", keys), {{"bits", bits}}));
  EXPECT_FALSE(matches(parse_ok("bits == AR", keys), {{"bits", bits}}));
}

// Values.

TEST(Values, HexTextComparesAsTheNumberItHolds) {
  Keys keys = Keys::open("any");
  Fields ip = {{"ip", text("0xffffffff81000000")}};
  EXPECT_TRUE(matches(parse_ok("ip == 0xFFFFFFFF81000000", keys), ip));
  EXPECT_TRUE(matches(parse_ok("ip > 0xffffffff80000000", keys), ip));
  EXPECT_TRUE(matches(parse_ok("ip == 18446744071578845184", keys), ip));
  EXPECT_FALSE(matches(parse_ok("ip == '0xFFFFFFFF81000000'", keys), ip)) << "quoted: text";
  // The whole range of both signs, exactly.
  EXPECT_TRUE(matches(parse_ok("n == 18446744073709551615", keys), {{"n", num(UINT64_MAX)}}));
  EXPECT_FALSE(matches(parse_ok("n == -1", keys), {{"n", num(UINT64_MAX)}}));
  EXPECT_TRUE(matches(parse_ok("n < -9223372036854775807", keys), {{"n", neg(INT64_MIN)}}));
  EXPECT_TRUE(matches(parse_ok("n > 1.5 && n < 2.5", keys), {{"n", num(2)}}));
}

TEST(Values, Shown) {
  EXPECT_EQ(num(UINT64_MAX).shown(), "18446744073709551615");
  EXPECT_EQ(neg(INT64_MIN).shown(), "-9223372036854775808");
  EXPECT_EQ(text("x y").shown(), "x y");
  EXPECT_EQ(Value::of_list({text("VAL"), num(7)}).shown(), "VAL 7");
  Value half;
  half.kind = Value::Kind::kNumber;
  half.number.integer = false;
  half.number.d = 0.5;
  EXPECT_EQ(half.shown(), "0.5");
}

TEST(Values, ParseNumber) {
  EXPECT_EQ(int64_t(parse_number("-7")->i), -7);
  EXPECT_EQ(uint64_t(parse_number("0x1F")->i), 31u);
  EXPECT_FALSE(parse_number("1.5")->integer);
  for (const char* bad : {"", "-", "0x", "0xg", "12ab", "inf", "nan", "1e999"})
    EXPECT_FALSE(parse_number(bad).has_value()) << bad;
}

}  // namespace
}  // namespace pp::filter

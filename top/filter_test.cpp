// top's filter language: what parses, what a term matches, and the messages
// of what does not parse.
#include "top/filter.h"

#include <gtest/gtest.h>
#include <map>

#include "mce/decode.h"

namespace pp::top {
namespace {

TopValue num(uint64_t n, bool is_signed = false) {
  TopValue v;
  v.is_number = true;
  v.is_signed = is_signed;
  v.number = n;
  v.text = is_signed ? std::to_string(int64_t(n)) : std::to_string(n);
  return v;
}

TopValue text(std::string t) {
  TopValue v;
  v.text = std::move(t);
  return v;
}

bool matches(const TopFilter& f, const std::map<std::string, TopValue>& values) {
  return f.match([&](std::string_view key) -> std::optional<TopValue> {
    auto found = values.find(std::string(key));
    if (found == values.end())
      return std::nullopt;
    return found->second;
  });
}

TEST(TopFilter, EmptyMatchesEverything) {
  auto f = TopFilter::parse("   ");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(f->empty());
  EXPECT_TRUE(matches(*f, {}));
}

TEST(TopFilter, TermsJoinedByAnd) {
  auto f = TopFilter::parse("prev_comm==bash && next_pid>100");
  ASSERT_TRUE(f.ok()) << f.error().message();
  ASSERT_EQ(f->terms().size(), 2u);
  EXPECT_EQ(f->terms()[0].key, "prev_comm");
  EXPECT_EQ(f->terms()[1].op, TopFilter::Op::kGt);
  EXPECT_TRUE(matches(*f, {{"prev_comm", text("bash")}, {"next_pid", num(101)}}));
  EXPECT_FALSE(matches(*f, {{"prev_comm", text("bash")}, {"next_pid", num(100)}}));
  EXPECT_FALSE(matches(*f, {{"prev_comm", text("zsh")}, {"next_pid", num(101)}}));
  // A sample without the key does not match.
  EXPECT_FALSE(matches(*f, {{"prev_comm", text("bash")}}));
}

TEST(TopFilter, NumbersCompareAsNumbersHexAndSigned) {
  auto f = TopFilter::parse("status>=0x10&&delta<-5");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_TRUE(matches(*f, {{"status", num(16)}, {"delta", num(uint64_t(-6), true)}}));
  EXPECT_FALSE(matches(*f, {{"status", num(15)}, {"delta", num(uint64_t(-6), true)}}));
  EXPECT_FALSE(matches(*f, {{"status", num(16)}, {"delta", num(uint64_t(-5), true)}}));
  // 9 < 10 as numbers, though "9" > "10" as text.
  auto g = TopFilter::parse("n<10");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(matches(*g, {{"n", num(9)}}));
}

TEST(TopFilter, ContainsQuotesAndNotEqual) {
  auto f = TopFilter::parse("sym~lock && dso != '[kernel.kallsyms]' && comm=='kworker/0:1 x'");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->terms()[2].value, "kworker/0:1 x");
  EXPECT_TRUE(matches(*f, {{"sym", text("_raw_spin_lock")},
                           {"dso", text("/usr/lib/libc.so.6")},
                           {"comm", text("kworker/0:1 x")}}));
  EXPECT_FALSE(matches(*f, {{"sym", text("_raw_spin_lock")},
                            {"dso", text("[kernel.kallsyms]")},
                            {"comm", text("kworker/0:1 x")}}));
}

TEST(TopFilter, SeveritiesCompareByHowBad) {
  auto f = TopFilter::parse("severity>=ucna");
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_FALSE(matches(*f, {{"severity", text("corrected")}}));
  EXPECT_FALSE(matches(*f, {{"severity", text("deferred")}}));
  EXPECT_TRUE(matches(*f, {{"severity", text("ucna")}}));
  EXPECT_TRUE(matches(*f, {{"severity", text("srar")}}));
  EXPECT_TRUE(matches(*f, {{"severity", text("fatal")}}));
  EXPECT_GT(mce::mce_severity_rank("fatal"), mce::mce_severity_rank("uncorrected"));
  EXPECT_EQ(mce::mce_severity_rank("bad"), -1);
  std::span<const std::string_view> order = mce::mce_severities_by_rank();
  EXPECT_EQ(std::vector<std::string_view>(order.begin(), order.end()),
            (std::vector<std::string_view>{"invalid", "corrected", "deferred", "ucna", "srao",
                                           "srar", "uncorrected", "fatal"}));
  for (size_t i = 0; i < order.size(); i++)
    EXPECT_EQ(mce::mce_severity_rank(order[i]), int(i)) << order[i];
  auto bad = TopFilter::parse("severity>=awful");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("no machine-check severity"), std::string::npos);
}

TEST(TopFilter, ErrorsSayWhereAndWhatATermIs) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"==3", "a field name was expected at column 1"},
      {"pid 3", "an operator was expected after 'pid' at column 5"},
      {"pid==", "a value was expected after the operator at column 6"},
      {"pid==3 || pid==4", "'&&' or the end was expected at column 8"},
      {"comm=='bash", "the quote is not closed at column 7"},
  };
  for (const Case& c : cases) {
    auto f = TopFilter::parse(c.text);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_EQ(f.error().kind(), ErrorKind::kUsage) << c.text;
    EXPECT_NE(f.error().message().find(c.says), std::string::npos) << f.error().message();
    EXPECT_NE(f.error().message().find("KEY OP VALUE"), std::string::npos) << c.text;
  }
}

}  // namespace
}  // namespace pp::top

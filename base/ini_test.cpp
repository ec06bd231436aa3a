#include "base/ini.h"

#include <gtest/gtest.h>
#include <string>

namespace pp {
namespace {

// A document as one line per section and key, for comparing whole documents:
// "KEY=VALUE@LINE" for the preamble, "[NAME]@LINE" and then its keys.
std::string shape(const IniDocument& doc) {
  std::string out;
  auto entries = [&](const std::vector<IniEntry>& list) {
    for (const IniEntry& e : list)
      out += e.key + "=" + e.value + "@" + std::to_string(e.line) + "\n";
  };
  entries(doc.preamble);
  for (const IniSection& s : doc.sections) {
    out += "[" + s.name + "]@" + std::to_string(s.line) + "\n";
    entries(s.entries);
  }
  return out;
}

struct GoodCase {
  const char* text;
  const char* shape;
};

class IniGood : public testing::TestWithParam<GoodCase> {};

TEST_P(IniGood, ReadsTheDocument) {
  auto doc = parse_ini(GetParam().text, "f");
  ASSERT_TRUE(doc.ok()) << doc.error().message();
  EXPECT_EQ(shape(*doc), GetParam().shape) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IniGood,
    testing::Values(GoodCase{"", ""}, GoodCase{"\n\n   \n\t\n", ""},
                    GoodCase{"# only a comment\n  # indented\n", ""},
                    GoodCase{"[a]\nk = v\n", "[a]@1\nk=v@2\n"},
                    // Names, keys and values are trimmed; '\r' of a CRLF file too.
                    GoodCase{"  [  a b ]  \r\n\tk\t=\t v w \r\n", "[a b]@1\nk=v w@2\n"},
                    // Split at the first '=': the value keeps the others.
                    GoodCase{"[a]\nfilter = bank == 4\n", "[a]@1\nfilter=bank == 4@2\n"},
                    GoodCase{"[a]\nk =\n", "[a]@1\nk=@2\n"},
                    // '#' after a space or tab starts a comment; elsewhere it is text.
                    GoodCase{"[a] # c\nk = v # c\nq = v\t#c\nr = a#b\n",
                             "[a]@1\nk=v@2\nq=v@3\nr=a#b@4\n"},
                    GoodCase{"[a]#b]\n", "[a]#b]@1\n"},
                    // Keys before any header, repeated keys and sections: all kept.
                    GoodCase{"x = 1\n[a]\nk = 1\nk = 2\n[a]\n[]\n",
                             "x=1@1\n[a]@2\nk=1@3\nk=2@4\n[a]@5\n[]@6\n"},
                    // No newline at the end.
                    GoodCase{"[a]\nk = v", "[a]@1\nk=v@2\n"}));

struct BadCase {
  const char* text;
  const char* message;
};

class IniBad : public testing::TestWithParam<BadCase> {};

TEST_P(IniBad, NamesTheFileAndLine) {
  auto doc = parse_ini(GetParam().text, "/etc/x.conf");
  ASSERT_FALSE(doc.ok()) << GetParam().text;
  EXPECT_EQ(doc.error().kind(), ErrorKind::kConfig);
  EXPECT_EQ(doc.error().code(), EINVAL);
  EXPECT_EQ(doc.error().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IniBad,
    testing::Values(
        BadCase{"[a\n", "/etc/x.conf:1: a section header is '[NAME]', not '[a'"},
        BadCase{"[a]\n\n[b] c\n", "/etc/x.conf:3: a section header is '[NAME]', not '[b] c'"},
        BadCase{"[\n", "/etc/x.conf:1: a section header is '[NAME]', not '['"},
        BadCase{"[a]\njust words\n",
                "/etc/x.conf:2: expected 'key = value' or '[NAME]', not 'just words'"},
        BadCase{"[a]\n = v\n", "/etc/x.conf:2: expected 'key = value' or '[NAME]', not '= v'"},
        BadCase{"]\n", "/etc/x.conf:1: expected 'key = value' or '[NAME]', not ']'"},
        // The first bad line wins; the comment is not part of what is shown.
        BadCase{"[a]\nk = v\nwords # note\n[b\n",
                "/etc/x.conf:3: expected 'key = value' or '[NAME]', not 'words'"}));

TEST(Ini, ErrorShapeIsSharedWithTheCallers) {
  Error e = ini_error("w.conf", 7, "unknown key 'x'");
  EXPECT_EQ(e.kind(), ErrorKind::kConfig);
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(e.message(), "w.conf:7: unknown key 'x'");
}

}  // namespace
}  // namespace pp

#include "base/terminal.h"

#include <gtest/gtest.h>

namespace pp {
namespace {

TEST(TerminalSafe, EscapesWhatATerminalWouldActOn) {
  EXPECT_EQ(terminal_safe("\x1b]0;PWN\a\x1b[2J"), "\\x1b]0;PWN\\x07\\x1b[2J");
  EXPECT_EQ(terminal_safe("a\tb\nc\rd\x7f"), "a\tb\\x0ac\\x0dd\\x7f");
  EXPECT_EQ(terminal_safe("\xc2\x9b"
                          "2J"),
            "\\xc2\\x9b2J")
      << "CSI as UTF-8";
  EXPECT_EQ(terminal_safe("kworker/0:1 \xc3\xa9t\xc3\xa9 \xc2\xa0"),
            "kworker/0:1 \xc3\xa9t\xc3\xa9 \xc2\xa0")
      << "printable UTF-8 as it is";
  EXPECT_EQ(terminal_safe(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_TRUE(is_terminal_safe("kworker/0:1\t\xc3\xa9"));
  EXPECT_FALSE(is_terminal_safe("\x1b[2J"));
  EXPECT_FALSE(is_terminal_safe("\xc2\x9b"));
}

}  // namespace
}  // namespace pp

// perf persistent decode as a user and a script meet it: one register set
// from the command line, a kernel log's machine checks, and the usage errors.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/support/run_command.h"

namespace pp::testing {
namespace {

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// Two errors as the kernel logs them: the QEMU panic (fatal) and a UCNA
// polled from bank 3 through mce-inject.
constexpr const char* kLog =
    "[   20.000001] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: "
    "be00000000000150\n"
    "[   20.000002] mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9c8592eb> "
    "{native_safe_halt+0xb/0x10}\n"
    "[   20.000003] mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86\n"
    "[   20.000004] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 "
    "microcode 1\n"
    "[   31.000001] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 3: b400000000000090\n"
    "[   31.000002] mce: [Hardware Error]: TSC 77 ADDR 5678000\n"
    "[   31.000003] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285041 SOCKET 0 APIC 2 "
    "microcode 1\n";

// `decode --log` on log text gives, for each error, what `decode` gives on
// the same values typed on the command line.
TEST(DecodeCli, LogGivesTheSameResultsAsTheCommandLine) {
  CommandOptions in;
  in.input = kLog;
  CommandResult log = run_pp({"decode", "--log", "--json", "--mcgcap", "0x1000c0a"}, in);
  ASSERT_EQ(log.status, 0) << log.err;
  auto from_log = json_lines(log.out);
  ASSERT_EQ(from_log.size(), 2u) << log.out;

  const std::vector<std::vector<std::string>> same_values = {
      {"decode",  "--json",      "be00000000000150",
       "--cpu",   "0",           "--bank",
       "1",       "--mcgstatus", "5",
       "--addr",  "1234000",     "--misc",
       "86",      "--cs",        "10",
       "--cpuid", "50654",       "--vendor",
       "intel",   "--mcgcap",    "0x1000c0a"},
      {"decode", "--json", "0xb400000000000090", "--cpu", "1", "--bank", "3", "--mcgstatus", "0",
       "--addr", "0x5678000", "--cpuid", "0x50654", "--vendor", "intel", "--mcgcap", "0x1000c0a"},
  };
  for (size_t i = 0; i < 2; i++) {
    CommandResult one = run_pp(same_values[i]);
    ASSERT_EQ(one.status, 0) << one.err;
    nlohmann::json cli = nlohmann::json::parse(one.out);
    // Every key the command line gives must be in the log's result with
    // the same value; the log adds only what the command line cannot give.
    for (auto& [key, value] : cli.items())
      EXPECT_EQ(from_log[i][key], value) << "error " << i << " key " << key;
    for (auto& [key, value] : from_log[i].items()) {
      // "origin": a log's error is decoded as one (kernel-log); the command
      // line's origin is unknown.
      static const std::set<std::string> log_only = {"log_line",  "source",   "time",   "ip",
                                                     "tsc",       "walltime", "apicid", "socketid",
                                                     "microcode", "cs",       "origin"};
      if (!cli.contains(key)) {
        EXPECT_TRUE(log_only.count(key)) << "error " << i << " only the log has " << key;
      }
    }
  }
  EXPECT_EQ(from_log[0]["severity"], "fatal");
  EXPECT_EQ(from_log[0]["log_line"], 1);
  EXPECT_EQ(from_log[1]["severity"], "ucna");
  EXPECT_EQ(from_log[1]["kernel_severity"], "ucna");
  EXPECT_EQ(from_log[1]["log_line"], 5);

  // The text form: one block per error, in log order.
  CommandResult text = run_pp({"decode", "--log", "-", "--mcgcap", "0x1000c0a"}, in);
  ASSERT_EQ(text.status, 0) << text.err;
  size_t first = text.out.find("CPU 0 bank 1: fatal, kernel: panic\n");
  size_t second = text.out.find("CPU 1 bank 3: ucna, kernel: ucna\n");
  EXPECT_NE(first, std::string::npos) << text.out;
  EXPECT_NE(second, std::string::npos) << text.out;
  EXPECT_LT(first, second);
}

TEST(DecodeCli, OneStatusInText) {
  CommandResult r = run_pp({"decode", "9c00000000010135", "--bank", "4", "--cpu", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("CPU 2 bank 4: corrected, kernel: keep\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("error code 0x0135 cache: data read (rrrr=drd), tt=data, ll=01 (L2)"),
            std::string::npos)
      << r.out;
}

TEST(DecodeCli, AmdDeferredWithIpid) {
  CommandResult r = run_pp({"decode", "--json", "--vendor", "amd", "9c2018000000011b", "--ipid",
                            "9600150f00", "--synd", "4d000002", "--bank", "17"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["severity"], "deferred");
  EXPECT_EQ(j["kernel_severity"], "deferred");
  EXPECT_EQ(j["smca_bank_type"], "umc");
  EXPECT_EQ(j["synd"], "0x4d000002");
}

TEST(DecodeCli, BadInputIsAUsageErrorSayingWhatToTry) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const Case cases[] = {
      {{"decode"}, "give the STATUS register to decode"},
      {{"decode", "xyz"}, "STATUS: 'xyz' is not hexadecimal"},
      {{"decode", "10000000000000000"}, "does not fit in 64 bits"},
      {{"decode", "1", "--addr", "0xg"}, "--addr: '0xg' is not hexadecimal"},
      {{"decode", "1", "--vendor", "via"}, "unknown vendor 'via'; give intel or amd"},
      {{"decode", "1", "--cs", "100"}, "--cs: '100' is out of range"},
      {{"decode", "1", "--bank", "-1"}, "--bank"},
      {{"decode", "1", "2"}, "give one STATUS register"},
      {{"decode", "--log", "a", "b"}, "give at most one log FILE"},
  };
  for (const Case& c : cases) {
    CommandResult r = run_pp(c.args);
    EXPECT_EQ(r.status, 1) << c.args.back();
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args.back() << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  CommandResult j = run_pp({"decode", "--json", "xyz"});
  EXPECT_EQ(j.status, 1);
  nlohmann::json e = nlohmann::json::parse(j.out);
  EXPECT_EQ(e["error"]["kind"], "usage");
  EXPECT_EQ(e["error"]["exit_status"], 1);
}

TEST(DecodeCli, LogProblemsNameTheLineAndTheRestIsDecoded) {
  CommandOptions in;
  in.input =
      "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 1: nothex\n"
      "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 2: 9000000000000000\n";
  CommandResult r = run_pp({"decode", "--log"}, in);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("perf persistent decode: line 1: malformed machine-check line"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("CPU 0 bank 2: corrected"), std::string::npos) << r.out;

  CommandResult j = run_pp({"decode", "--log", "--json"}, in);
  EXPECT_EQ(j.status, 1);
  auto lines = json_lines(j.out);
  ASSERT_EQ(lines.size(), 2u) << j.out;
  EXPECT_EQ(lines[0]["error"]["kind"], "usage");
  EXPECT_EQ(lines[1]["bank"], 2);
}

// A log is anyone's file, and the kernel's log holds what users chose: its
// words reach a terminal escaped (a title-setting OSC and a screen clear
// become "\x1b..."), in the decode and in the problems; JSON keeps them.
TEST(DecodeCli, LogTextReachesTheTerminalEscaped) {
  CommandOptions in;
  in.input =
      "mce: [Hardware Error]: CPU 2: Machine Check Exception: 5 Bank 7: b400000000000090\n"
      "mce: [Hardware Error]: Machine check: \x1b]0;PWN\x07\x1b[2J\n"
      "EDAC MC0: 1 CE memory read \x1b[2Jerror on DIMM\x1b]0;PWN\x07 (channel:1 slot:0 "
      "page:0x8a6c1 offset:0xa00 grain:32 syndrome:0x0 - err_code:\x1b[2J)\n"
      "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 1: \x1b]0;PWN\x07\n";
  CommandResult r = run_pp({"decode", "--log"}, in);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the kernel said: \\x1b]0;PWN\\x07\\x1b[2J"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on DIMM\\x1b]0;PWN\\x07"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("\\x1b]0;PWN\\x07"), std::string::npos) << r.err;
  CommandResult j = run_pp({"decode", "--log", "--json"}, in);
  EXPECT_NE(j.out.find("\\u001b]0;PWN\\u0007"), std::string::npos) << j.out;
}

TEST(DecodeCli, LogFileThatCannotBeReadIsRefused) {
  CommandResult r = run_pp({"decode", "--log", "/nonexistent/kern.log"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot open the log /nonexistent/kern.log: No such file"),
            std::string::npos)
      << r.err;
}

TEST(DecodeCli, LogWithoutMachineChecksSaysSo) {
  CommandOptions in;
  in.input = "[    0.000000] Linux version 6.1.0\n";
  CommandResult r = run_pp({"decode", "--log"}, in);
  EXPECT_EQ(r.status, 4);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("no hardware error that decode can read in standard input"),
            std::string::npos)
      << r.err;
  // Under --json: one error object and the same status, never an empty success.
  CommandResult j = run_pp({"decode", "--log", "--json"}, in);
  EXPECT_EQ(j.status, 4);
  auto lines = json_lines(j.out);
  ASSERT_EQ(lines.size(), 1u) << j.out;
  EXPECT_EQ(lines[0]["error"]["kind"], "not-found");
  EXPECT_EQ(lines[0]["error"]["exit_status"], 4);
}

}  // namespace
}  // namespace pp::testing

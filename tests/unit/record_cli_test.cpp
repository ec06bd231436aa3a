// record's command line: perf's habits it takes, the perf record options it
// refuses (each with its reason, and each in the man page), and --json
// errors in the one error shape.
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

#include "record/record_options.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

std::string man_page() {
  std::ifstream in(source_dir() + "/Documentation/perf-persistent-record.txt");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RecordCli, RefusedOptionsSayWhyAndAreDocumented) {
  std::string page = man_page();
  std::string help = run_pp({"record", "--help"}).out;
  for (const record::RefusedOption& r : record::kRefusedOptions) {
    std::vector<std::string> spellings;
    if (r.short_name)
      spellings.push_back(std::string("-") + r.short_name);
    if (!r.long_name.empty())
      spellings.push_back("--" + std::string(r.long_name));
    for (const std::string& spelled : spellings) {
      CommandResult c = run_pp({"record", "-e", "persistent/x/", spelled, "1"});
      EXPECT_EQ(c.status, 1) << spelled;
      EXPECT_NE(
          c.err.find("option '" + spelled + "' does not apply here: " + std::string(r.reason)),
          std::string::npos)
          << c.err;
      EXPECT_NE(page.find("`" + spelled + "`"), std::string::npos)
          << spelled << " is not in the man page's table of refused options";
      if (spelled.size() > 2) {
        EXPECT_EQ(help.find(spelled + " "), std::string::npos) << spelled << " is in --help";
      }
    }
  }
}

TEST(RecordCli, NewOptionsAreInHelp) {
  std::string help = run_pp({"record", "--help"}).out;
  for (const char* opt :
       {"-a, --all-cpus", "--switch-output[=<signal or size[BKMG] or time[smhd]>]",
        "--switch-max-files <n>", "--max-size <size>", "-r, --realtime <prio>", "-v, --verbose",
        "--json[=<file>]"})
    EXPECT_NE(help.find(opt), std::string::npos) << opt << " in:\n" << help;
}

TEST(RecordCli, BadValuesAreUsageErrors) {
  struct {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {{"--switch-output=10x"}, "give 'signal'"},
      {{"--max-size=0"}, "give a size above 0"},
      {{"--switch-max-files=3"}, "give both"},
      {{"-r", "100"}, "from 1 to 99"},
      {{"--switch-output", "-o", "-"}, "cannot be switched"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"record", "-e", "persistent/x/", "--run-dir", "/nonexistent"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CommandResult r = run_pp(args);
    EXPECT_EQ(r.status, 1) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

TEST(RecordCli, JsonErrorsAreTheOneShape) {
  TempDir dir;
  std::string file = dir.path("s.json");
  CommandResult r = run_pp({"record", "-e", "persistent/x/", "-F", "99", "--json=" + file});
  EXPECT_EQ(r.status, 1);
  std::ifstream in(file);
  auto doc = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["error"]["kind"], "usage");
  EXPECT_EQ(doc["error"]["exit_status"], 1);
  r = run_pp({"record", "--json", "-c", "5"});
  EXPECT_EQ(r.status, 1);
  auto err = nlohmann::json::parse(r.err, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << r.err;
  EXPECT_EQ(err["error"]["kind"], "usage");
}

}  // namespace
}  // namespace pp::testing

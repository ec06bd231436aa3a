// The program as a user and a script meet it: dispatch, help, version, and
// the agreement between the verb table, each verb's --help and its man page.
#include <fstream>
#include <gtest/gtest.h>
#include <regex>
#include <set>
#include <sstream>

#include "base/result.h"
#include "base/strings.h"
#include "mce/decode.h"
#include "report/trace_report.h"
#include "tests/support/run_command.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

std::vector<std::pair<std::string, std::string>> verbs() {
  CommandResult r = run_pp({"--list-cmds"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    size_t tab = line.find('\t');
    EXPECT_NE(tab, std::string::npos) << line;
    out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Cli, NoVerbPrintsUsageAndFails) {
  CommandResult r = run_pp({});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Usage: perf persistent"), std::string::npos);
  for (const auto& [verb, summary] : verbs())
    EXPECT_NE(r.err.find("   " + verb), std::string::npos) << verb;
}

TEST(Cli, HelpListsEveryVerb) {
  for (const char* flag : {"--help", "-h", "help"}) {
    CommandResult r = run_pp({flag});
    EXPECT_EQ(r.status, 0) << flag;
    for (const auto& [verb, summary] : verbs())
      EXPECT_NE(r.out.find(summary), std::string::npos) << flag << ": " << verb;
  }
}

TEST(Cli, UnknownVerbSuggestsTheNearest) {
  CommandResult r = run_pp({"hlep"});
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("'hlep' is not a perf persistent command"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Did you mean 'help'?"), std::string::npos) << r.err;

  r = run_pp({"zzzzzzzz"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err.find("Did you mean"), std::string::npos) << r.err;
}

TEST(Cli, VerbsMatchExactlyWithoutPrefixes) {
  CommandResult r = run_pp({"vers"});
  EXPECT_EQ(r.status, 1) << "a prefix must not run a verb";
}

TEST(Cli, VersionNamesRevisionAndLibraries) {
  for (const char* flag : {"--version", "version"}) {
    CommandResult r = run_pp({flag});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(std::regex_search(
        r.out, std::regex("^perf-persistent version [0-9]+\\.[0-9]+\\.[0-9]+ \\(")))
        << r.out;
    EXPECT_NE(r.out.find("libtraceevent "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("libelf "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("nlohmann_json "), std::string::npos) << r.out;
  }
}

TEST(Cli, HelpVerbAndDashDashHelpAgree) {
  for (const auto& [verb, summary] : verbs()) {
    CommandResult a = run_pp({"help", verb});
    CommandResult b = run_pp({verb, "--help"});
    EXPECT_EQ(a.status, 0) << verb << ": " << a.err;
    EXPECT_EQ(b.status, 0) << verb << ": " << b.err;
    EXPECT_EQ(a.out, b.out) << verb;
    EXPECT_NE(b.out.find("Usage: perf persistent " + verb), std::string::npos) << b.out;
  }
  EXPECT_EQ(run_pp({"help", "nosuchverb"}).status, 1);
}

// Each verb has Documentation/perf-persistent-<verb>.txt whose NAME line is
// the table's summary, and whose OPTIONS section lists exactly the options
// that --help prints.
TEST(Cli, ManPagesAgreeWithTableAndHelp) {
  for (const auto& [verb, summary] : verbs()) {
    std::string path = source_dir() + "/Documentation/perf-persistent-" + verb + ".txt";
    std::string page = read_file(path);
    ASSERT_FALSE(page.empty()) << "no man page " << path;
    std::string name_line = "perf-persistent-" + verb + " - " + summary + "\n";
    EXPECT_NE(page.find("NAME\n----\n" + name_line), std::string::npos)
        << path << " must have the NAME line: " << name_line;

    std::set<std::string> in_help, in_page;
    std::regex help_opt("^    (?:-., |    )--([a-z0-9-]+)");
    std::istringstream help(run_pp({verb, "--help"}).out);
    for (std::string line; std::getline(help, line);) {
      std::smatch m;
      if (std::regex_search(line, m, help_opt))
        in_help.insert(m[1]);
    }
    // perf's man page layout: each spelling of an option on its own line
    // ending in "::", e.g. "-e::" then "--event=<event>::".
    // An optional value is written as perf writes it: "--switch-output[=<mode>]::".
    std::regex page_opt("^--([a-z0-9-]+)(?:\\[?=[^:]*)?::$");
    std::istringstream text(page);
    for (std::string line; std::getline(text, line);) {
      std::smatch m;
      if (std::regex_search(line, m, page_opt))
        in_page.insert(m[1]);
    }
    EXPECT_EQ(in_help, in_page) << verb << ": --help and " << path << " list different options";
  }
}

// perf-persistent(1), the page `perf persistent --help` opens under perf,
// lists every command with the table's summary and its own page.
TEST(Cli, OverviewPageListsEveryCommand) {
  std::string page = read_file(source_dir() + "/Documentation/perf-persistent.txt");
  size_t begin = page.find("\nCOMMANDS\n--------\n");
  ASSERT_NE(begin, std::string::npos) << "no COMMANDS section";
  size_t end = page.find("\n--", begin + 20);
  std::string commands = page.substr(begin, end == std::string::npos ? end : end - begin);
  ASSERT_FALSE(verbs().empty());
  for (const auto& [verb, summary] : verbs()) {
    std::string item =
        "\n*" + verb + "*::\n\t" + summary + "; *perf-persistent-" + verb + "*(1).\n";
    EXPECT_NE(commands.find(item), std::string::npos)
        << "perf-persistent.txt's COMMANDS must list:" << item;
  }
}

// The sets the bash completion offers are the program's: one line of
// contrib/bash-completion/perf-persistent each, NAME=$'a\nb\n...'.
std::vector<std::string> completion_set(const std::string& name) {
  std::string script = read_file(source_dir() + "/contrib/bash-completion/perf-persistent");
  std::smatch m;
  std::regex line("\n" + name + "=\\$'([^']*)'\n");
  if (!std::regex_search(script, m, line))
    return {};
  std::vector<std::string> out;
  std::string words = m[1];
  for (std::string_view w : split(words, '\\'))
    out.emplace_back(w.starts_with("n") && !out.empty() ? w.substr(1) : w);
  return out;
}

TEST(Cli, CompletionSetsAreTheProgramsSets) {
  std::vector<std::string> severities, sort_keys;
  for (std::string_view s : mce::mce_severities_by_rank())
    severities.emplace_back(s);
  for (std::string_view k : report::sort_keys())
    sort_keys.emplace_back(k);
  EXPECT_EQ(completion_set("_perf_persistent_severities"), severities);
  EXPECT_EQ(completion_set("_perf_persistent_report_sort_keys"), sort_keys);
}

// The EXIT STATUS section of a man page: each "N::" or "N (kind)::" label.
std::vector<std::pair<std::string, std::string>> exit_statuses(const std::string& page) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t begin = page.find("\nEXIT STATUS\n-----------\n");
  if (begin == std::string::npos)
    return out;
  size_t end = page.find("\n--", begin + 28);  // the next section's underline
  std::istringstream text(page.substr(begin, end == std::string::npos ? end : end - begin));
  std::regex label("^([0-9]+|any)(?: \\(([a-z-]+)\\))?::$");
  for (std::string line; std::getline(text, line);) {
    std::smatch m;
    if (std::regex_match(line, m, label))
      out.emplace_back(m[1], m[2]);
  }
  return out;
}

// perf-persistent(1) holds the one table of exit statuses, the same as
// kErrorKinds; each verb's page lists only statuses from it.
TEST(Cli, ExitStatusesAgreeWithTheOneTable) {
  std::string main_page = read_file(source_dir() + "/Documentation/perf-persistent.txt");
  std::vector<std::pair<std::string, std::string>> expected = {{"0", ""}};
  for (const ErrorKindInfo& info : kErrorKinds)
    expected.emplace_back(std::to_string(info.exit_status), std::string(info.name));
  EXPECT_EQ(exit_statuses(main_page), expected);
  std::set<std::string> documented;
  for (const auto& [status, kind] : expected)
    documented.insert(status);
  for (const auto& [verb, summary] : verbs()) {
    std::string path = source_dir() + "/Documentation/perf-persistent-" + verb + ".txt";
    auto listed = exit_statuses(read_file(path));
    EXPECT_FALSE(listed.empty()) << path << " has no EXIT STATUS";
    for (const auto& [status, kind] : listed) {
      EXPECT_NE(status, "127") << path;
      if (status != "any") {
        EXPECT_TRUE(documented.count(status)) << path << " lists " << status;
      }
    }
  }
}

}  // namespace
}  // namespace pp::testing

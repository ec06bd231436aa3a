// The differential test of `perf persistent attr` against the real perf 6.1:
// every case of tests/diff/corpus.txt (the format is described there and in
// tests/support/attr_diff.h) is one test, named after its line.
//
// Both tools read a fake PMU tree: the machine's PMUs (links to /sys/devices)
// plus tests/diff/pmus/, bind-mounted over /sys/bus/event_source/devices in a
// private mount namespace (`unshare -m`, root), so nothing outside the test
// sees it. expect and reject cases give ours the tree through --sysfs-root.
//
// A case listed in tests/diff/known-mismatches.txt may differ (its
// differences are printed, and it passes); once it matches, it fails until
// it is taken off the list, so the list only shrinks.
//
// PP_ATTR_DIFF_VERBOSE=1 prints perf's and ours' events for every case.
#include "tests/support/attr_diff.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "base/strings.h"
#include "sys/perf_abi_attr.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDevices = "bus/event_source/devices";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<CorpusCase> corpus() {
  auto cases = read_corpus(read_text(source_dir() + "/tests/diff/corpus.txt"));
  if (!cases.ok()) {
    // A broken corpus is a failure, not an empty suite.
    CorpusCase broken;
    broken.mode = "broken";
    broken.text = cases.error().message();
    return {broken};
  }
  return *cases;
}

// "stat:any-order" -> "stat" and {"any-order"}.
std::pair<std::string, std::set<std::string>> split_mode(const std::string& mode) {
  std::vector<std::string_view> parts = split(mode, ':');
  std::set<std::string> options;
  for (size_t i = 1; i < parts.size(); i++)
    options.emplace(parts[i]);
  return {std::string(parts[0]), options};
}

std::string case_key(const CorpusCase& c) {
  return c.mode + " " + c.text;
}

// tests/diff/known-mismatches.txt: "MODE STRING", '#' starts a comment.
std::set<std::string> known_mismatches() {
  std::set<std::string> keys;
  std::string text = read_text(source_dir() + "/tests/diff/known-mismatches.txt");
  for (std::string_view line : split(text, '\n')) {
    line = trim(line.substr(0, line.find('#')));
    if (!line.empty()) {
      size_t space = line.find_first_of(" \t");
      keys.insert(std::string(line.substr(0, space)) + " " + std::string(trim(line.substr(space))));
    }
  }
  return keys;
}

// The PMU trees, built once for the whole suite.
class Trees {
 public:
  Trees() {
    perf_tree_ = dir_.path("perf-view");
    ours_tree_ = dir_.path("ours-view");
    empty_run_dir_ = dir_.path("run");
    fs::create_directories(empty_run_dir_);
    build(perf_tree_, {"pmus"});
    build(ours_tree_, {"pmus", "pmus-ours"});
  }

  // The root (for --sysfs-root) whose devices/ holds the machine's PMUs and
  // the fake ones, plus those of pmus-bad/ that `text` names.
  std::string ours_root(const std::string& text) {
    std::vector<std::string> bad;
    for (const auto& entry : fs::directory_iterator(source_dir() + "/tests/diff/pmus-bad"))
      if (text.find(entry.path().filename().string()) != std::string::npos)
        bad.push_back(entry.path().filename().string());
    if (bad.empty())
      return ours_tree_;
    std::string key = join(bad, "+");
    std::string root = dir_.path("ours-view+" + key);
    if (!fs::exists(root)) {
      build(root, {"pmus", "pmus-ours"});
      for (const std::string& name : bad)
        fs::copy(source_dir() + "/tests/diff/pmus-bad/" + name, root + "/" + kDevices + "/" + name,
                 fs::copy_options::recursive);
    }
    return root;
  }

  std::string perf_devices() const { return perf_tree_ + "/" + kDevices; }
  const std::string& empty_run_dir() const { return empty_run_dir_; }

 private:
  static void build(const std::string& root, const std::vector<std::string>& fake_dirs) {
    std::string devices = root + "/" + kDevices;
    fs::create_directories(devices);
    std::set<std::string> fake;
    for (const std::string& d : fake_dirs)
      for (const auto& entry : fs::directory_iterator(source_dir() + "/tests/diff/" + d)) {
        fake.insert(entry.path().filename().string());
        fs::copy(entry.path(), devices + "/" + entry.path().filename().string(),
                 fs::copy_options::recursive);
      }
    for (const auto& entry : fs::directory_iterator("/sys/bus/event_source/devices")) {
      std::string name = entry.path().filename().string();
      if (!fake.count(name))
        fs::create_directory_symlink(fs::canonical(entry.path()), devices + "/" + name);
    }
  }

  TempDir dir_;
  std::string perf_tree_, ours_tree_, empty_run_dir_;
};

// argv with `devices` bind-mounted over /sys/bus/event_source/devices, in a
// private mount namespace that goes away with the command. `merge` sends
// stderr to stdout, keeping the order perf wrote its lines in.
std::vector<std::string> in_namespace(const std::string& devices,
                                      const std::vector<std::string>& argv, bool merge) {
  std::string script = "mount --bind \"$0\" /sys/bus/event_source/devices || exit 125; exec \"$@\"";
  if (merge)
    script += " 2>&1";
  std::vector<std::string> full = {"unshare", "--mount", "--propagation", "private",
                                   "sh",      "-c",      script,          devices};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

struct Runs {
  CommandResult json, text;
};

class AttrDiff : public ::testing::TestWithParam<CorpusCase> {
 public:
  static void SetUpTestSuite() {
    if (geteuid() != 0)
      return;
    trees_ = new Trees();
    known_ = new std::set<std::string>(known_mismatches());
    seen_known_ = new std::set<std::string>();
  }

  static void TearDownTestSuite() {
    delete trees_;
    trees_ = nullptr;
    delete known_;
    known_ = nullptr;
    delete seen_known_;
    seen_known_ = nullptr;
  }

 protected:
  // perf-persistent attr, in the namespace (stat, record) or on a tree given
  // with --sysfs-root (expect, reject); text and --json.
  static Runs run_ours(const CorpusCase& c, bool in_ns) {
    std::vector<std::string> text = {binary_path(), "attr", "--run-dir", trees_->empty_run_dir()};
    if (!in_ns)
      text.insert(text.end(), {"--sysfs-root", trees_->ours_root(c.text)});
    text.insert(text.end(), {"-e", c.text});
    std::vector<std::string> json = text;
    json.insert(json.begin() + 2, "--json");
    if (in_ns) {
      text = in_namespace(trees_->perf_devices(), text, false);
      json = in_namespace(trees_->perf_devices(), json, false);
    }
    return Runs{run_command(json), run_command(text)};
  }

  static Trees* trees_;
  static std::set<std::string>* known_;
  static std::set<std::string>* seen_known_;
};

Trees* AttrDiff::trees_ = nullptr;
std::set<std::string>* AttrDiff::known_ = nullptr;
std::set<std::string>* AttrDiff::seen_known_ = nullptr;

// The attr blocks of our text output must be what the JSON says, event by
// event: the two outputs are one model printed twice.
std::vector<std::string> text_agrees_with_json(const Runs& r, const Shown& from_json) {
  std::vector<std::string> problems;
  if (r.text.status != r.json.status)
    problems.push_back("exit status: text " + std::to_string(r.text.status) + ", --json " +
                       std::to_string(r.json.status));
  if (from_json.rejected) {
    if (r.text.err.empty())
      problems.push_back("the text output refuses the string without a message on stderr");
    return problems;
  }
  std::vector<sys::EventAttr> blocks;
  std::vector<std::string_view> lines = split(r.text.out, '\n');
  for (size_t i = 0; i < lines.size(); i++) {
    if (lines[i] != sys::kAttrBlockHeader)
      continue;
    std::string fields;
    for (i++; i < lines.size() && lines[i] != sys::kAttrBlockRule; i++)
      fields += std::string(lines[i]) + "\n";
    auto attr = sys::read_attr_fields(fields);
    if (!attr.ok()) {
      problems.push_back("text output: " + attr.error().message());
      return problems;
    }
    blocks.push_back(*attr);
  }
  if (blocks.size() != from_json.events.size()) {
    problems.push_back("text output has " + std::to_string(blocks.size()) +
                       " attr blocks, --json " + std::to_string(from_json.events.size()) +
                       " events");
    return problems;
  }
  for (size_t i = 0; i < blocks.size(); i++)
    if (!(blocks[i] == from_json.events[i].attr))
      problems.push_back("event " + std::to_string(i) + ": the text block differs from --json");
  return problems;
}

// Sorts the events of both sides the same way, renumbering group leaders.
void sort_events(Shown* s) {
  std::vector<size_t> order(s->events.size());
  for (size_t i = 0; i < order.size(); i++)
    order[i] = i;
  auto key = [&](size_t i) {
    const ShownEvent& e = s->events[i];
    return std::make_pair(std::vector<uint64_t>(std::begin(e.attr.words), std::end(e.attr.words)),
                          e.name.value_or(""));
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<int> new_index(order.size());
  for (size_t i = 0; i < order.size(); i++)
    new_index[order[i]] = int(i);
  std::vector<ShownEvent> sorted;
  for (size_t i : order) {
    ShownEvent e = s->events[i];
    if (e.leader >= 0)
      e.leader = new_index[size_t(e.leader)];
    sorted.push_back(e);
  }
  s->events = sorted;
}

std::string describe(const char* who, const Shown& s) {
  std::ostringstream out;
  out << who << ": ";
  if (s.rejected) {
    out << "rejected: " << s.message << "\n";
    return out.str();
  }
  out << s.events.size() << " event(s)" << (s.stopped_early ? " (perf stopped early)" : "") << "\n";
  for (size_t i = 0; i < s.events.size(); i++) {
    const ShownEvent& e = s.events[i];
    out << "  event " << i << " '" << e.name.value_or("?") << "' leader " << e.leader << "\n";
    std::string block = sys::attr_block(e.attr);
    size_t begin = block.find('\n', block.find(sys::kAttrBlockHeader)) + 1;
    size_t end = block.rfind(sys::kAttrBlockRule);
    out << block.substr(begin, end - begin);
  }
  return out.str();
}

TEST_P(AttrDiff, MatchesPerf) {
  const CorpusCase& c = GetParam();
  ASSERT_NE(c.mode, "broken") << "tests/diff/corpus.txt: " << c.text;
  PP_SKIP_UNLESS(geteuid() == 0, "the differential test needs root for unshare -m");
  ASSERT_TRUE(trees_);
  auto [mode, options] = split_mode(c.mode);
  std::string where =
      "tests/diff/corpus.txt:" + std::to_string(c.line) + ": " + mode + " '" + c.text + "'";

  Shown reference;
  DiffMode diff_mode = DiffMode::kExpect;
  std::string perf_output;
  if (mode == "stat" || mode == "record") {
    std::string data = trees_->empty_run_dir() + "/../perf.data";
    std::vector<std::string> perf = {perf_program(), mode, "-vv", "-e", c.text};
    if (mode == "record")
      perf.insert(perf.end(), {"-o", data});
    perf.push_back("true");
    CommandResult p = run_command(in_namespace(trees_->perf_devices(), perf, true));
    ASSERT_NE(p.status, 125) << where << ": could not bind-mount the PMU tree: " << p.out;
    ASSERT_NE(p.status, 127) << where << ": cannot run " << perf_program() << ": " << p.out;
    perf_output = p.out;
    auto shown =
        mode == "stat" ? read_perf_stat(p.out, p.status) : read_perf_record(p.out, p.status);
    ASSERT_TRUE(shown.ok()) << where << ": " << shown.error().message() << "\nperf printed:\n"
                            << p.out;
    reference = *shown;
    diff_mode = mode == "stat" ? DiffMode::kStat : DiffMode::kRecord;
  } else if (mode == "expect") {
    auto shown = read_expectation(c.expectation);
    ASSERT_TRUE(shown.ok()) << where << ": " << shown.error().message();
    reference = *shown;
  } else {
    ASSERT_EQ(mode, "reject") << where;
  }

  Runs r = run_ours(c, mode == "stat" || mode == "record");
  auto ours = read_attr_json(r.json.out, r.json.status);
  ASSERT_TRUE(ours.ok()) << where << ": " << ours.error().message()
                         << "\nperf-persistent attr --json printed:\n"
                         << r.json.out << r.json.err;

  std::vector<std::string> diffs, notes;
  if (mode == "reject") {
    if (!ours->rejected) {
      diffs.push_back("ours accepts it (" + std::to_string(ours->events.size()) +
                      " event(s)); it must refuse it");
    } else {
      for (std::string_view part : split(c.expectation, '&')) {
        part = trim(part);
        if (!part.empty() && ours->message.find(part) == std::string::npos)
          diffs.push_back("ours refuses it, but its message does not say '" + std::string(part) +
                          "': " + ours->message);
      }
    }
  }
  for (const std::string& problem : text_agrees_with_json(r, *ours))
    diffs.push_back("ours, text against --json: " + problem);
  if (mode != "reject") {
    if (options.count("any-order")) {
      sort_events(&reference);
      sort_events(&*ours);
    }
    std::vector<std::string> more = diff_shown(reference, *ours, diff_mode, &notes);
    diffs.insert(diffs.end(), more.begin(), more.end());
  }

  const char* ref_name = mode == "expect" ? "expected" : "perf";
  std::string detail = "\n" + describe(ref_name, reference) + describe("ours", *ours);
  if (std::getenv("PP_ATTR_DIFF_VERBOSE"))
    std::cout << where << detail;
  for (const std::string& n : notes)
    std::cout << where << ": note: " << n << "\n";

  std::string all;
  for (const std::string& d : diffs)
    all += "  " + d + "\n";
  bool known = known_->count(case_key(c)) > 0;
  if (known) {
    EXPECT_FALSE(diffs.empty()) << where
                                << ": matches now; take it off tests/diff/known-mismatches.txt";
    if (!diffs.empty())
      std::cout << where << ": known mismatch (tests/diff/known-mismatches.txt):\n" << all;
    return;
  }
  EXPECT_TRUE(diffs.empty()) << where << ": perf-persistent attr differs:\n"
                             << all << detail << "reproduce: tests/diff/run-one " << mode << " '"
                             << c.text << "'";
}

std::string case_name(const ::testing::TestParamInfo<CorpusCase>& info) {
  std::string name = "L" + std::to_string(info.param.line) + "_";
  for (char ch : info.param.mode + "_" + info.param.text) {
    if (name.size() > 60)
      break;
    name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, AttrDiff, ::testing::ValuesIn(corpus()), case_name);

// Every listed known mismatch names a case of the corpus.
TEST(AttrDiffCorpus, KnownMismatchesAreCorpusCases) {
  std::set<std::string> cases;
  for (const CorpusCase& c : corpus())
    cases.insert(case_key(c));
  for (const std::string& key : known_mismatches())
    EXPECT_TRUE(cases.count(key)) << "tests/diff/known-mismatches.txt: '" << key
                                  << "' is not in tests/diff/corpus.txt";
}

// The corpus is what issue 3 asks for: at least 200 strings checked against
// perf itself, and each case once.
TEST(AttrDiffCorpus, HasTwoHundredStringsAgainstPerfAndNoDuplicates) {
  std::set<std::string> seen;
  size_t against_perf = 0;
  for (const CorpusCase& c : corpus()) {
    ASSERT_NE(c.mode, "broken") << c.text;
    EXPECT_TRUE(seen.insert(case_key(c)).second)
        << "tests/diff/corpus.txt:" << c.line << ": duplicate case " << case_key(c);
    std::string mode = split_mode(c.mode).first;
    if (mode == "stat" || mode == "record")
      against_perf++;
  }
  EXPECT_GE(against_perf, 200u);
}

}  // namespace
}  // namespace pp::testing

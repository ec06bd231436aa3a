#include "watch/match.h"

#include <gtest/gtest.h>

#include "mce/decode.h"
#include "mce/ras_events.h"
#include "report/trace_decoder.h"
#include "watch/record.h"

namespace pp::watch {
namespace {

using nlohmann::ordered_json;

// A machine check's record as record_json() shapes it.
ordered_json mce_record(std::string_view severity, uint64_t bank = 7, int cpu = 1) {
  ordered_json r = {{"origin", "live"},
                    {"event", "mce_record"},
                    {"tracepoint", "mce:mce_record"},
                    {"cpu", cpu},
                    {"pid", 0},
                    {"fields", {{"bank", bank}, {"status", 13690942867206766928ull}}},
                    {"mce",
                     {{"status", "0xbe00000000000150"},
                      {"addr", "0x12345000"},
                      {"cpu", cpu},
                      {"bank", bank},
                      {"status_bits", {"VAL", "UC", "EN", "MISCV", "ADDRV", "PCC"}},
                      {"error_class", "memory"},
                      {"severity", severity},
                      {"kernel_severity", "panic"}}},
                    {"key", "k"}};
  return r;
}

ordered_json switch_record() {
  return {{"origin", "live"},
          {"event", "ctxsw"},
          {"tracepoint", "sched:sched_switch"},
          {"cpu", 3},
          {"pid", 42},
          {"comm", "bash"},
          {"fields", {{"prev_comm", "kworker/0:1"}, {"prev_pid", 17}, {"next_pid", -1}}},
          {"key", "k2"}};
}

bool eval(std::string_view text, const ordered_json& record) {
  auto m = parse_match(text);
  EXPECT_TRUE(m.ok()) << text << ": " << m.error().message();
  return m.ok() && record_matches(*m, record);
}

struct Case {
  const char* text;
  bool mce;    // against mce_record("fatal", 7, 1)
  bool sched;  // against switch_record()
};

class MatchCases : public ::testing::TestWithParam<Case> {};

TEST_P(MatchCases, Decides) {
  const Case& c = GetParam();
  EXPECT_EQ(eval(c.text, mce_record("fatal")), c.mce) << c.text << " on the machine check";
  EXPECT_EQ(eval(c.text, switch_record()), c.sched) << c.text << " on sched_switch";
}

INSTANTIATE_TEST_SUITE_P(
    Operators, MatchCases,
    ::testing::Values(
        // each operator, numbers
        Case{"bank == 7", true, false}, Case{"bank != 7", false, false},
        Case{"bank != 8", true, false}, Case{"bank < 8", true, false},
        Case{"bank < 7", false, false}, Case{"bank <= 7", true, false},
        Case{"bank > 6", true, false}, Case{"bank > 7", false, false},
        Case{"bank >= 7", true, false}, Case{"bank == 0x7", true, false},
        Case{"next_pid < 0", false, true}, Case{"next_pid == -1", false, true},
        Case{"prev_pid >= 17.0", false, true}, Case{"prev_pid > 16.5", false, true},
        // text
        Case{"comm == bash", false, true}, Case{"comm == 'bash'", false, true},
        Case{"comm != zsh", false, true}, Case{"comm < c", false, true},
        Case{"tracepoint == \"mce:mce_record\"", true, false},
        // ~: substring, glob, numbers as text, arrays
        Case{"prev_comm ~ kworker", false, true}, Case{"prev_comm ~ 'kworker/*'", false, true},
        Case{"prev_comm ~ 'kw?rker/[0-9]:1'", false, true}, Case{"prev_comm ~ '*:2'", false, false},
        Case{"prev_pid ~ 1", false, true}, Case{"status_bits ~ PCC", true, false},
        Case{"status_bits == UC", true, false}, Case{"status_bits != AR", true, false},
        Case{"status_bits != PCC", false, false}, Case{"error_class ~ mem", true, false},
        // hex registers (strings in the JSON) compare as numbers
        Case{"status == 0xbe00000000000150", true, false},
        Case{"status == 0xBE00000000000150", true, false},
        Case{"status > 0xbe00000000000000", true, false},
        Case{"status < 0xbe00000000000000", false, false}, Case{"addr >= 305418240", true, false},
        Case{"addr == 0x12345001", false, false},
        // quoted numbers are text
        Case{"status == '0xBE00000000000150'", false, false},
        // missing fields: no comparison matches, != included; ! takes them
        Case{"severity != corrected", true, false}, Case{"!(bank == 7)", false, true},
        Case{"nosuchfield == 1", false, false}, Case{"nosuchfield != 1", false, false},
        // mce first, then the tracepoint's fields, then the record's own
        Case{"cpu == 1", true, false}, Case{"cpu == 3", false, true},
        Case{"origin == live && event == ctxsw", false, true},
        // precedence: && over ||, ! over both, parentheses first
        Case{"bank == 7 || comm == bash && pid == 0", true, false},
        Case{"(bank == 7 || comm == bash) && pid == 42", false, true},
        Case{"bank == 8 || comm == bash && pid == 42", false, true},
        Case{"!bank == 7 && comm == bash", false, true},
        Case{"!(bank == 7 || comm == bash)", false, false}, Case{"!!(bank == 7)", true, false},
        Case{"((((bank == 7))))", true, false}, Case{"  ", true, true}, Case{"", true, true}));

TEST(Match, SeverityComparesByRank) {
  for (std::string_view sev : {"ucna", "srao", "srar", "uncorrected", "fatal"})
    EXPECT_TRUE(eval("severity >= ucna", mce_record(sev))) << sev;
  for (std::string_view sev : {"invalid", "corrected", "deferred"})
    EXPECT_FALSE(eval("severity >= ucna", mce_record(sev))) << sev;
  EXPECT_TRUE(eval("severity > uncorrected", mce_record("fatal")));
  EXPECT_FALSE(eval("severity > fatal", mce_record("fatal")));
  EXPECT_TRUE(eval("severity < srao", mce_record("corrected")))
      << "by rank: alphabetically 'corrected' < 'srao' too, so check the other way";
  EXPECT_FALSE(eval("severity < corrected", mce_record("srao")))
      << "alphabetically 'srao' > 'corrected': the rank must decide, not the text";
  EXPECT_TRUE(eval("severity > deferred", mce_record("corrected")) == false);
  EXPECT_TRUE(eval("severity ~ rr", mce_record("corrected"))) << "~ matches the text";
  EXPECT_TRUE(eval("kernel_severity >= uc", mce_record("fatal")));
  EXPECT_FALSE(eval("kernel_severity < keep", mce_record("fatal")));
}

TEST(Match, ARealDecodedMachineCheck) {
  mce::MceRegisters regs;
  regs.status = 0xbe00000000000150;
  regs.mcgstatus = 0x5;
  regs.bank = 1;
  regs.cpu = 2;
  regs.addr = 0x1234;
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.cpu = 2;
  r.mce = mce::decode_mce(regs);
  r.key = "x";
  ordered_json j = record_json(r);
  EXPECT_TRUE(eval("severity >= ucna && bank == 1 && status_bits ~ PCC", j)) << j.dump();
  EXPECT_TRUE(eval("status == 0xbe00000000000150 && addr == 0x1234", j)) << j.dump();
  EXPECT_FALSE(eval("severity == corrected", j));
}

TEST(Match, Accessors) {
  auto m = parse_match("bank == 7 && (severity >= ucna || bank > 2)");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->text(), "bank == 7 && (severity >= ucna || bank > 2)");
  EXPECT_FALSE(m->empty());
  EXPECT_EQ(m->keys(), (std::vector<std::string>{"bank", "severity"}));
  auto all = parse_match("");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

struct ErrorCase {
  const char* text;
  size_t column;
  const char* expected;  // the part after "at column N: "
};

class MatchErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MatchErrors, SaysWhereAndWhat) {
  const ErrorCase& c = GetParam();
  auto m = parse_match(c.text);
  ASSERT_FALSE(m.ok()) << c.text;
  EXPECT_EQ(m.error().kind(), ErrorKind::kUsage);
  const std::string& msg = m.error().message();
  std::string head =
      "--match '" + std::string(c.text) + "': at column " + std::to_string(c.column) + ": ";
  EXPECT_EQ(msg.substr(0, head.size()), head) << msg;
  EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
  // The caret sits under the column, two spaces in like the text above it.
  std::string caret_line = msg.substr(msg.rfind('\n') + 1);
  EXPECT_EQ(caret_line, std::string(c.column + 1, ' ') + "^") << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Grammar, MatchErrors,
    ::testing::Values(ErrorCase{"bank = 7", 6, "expected an operator (==, !=, <, <=, >, >=, ~)"},
                      ErrorCase{"bank", 5, "expected an operator"},
                      ErrorCase{"bank ==", 8, "expected a value"},
                      ErrorCase{"== 7", 1, "expected a field name"},
                      ErrorCase{"7 == bank", 1, "expected a field name"},
                      ErrorCase{"bank == 7 &&", 13, "expected a field name"},
                      ErrorCase{"bank == 7 & cpu == 1", 11, "expected '&&', '||' or the end"},
                      ErrorCase{"bank == 7 cpu == 1", 11, "expected '&&', '||' or the end"},
                      ErrorCase{"(bank == 7", 11, "expected ')' to close the '(' at column 1"},
                      ErrorCase{"(bank == 7 cpu", 12, "expected '&&', '||' or ')'"},
                      ErrorCase{"bank == 7)", 10, "unbalanced ')'"},
                      ErrorCase{"comm == 'bash", 9, "the quote ' is not closed"},
                      ErrorCase{"severity >= bad", 13,
                                "unknown severity 'bad'; least to most severe: invalid, corrected, "
                                "deferred, ucna, srao, srar, uncorrected, fatal"},
                      ErrorCase{"kernel_severity == fatal", 20, "unknown kernel_severity 'fatal'"},
                      ErrorCase{"!= 3", 1, "expected a field name"},
                      ErrorCase{"()", 2, "expected a field name"}));

TEST(Match, ExactMessageWithCaret) {
  auto m = parse_match("bank = 7");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message(),
            "--match 'bank = 7': at column 6: expected an operator (==, !=, <, <=, >, >=, ~)\n"
            "  bank = 7\n"
            "       ^");
  auto rule = parse_match("severity >= bad", "trigger rule 'ue' match");
  ASSERT_FALSE(rule.ok());
  EXPECT_EQ(rule.error().message(),
            "trigger rule 'ue' match 'severity >= bad': at column 13: unknown severity 'bad'; "
            "least to most severe: invalid, corrected, deferred, ucna, srao, srar, "
            "uncorrected, fatal\n"
            "  severity >= bad\n"
            "              ^");
}

TEST(Match, LimitsBoundTheParse) {
  std::string deep(filter::kMaxDepth + 1, '(');
  deep += "bank == 7";
  deep += std::string(filter::kMaxDepth + 1, ')');
  auto m = parse_match(deep);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("nested deeper than 64"), std::string::npos);
  std::string nots(filter::kMaxDepth - 1, '!');
  EXPECT_TRUE(parse_match(nots + "bank == 7").ok()) << "63 levels are fine";
  auto long_text = parse_match(std::string(filter::kMaxLength + 1, 'a'));
  ASSERT_FALSE(long_text.ok());
  EXPECT_NE(long_text.error().message().find("longer than 4096"), std::string::npos);
}

TEST(Match, ControlCharactersDoNotBreakTheCaretLine) {
  auto m = parse_match("bank\t= 7");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("\n  bank = 7\n       ^"), std::string::npos)
      << m.error().message();
}

TEST(Match, JsonValuesAsTheLanguageSeesThem) {
  using filter::Value;
  EXPECT_EQ(json_value(ordered_json("0xbe"))->text, "0xbe");
  EXPECT_EQ(json_value(ordered_json(uint64_t(UINT64_MAX)))->shown(), "18446744073709551615");
  EXPECT_EQ(json_value(ordered_json(-3))->shown(), "-3");
  EXPECT_EQ(json_value(ordered_json(0.5))->text, "0.5") << "a fraction: its JSON text";
  EXPECT_EQ(json_value(ordered_json(true))->text, "true");
  EXPECT_FALSE(json_value(ordered_json(nullptr)).has_value());
  EXPECT_FALSE(json_value(ordered_json::object()).has_value());
  std::optional<Value> list = json_value(ordered_json::parse(R"(["UC", null, {}, [1], 7])"));
  ASSERT_TRUE(list.has_value());
  ASSERT_EQ(list->kind, Value::Kind::kList);
  EXPECT_EQ(list->shown(), "UC 7") << "only the scalars";
  ordered_json r = {{"fields", {{"ratio", 0.5}, {"flag", true}, {"none", nullptr}}}};
  EXPECT_TRUE(eval("ratio < 1 && ratio > 0.25 && ratio ~ '0.5'", r));
  EXPECT_TRUE(eval("flag == true", r));
  EXPECT_FALSE(eval("none == 0 || none != 0", r)) << "null is no value";
  EXPECT_TRUE(eval("!(none == 0)", r));
}

TEST(Match, AnyNameIsAFieldAndTheMessageSaysWhatFieldsAre) {
  EXPECT_TRUE(parse_match("severty >= ucna").ok()) << "a tracepoint's field, for all watch knows";
  auto m = parse_match("&& bank == 7");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find(
                "at column 1: expected a field name (severity, bank, cpu, a tracepoint field...)"),
            std::string::npos)
      << m.error().message();
}

TEST(KernelSeverityRank, Order) {
  EXPECT_EQ(mce::kernel_severity_rank("no"), 0);
  EXPECT_EQ(mce::kernel_severity_rank("panic"), 8);
  EXPECT_LT(mce::kernel_severity_rank("ucna"), mce::kernel_severity_rank("ar"));
  EXPECT_EQ(mce::kernel_severity_rank("fatal"), -1);
}

// Every tracepoint's format begins with common_pid: a match naming it sees
// the record's pid, where it used to see nothing and match nothing.
TEST(MatchFields, CommonPidIsTheRecordsPid) {
  EXPECT_TRUE(eval("common_pid > 0", switch_record()));
  EXPECT_TRUE(eval("common_pid == 42", switch_record()));
  EXPECT_FALSE(eval("common_pid > 0", mce_record("fatal")));
}

// The formats known, a name no record has is refused, located, listing
// the names there are; the fields of the formats, the record's own and
// common_pid are accepted.
TEST(MatchFields, ANameNoRecordHasIsRefused) {
  report::TraceEvent sched;
  sched.name = "sched:sched_switch";
  for (const char* f : {"prev_comm", "prev_pid", "next_pid"}) {
    report::TraceField field;
    field.name = f;
    sched.fields.push_back(field);
  }
  const report::TraceEvent* formats[] = {&sched};
  filter::Keys keys = record_keys(formats, /*machine_checks=*/false);
  for (const char* ok : {"common_pid > 0", "prev_pid == 17 && comm == bash", "cpu == 3"})
    EXPECT_TRUE(check_match_fields(ok, keys, "--match").ok()) << ok;
  Status bad = check_match_fields("prev_pidd > 0", keys, "--match");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("prev_pidd"), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("prev_pid,"), std::string::npos) << bad.error().message();
  // A machine check's names only when machine checks can come.
  EXPECT_FALSE(check_match_fields("severity >= ucna", keys, "--match").ok());
  filter::Keys with_mce = record_keys(formats, /*machine_checks=*/true);
  for (const char* ok : {"severity >= ucna", "bank == 7", "addr != 0", "error_class == memory"})
    EXPECT_TRUE(check_match_fields(ok, with_mce, "--match").ok()) << ok;
}

// A RAS tracepoint among the formats brings its decoding's names, severity
// ranked on the machine checks' scale; every key a decoding writes is one.
TEST(MatchFields, RasEventsBringTheirDecodingsNames) {
  report::TraceEvent aer;
  aer.name = "ras:aer_event";
  const report::TraceEvent* formats[] = {&aer};
  filter::Keys keys = record_keys(formats, /*machine_checks=*/false);
  for (const char* ok : {"source == aer && aer_severity != corrected", "severity >= uncorrected",
                         "aer_severity == fatal"})
    EXPECT_TRUE(check_match_fields(ok, keys, "--match").ok()) << ok;
  for (std::string_view tp : mce::ras_tracepoints()) {
    auto d = mce::decode_ras_event(tp, {});
    if (!d)
      continue;
    for (const auto& [name, value] : d->json.items()) {
      // severity is ranked: it takes a severity's name.
      std::string text = name + (name == "severity" ? " == corrected" : " == x");
      EXPECT_TRUE(check_match_fields(text, keys, "--match").ok()) << tp << ": " << name;
    }
  }
}

// record_keys() names a machine check's fields by hand: every key a
// record's object and its decoding can have must be among them, or a match
// naming a field that exists would be refused at start. Decodings that
// between them give every optional key of mce_json(): an Intel memory
// controller's with its location, model and MSCOD meaning, an AMD SMCA
// bank's with its unit and extended error code, a corrected error's count
// and threshold, a bus, an internal and a simple error code. (The kernel's
// verdict comes only with a logged record: decode_mce_log_entry().)
TEST(MatchFields, EveryKeyOfARecordsObjectIsAccepted) {
  std::vector<mce::MceDecoded> decoded;
  mce::MceRegisters icx;
  icx.status = 0x8c00000000800091;
  icx.addr = 0x9b000000;
  icx.misc = (uint64_t{0x200 >> 2} << 9) | (uint64_t{0x1d26} << 19) | (uint64_t{2} << 40) |
             (uint64_t{1} << 42) | (uint64_t{1} << 63);
  icx.bank = 14;
  icx.cpu = 0;
  icx.cpuid = 0x606A6;
  icx.cpuvendor = 0;
  icx.socketid = 0;
  icx.cs = 0x10;
  decoded.push_back(mce::decode_mce(icx));
  mce::MceRegisters smca;
  smca.status = 0xbc00000000010135;  // XEC 1: a meaning in the Load Store unit's table
  smca.ipid = 0x000000B000000000;
  smca.bank = 5;
  decoded.push_back(mce::decode_mce(smca, mce::CpuVendor::kAmd));
  mce::MceRegisters corrected;
  corrected.status = 0x9400000000000091 | (uint64_t{3} << 38);
  corrected.mcgcap = 0xc06;  // CMCI_P and TES_P: a count and a threshold
  corrected.bank = 2;
  corrected.cpuvendor = 0;
  decoded.push_back(mce::decode_mce(corrected));
  // A bus error (PP, T, II), an internal one and a simple one.
  for (uint64_t code : {0x0b13ULL, 0x0400ULL, 0x0005ULL}) {
    mce::MceRegisters r;
    r.status = 0x9000000000000000 | code;
    r.bank = 4;
    decoded.push_back(mce::decode_mce(r, mce::CpuVendor::kUnknown, mce::MceOrigin::kTracepoint));
  }
  filter::Keys keys = record_keys({}, /*machine_checks=*/true);
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = r.wall_ns = 1;
  r.cpu = r.pid = r.tid = 0;
  r.comm = "swapper/0";
  r.key = "k";
  for (const mce::MceDecoded& d : decoded) {
    r.mce = d;
    nlohmann::ordered_json object = record_json(r);
    for (const auto& [name, value] : object.items()) {
      if (name != "fields" && name != "mce") {
        EXPECT_TRUE(keys.has(name)) << name;
      }
    }
    for (const auto& [name, value] : object["mce"].items())
      EXPECT_TRUE(keys.has(name)) << name << " of " << object["mce"].dump();
  }
}

}  // namespace
}  // namespace pp::watch

// The compiled print formats against libtraceevent's printer, which is what
// they replace: every event of the tracefs fixtures (a 6.18 kernel's
// sched, syscalls, irq, block, kmem... and Debian 6.1's RAS events) and a
// table of made-up formats that reach each rule of report/print_format.h,
// each with thousands of random records; the two renderings must be the
// same bytes. Which events compile is pinned too, so that a change that
// quietly sends sched_switch back to libtraceevent fails here.
#include "report/print_format.h"

#include <cstring>
#include <gtest/gtest.h>
#include <set>

#include "report/testing/print_format_cases.h"
#include "report/testing/synthetic_trace.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

constexpr int kRecordsPerEvent = 3000;

std::unique_ptr<TraceDecoder> fixture_decoder(const std::string& root,
                                              const std::vector<Tracepoint>& wanted) {
  sys::Tree tree(root);
  std::vector<Tracepoint> tps;
  for (Tracepoint tp : wanted) {
    auto text = tree.read("events/" + tp.system + "/" + tp.name + "/id", 64);
    EXPECT_TRUE(text.ok());
    tp.id = std::stoull(*text);
    tps.push_back(tp);
  }
  auto built = build_tracing_data(tree, tps, 4096);
  EXPECT_TRUE(built.ok()) << built.error().message();
  auto parsed = parse_tracing_data(*built);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message();
  auto d = TraceDecoder::create(*parsed, /*plugins=*/false);
  EXPECT_TRUE(d.ok()) << d.error().message();
  return std::move(*d);
}

// Both printers on `records` random records of each compiled event; the
// number of records compared.
size_t compare_with_libtraceevent(const TraceDecoder& d, int records) {
  size_t compared = 0;
  for (const auto& event : d.events()) {
    if (!event->print_format)
      continue;
    for (int i = 0; i < records; i++) {
      Bytes raw = testing::synthetic_payload(uint64_t(event->id) * 100003 + uint64_t(i), *event,
                                             int32_t(i));
      // Exactly the record's bytes (a copy is allocated to its size):
      // under ASan, a printer that reads past the record fails here.
      Bytes exact = raw;
      std::span<const uint8_t> view(exact);
      EXPECT_TRUE(d.check(*event, view).ok()) << event->name;
      std::string compiled, reference;
      d.print_fmt(*event, view, 1, compiled);
      d.print_fmt_libtraceevent(*event, view, 1, reference);
      EXPECT_EQ(compiled, reference) << event->name << " record " << i;
      if (compiled != reference)
        return compared;  // one is enough to read
      compared++;
    }
  }
  return compared;
}

TEST(PrintFormat, WhichFixtureEventsCompile) {
  auto d = fixture_decoder(pp::testing::fixtures_dir() + "/tracefs-6.18",
                           testing::fixture_6_18_tracepoints());
  std::set<std::string> compiled, refused;
  for (const auto& e : d->events())
    (e->print_format ? compiled : refused)
        .insert(e->name + (e->print_format ? "" : ": " + e->print_note));
  // Both name enum values the kernel left unresolved (IOPRIO_CLASS_NONE,
  // HRTIMER_MODE_ABS): libtraceevent reads a name as -1 unless it is one of
  // a few it knows, a list that may change with its version.
  EXPECT_EQ(refused, (std::set<std::string>{
                         "block:block_rq_issue: a flag or symbol whose value is a name",
                         "timer:hrtimer_start: a flag or symbol whose value is a name",
                     }));
  EXPECT_EQ(compiled.size(), 15u);
  EXPECT_TRUE(compiled.count("sched:sched_switch"));
  EXPECT_TRUE(compiled.count("syscalls:sys_enter_getppid"));
}

TEST(PrintFormat, SameAsLibtraceeventOnEveryFixtureEvent) {
  auto recent = fixture_decoder(pp::testing::fixtures_dir() + "/tracefs-6.18",
                                testing::fixture_6_18_tracepoints());
  EXPECT_EQ(compare_with_libtraceevent(*recent, kRecordsPerEvent), 15u * kRecordsPerEvent);
  auto debian = fixture_decoder(pp::testing::fixtures_dir() + "/tracefs-debian-6.1",
                                {{"mce", "mce_record", 0},
                                 {"ras", "mc_event", 0},
                                 {"ras", "aer_event", 0},
                                 {"ras", "memory_failure_event", 0},
                                 {"ras", "arm_event", 0}});
  EXPECT_GT(compare_with_libtraceevent(*debian, kRecordsPerEvent), 0u);
  EXPECT_TRUE(debian->events().front()->print_format) << debian->events().front()->print_note;
}

using testing::kCaseFields;
using testing::kCaseFormats;

TEST(PrintFormat, MadeUpFormatsAsLibtraceeventPrintsThem) {
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  int id = 100;
  for (const char* print : kCaseFormats) {
    system.formats.push_back("name: t" + std::to_string(id) + "\nID: " + std::to_string(id) +
                             "\nformat:\n" + kCaseFields + "print fmt: " + print + "\n");
    id++;
  }
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ((*d)->events().size(), std::size(kCaseFormats));
  for (const auto& e : (*d)->events()) {
    SCOPED_TRACE(e->name + ": " + kCaseFormats[e->id - 100]);
    ASSERT_TRUE(e->print_ok);
    EXPECT_TRUE(e->print_format) << e->print_note;
  }
  EXPECT_EQ(compare_with_libtraceevent(**d, 1000), std::size(kCaseFormats) * 1000);
}

// What must not compile goes to libtraceevent, with the reason.
TEST(PrintFormat, RefusesWhatItDoesNotReproduce) {
  constexpr std::pair<const char*, const char*> kRefused[] = {
      {R"("%*d", REC->si, REC->si)", "field width from the record ('%*d')"},
      {R"("%pM", REC->name)", "%pM"},
      {R"("%s", __print_hex(REC->name, 4))", "kind not compiled"},
      {R"("%d", REC->si / REC->sc)", "divides by 'REC->sc'"},
      {R"("%d", REC->si << REC->sc)", "shift"},
      {R"("%d", REC->si ^ 3)", "operator ^"},
      {R"("%s", __print_symbolic(REC->si, { FOO, "foo" }))", "is a name"},
      {R"("%s", __print_symbolic(REC->si, { -1, "minus" }))", "is a name"},
      {R"("%Zd", REC->si)", "unusual length"},
      {R"("%ls", REC->name)", "string conversion"},
      {R"("%u", REC->small[4])", "past the end"},
      {R"("%lx", REC->args[REC->sc])", "value of the record"},
      {R"("%d", REC->si[0])", "no fixed array"},
      {R"("%x", __get_str(str)[0])", "no field"},
  };
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  int id = 200;
  for (const auto& [print, why] : kRefused) {
    system.formats.push_back("name: r" + std::to_string(id) + "\nID: " + std::to_string(id) +
                             "\nformat:\n" + kCaseFields + "print fmt: " + print + "\n");
    id++;
  }
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  for (const auto& e : (*d)->events()) {
    const auto& [print, why] = kRefused[e->id - 200];
    SCOPED_TRACE(print);
    EXPECT_FALSE(e->print_format);
    EXPECT_NE(e->print_note.find(why), std::string::npos) << e->print_note;
  }
}

// libtraceevent reads an element at any subscript without a bound: a
// format that subscripts past the end, by a value of the record, or what
// is no fixed array never reaches it; the record's fields print raw.
TEST(PrintFormat, SubscriptsLibtraceeventWouldReadPastTheRecordPrintRaw) {
  constexpr std::pair<const char*, const char*> kUnsafe[] = {
      {R"("%u", REC->small[4])", "'small' at 4, past the end of its field (4 elements)"},
      {R"("%lx", REC->args[REC->sc])", "'args' by a value of the record"},
      {R"("%u", REC->small[100000] + 1)", "past the end"},
      {R"("%d", REC->si[0])", "'si', which is no fixed array"},
      {R"("%s", REC->si ? "x" : __print_symbolic(REC->args[9], { 0, "z" }))", "past the end"},
  };
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  int id = 300;
  for (const auto& [print, why] : kUnsafe) {
    system.formats.push_back("name: u" + std::to_string(id) + "\nID: " + std::to_string(id) +
                             "\nformat:\n" + kCaseFields + "print fmt: " + print + "\n");
    id++;
  }
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ((*d)->events().size(), std::size(kUnsafe));
  for (const auto& e : (*d)->events()) {
    const auto& [print, why] = kUnsafe[e->id - 300];
    SCOPED_TRACE(print);
    EXPECT_FALSE(e->print_ok);
    EXPECT_NE(e->print_note.find(why), std::string::npos) << e->print_note;
    Bytes record(104, 0);
    record[0] = uint8_t(e->id);
    record[1] = uint8_t(e->id >> 8);
    record[8] = 0x7f;  // sc: args[127] would be 1 KiB past the record
    ASSERT_TRUE((*d)->check(*e, record).ok());
    std::string out;
    (*d)->print_fmt(*e, record, 0, out);
    EXPECT_EQ(out.rfind("sc=127 us=0 si=0 ", 0), 0u) << out;
  }
}

// __print_hex() and __print_array() print as many bytes as a number of the
// record says; libtraceevent reads them past the array and past the record.
// A record whose count overruns its array prints its fields raw; one whose
// count fits prints as libtraceevent prints it. A count of a form the
// decoder cannot evaluate refuses the event, with the reason.
TEST(PrintFormat, ArraysPrintedByACountOfTheRecordAreBoundedByTheArray) {
  constexpr const char* kArrays[] = {
      R"("%s", __print_hex(__get_dynamic_array(arr), REC->us))",
      R"("%s", __print_array(REC->small, REC->us, 4))",
      R"("%s", __print_array(__get_dynamic_array(arr), __get_dynamic_array_len(arr) / 2 + REC->us, 2))",
      R"("%s", __print_hex_str(REC->name, REC->us * 2))",
      R"("%s", __print_hex(REC->name, (u8)REC->us))",
      R"("%s", __print_array(REC->small, 4, REC->sl))",
  };
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  int id = 400;
  for (const char* print : kArrays) {
    system.formats.push_back("name: a" + std::to_string(id) + "\nID: " + std::to_string(id) +
                             "\nformat:\n" + kCaseFields + "print fmt: " + print + "\n");
    id++;
  }
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ((*d)->events().size(), std::size(kArrays));
  auto record_of = [](const TraceEvent& e, uint16_t us, size_t arr_bytes) {
    Bytes record(testing::kCaseFixedSize + arr_bytes, 0);
    record[0] = uint8_t(e.id);
    record[1] = uint8_t(e.id >> 8);
    record[10] = uint8_t(us);
    record[11] = uint8_t(us >> 8);
    uint32_t loc = uint32_t(arr_bytes) << 16 | uint32_t(testing::kCaseFixedSize);
    std::memcpy(record.data() + 52, &loc, 4);
    for (size_t i = 0; i < arr_bytes; i++)
      record[testing::kCaseFixedSize + i] = uint8_t(0xa0 + i);
    record[32] = 0x11;  // name[0]
    record[88] = 0x22;  // small[0]
    record[24] = 4;     // sl
    return record;
  };
  struct Case {
    uint16_t us;  // the count
    bool fits;
    const char* starts;  // what libtraceevent prints when it fits
  };
  constexpr Case kCases[][2] = {
      {{16, true, "a0 a1 a2"}, {4096, false, ""}},             // 16 bytes in arr
      {{4, true, "34 0 0 0"}, {5, false, ""}},                 // small holds 4 u32
      {{0, true, "41376 41890 42404 42918"}, {1, false, ""}},  // len / 2 elements of 2
      {{8, true, "11000000"}, {9, false, ""}},                 // 16 bytes in name
  };
  for (size_t i = 0; i < std::size(kCases); i++) {
    const TraceEvent& e = *(*d)->events()[i];
    SCOPED_TRACE(kArrays[i]);
    ASSERT_TRUE(e.print_ok) << e.print_note;
    EXPECT_FALSE(e.print_format) << "only libtraceevent prints these";
    for (const Case& c : kCases[i]) {
      Bytes record = record_of(e, c.us, 16);
      ASSERT_TRUE((*d)->check(e, record).ok());
      Status bounded = e.array_bounds.check(record);
      EXPECT_EQ(bounded.ok(), c.fits) << c.us;
      std::string out;
      (*d)->print_fmt(e, record, 0, out);
      if (c.fits)
        EXPECT_EQ(out.find(c.starts), 0u) << out;
      else
        EXPECT_EQ(out.rfind("sc=0 us=" + std::to_string(c.us) + " ", 0), 0u) << out;
    }
  }
  Bytes overrun = record_of(*(*d)->events()[0], 4096, 16);
  EXPECT_EQ((*d)->events()[0]->array_bounds.check(overrun).error().message(),
            "__print_hex() of 'arr' would print 4096 bytes, its array holds 16");
  EXPECT_EQ(
      (*d)->events()[1]->array_bounds.check(record_of(*(*d)->events()[1], 5, 16)).error().message(),
      "__print_array() of 'small' would print 5 elements of 4 bytes, its array holds 16 "
      "bytes");
  // A cast is no form the decoder evaluates: the event prints raw, saying
  // why.
  const TraceEvent& cast = *(*d)->events()[4];
  EXPECT_FALSE(cast.print_ok);
  EXPECT_EQ(cast.print_note,
            "its print fmt prints 'name' with __print_hex() by a count it cannot bound");
  // The element size read from the record too: 4 elements of REC->sl bytes.
  const TraceEvent& by_field = *(*d)->events()[5];
  ASSERT_TRUE(by_field.print_ok) << by_field.print_note;
  Bytes record = record_of(by_field, 0, 16);
  std::string out;
  (*d)->print_fmt(by_field, record, 0, out);
  EXPECT_EQ(out, "34 0 0 0") << "4 elements of 4 bytes";
  record[24] = 8;
  out.clear();
  (*d)->print_fmt(by_field, record, 0, out);
  EXPECT_EQ(out.rfind("sc=0 ", 0), 0u) << "4 elements of 8 bytes: " << out;
}

// A '*' width or precision comes from the record and libtraceevent pads to
// it: "%*d" of a record that says 10^9 took minutes and gigabytes (found by
// fuzzing TraceDecoder). Such an event prints raw; "%.*s" (kernels use it
// for names of a given length) is printed by libtraceevent.
TEST(PrintFormat, WidthsFromTheRecordPrintRaw) {
  constexpr std::pair<const char*, const char*> kFormats[] = {
      {R"("%*d", REC->si, REC->si)", "a field width from the record ('%*d')"},
      {R"("%-*lx", REC->si, REC->ul)", "a field width from the record ('%-*lx')"},
      {R"("%.*u", REC->si, REC->si)", "a precision from the record ('%.*u')"},
      {R"("%.*s", REC->si, REC->name)", nullptr},
      {R"("%%*d %d", REC->si)", nullptr},
  };
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  int id = 500;
  for (const auto& [print, why] : kFormats) {
    system.formats.push_back("name: w" + std::to_string(id) + "\nID: " + std::to_string(id) +
                             "\nformat:\n" + kCaseFields + "print fmt: " + print + "\n");
    id++;
  }
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  ASSERT_EQ((*d)->events().size(), std::size(kFormats));
  for (const auto& e : (*d)->events()) {
    const auto& [print, why] = kFormats[e->id - 500];
    SCOPED_TRACE(print);
    if (!why) {
      EXPECT_TRUE(e->print_ok) << e->print_note;
      continue;
    }
    EXPECT_FALSE(e->print_ok);
    EXPECT_EQ(e->print_note, std::string("its print fmt takes ") + why +
                                 ", which libtraceevent pads to without a bound");
    Bytes record(testing::kCaseFixedSize, 0);
    record[0] = uint8_t(e->id);
    record[1] = uint8_t(e->id >> 8);
    record[12] = 0xff;  // si: 1 GiB less one
    record[13] = 0xff;
    record[14] = 0xff;
    record[15] = 0x3f;
    std::string out;
    (*d)->print_fmt(*e, record, 0, out);
    EXPECT_EQ(out.rfind("sc=0 us=0 si=1073741823 ", 0), 0u) << out.substr(0, 80);
  }
}

// libtraceevent prints a __get_str() with strlen(): a crafted record whose
// __data_loc string has no NUL before its end made it read past the record
// (the next one, or past the end of the file's mapping). Such a record
// prints its fields raw (each string cut at its length), through either
// printer; a NUL anywhere before the record's end keeps the print format's
// rendering. The records below are exactly their size: under ASan a read
// past one fails the test.
TEST(PrintFormat, AStringWithNoNulBeforeTheRecordsEndPrintsRaw) {
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  // A plugin-free format that libtraceevent prints (the '*' precision is
  // no compiled format's) and one the compiled format prints.
  TracingData::System system{"test", {}};
  system.formats.push_back("name: lib\nID: 100\nformat:\n" + std::string(testing::kCaseFields) +
                           "print fmt: \"%.*s|%s\", REC->si, REC->name, __get_str(str)\n");
  system.formats.push_back("name: compiled\nID: 101\nformat:\n" +
                           std::string(testing::kCaseFields) +
                           "print fmt: \"%s\", __get_str(str)\n");
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  const TraceEvent* lib = (*d)->event(100);
  const TraceEvent* compiled = (*d)->event(101);
  ASSERT_NE(lib, nullptr);
  ASSERT_NE(compiled, nullptr);
  ASSERT_TRUE(lib->print_ok) << lib->print_note;
  ASSERT_FALSE(lib->print_format) << "libtraceevent must print it";
  ASSERT_TRUE(compiled->print_format) << compiled->print_note;
  // The string "abc" at the end of the record: with its NUL, without it.
  auto record_of = [](const TraceEvent& e, bool nul) {
    Bytes record(testing::kCaseFixedSize + (nul ? 4 : 3), 0);
    record[0] = uint8_t(e.id);
    record[12] = 1;  // si: the precision of name
    record[32] = 'n';
    uint32_t loc =
        uint32_t(record.size() - testing::kCaseFixedSize) << 16 | uint32_t(testing::kCaseFixedSize);
    std::memcpy(record.data() + 48, &loc, 4);
    std::memcpy(record.data() + testing::kCaseFixedSize, "abc", 3);
    return record;
  };
  for (bool nul : {true, false}) {
    SCOPED_TRACE(nul ? "terminated" : "no NUL");
    Bytes record = record_of(*lib, nul);
    ASSERT_TRUE((*d)->check(*lib, record).ok());
    std::string out;
    (*d)->print_fmt(*lib, record, 0, out);
    if (nul) {
      EXPECT_EQ(out, "n|abc");
    } else {
      EXPECT_EQ(out.rfind("sc=0 us=0 si=1 ", 0), 0u) << out;
      EXPECT_NE(out.find(" str=abc "), std::string::npos) << out;
    }
    // The compiled format would stop at the record's end on its own; it
    // makes libtraceevent's decision all the same.
    Bytes other = record_of(*compiled, nul);
    out.clear();
    (*d)->print_fmt(*compiled, other, 0, out);
    if (nul) {
      EXPECT_EQ(out, "abc");
    } else {
      EXPECT_EQ(out.rfind("sc=0 us=0 si=1 ", 0), 0u) << out;
      EXPECT_NE(out.find(" str=abc "), std::string::npos) << out;
    }
    std::string reference;
    (*d)->print_fmt_libtraceevent(*compiled, other, 0, reference);
    EXPECT_EQ(out, reference);
  }
}

// print_format_fuzzer's finding (tests/fuzz/corpus/print_format_fuzzer/
// regress-mismatch-string-no-nul): a compiled format that prints a
// __get_str() in one branch of a ?:, on a record whose string has no NUL
// before its end. The compiled format printed the bytes up to the record's
// end ("yes \xe3\xe3..."), libtraceevent's path its fields raw, as it must
// not read past the record. Both now print the fields raw, in either
// branch: the decision is the record's, made before either printer reads
// it, as libtraceevent's path cannot know the branch beforehand.
TEST(PrintFormat, BothPrintersRefuseAStringWithNoNulAlike) {
  TracingData data;
  data.version = "0.6";
  data.long_size = 8;
  data.page_size = 4096;
  TracingData::System system{"test", {}};
  system.formats.push_back("name: cond\nID: 100\nformat:\n" + std::string(kCaseFields) +
                           "print fmt: " + kCaseFormats[7] + "\n");
  ASSERT_NE(std::string(kCaseFormats[7]).find("? __get_str(str) :"), std::string::npos);
  data.systems.push_back(system);
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(d.ok()) << d.error().message();
  const TraceEvent* e = (*d)->event(100);
  ASSERT_NE(e, nullptr);
  ASSERT_TRUE(e->print_format) << e->print_note;
  // si 1 ("yes"), sc as given (> 3: __get_str(str), else REC->name "n"),
  // str the rest of the record, as long as its __data_loc says: "abcd"
  // and its NUL, as the kernel writes it, or "abcd" alone.
  auto record_of = [&](int8_t sc, bool nul) {
    uint32_t length = nul ? 5 : 4;
    Bytes record(testing::kCaseFixedSize + length, 0);
    record[0] = uint8_t(e->id);
    record[8] = uint8_t(sc);
    record[12] = 1;
    record[32] = 'n';
    uint32_t loc = length << 16 | uint32_t(testing::kCaseFixedSize);
    std::memcpy(record.data() + 48, &loc, 4);
    std::memcpy(record.data() + testing::kCaseFixedSize, "abcd", 4);
    return record;
  };
  struct Case {
    int8_t sc;
    bool nul;
    const char* want;  // the output, or the start of the raw fields
  } cases[] = {
      {5, true, "yes abcd"},
      {0, true, "yes n"},
      {5, false, "sc=5 us=0 si=1 "},
      {0, false, "sc=0 us=0 si=1 "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string("sc=") + std::to_string(c.sc) + (c.nul ? " NUL" : " no NUL"));
    Bytes record = record_of(c.sc, c.nul);
    ASSERT_TRUE((*d)->check(*e, record).ok());
    std::string compiled, reference;
    (*d)->print_fmt(*e, record, 0, compiled);
    (*d)->print_fmt_libtraceevent(*e, record, 0, reference);
    EXPECT_EQ(compiled, reference);
    if (c.nul)
      EXPECT_EQ(compiled, c.want);
    else
      EXPECT_EQ(compiled.rfind(c.want, 0), 0u) << compiled;
  }
}

}  // namespace
}  // namespace pp::report

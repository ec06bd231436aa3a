// libFuzzer target: a record rendered by a compiled print format
// (report/print_format.h) and by libtraceevent's printer, which must give
// the same bytes (a difference aborts). Input: one byte that picks a format
// of the table below (the rules of report/print_format.h, and sched_switch's
// own format on these fields), then the record's bytes: the fixed part of 72
// bytes (what is missing reads as zeros; common_type is set to the event's
// id) and whatever follows, where __data_loc fields may point. The formats
// are fixed: libtraceevent 1.7's own parser crashes (a null field, a
// division by zero) and leaks on many malformed formats, so fuzzing the
// format text would find its bugs, not ours; PrintFormat::compile() is held
// to libtraceevent on these formats and every fixture event by
// report/print_format_test.cpp. Seeds: tests/fuzz/corpus/print_format_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "report/trace_decoder.h"
#include "report/tracing_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The fields the formats name: every kind the compiler reads.
constexpr const char* kFields =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:s8 sc;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield:u16 us;\toffset:10;\tsize:2;\tsigned:0;\n"
    "\tfield:int si;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:u64 ul;\toffset:16;\tsize:8;\tsigned:0;\n"
    "\tfield:long sl;\toffset:24;\tsize:8;\tsigned:1;\n"
    "\tfield:char name[16];\toffset:32;\tsize:16;\tsigned:0;\n"
    "\tfield:__data_loc char[] str;\toffset:48;\tsize:4;\tsigned:0;\n"
    "\tfield:__data_loc u8[] arr;\toffset:52;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned long addr;\toffset:56;\tsize:8;\tsigned:0;\n"
    "\tfield:void * fn;\toffset:64;\tsize:8;\tsigned:0;\n"
    "\tfield:unsigned long args[2];\toffset:72;\tsize:16;\tsigned:0;\n"
    "\tfield:u32 small[4];\toffset:88;\tsize:16;\tsigned:0;\n\n";
constexpr size_t kFixedSize = 104;

// Each reaches a rule of report/print_format.h (as in print_format_test.cpp).
const char* const kFormats[] = {
    R"("prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->name, REC->si, REC->sc, (REC->sl & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->sl & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->sl & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->name, REC->common_pid, REC->us)",
    R"("%d %i %u %x %X %o", REC->si, REC->si, REC->si, REC->si, REC->si, REC->si)",
    R"("%d %u %x|%d %u %x", REC->sc, REC->sc, REC->sc, REC->us, REC->us, REC->us)",
    R"("%hhd %hhu %hd %hu %ld %lu %lld %llu %Lx %zu %zd", REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl, REC->sl)",
    R"("%08x|%-5d|%5u|%#x|%.3d|%#o|%016Lx|%-3hhx|%03d", REC->si, REC->si, REC->us, REC->ul, REC->sc, REC->si, REC->ul, REC->sl, REC->si)",
    R"("%c %+d % d %e %% %5%", REC->si, REC->si, REC->si)",
    R"("a\n\tb\r\\c\qd %d", REC->si)",
    R"("[%s] [%s] [%s] [%-20s] [%.3s] [%5s]", REC->name, __get_str(str), "lit", REC->name, __get_str(str), "ab")",
    R"("%s %s", REC->si ? "yes" : "no", REC->sc > 3 ? __get_str(str) : REC->name)",
    R"("%s|%s", __print_flags(REC->si, "|", { 1, "A" }, { 2, "B" }, { 0x30, "CD" }), __print_flags(REC->sc, "", { 0, "ZERO" }, { 4, "F" }))",
    R"("%s|%s", __print_flags(REC->ul, ",", { 0x8000000000000000, "TOP" }, { 1, "ONE" }), __print_flags(REC->us, NULL, { 3, "X" }))",
    R"("%s %s", __print_symbolic(REC->sc, { 0, "zero" }, { 1, "one" }, { 255, "ff" }), __print_symbolic(REC->si, { 2, "two" }))",
    R"("%d %d %d %d %d %u", (u8)REC->si, (s16)REC->si, (unsigned char)REC->si, (int)REC->sl, (long)REC->sc, (unsigned int)REC->sl)",
    R"("%llx %llx %llx", (void *)REC->ul, (struct foo *)REC->ul, (signed char)REC->si)",
    R"("%d %d %d %d", !REC->si, ~REC->si, -REC->si, +REC->si)",
    R"("%lu %lu %lu %lu %llu", REC->ul / 3, REC->ul % 7, REC->ul << 2, REC->ul >> 1, REC->si * 3 + 1 - 4)",
    R"("%d %d %d %d %d %d %d %d", REC->si < REC->sc, REC->si <= REC->sc, REC->si > REC->sc, REC->si >= REC->sc, REC->si == REC->sc, REC->si != REC->sc, REC->si && REC->sc, REC->si || REC->sc)",
    R"("%d %d %lx", REC->si ? REC->sc : REC->us, (REC->si & 3) ? 7 : 9, REC->ul & ~0xffUL)",
    R"("%p %p %ps %pS %pf %pF %pB", REC->addr, REC->fn, REC->fn, REC->fn, REC->addr, REC->addr, REC->addr)",
    R"("%s %s", REC->addr, REC->sl)",
    R"("%d %u", __get_dynamic_array_len(arr), __get_dynamic_array_len(str))",
    R"("%d %d", REC->common_pid, REC->common_flags)",
    R"("only text")",
    R"("")",
    R"("trailing %d %", REC->si)",
    R"("%u%u%u", 0x10, 010, 18446744073709551615)",
    R"("NR %ld (%lx, %lx) %u %u", REC->sl, REC->args[0], REC->args[1], REC->small[0], REC->small[3])",
};

// One decoder of every format, ids 100 onwards: made once.
const pp::report::TraceDecoder& decoder() {
  static const std::unique_ptr<pp::report::TraceDecoder> made = [] {
    using namespace pp::report;
    TracingData tracing;
    tracing.version = "0.6";
    tracing.long_size = 8;
    tracing.page_size = 4096;
    TracingData::System system{"fuzz", {}};
    int id = 100;
    for (const char* print : kFormats) {
      system.formats.push_back("name: f" + std::to_string(id) + "\nID: " + std::to_string(id) +
                               "\nformat:\n" + kFields + "print fmt: " + print + "\n");
      id++;
    }
    tracing.systems.push_back(system);
    auto d = TraceDecoder::create(tracing, /*plugins=*/false);
    if (!d.ok() || (*d)->events().size() != std::size(kFormats)) {
      std::fprintf(stderr, "print_format_fuzzer: the formats do not parse\n");
      std::abort();
    }
    for (const auto& event : (*d)->events())
      if (!event->print_format) {
        std::fprintf(stderr, "print_format_fuzzer: %s does not compile: %s\n", event->name.c_str(),
                     event->print_note.c_str());
        std::abort();
      }
    return std::move(*d);
  }();
  return *made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::report;
  if (size < 1)
    return 0;
  const TraceDecoder& d = decoder();
  const TraceEvent& event = *d.events()[data[0] % d.events().size()];
  Bytes record(data + 1, data + size);
  if (record.size() < kFixedSize)
    record.resize(kFixedSize, 0);
  record[0] = uint8_t(event.id);
  record[1] = uint8_t(event.id >> 8);
  // libtraceevent reads a __get_str() to its NUL, past the record if need
  // be; a NUL after the record makes both printers stop at its end.
  Bytes padded = record;
  padded.push_back(0);
  std::span<const uint8_t> view(padded.data(), record.size());
  if (!d.check(event, view).ok())
    return 0;
  std::string compiled, reference;
  d.print_fmt(event, view, 0, compiled);
  d.print_fmt_libtraceevent(event, view, 0, reference);
  if (compiled != reference) {
    std::fprintf(stderr, "%s\ncompiled:      [%s]\nlibtraceevent: [%s]\n", event.name.c_str(),
                 compiled.c_str(), reference.c_str());
    std::abort();
  }
  return 0;
}

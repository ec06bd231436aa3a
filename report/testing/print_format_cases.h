// Made-up tracepoint formats for the print-format compiler's tests and its
// fuzzer (report/print_format_test.cpp, report/print_format_fuzzer.cpp): one
// set of fields of every kind the compiler reads, and print formats each of
// which reaches a rule of report/print_format.h. Header only: the fuzzer
// links no test library.
#pragma once

#include <cstddef>

namespace pp::report::testing {

// The fields every format below may name; the fixed part is
// kCaseFixedSize bytes, __data_loc fields point past it.
inline constexpr const char* kCaseFields =
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
inline constexpr size_t kCaseFixedSize = 104;

// Each reaches a rule of report/print_format.h; each must compile.
inline constexpr const char* kCaseFormats[] = {
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

}  // namespace pp::report::testing

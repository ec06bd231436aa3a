// Bounds on a tracepoint format read from a file (perf.data's tracing data),
// checked before libtraceevent parses it. libtraceevent's print-format
// parser is recursive: each nested parenthesis, bracket or brace, and each
// binary operator of a chain, is a level of its C stack, so a crafted format
// ("((((...", "a+a+a+...") overflows the stack of whoever reads the file.
// Its brackets must balance: libtraceevent leaks a token when the text
// ends inside one ("__get_dynamic_array_len(arr"). The formats of real
// kernels stay far inside the bounds: measured on Linux
// 6.18's tracefs, at most 14 levels of nesting (dma:dma_alloc_sgt), 4841
// bytes from "print fmt:" on (the same) and 181 operator characters
// (percpu:percpu_alloc_percpu).
//
//   if (Status s = check_format_bounds(format); !s.ok())
//     ...;  // skip the event: "print fmt nests 5000 levels deep, more than 64"
#pragma once

#include <cstddef>
#include <string_view>

#include "base/result.h"

namespace pp::report {

inline constexpr size_t kMaxFormatNesting = 64;
inline constexpr size_t kMaxPrintFormatBytes = size_t(64) * 1024;
inline constexpr size_t kMaxPrintFormatOperators = 1024;

// OK when the format's "print fmt:" part (the whole text when it has none)
// is ASCII, nests (), [] and {} at most kMaxFormatNesting deep and closes
// each it opens, outside string and
// character literals ("(", '('), is at most kMaxPrintFormatBytes long and
// holds at most kMaxPrintFormatOperators operator characters outside them
// ("->" is no operator);
// else EINVAL saying which bound and by how much. Pure.
Status check_format_bounds(std::string_view format);

// OK when every REC->name in the "print fmt:" part (outside string and
// character literals; spaced as libtraceevent's tokenizer allows, "REC ->
// name" too) names a field the format lists ("\tfield:<type> <name>;");
// else EINVAL naming it. libtraceevent 1.7's parser dereferences the
// missing field of, e.g., a __print_symbolic() argument and crashes. Pure.
Status check_format_fields(std::string_view format);

// OK when every '/' and '%' operator of the "print fmt:" part (outside
// string and character literals) divides by a number that cannot be 0: an
// integer literal strtoull() reads as non-zero ("1000L", "0x40"), or
// sizeof() of a type ("sizeof(u64)", "sizeof(unsigned long)"), followed by
// what ends an operand (an operator, ')', ',', ':', ']' or the end), not by
// a subscript or a call. Else EINVAL naming the divisor. libtraceevent 1.7
// divides without a check: when it folds two names at parse time ("ps %
// pS": each reads as 0) and when it prints (REC->a / REC->b with b == 0, a
// literal "08" or "0x0", "2[REC->b]"), each a SIGFPE of whoever reads the
// file. Real kernels divide only by literals and sizeof() (6.1 to 6.18:
// "/ 1000L", "% 64", "/ sizeof(u64)"). Pure.
Status check_format_divisors(std::string_view format);

// OK unless, in the "print fmt:" part, a subscript ("[0]") or the last
// operand of a ?: (what follows its ':': a name, REC->name, a number, a
// literal, a call, a parenthesis or a cast of one of these) is followed by
// '[', '.', "->",
// '{', '}', a lone '=' or a character that is no C operator ('#', '@',
// ';'...). libtraceevent 1.7 then passes a null argument on to its
// operator parser and crashes (found by fuzzing TraceDecoder: "REC->a ? 1
// : R#", "REC->args[0]$"; "c ? a : REC->b[1]" crashes it as well).
// EINVAL naming the character. Pure.
Status check_format_conditionals(std::string_view format);

// Whether the "print fmt:" part holds, outside literals, a character that
// libtraceevent's tokenizer reads as an operator but that starts none
// ('#', '@', '$', ';', '`', '\\'). libtraceevent fails on every such
// format, and crashes on some ("REC->args[0]$"): the decoder treats it as
// one libtraceevent cannot parse without parsing it. Kernels write ';'
// only in statement expressions ("({ int x = ...; })", kvmmmu, dma), which
// libtraceevent 1.7 fails on. Pure.
bool has_foreign_operator(std::string_view format);

}  // namespace pp::report

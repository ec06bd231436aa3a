// A tracepoint's print format compiled once into a small program that
// renders a record without reading the format text again, without
// allocating and without libtraceevent's per-argument printf: the
// "print fmt:" line of a format file as libtraceevent parsed it, e.g.
//
//   print fmt: "prev_comm=%s prev_pid=%d ... prev_state=%s%s ==> ...", REC->prev_comm,
//              REC->prev_pid, ..., (REC->prev_state & ((((0x0 | 0x1 ...) + 1) << 1) - 1)) ?
//              __print_flags(REC->prev_state & (...), "|", { 0x1, "S" }, ...) : "R", ...
//
// The output is libtraceevent 1.7's own (tep_print_event(..., "%s",
// TEP_PRINT_INFO), what perf script prints), byte for byte: compile()
// takes only what it reproduces exactly and refuses anything else with the
// reason; TraceDecoder then prints that event through libtraceevent, as
// before. report/print_format_test.cpp compares both on every event of the
// tracefs fixtures with random records, report/print_format_fuzzer.cpp on
// any record of a table of formats, and tests/kernel/
// report_print_format_test.cpp on every event of the running kernel.
//
// What compiles, with libtraceevent's meaning (which is not always C's):
// - text, with the escapes \n \t \r \\ (a backslash before any other
//   character is dropped) and %%; a conversion libtraceevent does not know
//   (%c, %e, a '+' or ' ' flag) prints ">c<" and takes no argument;
// - %d %i %u %x %X %o with no length, h, hh, l, ll, L or z, the flags
//   - 0 #, a width and a precision: the value cast as the length says;
// - %s of a char array (up to its first NUL), of a string literal, of
//   __get_str() (nothing when its length is 0), __print_flags() (the flags
//   that are all set, by the delimiter, then any bits left as 0x...),
//   __print_symbolic() (0x... when no value matches), and of ?: of those;
//   of a field of the size of a long that is no array, its value in hex;
// - %p (glibc's: "(nil)" or 0x...), %ps %pS %pf %pF (no kernel symbols
//   are loaded into libtraceevent: the address, 0x...);
// - numbers: fields (common fields first, as libtraceevent looks them up)
//   read as unsigned of their size (an odd size reads 0), integer
//   literals (strtoull), casts (u8..u32, s8..s32, char, short and int mask
//   to their width; other types keep the value), __get_dynamic_array_len(),
//   a fixed array's element by a constant index inside it (REC->args[1]),
//   and the operators ! ~ unary - and +, * / % (by a non-zero constant),
//   + - << >> (by a constant below 64), < <= > >= == != & | && || and ?:,
//   all on unsigned 64-bit values.
// Refused: '*' widths, %pM %pI %pU %ph, __print_hex(), __print_array(),
// bitmasks, cpumasks, function calls, other array subscripts, flag and
// symbol values that are names, '^', a format libtraceevent marked failed, and
// events printed by a plugin or as ftrace's own (bprint) events.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

struct tep_event;
struct tep_print_arg;

namespace pp::report {

class PrintFormat {
 public:
  // Compiles `event`'s print format; `long_size` is the recording host's
  // sizeof(long). EOPNOTSUPP names what it uses that is not compiled.
  static Result<PrintFormat> compile(const tep_event& event, int long_size);

  // Appends the rendering of `raw`, a record of the event whose fixed
  // fields are all inside it and whose __data_loc fields point inside it
  // (TraceDecoder::check()).
  void render(std::span<const uint8_t> raw, std::string& out) const;

 private:
  // A number, evaluated as libtraceevent evaluates it: unsigned 64 bits.
  struct Expr {
    enum Kind : uint8_t { kConst, kField, kMask, kNot, kComplement, kBinary, kCond, kDynLen };
    Kind kind = kConst;
    uint8_t op = 0;                  // kBinary: a BinaryOp
    uint8_t size = 0;                // kField: bytes
    uint32_t offset = 0;             // kField, kDynLen
    uint64_t value = 0;              // kConst: the value; kMask: the mask
    int32_t a = -1, b = -1, c = -1;  // operands (indices into exprs_)
  };
  // What a %s prints.
  struct Str {
    enum Kind : uint8_t { kNothing, kText, kChars, kLongHex, kDynString, kFlags, kSymbol, kCond };
    Kind kind = kNothing;
    uint32_t offset = 0, size = 0;       // kText: in text_; kChars: the field; kDynString: its loc
    bool relative = false;               // kDynString: __rel_loc
    bool has_delim = false;              // kFlags: a delimiter was given
    int32_t expr = -1;                   // kFlags, kSymbol: the value; kCond: the condition
    uint32_t first = 0, count = 0;       // kFlags, kSymbol: in names_
    uint32_t delim = 0, delim_size = 0;  // kFlags: in text_
    int32_t then = -1, otherwise = -1;   // kCond: indices into strs_
  };
  struct Name {
    int64_t value;          // the flag's or symbol's value as libtraceevent reads it
    uint32_t offset, size;  // in text_, NUL-terminated there
  };
  // One step of the output.
  struct Op {
    enum Kind : uint8_t { kText, kNumber, kPointer, kFunction, kString };
    Kind kind = kText;
    char conversion = 0;            // kNumber: d i u x X o
    int8_t length = 0;              // kNumber: libtraceevent's ls: -2 hh, -1 h, 0, 1 l, 2 ll
    bool plain = true;              // kNumber, kString: no flags, width or precision
    uint32_t offset = 0, size = 0;  // kText: in text_; else the printf spec, NUL-terminated
    int32_t arg = -1;               // kNumber, kPointer, kFunction: exprs_; kString: strs_
  };

  class Compiler;
  friend class Compiler;

  uint64_t eval(int32_t index, const uint8_t* data, size_t size) const;
  void render_str(const Op& op, int32_t index, const uint8_t* data, size_t size,
                  std::string& out) const;
  // One string as print_str_to_seq() prints it: `text` through the op's
  // spec (as is when plain).
  void put_string(const Op& op, std::string_view text, std::string& out) const;
  const char* spec(const Op& op) const { return text_.data() + op.offset; }

  std::vector<Expr> exprs_;
  std::vector<Str> strs_;
  std::vector<Name> names_;
  std::vector<Op> ops_;
  std::string text_;
};

// Whether libtraceevent may print `event` without reading outside a record
// that check() passed: every array subscript of its print format
// (REC->args[1]) must be of a fixed array field by a constant inside it.
// libtraceevent's eval_num_arg() reads the element at any index, of any
// field, of a __data_loc array too, without a bound; a subscript past the
// end, by a value of the record (REC->arr[REC->i]) or of a non-array
// would read past the record. EINVAL naming the first such subscript; the
// decoder then prints that event's fields raw. Pure.
Status check_print_subscripts(const tep_event& event);

// Whether libtraceevent may print `event` in bounded time and memory: a
// '*' width or precision takes its value from the record, and
// libtraceevent pads to it ("%*d" of a record whose value is 10^9 builds a
// gigabyte of spaces). Only "%.*s" (a precision of a string only cuts it)
// and a constant up to kMaxConstantWidth ("%*pbl" of (1 << 10)) pass.
// EINVAL naming the conversion; the decoder then prints that event's
// fields raw. Pure.
inline constexpr uint64_t kMaxConstantWidth = 4096;
Status check_print_widths(const tep_event& event);

// The arrays `event`'s print format prints with __print_hex(),
// __print_hex_str() and __print_array(), whose length is a number of the
// record: libtraceevent 1.7 prints as many bytes (elements times their
// size) as it says, past the array and the record if it says so.
// compile() takes each array (a __get_dynamic_array() or a field) with its
// count and element size in the forms real kernels use (integer literals,
// sizeof() as libtraceevent folds it, fields of 1, 2, 4 or 8 bytes,
// __get_dynamic_array_len(), + - * /), EINVAL naming any other; check()
// then evaluates them on each record before libtraceevent prints it. The
// compiled printer (PrintFormat) refuses these helpers, so they are only
// ever printed by libtraceevent, behind check().
//
//   print fmt: "buf=%s", __print_hex(__get_dynamic_array(buf), REC->len)
//   check(record whose len is 4096 and buf 16 bytes)
//     -> EINVAL "__print_hex() of 'buf' would print 4096 bytes, its array holds 16"
//   "%s", __print_array(REC->tlp_header, 4, 4): 16 bytes of a 16-byte field, always OK
//
// Also the strings it prints with __get_str() (and __get_rel_str()): libtraceevent
// reads one from where its __data_loc points up to its NUL, with strlen(),
// wherever that is. check() wants a NUL before the record's end (the kernel
// writes it inside the string's own length; one after, still in the
// record, prints the bytes between, as the compiled formats do, which read
// no further than the record). TraceDecoder::print_fmt() holds the
// compiled formats to check() too, though they could print such a record:
// whichever printer an event has, a record prints the same.
//
//   print fmt: "%s", __get_str(name)
//   check(record whose name is "abc" at its very end, with no NUL)
//     -> EINVAL "__get_str() of 'name' has no NUL before the end of the record"
class ArrayBounds {
 public:
  static Result<ArrayBounds> compile(const tep_event& event);

  // OK when no printed array runs past its bytes in `raw`, a record whose
  // fixed fields are inside it and whose __data_loc fields point inside it
  // (TraceDecoder::check()); else EINVAL saying which and by how much.
  Status check(std::span<const uint8_t> raw) const;

  bool empty() const { return arrays_.empty() && strings_.empty(); }

 private:
  struct Array {
    const tep_print_arg* count = nullptr;    // elements (bytes for __print_hex())
    const tep_print_arg* el_size = nullptr;  // __print_array(): bytes per element
    const char* helper = "";                 // "__print_hex()", ...
    const char* name = "";                   // the array's field
    uint32_t offset = 0, size = 0;           // the field (of a __data_loc: its loc)
    bool dynamic = false, relative = false;  // __data_loc, __rel_loc
  };
  struct String {
    const char* name = "";
    uint32_t offset = 0, size = 0;           // the field (of a __data_loc: its loc)
    bool dynamic = false, relative = false;  // __data_loc, __rel_loc
  };
  const tep_event* event_ = nullptr;
  std::vector<Array> arrays_;
  std::vector<String> strings_;
};

}  // namespace pp::report

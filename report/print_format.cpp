#include "report/print_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <traceevent/event-parse.h>

#include "report/bytes.h"

namespace pp::report {
namespace {

enum BinaryOp : uint8_t {
  kOr,
  kLogOr,
  kAnd,
  kLogAnd,
  kLt,
  kLe,
  kGt,
  kGe,
  kShl,
  kShr,
  kEq,
  kNe,
  kSub,
  kAdd,
  kMul,
  kDiv,
  kMod,
};

uint64_t apply(uint8_t op, uint64_t l, uint64_t r) {
  switch (op) {
    case kOr:
      return l | r;
    case kLogOr:
      return l || r;
    case kAnd:
      return l & r;
    case kLogAnd:
      return l && r;
    case kLt:
      return l < r;
    case kLe:
      return l <= r;
    case kGt:
      return l > r;
    case kGe:
      return l >= r;
    case kShl:
      return l << r;  // r < 64: the compiler refuses others
    case kShr:
      return l >> r;
    case kEq:
      return l == r;
    case kNe:
      return l != r;
    case kSub:
      return l - r;
    case kAdd:
      return l + r;
    case kMul:
      return l * r;
    case kDiv:
      return l / r;  // r != 0: the compiler refuses others
    case kMod:
      return l % r;
  }
  return 0;
}

// What a cast keeps of a value, as libtraceevent's casts do: the
// fixed-width and char/short/int types mask to their width (the signed ones
// too: a cast never sign-extends there), "unsigned " before those the same,
// anything else (long, pointers, structs, typedefs) keeps the value.
uint64_t cast_mask(std::string_view type) {
  if (type.size() < 2 || type.back() == '*' || type.starts_with("struct"))
    return ~0ULL;
  if (type == "u8" || type == "s8")
    return 0xff;
  if (type == "u16" || type == "s16")
    return 0xffff;
  if (type == "u32" || type == "s32")
    return 0xffffffff;
  if (type.starts_with("unsigned "))
    type.remove_prefix(9);
  if (type == "char")
    return 0xff;
  if (type == "short")
    return 0xffff;
  if (type == "int")
    return 0xffffffff;
  return ~0ULL;
}

void append_hex(std::string& out, uint64_t v, bool upper = false) {
  char buf[20];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, 16);
  (void)ec;
  if (upper)
    for (char* c = buf; c < end; c++)
      *c = char(std::toupper(static_cast<unsigned char>(*c)));
  out.append(buf, size_t(end - buf));
}

// vsnprintf into `out`: the printf conversions the compiler could not
// render by hand (a width, a precision, a flag). `spec` is one conversion
// of the format file that check_spec() accepted, and the argument the type
// its length says, exactly what libtraceevent hands to printf. The format
// is not a literal by nature (it is the format file's), hence the pragma.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void append_printf(std::string& out, const char* spec, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, spec);
  int n = std::vsnprintf(buf, sizeof(buf), spec, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (size_t(n) < sizeof(buf)) {
    out.append(buf, size_t(n));
    return;
  }
  size_t at = out.size();
  out.resize(at + size_t(n) + 1);
  va_start(ap, spec);
  std::vsnprintf(out.data() + at, size_t(n) + 1, spec, ap);
  va_end(ap);
  out.resize(at + size_t(n));
}
#pragma GCC diagnostic pop

Error refuse(const std::string& why) {
  return Error(EOPNOTSUPP, why);
}

}  // namespace

class PrintFormat::Compiler {
 public:
  Compiler(const tep_event& event, int long_size, PrintFormat& out)
      : event_(const_cast<tep_event&>(event)), long_size_(long_size), out_(out) {}

  Status compile() {
    if (event_.flags & (TEP_EVENT_FL_FAILED | TEP_EVENT_FL_ISBPRINT | TEP_EVENT_FL_ISPRINT |
                        TEP_EVENT_FL_ISFTRACE | TEP_EVENT_FL_PRINTRAW))
      return refuse("libtraceevent prints it its own way (failed, ftrace or raw)");
    if (!event_.print_fmt.format)
      return refuse("it has no print format");
    if (sizeof(long) != 8)
      return refuse("this host's long is not 64 bits");
    std::string_view f(event_.print_fmt.format);
    arg_ = event_.print_fmt.args;
    // parse_args()'s walk: a conversion, or text up to the next one.
    int64_t left = int64_t(f.size());
    size_t pos = 0;
    while (pos < f.size()) {
      size_t used = 0;
      if (f[pos] == '%' && (pos + 1 >= f.size() || f[pos + 1] != '%')) {
        PP_ASSIGN_OR_RETURN(used, conversion(f, pos));
      } else {
        PP_ASSIGN_OR_RETURN(used, literal(f, pos));
      }
      left -= int64_t(used);
      if (left <= 0)
        break;
      pos += used;
    }
    return ok_status();
  }

 private:
  // Text up to a conversion (parse_arg_string()); the characters it used.
  Result<size_t> literal(std::string_view f, size_t pos) {
    std::string text;
    size_t used = 0;
    for (size_t p = pos; p < f.size(); p++) {
      char c = f[p];
      if (c == '\\') {
        p++;
        used++;
        if (p >= f.size())
          return refuse("its format ends in a backslash");
        switch (f[p]) {
          case 'n':
            text += '\n';
            break;
          case 't':
            text += '\t';
            break;
          case 'r':
            text += '\r';
            break;
          default:
            text += f[p];
            break;
        }
      } else if (c == '%') {
        if (p + 1 < f.size() && f[p + 1] == '%') {
          text += '%';
          p++;
          used++;
        } else {
          break;
        }
      } else {
        text += c;
      }
      used++;
    }
    add_text(text);
    return used;
  }

  // One conversion (parse_arg_format()); the characters it used.
  Result<size_t> conversion(std::string_view f, size_t pos) {
    size_t used = 1;
    int ls = 0;
    for (size_t p = pos + 1; p < f.size(); p++) {
      char c = f[p];
      switch (c) {
        case '#':
        case '.':
        case '-':
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
        case '8':
        case '9':
          break;
        case 'h':
          ls--;
          break;
        case 'l':
          ls++;
          break;
        case 'L':
          ls = 2;
          break;
        case 'z':
        case 'Z':
          ls = 1;
          break;
        case '*':
          return refuse("a '*' width");
        case 'p': {
          PP_ASSIGN_OR_RETURN(const tep_print_arg* arg, next_arg());
          char after = p + 1 < f.size() ? f[p + 1] : 0;
          Op op;
          switch (after) {
            case 'F':
            case 'f':
            case 'S':
            case 's':
              op.kind = Op::kFunction;
              used++;
              break;
            case 'M':
            case 'm':
            case 'I':
            case 'i':
            case 'U':
            case 'h':
              return refuse(std::string("%p") + after);
            default:
              op.kind = Op::kPointer;
              break;
          }
          if (arg->type == TEP_PRINT_BSTRING)
            return refuse("%p of a bstring");
          PP_ASSIGN_OR_RETURN(op.arg, expr(arg));
          out_.ops_.push_back(op);
          return used + 1;
        }
        case 'd':
        case 'u':
        case 'i':
        case 'x':
        case 'X':
        case 'o': {
          PP_ASSIGN_OR_RETURN(const tep_print_arg* arg, next_arg());
          std::string_view spec = f.substr(pos, p + 1 - pos);
          if (spec.size() > 30)
            return refuse("a conversion longer than libtraceevent keeps");
          if (ls < -2 || ls > 2)
            return refuse("a length libtraceevent refuses");
          Op op;
          op.kind = Op::kNumber;
          op.conversion = c;
          op.length = int8_t(ls);
          PP_RETURN_IF_ERROR(check_spec(spec, true, op));
          PP_ASSIGN_OR_RETURN(op.arg, expr(arg));
          out_.ops_.push_back(op);
          return used + 1;
        }
        case 's': {
          PP_ASSIGN_OR_RETURN(const tep_print_arg* arg, next_arg());
          std::string_view spec = f.substr(pos, p + 1 - pos);
          if (spec.size() > 31)
            return refuse("a conversion longer than libtraceevent keeps");
          Op op;
          op.kind = Op::kString;
          PP_RETURN_IF_ERROR(check_spec(spec, false, op));
          PP_ASSIGN_OR_RETURN(op.arg, str(arg));
          out_.ops_.push_back(op);
          return used + 1;
        }
        default:
          // libtraceevent prints what it does not know between > and <,
          // and takes no argument for it.
          add_text(std::string(">") + c + "<");
          return used + 1;
      }
      used++;
    }
    return used;  // the format ended inside the conversion: nothing printed
  }

  // A spec "%[flags][width][.precision][length]conv": plain when it is
  // "%" length conv; a length other than h hh l ll L z (numbers) or none
  // (strings) is refused, so that printf reads what libtraceevent passes.
  Status check_spec(std::string_view spec, bool number, Op& op) {
    std::string_view body = spec.substr(1, spec.size() - 2);
    size_t length_at = body.find_first_of("hlLzZ");
    std::string_view flags = body.substr(0, std::min(length_at, body.size()));
    std::string_view length = length_at == std::string_view::npos ? "" : body.substr(length_at);
    if (flags.find_first_not_of("#-.0123456789") != std::string_view::npos)
      return refuse("a conversion with an unusual length");
    if (number) {
      if (length != "" && length != "h" && length != "hh" && length != "l" && length != "ll" &&
          length != "L" && length != "z")
        return refuse("a conversion with an unusual length");
    } else if (!length.empty() || flags.find('#') != std::string_view::npos) {
      return refuse("a string conversion with a length or '#'");
    }
    op.plain = flags.empty();
    op.offset = add_string(spec);
    op.size = uint32_t(spec.size());
    return ok_status();
  }

  Result<const tep_print_arg*> next_arg() {
    if (!arg_)
      return refuse("a conversion without an argument");
    const tep_print_arg* a = arg_;
    arg_ = arg_->next;
    return a;
  }

  Result<const tep_format_field*> field(const char* name) {
    const tep_format_field* f = tep_find_any_field(&event_, name);
    if (!f)
      return refuse(std::string("a field it does not have: ") + (name ? name : "?"));
    return f;
  }

  // A number (eval_num_arg()).
  Result<int32_t> expr(const tep_print_arg* arg) {
    if (!arg)
      return refuse("an operator without an operand");
    Expr e;
    switch (arg->type) {
      case TEP_PRINT_NULL:
      case TEP_PRINT_FLAGS:
      case TEP_PRINT_SYMBOL:
      case TEP_PRINT_INT_ARRAY:
      case TEP_PRINT_HEX:
      case TEP_PRINT_HEX_STR:
      case TEP_PRINT_STRING:
      case TEP_PRINT_BSTRING:
      case TEP_PRINT_BITMASK:
      case TEP_PRINT_CPUMASK:
        return constant(0);
      case TEP_PRINT_ATOM:
        return constant(std::strtoull(arg->atom.atom, nullptr, 0));
      case TEP_PRINT_FIELD: {
        PP_ASSIGN_OR_RETURN(const tep_format_field* f, field(arg->field.name));
        if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
          return constant(0);
        e.kind = Expr::kField;
        e.offset = uint32_t(f->offset);
        e.size = uint8_t(f->size);
        return add(e);
      }
      case TEP_PRINT_TYPE: {
        PP_ASSIGN_OR_RETURN(int32_t item, expr(arg->typecast.item));
        uint64_t mask = cast_mask(arg->typecast.type ? arg->typecast.type : "");
        if (mask == ~0ULL)
          return item;
        e.kind = Expr::kMask;
        e.value = mask;
        e.a = item;
        return fold(e);
      }
      case TEP_PRINT_DYNAMIC_ARRAY_LEN: {
        const tep_format_field* f = arg->dynarray.field;
        if (!f || f->size != 4)
          return refuse("__get_dynamic_array_len() of an odd field");
        e.kind = Expr::kDynLen;
        e.offset = uint32_t(f->offset);
        return add(e);
      }
      case TEP_PRINT_OP:
        return op(arg);
      default:
        return refuse("an argument of a kind not compiled (" + std::to_string(int(arg->type)) +
                      ")");
    }
  }

  Result<int32_t> op(const tep_print_arg* arg) {
    const char* o = arg->op.op ? arg->op.op : "";
    Expr e;
    if (std::strcmp(o, "[") == 0)
      return subscript(arg);
    if (std::strcmp(o, "?") == 0) {
      const tep_print_arg* branches = arg->op.right;
      if (!branches || branches->type != TEP_PRINT_OP || !branches->op.op ||
          std::strcmp(branches->op.op, ":") != 0)
        return refuse("a ? without its :");
      e.kind = Expr::kCond;
      PP_ASSIGN_OR_RETURN(e.a, expr(arg->op.left));
      PP_ASSIGN_OR_RETURN(e.b, expr(branches->op.left));
      PP_ASSIGN_OR_RETURN(e.c, expr(branches->op.right));
      return fold(e);
    }
    PP_ASSIGN_OR_RETURN(int32_t left, expr(arg->op.left));
    PP_ASSIGN_OR_RETURN(int32_t right, expr(arg->op.right));
    e.kind = Expr::kBinary;
    e.a = left;
    e.b = right;
    char second = o[0] ? o[1] : 0;
    switch (o[0]) {
      case '!':
        if (second == 0) {
          e.kind = Expr::kNot;
          e.a = right;
          return fold(e);
        }
        if (second != '=')
          return refuse(std::string("the operator ") + o);
        e.op = kNe;
        break;
      case '~':
        e.kind = Expr::kComplement;
        e.a = right;
        return fold(e);
      case '|':
        e.op = second ? kLogOr : kOr;
        break;
      case '&':
        e.op = second ? kLogAnd : kAnd;
        break;
      case '<':
        if (second == 0)
          e.op = kLt;
        else if (second == '<')
          e.op = kShl;
        else if (second == '=')
          e.op = kLe;
        else
          return refuse(std::string("the operator ") + o);
        break;
      case '>':
        if (second == 0)
          e.op = kGt;
        else if (second == '>')
          e.op = kShr;
        else if (second == '=')
          e.op = kGe;
        else
          return refuse(std::string("the operator ") + o);
        break;
      case '=':
        if (second != '=')
          return refuse(std::string("the operator ") + o);
        e.op = kEq;
        break;
      case '-':
        e.op = kSub;
        break;
      case '+':
        e.op = kAdd;
        break;
      case '*':
        e.op = kMul;
        break;
      case '/':
      case '%':
        if (out_.exprs_[size_t(right)].kind != Expr::kConst ||
            out_.exprs_[size_t(right)].value == 0)
          return refuse("a division by something other than a constant");
        e.op = o[0] == '/' ? kDiv : kMod;
        break;
      default:
        return refuse(std::string("the operator ") + o);
    }
    if ((e.op == kShl || e.op == kShr) &&
        (out_.exprs_[size_t(right)].kind != Expr::kConst || out_.exprs_[size_t(right)].value >= 64))
      return refuse("a shift by something other than a constant below 64");
    return fold(e);
  }

  // REC->array[index] (eval_num_arg()'s "["), e.g. sys_enter's
  // REC->args[0]: the element at the index, read as unsigned of its size.
  // Only a fixed array by a constant index inside it compiles.
  Result<int32_t> subscript(const tep_print_arg* arg) {
    const tep_print_arg* array = arg->op.left;
    if (!array || array->type != TEP_PRINT_FIELD)
      return refuse("an array subscript of what is no field");
    PP_ASSIGN_OR_RETURN(const tep_format_field* f, field(array->field.name));
    if (!(f->flags & TEP_FIELD_IS_ARRAY) || (f->flags & TEP_FIELD_IS_DYNAMIC))
      return refuse("an array subscript of a field that is no fixed array");
    PP_ASSIGN_OR_RETURN(int32_t index, expr(arg->op.right));
    const Expr& i = out_.exprs_[size_t(index)];
    if (i.kind != Expr::kConst)
      return refuse("an array subscript by a value of the record");
    const uint64_t element = uint64_t(f->elementsize);
    if (element != 1 && element != 2 && element != 4 && element != 8)
      return refuse("an array subscript of elements of an odd size");
    const uint64_t field_size = uint64_t(f->size);
    if (i.value >= field_size / element)
      return refuse("an array subscript past the end of its field");
    Expr e;
    e.kind = Expr::kField;
    e.offset = uint32_t(uint64_t(f->offset) + i.value * element);
    e.size = uint8_t(element);
    return add(e);
  }

  // What a %s prints (print_str_arg()).
  Result<int32_t> str(const tep_print_arg* arg) {
    if (!arg)
      return refuse("a ?: without a branch");
    Str s;
    switch (arg->type) {
      case TEP_PRINT_NULL:
      case TEP_PRINT_TYPE:
        s.kind = Str::kNothing;
        break;
      case TEP_PRINT_ATOM: {
        std::string_view text(arg->atom.atom ? arg->atom.atom : "");
        s.kind = Str::kText;
        s.offset = add_string(text);
        s.size = uint32_t(text.size());
        break;
      }
      case TEP_PRINT_FIELD: {
        PP_ASSIGN_OR_RETURN(const tep_format_field* f, field(arg->field.name));
        s.offset = uint32_t(f->offset);
        if (!(f->flags & TEP_FIELD_IS_ARRAY) && f->size == long_size_) {
          // Taken for a pointer; no printk formats are loaded: its value.
          s.kind = Str::kLongHex;
          s.size = uint32_t(long_size_);
        } else {
          if (f->size <= 0)
            return refuse("%s of a field of no size");
          s.kind = Str::kChars;
          s.size = uint32_t(f->size);
        }
        break;
      }
      case TEP_PRINT_STRING: {
        PP_ASSIGN_OR_RETURN(const tep_format_field* f, field(arg->string.string));
        if (f->size != 4)
          return refuse("__get_str() of a field that is no 4-byte __data_loc");
        s.kind = Str::kDynString;
        s.offset = uint32_t(f->offset);
        s.relative = f->flags & TEP_FIELD_IS_RELATIVE;
        break;
      }
      case TEP_PRINT_FLAGS:
      case TEP_PRINT_SYMBOL: {
        bool flags = arg->type == TEP_PRINT_FLAGS;
        s.kind = flags ? Str::kFlags : Str::kSymbol;
        PP_ASSIGN_OR_RETURN(s.expr, expr(flags ? arg->flags.field : arg->symbol.field));
        s.first = uint32_t(out_.names_.size());
        for (const tep_print_flag_sym* n = flags ? arg->flags.flags : arg->symbol.symbols; n;
             n = n->next) {
          if (!n->value || !std::isdigit(static_cast<unsigned char>(n->value[0])))
            return refuse("a flag or symbol whose value is a name");
          std::string_view name(n->str ? n->str : "");
          out_.names_.push_back(Name{int64_t(std::strtoull(n->value, nullptr, 0)), add_string(name),
                                     uint32_t(name.size())});
        }
        s.count = uint32_t(out_.names_.size()) - s.first;
        if (flags && arg->flags.delim) {
          std::string_view delim(arg->flags.delim);
          s.delim = add_string(delim);
          s.delim_size = uint32_t(delim.size());
          s.has_delim = true;
        }
        break;
      }
      case TEP_PRINT_OP: {
        const char* o = arg->op.op ? arg->op.op : "";
        if (o[0] != '?') {
          s.kind = Str::kNothing;
          break;
        }
        const tep_print_arg* branches = arg->op.right;
        if (!branches || branches->type != TEP_PRINT_OP || !branches->op.op ||
            std::strcmp(branches->op.op, ":") != 0)
          return refuse("a ? without its :");
        s.kind = Str::kCond;
        PP_ASSIGN_OR_RETURN(s.expr, expr(arg->op.left));
        PP_ASSIGN_OR_RETURN(s.then, str(branches->op.left));
        PP_ASSIGN_OR_RETURN(s.otherwise, str(branches->op.right));
        break;
      }
      default:
        return refuse("%s of an argument of a kind not compiled (" +
                      std::to_string(int(arg->type)) + ")");
    }
    out_.strs_.push_back(s);
    return int32_t(out_.strs_.size() - 1);
  }

  Result<int32_t> constant(uint64_t value) {
    Expr e;
    e.kind = Expr::kConst;
    e.value = value;
    return add(e);
  }

  int32_t add(const Expr& e) {
    out_.exprs_.push_back(e);
    return int32_t(out_.exprs_.size() - 1);
  }

  // Adds `e`, or the constant it comes to when its operands are constants.
  Result<int32_t> fold(const Expr& e) {
    auto is_const = [&](int32_t i) { return i < 0 || out_.exprs_[size_t(i)].kind == Expr::kConst; };
    if (is_const(e.a) && is_const(e.b) && is_const(e.c)) {
      int32_t at = add(e);
      uint64_t value = out_.eval(at, nullptr, 0);
      out_.exprs_.pop_back();
      return constant(value);
    }
    return add(e);
  }

  void add_text(std::string_view text) {
    if (text.empty())
      return;
    Op op;
    op.kind = Op::kText;
    op.offset = add_string(text);
    op.size = uint32_t(text.size());
    out_.ops_.push_back(op);
  }

  // Into the text pool, NUL-terminated; its offset.
  uint32_t add_string(std::string_view text) {
    uint32_t at = uint32_t(out_.text_.size());
    out_.text_.append(text);
    out_.text_ += '\0';
    return at;
  }

  tep_event& event_;
  int long_size_;
  PrintFormat& out_;
  const tep_print_arg* arg_ = nullptr;
};

Result<PrintFormat> PrintFormat::compile(const tep_event& event, int long_size) {
  PrintFormat out;
  Compiler compiler(event, long_size, out);
  PP_RETURN_IF_ERROR(compiler.compile());
  return out;
}

uint64_t PrintFormat::eval(int32_t index, const uint8_t* data, size_t size) const {
  const Expr& e = exprs_[size_t(index)];
  switch (e.kind) {
    case Expr::kConst:
      return e.value;
    case Expr::kField:
      return read_unsigned(data + e.offset, e.size);
    case Expr::kMask:
      return eval(e.a, data, size) & e.value;
    case Expr::kNot:
      return !eval(e.a, data, size);
    case Expr::kComplement:
      return ~eval(e.a, data, size);
    case Expr::kBinary:
      return apply(e.op, eval(e.a, data, size), eval(e.b, data, size));
    case Expr::kCond:
      return eval(e.a, data, size) ? eval(e.b, data, size) : eval(e.c, data, size);
    case Expr::kDynLen:
      return read_unsigned(data + e.offset, 4) >> 16;
  }
  return 0;
}

void PrintFormat::put_string(const Op& op, std::string_view text, std::string& out) const {
  if (op.plain) {
    out.append(text);
    return;
  }
  char small[256];
  if (text.size() < sizeof(small)) {
    std::memcpy(small, text.data(), text.size());
    small[text.size()] = 0;
    append_printf(out, spec(op), small);
  } else {
    std::string copy(text);  // rare: a long string under a width
    append_printf(out, spec(op), copy.c_str());
  }
}

void PrintFormat::render_str(const Op& op, int32_t index, const uint8_t* data, size_t size,
                             std::string& out) const {
  const Str& s = strs_[size_t(index)];
  switch (s.kind) {
    case Str::kNothing:
      return;
    case Str::kText:
      put_string(op, std::string_view(text_.data() + s.offset, s.size), out);
      return;
    case Str::kChars: {
      const char* at = reinterpret_cast<const char*>(data + s.offset);
      put_string(op, std::string_view(at, strnlen(at, s.size)), out);
      return;
    }
    case Str::kLongHex:
      append_hex(out, read_unsigned(data + s.offset, s.size));
      return;
    case Str::kDynString: {
      uint32_t loc = uint32_t(read_unsigned(data + s.offset, 4));
      size_t offset = loc & 0xffff, length = loc >> 16;
      if (s.relative)
        offset += s.offset + 4;
      if (length == 0 || offset > size)
        return;
      const char* at = reinterpret_cast<const char*>(data + offset);
      put_string(op, std::string_view(at, strnlen(at, size - offset)), out);
      return;
    }
    case Str::kFlags: {
      auto value = int64_t(eval(s.expr, data, size));
      bool printed = false;
      bool delim = s.has_delim;
      for (uint32_t i = s.first; i < s.first + s.count; i++) {
        const Name& n = names_[i];
        std::string_view name(text_.data() + n.offset, n.size);
        if (!value && n.value < 0) {
          put_string(op, name, out);
          break;
        }
        if (n.value > 0 && (value & n.value) == n.value) {
          if (printed && delim)
            out.append(text_.data() + s.delim, s.delim_size);
          put_string(op, name, out);
          printed = true;
          value &= ~n.value;
        }
      }
      if (value) {
        if (printed && delim)
          out.append(text_.data() + s.delim, s.delim_size);
        out += "0x";
        append_hex(out, uint64_t(value));
      }
      return;
    }
    case Str::kSymbol: {
      auto value = int64_t(eval(s.expr, data, size));
      for (uint32_t i = s.first; i < s.first + s.count; i++) {
        const Name& n = names_[i];
        if (value == n.value) {
          put_string(op, std::string_view(text_.data() + n.offset, n.size), out);
          return;
        }
      }
      out += "0x";
      append_hex(out, uint64_t(value));
      return;
    }
    case Str::kCond:
      render_str(op, eval(s.expr, data, size) ? s.then : s.otherwise, data, size, out);
      return;
  }
}

void PrintFormat::render(std::span<const uint8_t> raw, std::string& out) const {
  const uint8_t* data = raw.data();
  size_t size = raw.size();
  for (const Op& op : ops_) {
    switch (op.kind) {
      case Op::kText:
        out.append(text_.data() + op.offset, op.size);
        break;
      case Op::kNumber: {
        uint64_t v = eval(op.arg, data, size);
        bool is_signed = op.conversion == 'd' || op.conversion == 'i';
        if (!op.plain) {
          switch (op.length) {
            case -2:
              append_printf(out, spec(op), static_cast<char>(v));
              break;
            case -1:
              append_printf(out, spec(op), static_cast<short>(v));
              break;
            case 0:
              append_printf(out, spec(op), static_cast<int>(v));
              break;
            case 1:
              append_printf(out, spec(op), static_cast<long>(v));
              break;
            default:
              append_printf(out, spec(op), static_cast<long long>(v));
              break;
          }
          break;
        }
        // What printf makes of the value cast as libtraceevent casts it.
        int bits = op.length <= -2 ? 8 : op.length == -1 ? 16 : op.length == 0 ? 32 : 64;
        if (bits < 64) {
          uint64_t mask = (1ULL << bits) - 1;
          v &= mask;
          if (is_signed && (v >> (bits - 1)))
            v |= ~mask;  // sign-extended
        }
        char buf[24];
        char* end = buf;
        switch (op.conversion) {
          case 'd':
          case 'i':
            end = std::to_chars(buf, buf + sizeof(buf), int64_t(v)).ptr;
            break;
          case 'u':
            end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
            break;
          case 'o':
            end = std::to_chars(buf, buf + sizeof(buf), v, 8).ptr;
            break;
          default:
            append_hex(out, v, op.conversion == 'X');
            continue;
        }
        out.append(buf, size_t(end - buf));
        break;
      }
      case Op::kPointer: {
        uint64_t v = eval(op.arg, data, size);
        if (v == 0) {
          out += "(nil)";
        } else {
          out += "0x";
          append_hex(out, v);
        }
        break;
      }
      case Op::kFunction:
        out += "0x";
        append_hex(out, eval(op.arg, data, size));
        break;
      case Op::kString:
        render_str(op, op.arg, data, size, out);
        break;
    }
  }
}

namespace {

// The subscripts of `arg` and of every argument below it (the nesting is
// bounded by report/format_bounds.h before libtraceevent parses).
Status check_subscripts_of(const tep_event& event, const tep_print_arg* arg) {
  for (; arg; arg = arg->next) {
    switch (arg->type) {
      case TEP_PRINT_OP: {
        if (arg->op.op && std::strcmp(arg->op.op, "[") == 0) {
          const tep_print_arg* array = arg->op.left;
          const tep_print_arg* index = arg->op.right;
          if (!array || array->type != TEP_PRINT_FIELD || !array->field.name)
            return Error(EINVAL, "its print fmt subscripts what is no field");
          const char* name = array->field.name;
          const tep_format_field* f =
              array->field.field ? array->field.field
                                 : tep_find_any_field(const_cast<tep_event*>(&event), name);
          if (!f || !(f->flags & TEP_FIELD_IS_ARRAY) || (f->flags & TEP_FIELD_IS_DYNAMIC) ||
              f->elementsize <= 0)
            return errorf(EINVAL, "its print fmt subscripts '%s', which is no fixed array", name);
          char* end = nullptr;
          unsigned long long i = index && index->type == TEP_PRINT_ATOM && index->atom.atom
                                     ? std::strtoull(index->atom.atom, &end, 0)
                                     : 0;
          if (!end || end == index->atom.atom || *end)
            return errorf(EINVAL, "its print fmt subscripts '%s' by a value of the record", name);
          if (f->size < 0 || i >= uint64_t(f->size) / uint64_t(f->elementsize))
            return errorf(
                EINVAL,
                "its print fmt subscripts '%s' at %llu, past the end of its field (%d elements)",
                name, i, f->size / f->elementsize);
          break;  // both sides checked: a field and a constant
        }
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->op.left));
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->op.right));
        break;
      }
      case TEP_PRINT_DYNAMIC_ARRAY:
        if (arg->dynarray.index)
          return Error(EINVAL, "its print fmt subscripts a __data_loc array");
        break;
      case TEP_PRINT_TYPE:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->typecast.item));
        break;
      case TEP_PRINT_FLAGS:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->flags.field));
        break;
      case TEP_PRINT_SYMBOL:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->symbol.field));
        break;
      case TEP_PRINT_HEX:
      case TEP_PRINT_HEX_STR:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->hex.field));
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->hex.size));
        break;
      case TEP_PRINT_INT_ARRAY:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->int_array.field));
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->int_array.count));
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->int_array.el_size));
        break;
      case TEP_PRINT_FUNC:
        PP_RETURN_IF_ERROR(check_subscripts_of(event, arg->func.args));
        break;
      default:
        break;
    }
  }
  return ok_status();
}

}  // namespace

Status check_print_subscripts(const tep_event& event) {
  return check_subscripts_of(event, event.print_fmt.args);
}

namespace {

// The value of `arg` when it is a constant: an integer literal, or + - * |
// & << >> of constants (shifts below 64); nullopt otherwise.
std::optional<uint64_t> constant_of(const tep_print_arg* arg) {
  if (!arg)
    return std::nullopt;
  if (arg->type == TEP_PRINT_ATOM && arg->atom.atom) {
    char* end = nullptr;
    uint64_t v = std::strtoull(arg->atom.atom, &end, 0);
    if (end == arg->atom.atom || *end)
      return std::nullopt;
    return v;
  }
  if (arg->type != TEP_PRINT_OP || !arg->op.op)
    return std::nullopt;
  auto left = constant_of(arg->op.left), right = constant_of(arg->op.right);
  if (!left || !right)
    return std::nullopt;
  std::string_view op = arg->op.op;
  if (op == "+")
    return *left + *right;
  if (op == "-")
    return *left - *right;
  if (op == "*")
    return *left * *right;
  if (op == "|")
    return *left | *right;
  if (op == "&")
    return *left & *right;
  if ((op == "<<" || op == ">>") && *right < 64)
    return op == "<<" ? *left << *right : *left >> *right;
  return std::nullopt;
}

}  // namespace

Status check_print_widths(const tep_event& event) {
  const char* format = event.print_fmt.format;
  if (!format)
    return ok_status();
  // Conversions take their arguments in order, a '*' one of its own first.
  const tep_print_arg* arg = event.print_fmt.args;
  for (const char* c = format; *c; c++) {
    if (*c != '%')
      continue;
    const char* start = c++;
    if (*c == '%')
      continue;
    bool precision = false;
    for (; *c && std::strchr("-+ #0123456789.*", *c); c++) {
      if (*c == '.')
        precision = true;
      if (*c != '*')
        continue;
      bool is_width = !precision;
      const tep_print_arg* star = arg;
      arg = arg ? arg->next : nullptr;
      const char* end = c + 1;
      while (*end && std::strchr("-+ #0123456789.*hlLqjzt", *end))
        end++;
      if (!is_width && *end == 's')
        continue;  // "%.*s": a precision only cuts a string
      auto value = constant_of(star);
      if (value && *value <= kMaxConstantWidth)
        continue;  // "%*pbl" of (1 << 10)
      size_t n = size_t(end - start) + (*end ? 1 : 0);
      return errorf(EINVAL,
                    "its print fmt takes a %s from the record ('%.*s'), which libtraceevent "
                    "pads to without a bound",
                    is_width ? "field width" : "precision", int(std::min<size_t>(n, 16)), start);
    }
    if (!*c)
      break;
    arg = arg ? arg->next : nullptr;  // the conversion's own
  }
  return ok_status();
}

namespace {

// Whether `arg`, a count or element size, is a number ArrayBounds can
// evaluate as libtraceevent's eval_num_arg() does (unsigned 64 bits).
Status check_count(const tep_event& event, const tep_print_arg* arg) {
  if (!arg)
    return Error(EINVAL, "its print fmt prints an array with no count");
  switch (arg->type) {
    case TEP_PRINT_ATOM: {
      char* end = nullptr;
      if (!arg->atom.atom)
        break;
      std::strtoull(arg->atom.atom, &end, 0);
      if (end != arg->atom.atom && !*end)
        return ok_status();
      break;
    }
    case TEP_PRINT_FIELD: {
      const tep_format_field* f =
          arg->field.field ? arg->field.field
                           : tep_find_any_field(const_cast<tep_event*>(&event), arg->field.name);
      if (f && (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) &&
          !(f->flags & TEP_FIELD_IS_DYNAMIC))
        return ok_status();
      break;
    }
    case TEP_PRINT_DYNAMIC_ARRAY_LEN:
      if (arg->dynarray.field && arg->dynarray.field->size == 4)
        return ok_status();
      break;
    case TEP_PRINT_OP:
      if (arg->op.op && arg->op.left && arg->op.right &&
          (std::strcmp(arg->op.op, "+") == 0 || std::strcmp(arg->op.op, "-") == 0 ||
           std::strcmp(arg->op.op, "*") == 0 || std::strcmp(arg->op.op, "/") == 0)) {
        PP_RETURN_IF_ERROR(check_count(event, arg->op.left));
        return check_count(event, arg->op.right);
      }
      break;
    default:
      break;
  }
  return Error(EINVAL, "its print fmt prints an array by a count it cannot bound");
}

// `arg` (check_count() accepted it) on `raw`; nullopt for a division by 0.
std::optional<uint64_t> eval_count(const tep_event& event, const tep_print_arg* arg,
                                   std::span<const uint8_t> raw) {
  switch (arg->type) {
    case TEP_PRINT_ATOM:
      return std::strtoull(arg->atom.atom, nullptr, 0);
    case TEP_PRINT_FIELD: {
      const tep_format_field* f =
          arg->field.field ? arg->field.field
                           : tep_find_any_field(const_cast<tep_event*>(&event), arg->field.name);
      if (!f || size_t(f->offset) + size_t(f->size) > raw.size())
        return std::nullopt;
      return tep_read_number(event.tep, raw.data() + f->offset, f->size);
    }
    case TEP_PRINT_DYNAMIC_ARRAY_LEN: {
      const tep_format_field* f = arg->dynarray.field;
      if (size_t(f->offset) + 4 > raw.size())
        return std::nullopt;
      return tep_read_number(event.tep, raw.data() + f->offset, 4) >> 16;
    }
    case TEP_PRINT_OP: {
      auto left = eval_count(event, arg->op.left, raw);
      auto right = eval_count(event, arg->op.right, raw);
      if (!left || !right)
        return std::nullopt;
      switch (arg->op.op[0]) {
        case '+':
          return *left + *right;
        case '-':
          return *left - *right;
        case '*':
          return *left * *right;
        default:
          if (*right == 0)
            return std::nullopt;
          return *left / *right;
      }
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<ArrayBounds> ArrayBounds::compile(const tep_event& event) {
  ArrayBounds bounds;
  bounds.event_ = &event;
  // Every argument, at any depth (bounded by report/format_bounds.h).
  std::vector<const tep_print_arg*> pending;
  for (const tep_print_arg* a = event.print_fmt.args; a; a = a->next)
    pending.push_back(a);
  while (!pending.empty()) {
    const tep_print_arg* arg = pending.back();
    pending.pop_back();
    auto push = [&](const tep_print_arg* list) {
      for (const tep_print_arg* a = list; a; a = a->next)
        pending.push_back(a);
    };
    const tep_print_arg* array = nullptr;
    Array a;
    switch (arg->type) {
      case TEP_PRINT_HEX:
      case TEP_PRINT_HEX_STR:
        array = arg->hex.field;
        a.count = arg->hex.size;
        a.helper = arg->type == TEP_PRINT_HEX ? "__print_hex()" : "__print_hex_str()";
        break;
      case TEP_PRINT_INT_ARRAY:
        array = arg->int_array.field;
        a.count = arg->int_array.count;
        a.el_size = arg->int_array.el_size;
        a.helper = "__print_array()";
        break;
      case TEP_PRINT_OP:
        push(arg->op.left);
        push(arg->op.right);
        continue;
      case TEP_PRINT_TYPE:
        push(arg->typecast.item);
        continue;
      case TEP_PRINT_FLAGS:
        push(arg->flags.field);
        continue;
      case TEP_PRINT_SYMBOL:
        push(arg->symbol.field);
        continue;
      case TEP_PRINT_FUNC:
        push(arg->func.args);
        continue;
      case TEP_PRINT_STRING: {
        // As libtraceevent finds it when it prints.
        const tep_format_field* f =
            arg->string.field ? arg->string.field
            : arg->string.string
                ? tep_find_any_field(const_cast<tep_event*>(&event), arg->string.string)
                : nullptr;
        if (f)
          bounds.strings_.push_back({f->name, uint32_t(f->offset), uint32_t(f->size),
                                     bool(f->flags & TEP_FIELD_IS_DYNAMIC),
                                     bool(f->flags & TEP_FIELD_IS_RELATIVE)});
        continue;
      }
      default:
        continue;
    }
    if (array && array->type == TEP_PRINT_DYNAMIC_ARRAY && array->dynarray.field) {
      const tep_format_field* f = array->dynarray.field;
      a.name = f->name;
      a.offset = uint32_t(f->offset);
      a.size = uint32_t(f->size);
      a.dynamic = true;
      a.relative = f->flags & TEP_FIELD_IS_RELATIVE;
      if (f->size != 4)
        return errorf(EINVAL, "its print fmt prints '%s' with %s, a __data_loc of %d bytes",
                      f->name, a.helper, f->size);
    } else if (array && array->type == TEP_PRINT_FIELD && array->field.name) {
      const tep_format_field* f =
          array->field.field
              ? array->field.field
              : tep_find_any_field(const_cast<tep_event*>(&event), array->field.name);
      if (!f || f->size < 0 || (f->flags & TEP_FIELD_IS_DYNAMIC))
        return errorf(EINVAL, "its print fmt prints '%s' with %s, which is no fixed field",
                      array->field.name, a.helper);
      a.name = f->name;
      a.offset = uint32_t(f->offset);
      a.size = uint32_t(f->size);
    } else {
      return errorf(EINVAL, "its print fmt prints what is no field with %s", a.helper);
    }
    if (Status s = check_count(event, a.count); !s.ok())
      return errorf(EINVAL, "its print fmt prints '%s' with %s by a count it cannot bound", a.name,
                    a.helper);
    if (a.el_size && !check_count(event, a.el_size).ok())
      return errorf(EINVAL, "its print fmt prints '%s' with %s by an element size it cannot bound",
                    a.name, a.helper);
    bounds.arrays_.push_back(a);
  }
  return bounds;
}

Status ArrayBounds::check(std::span<const uint8_t> raw) const {
  for (const Array& a : arrays_) {
    // The array's bytes in this record.
    uint64_t holds = a.size;
    if (a.dynamic) {
      if (size_t(a.offset) + 4 > raw.size())
        return errorf(EINVAL, "the record ends before the __data_loc of '%s'", a.name);
      uint64_t loc = tep_read_number(event_->tep, raw.data() + a.offset, 4);
      uint64_t start = (loc & 0xffff) + (a.relative ? a.offset + 4 : 0);
      holds = loc >> 16;
      if (start + holds > raw.size())
        return errorf(EINVAL, "'%s' points past the record", a.name);
    }
    auto count = eval_count(*event_, a.count, raw);
    std::optional<uint64_t> el_size = uint64_t(1);
    if (a.el_size)
      el_size = eval_count(*event_, a.el_size, raw);
    if (!count || !el_size)
      return errorf(EINVAL, "the count of %s of '%s' divides by 0 in this record", a.helper,
                    a.name);
    // libtraceevent reads each element as 1, 2, 4 or 8 bytes and steps by
    // the element size (a size of 0 reads the same byte `count` times).
    uint64_t bytes = 0;
    if (!__builtin_mul_overflow(*count, std::max<uint64_t>(*el_size, 1), &bytes) && bytes <= holds)
      continue;
    if (!a.el_size)
      return errorf(EINVAL, "%s of '%s' would print %llu bytes, its array holds %llu", a.helper,
                    a.name, static_cast<unsigned long long>(*count),
                    static_cast<unsigned long long>(holds));
    return errorf(
        EINVAL, "%s of '%s' would print %llu elements of %llu bytes, its array holds %llu bytes",
        a.helper, a.name, static_cast<unsigned long long>(*count),
        static_cast<unsigned long long>(*el_size), static_cast<unsigned long long>(holds));
  }
  for (const String& str : strings_) {
    // Where libtraceevent starts reading, and the length it checks for 0
    // (it prints nothing then).
    uint64_t start = str.offset, length = str.size;
    if (str.dynamic) {
      if (size_t(str.offset) + 4 > raw.size())
        return errorf(EINVAL, "the record ends before the __data_loc of '%s'", str.name);
      uint64_t loc = tep_read_number(event_->tep, raw.data() + str.offset, 4);
      start = (loc & 0xffff) + (str.relative ? str.offset + 4 : 0);
      length = loc >> 16;
    }
    if (length == 0)
      continue;
    if (start >= raw.size() || !std::memchr(raw.data() + start, 0, raw.size() - start))
      return errorf(EINVAL, "__get_str() of '%s' has no NUL before the end of the record",
                    str.name);
  }
  return ok_status();
}

}  // namespace pp::report

#include "sys/perf_abi_attr.h"

#include <linux/perf_event.h>

#include <cinttypes>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "base/strings.h"

namespace pp::sys {
namespace {

// Accessors through the struct's members: the compiler knows where each bit
// field lives. Assigning a wider value truncates, as a bit field does.
#define PP_ATTR_FIELD(text, json, member, format, in_6_1)                                    \
  AttrField {                                                                                \
    text, json, AttrFormat::format,                                                          \
        [](const EventAttr& a) -> uint64_t { return uint64_t(a.attr.member); },              \
        [](EventAttr& a, uint64_t v) { a.attr.member = decltype(a.attr.member)(v); }, in_6_1 \
  }
#define PP_PERF_FIELD(member, format) PP_ATTR_FIELD(#member, #member, member, format, true)
#define PP_FLAG(member) PP_PERF_FIELD(member, kUnsigned)

// perf 6.1's perf_event_attr__fprintf order, with the extensions described in
// the header where they belong.
constexpr AttrField kFields[] = {
    PP_PERF_FIELD(type, kUnsigned),
    PP_PERF_FIELD(size, kUnsigned),
    PP_PERF_FIELD(config, kHex),
    PP_ATTR_FIELD("{ sample_period, sample_freq }", "sample_period", sample_period, kUnsigned,
                  true),
    PP_PERF_FIELD(sample_type, kSampleType),
    PP_PERF_FIELD(read_format, kReadFormat),
    PP_FLAG(disabled),
    PP_FLAG(inherit),
    PP_FLAG(pinned),
    PP_FLAG(exclusive),
    PP_FLAG(exclude_user),
    PP_FLAG(exclude_kernel),
    PP_FLAG(exclude_hv),
    PP_FLAG(exclude_idle),
    PP_FLAG(mmap),
    PP_FLAG(comm),
    PP_FLAG(freq),
    PP_FLAG(inherit_stat),
    PP_FLAG(enable_on_exec),
    PP_FLAG(task),
    PP_FLAG(watermark),
    PP_FLAG(precise_ip),
    PP_FLAG(mmap_data),
    PP_FLAG(sample_id_all),
    PP_FLAG(exclude_host),
    PP_FLAG(exclude_guest),
    PP_FLAG(exclude_callchain_kernel),
    PP_FLAG(exclude_callchain_user),
    PP_FLAG(mmap2),
    PP_FLAG(comm_exec),
    PP_FLAG(use_clockid),
    PP_FLAG(context_switch),
    PP_FLAG(write_backward),
    PP_FLAG(namespaces),
    PP_FLAG(ksymbol),
    PP_FLAG(bpf_event),
    PP_FLAG(aux_output),
    PP_FLAG(cgroup),
    PP_FLAG(text_poke),
    PP_FLAG(build_id),
    PP_FLAG(inherit_thread),
    PP_FLAG(remove_on_exec),
    PP_FLAG(sigtrap),
    PP_ATTR_FIELD("__reserved_1", "reserved_1", __reserved_1, kHex, false),
    PP_ATTR_FIELD("{ wakeup_events, wakeup_watermark }", "wakeup_events", wakeup_events, kUnsigned,
                  true),
    PP_PERF_FIELD(bp_type, kUnsigned),
    PP_ATTR_FIELD("{ bp_addr, config1 }", "config1", config1, kHex, true),
    PP_ATTR_FIELD("{ bp_len, config2 }", "config2", config2, kHex, true),
    PP_PERF_FIELD(branch_sample_type, kBranchSampleType),
    PP_PERF_FIELD(sample_regs_user, kHex),
    PP_PERF_FIELD(sample_stack_user, kUnsigned),
    PP_PERF_FIELD(clockid, kSigned),
    PP_PERF_FIELD(sample_regs_intr, kHex),
    PP_PERF_FIELD(aux_watermark, kUnsigned),
    PP_PERF_FIELD(sample_max_stack, kUnsigned),
    PP_ATTR_FIELD("__reserved_2", "reserved_2", __reserved_2, kHex, false),
    PP_PERF_FIELD(aux_sample_size, kUnsigned),
    PP_ATTR_FIELD("__reserved_3", "reserved_3", __reserved_3, kHex, false),
    PP_PERF_FIELD(sig_data, kUnsigned),
    AttrField{"config3", "config3", AttrFormat::kHex,
              [](const EventAttr& a) { return a.config3(); },
              [](EventAttr& a, uint64_t v) { a.config3() = v; }, false},
};

#undef PP_FLAG
#undef PP_PERF_FIELD
#undef PP_ATTR_FIELD

// perf 6.1's tables, in its order (which is not always bit order).
constexpr AttrFlagName kSampleTypeNames[] = {
    {PERF_SAMPLE_IP, "IP"},
    {PERF_SAMPLE_TID, "TID"},
    {PERF_SAMPLE_TIME, "TIME"},
    {PERF_SAMPLE_ADDR, "ADDR"},
    {PERF_SAMPLE_READ, "READ"},
    {PERF_SAMPLE_CALLCHAIN, "CALLCHAIN"},
    {PERF_SAMPLE_ID, "ID"},
    {PERF_SAMPLE_CPU, "CPU"},
    {PERF_SAMPLE_PERIOD, "PERIOD"},
    {PERF_SAMPLE_STREAM_ID, "STREAM_ID"},
    {PERF_SAMPLE_RAW, "RAW"},
    {PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK"},
    {PERF_SAMPLE_REGS_USER, "REGS_USER"},
    {PERF_SAMPLE_STACK_USER, "STACK_USER"},
    {PERF_SAMPLE_IDENTIFIER, "IDENTIFIER"},
    {PERF_SAMPLE_REGS_INTR, "REGS_INTR"},
    {PERF_SAMPLE_DATA_SRC, "DATA_SRC"},
    {PERF_SAMPLE_WEIGHT, "WEIGHT"},
    {PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR"},
    {PERF_SAMPLE_AUX, "AUX"},
    {PERF_SAMPLE_CGROUP, "CGROUP"},
    {PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE"},
    {PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE"},
    {PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT"},
};

constexpr AttrFlagName kReadFormatNames[] = {
    {PERF_FORMAT_TOTAL_TIME_ENABLED, "TOTAL_TIME_ENABLED"},
    {PERF_FORMAT_TOTAL_TIME_RUNNING, "TOTAL_TIME_RUNNING"},
    {PERF_FORMAT_ID, "ID"},
    {PERF_FORMAT_GROUP, "GROUP"},
    {PERF_FORMAT_LOST, "LOST"},
};

constexpr AttrFlagName kBranchSampleTypeNames[] = {
    {PERF_SAMPLE_BRANCH_USER, "USER"},
    {PERF_SAMPLE_BRANCH_KERNEL, "KERNEL"},
    {PERF_SAMPLE_BRANCH_HV, "HV"},
    {PERF_SAMPLE_BRANCH_ANY, "ANY"},
    {PERF_SAMPLE_BRANCH_ANY_CALL, "ANY_CALL"},
    {PERF_SAMPLE_BRANCH_ANY_RETURN, "ANY_RETURN"},
    {PERF_SAMPLE_BRANCH_IND_CALL, "IND_CALL"},
    {PERF_SAMPLE_BRANCH_ABORT_TX, "ABORT_TX"},
    {PERF_SAMPLE_BRANCH_IN_TX, "IN_TX"},
    {PERF_SAMPLE_BRANCH_NO_TX, "NO_TX"},
    {PERF_SAMPLE_BRANCH_COND, "COND"},
    {PERF_SAMPLE_BRANCH_CALL_STACK, "CALL_STACK"},
    {PERF_SAMPLE_BRANCH_IND_JUMP, "IND_JUMP"},
    {PERF_SAMPLE_BRANCH_CALL, "CALL"},
    {PERF_SAMPLE_BRANCH_NO_FLAGS, "NO_FLAGS"},
    {PERF_SAMPLE_BRANCH_NO_CYCLES, "NO_CYCLES"},
    {PERF_SAMPLE_BRANCH_TYPE_SAVE, "TYPE_SAVE"},
    {PERF_SAMPLE_BRANCH_HW_INDEX, "HW_INDEX"},
    {PERF_SAMPLE_BRANCH_PRIV_SAVE, "PRIV_SAVE"},
};

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%#" PRIx64, value);
  return buf;
}

std::span<const AttrFlagName> bit_names(AttrFormat format) {
  switch (format) {
    case AttrFormat::kSampleType:
      return kSampleTypeNames;
    case AttrFormat::kReadFormat:
      return kReadFormatNames;
    case AttrFormat::kBranchSampleType:
      return kBranchSampleTypeNames;
    default:
      return {};
  }
}

std::vector<std::string> flag_list(std::span<const AttrFlagName> names, uint64_t value) {
  std::vector<std::string> out;
  uint64_t named = 0;
  for (const AttrFlagName& b : names) {
    named |= b.bit;
    if (value & b.bit)
      out.emplace_back(b.name);
  }
  if (uint64_t rest = value & ~named)
    out.push_back(hex(rest));
  return out;
}

std::string flags(std::span<const AttrFlagName> names, uint64_t value) {
  return join(flag_list(names, value), "|");
}

std::string_view field_name_of(std::string_view line) {
  // "  name   value": names may hold spaces ("{ bp_addr, config1 }"), so a
  // braced name ends at its '}'.
  line = trim(line);
  if (!line.empty() && line[0] == '{') {
    size_t close = line.find('}');
    return close == std::string_view::npos ? line : line.substr(0, close + 1);
  }
  return line.substr(0, line.find_first_of(" \t"));
}

Result<uint64_t> parse_flags(const AttrField& field, std::string_view text) {
  uint64_t value = 0;
  for (std::string_view word : split(text, '|')) {
    bool found = false;
    for (const AttrFlagName& b : bit_names(field.format)) {
      if (b.name == word) {
        value |= b.bit;
        found = true;
        break;
      }
    }
    if (found)
      continue;
    if (starts_with(word, "0x")) {
      PP_ASSIGN_OR_RETURN(uint64_t bits, parse_u64(word, field.text_name));
      value |= bits;
      continue;
    }
    return errorf(EINVAL, "'%.*s' is not a %.*s flag perf prints", int(word.size()), word.data(),
                  int(field.text_name.size()), field.text_name.data());
  }
  return value;
}

Result<uint64_t> parse_value(const AttrField& field, std::string_view text) {
  switch (field.format) {
    case AttrFormat::kSampleType:
    case AttrFormat::kReadFormat:
    case AttrFormat::kBranchSampleType:
      return parse_flags(field, text);
    case AttrFormat::kSigned:
      if (starts_with(text, "-")) {
        PP_ASSIGN_OR_RETURN(uint64_t magnitude, parse_u64(text.substr(1), field.text_name));
        if (magnitude > uint64_t(1) << 63)
          return errorf(ERANGE, "%.*s '%.*s' does not fit in 64 bits", int(field.text_name.size()),
                        field.text_name.data(), int(text.size()), text.data());
        return ~magnitude + 1;
      }
      return parse_u64(text, field.text_name);
    case AttrFormat::kHex:
      if (!starts_with(text, "0x") && text != "0")
        return errorf(EINVAL, "%.*s '%.*s' is not a 0x hex number", int(field.text_name.size()),
                      field.text_name.data(), int(text.size()), text.data());
      return parse_u64(text, field.text_name);
    case AttrFormat::kUnsigned:
      break;
  }
  return parse_u64(text, field.text_name);
}

}  // namespace

std::span<const AttrField> attr_fields() {
  return kFields;
}

const AttrField* find_attr_field(std::string_view text_name) {
  for (const AttrField& f : kFields)
    if (f.text_name == text_name)
      return &f;
  return nullptr;
}

uint64_t attr_field_max(const AttrField& field) {
  EventAttr attr;
  field.set(attr, ~uint64_t(0));
  uint64_t max = field.get(attr);
  // clockid is signed: all ones reads back as -1, which is every bit of the
  // 32-bit field.
  if (field.format == AttrFormat::kSigned)
    max = 0xffffffffu;
  return max;
}

std::span<const AttrFlagName> attr_flag_names(AttrFormat format) {
  return bit_names(format);
}

std::vector<std::string> attr_flag_list(AttrFormat format, uint64_t value) {
  return flag_list(bit_names(format), value);
}

std::string_view attr_flag_name(AttrFormat format, uint64_t bit) {
  for (const AttrFlagName& b : bit_names(format))
    if (b.bit == bit)
      return b.name;
  return {};
}

std::string_view attr_word5_flag_name(unsigned bit) {
  constexpr unsigned kFlagsWord = 5;
  if (bit >= 64)
    return {};
  // The 1-bit fields of word 5, found by setting each and seeing which bit
  // lights: the compiler, not a second list, says where a bit field lives.
  for (const AttrField& f : kFields) {
    if (attr_field_max(f) != 1)
      continue;
    EventAttr one;
    f.set(one, 1);
    if (one.words[kFlagsWord] == uint64_t(1) << bit)
      return f.text_name;
  }
  return {};
}

std::string sample_type_names(uint64_t sample_type) {
  return flags(kSampleTypeNames, sample_type);
}

std::string read_format_names(uint64_t read_format) {
  return flags(kReadFormatNames, read_format);
}

std::string branch_sample_type_names(uint64_t branch_sample_type) {
  return flags(kBranchSampleTypeNames, branch_sample_type);
}

std::string format_attr_value(const AttrField& field, uint64_t value) {
  switch (field.format) {
    case AttrFormat::kUnsigned:
      return std::to_string(value);
    case AttrFormat::kHex:
      return hex(value);
    case AttrFormat::kSigned:
      return std::to_string(int64_t(value));
    case AttrFormat::kSampleType:
    case AttrFormat::kReadFormat:
    case AttrFormat::kBranchSampleType:
      return flags(bit_names(field.format), value);
  }
  return std::to_string(value);
}

void print_attr_fields(std::ostream& out, const EventAttr& attr) {
  char line[160];
  for (const AttrField& f : kFields) {
    uint64_t value = f.get(attr);
    if (!value)
      continue;
    std::string text = format_attr_value(f, value);
    std::snprintf(line, sizeof(line), "  %-32.*s ", int(f.text_name.size()), f.text_name.data());
    out << line << text << '\n';
  }
}

void print_attr_block(std::ostream& out, const EventAttr& attr) {
  out << kAttrBlockRule << '\n' << kAttrBlockHeader << '\n';
  print_attr_fields(out, attr);
  out << kAttrBlockRule << '\n';
}

std::string attr_block(const EventAttr& attr) {
  std::ostringstream out;
  print_attr_block(out, attr);
  return out.str();
}

Status read_attr_line(std::string_view line, EventAttr* attr) {
  std::string_view name = field_name_of(line);
  const AttrField* field = find_attr_field(name);
  if (!field)
    return errorf(EINVAL, "unknown perf_event_attr field '%.*s' in line '%.*s'", int(name.size()),
                  name.data(), int(line.size()), line.data());
  std::string_view rest = trim(line);
  rest = trim(rest.substr(name.size()));
  if (rest.empty())
    return errorf(EINVAL, "no value for %.*s in line '%.*s'", int(name.size()), name.data(),
                  int(line.size()), line.data());
  auto value = parse_value(*field, rest);
  if (!value.ok())
    return std::move(value).error().with_context(std::string("line '") + std::string(line) + "'");
  uint64_t max = attr_field_max(*field);
  bool fits = *value <= max;
  if (field->format == AttrFormat::kSigned)
    fits = int64_t(*value) >= INT32_MIN && int64_t(*value) <= INT32_MAX;
  if (!fits)
    return errorf(ERANGE, "%.*s %.*s does not fit in the field (at most %s)", int(name.size()),
                  name.data(), int(rest.size()), rest.data(), hex(max).c_str());
  field->set(*attr, *value);
  return ok_status();
}

Result<EventAttr> read_attr_fields(std::string_view text) {
  EventAttr attr;
  for (std::string_view line : split(text, '\n')) {
    if (trim(line).empty())
      continue;
    PP_RETURN_IF_ERROR(read_attr_line(line, &attr));
  }
  return attr;
}

}  // namespace pp::sys

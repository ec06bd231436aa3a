#include "ftrace/ring_page.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "base/strings.h"

namespace pp::ftrace {
namespace {

// The commit word's flags (kernel/trace/ring_buffer.c, RB_MISSED_EVENTS and
// RB_MISSED_STORED). The kernel adds them to a long, so on 64-bit the upper
// half is their sign extension: only the low 32 bits carry meaning.
constexpr uint32_t kMissedEvents = 1U << 31;
constexpr uint32_t kMissedStored = 1U << 30;
constexpr uint32_t kLengthMask = kMissedStored - 1;
// An absolute time stamp holds 59 bits; the top 5 come from the running
// clock (ring_buffer.c, TS_MSB and rb_fix_abs_ts()).
constexpr uint64_t kAbsoluteBits = 59;
constexpr uint64_t kAbsoluteTop = ~((uint64_t(1) << kAbsoluteBits) - 1);
// Bigger pages than buffer_subbuf_size_kb allows (its largest order) are
// not a kernel's.
constexpr uint64_t kMaxPageSize = uint64_t(1) << 20;

uint64_t load(const uint8_t* p, uint32_t size) {
  if (size == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// One "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;" line.
struct PageField {
  std::string_view name;
  uint64_t offset = 0;
  uint64_t size = 0;
};

Result<uint64_t> field_number(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos)
    return Error(EINVAL, "no '" + std::string(key) + "'");
  std::string_view rest = line.substr(at + key.size());
  return parse_u64(trim(rest.substr(0, rest.find(';'))), key.substr(0, key.size() - 1));
}

Result<PageField> parse_page_field(std::string_view line) {
  std::string_view decl = trim(line.substr(line.find(':') + 1));
  decl = decl.substr(0, decl.find(';'));
  size_t space = decl.find_last_of(" \t");
  PageField field;
  field.name = space == std::string_view::npos ? decl : decl.substr(space + 1);
  PP_ASSIGN_OR_RETURN(field.offset, field_number(line, "offset:"));
  PP_ASSIGN_OR_RETURN(field.size, field_number(line, "size:"));
  return field;
}

Error header_error(std::string_view file, const std::string& what) {
  return Error(EINVAL, "events/" + std::string(file) + ": " + what +
                           "; is it the header file of this kernel's tracefs?");
}

Status parse_header_page(std::string_view text, RingLayout& layout) {
  std::optional<PageField> timestamp, commit, data;
  int line_no = 0;
  for (std::string_view line : split(text, '\n')) {
    ++line_no;
    if (trim(line).empty())
      continue;
    if (!starts_with(trim(line), "field:"))
      return header_error("header_page", "line " + std::to_string(line_no) + " is no field line");
    auto field = parse_page_field(line);
    if (!field.ok())
      return header_error("header_page",
                          "line " + std::to_string(line_no) + ": " + field.error().message());
    if (field->name == "timestamp")
      timestamp = *field;
    else if (field->name == "commit")
      commit = *field;
    else if (field->name == "data")
      data = *field;
    // "overwrite" shares the commit word's first byte; the flags are read
    // from the commit word itself.
  }
  if (!timestamp || !commit || !data)
    return header_error("header_page", "it lacks one of the fields timestamp, commit and data");
  if (timestamp->size != 8)
    return header_error("header_page",
                        "timestamp has size " + std::to_string(timestamp->size) + ", not 8");
  if (commit->size != 4 && commit->size != 8)
    return header_error("header_page",
                        "commit has size " + std::to_string(commit->size) + ", not 4 or 8");
  if (data->size == 0 || data->offset > kMaxPageSize || data->size > kMaxPageSize ||
      data->offset + data->size > kMaxPageSize || data->size > kLengthMask)
    return header_error("header_page", "data at offset " + std::to_string(data->offset) + " size " +
                                           std::to_string(data->size) +
                                           " makes no page of at most 1 MiB");
  for (const PageField* f : {&*timestamp, &*commit})
    if (f->offset + f->size > data->offset)
      return header_error("header_page", std::string(f->name) + " at offset " +
                                             std::to_string(f->offset) + " overlaps data at " +
                                             std::to_string(data->offset));
  layout.timestamp_offset = uint32_t(timestamp->offset);
  layout.timestamp_size = uint32_t(timestamp->size);
  layout.commit_offset = uint32_t(commit->offset);
  layout.commit_size = uint32_t(commit->size);
  layout.data_offset = uint32_t(data->offset);
  layout.data_size = uint32_t(data->size);
  return ok_status();
}

// "type_len    :    5 bits", "padding     : type == 29",
// "data max type_len  == 28": the number after the last ':' or '=='.
Result<uint64_t> trailing_number(std::string_view line) {
  size_t at = line.find_last_of(":=");
  std::string_view rest = trim(line.substr(at + 1));
  if (rest.ends_with("bits"))
    rest = trim(rest.substr(0, rest.size() - 4));
  return parse_u64(rest, "number");
}

Status parse_header_event(std::string_view text, RingLayout& layout) {
  struct Key {
    std::string_view prefix;
    uint32_t* value;
  };
  const Key keys[] = {
      {"type_len", &layout.type_len_bits},     {"time_delta", &layout.time_delta_bits},
      {"padding", &layout.padding_type},       {"time_extend", &layout.time_extend_type},
      {"time_stamp", &layout.time_stamp_type}, {"data max type_len", &layout.data_max_type_len},
  };
  bool seen[std::size(keys)] = {};
  int line_no = 0;
  for (std::string_view raw : split(text, '\n')) {
    ++line_no;
    std::string_view line = trim(raw);
    for (size_t i = 0; i < std::size(keys); ++i) {
      if (!starts_with(line, keys[i].prefix))
        continue;
      std::string_view after = line.substr(keys[i].prefix.size());
      if (after.empty() || (after[0] != ' ' && after[0] != '\t' && after[0] != ':'))
        continue;  // "time_stamp" is no prefix of "time_stamp_x"
      auto number = trailing_number(line);
      if (!number.ok() || *number > 64)
        return header_error("header_event", "line " + std::to_string(line_no) + " ('" +
                                                std::string(line) + "') holds no small number");
      *keys[i].value = uint32_t(*number);
      seen[i] = true;
      break;
    }
  }
  for (size_t i = 0; i < std::size(keys); ++i)
    if (!seen[i])
      return header_error("header_event", "it lacks '" + std::string(keys[i].prefix) + "'");
  // The header is one u32 whose bit-fields the files size; the reader below
  // takes type_len from its low bits (little-endian) or high bits.
  if (layout.type_len_bits != 5 || layout.time_delta_bits != 27)
    return header_error("header_event",
                        "the event header is " + std::to_string(layout.type_len_bits) + "+" +
                            std::to_string(layout.time_delta_bits) + " bits, not 5+27");
  const uint32_t types = 1U << layout.type_len_bits;
  const uint32_t special[] = {layout.padding_type, layout.time_extend_type, layout.time_stamp_type};
  for (uint32_t t : special)
    if (t >= types || t <= layout.data_max_type_len)
      return header_error("header_event", "type " + std::to_string(t) +
                                              " is no special type above data max type_len " +
                                              std::to_string(layout.data_max_type_len));
  if (layout.padding_type == layout.time_extend_type ||
      layout.padding_type == layout.time_stamp_type ||
      layout.time_extend_type == layout.time_stamp_type)
    return header_error("header_event", "two special types share a number");
  return ok_status();
}

// Walks one page; `base` is its offset in the whole input, for messages.
class PageWalker {
 public:
  PageWalker(std::span<const uint8_t> page, const RingLayout& layout, uint64_t index, uint64_t base,
             uint32_t cpu, RingRead& out)
      : page_(page), layout_(layout), index_(index), base_(base), cpu_(cpu), out_(out) {}

  Status walk() {
    const uint8_t* p = page_.data();
    uint64_t clock = load(p + layout_.timestamp_offset, layout_.timestamp_size);
    const auto commit = uint32_t(load(p + layout_.commit_offset, layout_.commit_size));
    const uint32_t length = commit & kLengthMask;
    if (length > layout_.data_size)
      return fail(layout_.commit_offset, "commit says " + std::to_string(length) +
                                             " bytes of data, more than the page's " +
                                             std::to_string(layout_.data_size));
    if (commit & kMissedEvents)
      ++out_.pages_after_loss;
    if ((commit & kMissedEvents) && !(commit & kMissedStored))
      ++out_.losses_uncounted;
    if (commit & kMissedStored) {
      if (!(commit & kMissedEvents))
        return fail(layout_.commit_offset, "a lost-event count is flagged without a loss");
      if (uint64_t(length) + layout_.commit_size > layout_.data_size)
        return fail(layout_.commit_offset,
                    "the lost-event count is flagged stored but has no "
                    "room after the data");
      out_.missed_events += load(p + layout_.data_offset + length, layout_.commit_size);
    }
    const uint8_t* data = p + layout_.data_offset;
    uint64_t at = 0;
    while (at < length) {
      const uint64_t event_at = layout_.data_offset + at;
      if (length - at < 4)
        return fail(event_at, "an event header runs past the data's end at byte " +
                                  std::to_string(base_ + layout_.data_offset + length));
      uint32_t word;
      std::memcpy(&word, data + at, 4);
      uint32_t type_len, delta;
      if constexpr (std::endian::native == std::endian::little) {
        type_len = word & ((1U << layout_.type_len_bits) - 1);
        delta = word >> layout_.type_len_bits;
      } else {
        type_len = word >> layout_.time_delta_bits;
        delta = word & ((1U << layout_.time_delta_bits) - 1);
      }
      const uint64_t left = length - at;
      if (type_len == layout_.padding_type && delta == 0)
        break;  // the rest of the page is empty
      if (left < 8 && (type_len == 0 || type_len > layout_.data_max_type_len))
        return fail(event_at, "a type " + std::to_string(type_len) +
                                  " event's 8 bytes run past the data's end");
      uint32_t array = 0;
      if (left >= 8)
        std::memcpy(&array, data + at + 4, 4);
      const uint64_t extended = (uint64_t(array) << layout_.time_delta_bits) + delta;
      if (type_len == layout_.padding_type) {
        // A discarded record: array is its length past the header. Its delta
        // counts, but for the 1 the kernel writes in place of a zero one
        // (ring_buffer.c: rb_event_discard(), and rb_read_data_buffer(),
        // the validator of a boot-mapped buffer).
        if (uint64_t(array) + 4 > left)
          return fail(event_at,
                      "padding of " + std::to_string(array) + " bytes runs past the data's end");
        if (delta != 1)
          clock += delta;
        at += uint64_t(array) + 4;
        continue;
      }
      if (type_len == layout_.time_extend_type) {
        clock += extended;
        at += 8;
        continue;
      }
      if (type_len == layout_.time_stamp_type) {
        uint64_t absolute = extended;
        if (clock & kAbsoluteTop) {
          absolute |= clock & kAbsoluteTop;
          if (absolute < clock)
            absolute += uint64_t(1) << kAbsoluteBits;
        }
        clock = absolute;
        at += 8;
        continue;
      }
      if (type_len > layout_.data_max_type_len)
        return fail(event_at, "type_len " + std::to_string(type_len) + " is no known type");
      uint64_t payload_at, payload_size;
      if (type_len == 0) {
        if (array < 4 || uint64_t(array) + 4 > left)
          return fail(event_at, "a record of length " + std::to_string(array) +
                                    " runs past the data's end or is shorter than its length word");
        payload_at = at + 8;
        payload_size = array - 4;
      } else {
        payload_size = uint64_t(type_len) * 4;
        if (payload_size + 4 > left)
          return fail(event_at, "a record of " + std::to_string(payload_size) +
                                    " bytes runs past the data's end");
        payload_at = at + 4;
      }
      if (payload_size < 2)
        return fail(event_at, "a record of " + std::to_string(payload_size) +
                                  " bytes is too short for its event id");
      clock += delta;
      RingRecord record;
      record.timestamp = clock;
      record.cpu = cpu_;
      std::memcpy(&record.event_id, data + payload_at, 2);
      record.payload = page_.subspan(layout_.data_offset + payload_at, payload_size);
      out_.records.push_back(record);
      at = payload_at + payload_size;
    }
    return ok_status();
  }

 private:
  Error fail(uint64_t offset_in_page, const std::string& what) const {
    return Error(EINVAL, "ftrace ring buffer of CPU " + std::to_string(cpu_) + ", page " +
                             std::to_string(index_) + ", byte " +
                             std::to_string(base_ + offset_in_page) + ": " + what +
                             "; the page is not as the kernel writes it (a different kernel's "
                             "header files, or a damaged buffer)");
  }

  std::span<const uint8_t> page_;
  const RingLayout& layout_;
  uint64_t index_;
  uint64_t base_;
  uint32_t cpu_;
  RingRead& out_;
};

}  // namespace

Result<RingLayout> parse_ring_layout(std::string_view header_page, std::string_view header_event) {
  RingLayout layout;
  PP_RETURN_IF_ERROR(parse_header_page(header_page, layout));
  PP_RETURN_IF_ERROR(parse_header_event(header_event, layout));
  return layout;
}

Status read_ring_pages(std::span<const uint8_t> pages, const RingLayout& layout, uint32_t cpu,
                       RingRead& out) {
  const uint64_t page_size = layout.page_size();
  if (page_size == 0 || layout.data_size == 0)
    return Error(EINVAL, "ftrace ring buffer: no page layout (parse the header files first)");
  if (pages.size() % page_size != 0)
    return Error(EINVAL, "ftrace ring buffer of CPU " + std::to_string(cpu) + ": " +
                             std::to_string(pages.size()) + " bytes are not whole pages of " +
                             std::to_string(page_size) + " bytes; was the read cut short?");
  for (uint64_t base = 0, index = 0; base < pages.size(); base += page_size, ++index) {
    PageWalker walker(pages.subspan(base, page_size), layout, index, base, cpu, out);
    PP_RETURN_IF_ERROR(walker.walk());
    ++out.pages;
  }
  return ok_status();
}

}  // namespace pp::ftrace

#include "ftrace/common_fields.h"

#include <charconv>
#include <cstring>
#include <string>

namespace pp::ftrace {
namespace {

// The number after `key` ("offset:") in `line`, or nothing.
bool number_after(std::string_view line, std::string_view key, uint32_t& out) {
  size_t at = line.find(key);
  if (at == std::string_view::npos)
    return false;
  const char* begin = line.data() + at + key.size();
  const char* end = line.data() + line.size();
  auto [ptr, ec] = std::from_chars(begin, end, out);
  return ec == std::errc() && ptr != begin;
}

}  // namespace

std::optional<FieldPlace> find_field(std::string_view format, std::string_view declarator) {
  // "\tfield:int common_pid;\toffset:4;": the declarator between a space and ';'.
  std::string needle = " ";
  needle += declarator;
  needle += ';';
  size_t at = format.find(needle);
  if (at == std::string_view::npos)
    return std::nullopt;
  size_t end = format.find('\n', at);
  std::string_view line = format.substr(at, end == std::string_view::npos ? end : end - at);
  FieldPlace place;
  if (!number_after(line, "offset:", place.offset) || !number_after(line, "size:", place.size))
    return std::nullopt;
  return place;
}

PidField common_pid_field(std::string_view format) {
  PidField field;
  auto place = find_field(format, "common_pid");
  if (place && place->size == 4 && place->offset <= 4096) {
    field.offset = place->offset;
    field.size = place->size;
  }
  return field;
}

int32_t record_pid(std::span<const uint8_t> record, const PidField& field) {
  if (field.size != 4 || uint64_t(field.offset) + field.size > record.size())
    return -1;
  int32_t pid;
  std::memcpy(&pid, record.data() + field.offset, sizeof(pid));
  return pid;
}

}  // namespace pp::ftrace

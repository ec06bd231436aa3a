// libFuzzer target: any bytes as a tracepoint format file through the
// common_pid lookup; the field it returns always lies inside a page and has
// the size the reader takes. Seeds: tests/fuzz/corpus/common_fields_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ftrace/common_fields.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  pp::ftrace::PidField field = pp::ftrace::common_pid_field(text);
  if (field.size != 4 || field.offset > 4096)
    std::abort();
  // The record lookup never reads past what it is given.
  (void)pp::ftrace::record_pid(std::span<const uint8_t>(data, size), field);
  return 0;
}

// libFuzzer target: any bytes as a kernel command line through the
// trace_instance= parser; every instance it returns has a name. Seeds:
// tests/fuzz/corpus/boot_param_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ftrace/boot_param.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const pp::ftrace::BootInstance& b : pp::ftrace::boot_instances(text))
    if (b.name.empty())
      std::abort();
  return 0;
}

// libFuzzer target: any text through the kernel-log machine-check parser and
// everything that decodes what it finds (decode_mce, the text and JSON
// printers). The parser must report malformed lines, never crash or read
// outside its input. Seeds: tests/fuzz/corpus/mce_log_fuzzer/ (kernel log
// text as Linux prints it, Intel and AMD, with malformed lines).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/json.h"
#include "mce/decode.h"
#include "mce/kernel_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp;
  using namespace pp::mce;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  MceLog log = parse_mce_log(text);
  for (const MceLogEntry& entry : log.entries) {
    for (CpuVendor vendor : {CpuVendor::kUnknown, CpuVendor::kAmd}) {
      std::string out;
      print_mce_log_entry_text(entry, vendor, out);
      (void)dump_json(mce_log_entry_json(entry, vendor));
    }
  }
  for (const MceLogProblem& problem : log.problems)
    (void)problem.message.size();
  return 0;
}

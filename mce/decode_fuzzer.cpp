// libFuzzer target: any register values through the decoder, its CPU-model
// tables (units, MSCOD, SMCA codes, the MCi_MISC memory location) and its
// printers, and any text through the kernel-verdict comparison. Nothing a
// record holds may crash it, read outside a table, or leave a decode
// without advice. Input: 7 u64 registers (status, misc, addr, ipid, synd,
// mcgcap, mcgstatus), the bank and cpuid (u32), one byte choosing the
// vendor and the origin, then the verdict text. Seeds:
// tests/fuzz/corpus/decode_fuzzer/ (an Ice Lake iMC error, an AMD UMC
// error, a Skylake UCNA with a verdict line).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "base/json.h"
#include "mce/advice.h"
#include "mce/decode.h"
#include "mce/severity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp;
  using namespace pp::mce;
  constexpr size_t kHead = 7 * 8 + 2 * 4 + 1;
  if (size < kHead)
    return 0;
  auto u64 = [&](size_t i) {
    uint64_t v;
    std::memcpy(&v, data + i * 8, 8);
    return v;
  };
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, data + at, 4);
    return v;
  };
  MceRegisters r;
  r.status = u64(0);
  r.misc = u64(1);
  r.addr = u64(2);
  r.ipid = u64(3);
  r.synd = u64(4);
  r.mcgcap = u64(5);
  r.mcgstatus = u64(6);
  r.bank = u32(56);
  r.cpuid = u32(60);
  const uint8_t choice = data[64];
  const CpuVendor vendors[] = {CpuVendor::kUnknown, CpuVendor::kIntel, CpuVendor::kAmd,
                               CpuVendor::kHygon};
  const MceOrigin origins[] = {MceOrigin::kUnknown, MceOrigin::kTracepoint, MceOrigin::kKernelLog};
  if (choice & 0x10)
    r.mcgcap.reset();
  if (choice & 0x20)
    r.ipid.reset();
  MceDecoded d = decode_mce(r, vendors[choice & 3], origins[(choice >> 2) % 3]);
  if (d.advice.empty())
    std::abort();
  if (d.origin == MceOrigin::kTracepoint && d.kernel_severity == KernelSeverity::kPanic)
    std::abort();
  std::string_view verdict(reinterpret_cast<const char*>(data + kHead), size - kHead);
  apply_kernel_verdict(d, verdict);
  std::string text;
  print_mce_text(d, text);
  (void)dump_json(mce_json(d));
  (void)mce_advice(d, verdict.substr(0, 16));
  return 0;
}

#include "mce/erst.h"

#include <cstring>

namespace pp::mce {
namespace {

template <typename T>
T at(std::span<const uint8_t> b, size_t offset) {
  T v;
  std::memcpy(&v, b.data() + offset, sizeof(T));  // little-endian: x86's
  return v;
}

}  // namespace

Result<ErstMce> parse_erst_mce(std::span<const uint8_t> b, std::string_view name) {
  if (b.size() < kStructMceSize)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "%.*s holds %zu bytes, and the kernel's struct mce is %zu (Linux 5.9 and "
                  "later): truncated, or an older kernel's layout; not read",
                  int(name.size()), name.data(), b.size(), kStructMceSize);
  // struct mce, arch/x86/include/uapi/asm/mce.h (6.1), offsets in bytes:
  //   0 u64 status        8 u64 misc         16 u64 addr       24 u64 mcgstatus
  //  32 u64 ip           40 u64 tsc          48 u64 time (wall time_t)
  //  56 u8 cpuvendor     57 u8 inject_flags  58 u8 severity    59 u8 pad
  //  60 u32 cpuid        64 u8 cs            65 u8 bank        66 u8 cpu (old)
  //  67 u8 finished      68 u32 extcpu       72 u32 socketid   76 u32 apicid
  //  80 u64 mcgcap       88 u64 synd         96 u64 ipid      104 u64 ppin
  // 112 u32 microcode   120 u64 kflags (kernel-internal; not read)
  ErstMce m;
  MceRegisters& r = m.regs;
  r.status = at<uint64_t>(b, 0);
  if (*r.status == 0)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "%.*s holds a struct mce whose status is 0: no error was recorded in it",
                  int(name.size()), name.data());
  r.misc = at<uint64_t>(b, 8);
  r.addr = at<uint64_t>(b, 16);
  r.mcgstatus = at<uint64_t>(b, 24);
  r.ip = at<uint64_t>(b, 32);
  r.tsc = at<uint64_t>(b, 40);
  r.walltime = at<uint64_t>(b, 48);
  r.cpuvendor = at<uint8_t>(b, 56);
  m.raw_severity = at<uint8_t>(b, 58);
  if (m.raw_severity <= 7) {
    // enum severity_level: NO 0, DEFERRED 1 (UCNA is the same value), KEEP
    // 2, SOME 3, AO 4, UC 5, AR 6, PANIC 7; KernelSeverity has UCNA apart.
    static constexpr KernelSeverity kLevels[] = {KernelSeverity::kNo,   KernelSeverity::kDeferred,
                                                 KernelSeverity::kKeep, KernelSeverity::kSome,
                                                 KernelSeverity::kAo,   KernelSeverity::kUc,
                                                 KernelSeverity::kAr,   KernelSeverity::kPanic};
    m.kernel_severity = kLevels[m.raw_severity];
  }
  r.cpuid = at<uint32_t>(b, 60);
  r.cs = at<uint8_t>(b, 64);
  r.bank = at<uint8_t>(b, 65);
  r.cpu = at<uint32_t>(b, 68);  // extcpu: byte 66 is the old 8-bit cpu
  r.socketid = at<uint32_t>(b, 72);
  r.apicid = at<uint32_t>(b, 76);
  r.mcgcap = at<uint64_t>(b, 80);
  r.synd = at<uint64_t>(b, 88);
  r.ipid = at<uint64_t>(b, 96);
  r.ppin = at<uint64_t>(b, 104);
  r.microcode = at<uint32_t>(b, 112);
  m.extra_bytes = b.size() - kStructMceSize;
  // What the kernel's log omits when zero, absent here too (mce_key()).
  for (std::optional<uint64_t>* zero_is_absent : {&r.synd, &r.ipid, &r.ppin, &r.ip, &r.tsc})
    if (*zero_is_absent == 0u)
      zero_is_absent->reset();
  return m;
}

}  // namespace pp::mce

// AMD Scalable MCA (Zen 1 to 5): each bank's type comes from MCA_IPID, and
// each type gives the extended error code, MCA_STATUS[21:16], its own
// meaning. The meanings are those of AMD's family 17h/19h/1Ah PPRs
// ("MCA_STATUS_<unit>[ErrorCodeExt]" tables), as Linux's
// drivers/edac/mce_amd.c listed them per bank type up to v6.9 (the
// smca_*_mce_desc arrays, later dropped in favour of the PPRs); facts only,
// in this project's words. rasdaemon's ras-mce-amd.c is the cross-check.
//
// MCA_IPID: 63:48 McaType, 43:32 HardwareID, 31:0 InstanceId.
#include <cstdio>
#include <string_view>

#include "mce/bits.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

using Meanings = std::span<const char* const>;

constexpr const char* kLoadStore[] = {
    "load queue parity error",
    "store queue parity error",
    "miss address buffer payload parity error",
    "L1 TLB parity error",
    "data cache tag error (type 5)",
    "data cache tag error (type 6)",
    "data cache tag error (type 1)",
    "internal error (type 1)",
    "internal error (type 2)",
    "system read data error (thread 0)",
    "system read data error (thread 1)",
    "data cache tag error (type 2)",
    "data cache data error (type 1) and poison consumption",
    "data cache data error (type 2)",
    "data cache data error (type 3)",
    "data cache tag error (type 4)",
    "L2 TLB parity error",
    "page directory cache parity error",
    "data cache tag error (type 3)",
    "data cache tag error (type 5)",
    "L2 fill data error",
};
// Load-store unit, McaType 0x10 (Zen 3 on).
constexpr const char* kLoadStore2[] = {
    "ECC error on a data cache read by a probe or victimization",
    "ECC error or L2 poison on a data cache read by a load",
    "ECC error on a data cache read-modify-write by a store",
    "ECC error or poison mismatch on a tag read by a probe or victimization",
    "ECC error or poison mismatch on a tag read by a load",
    "ECC error or poison mismatch on a tag read by a store",
    "ECC error on an EMEM read by a load",
    "ECC error on an EMEM read-modify-write by a store",
    "parity error in an L1 TLB entry",
    "parity error in an L2 TLB entry",
    "parity error in a page walk cache entry",
    "parity error in a store queue entry",
    "parity error in a load queue entry",
    "parity error in a miss address buffer entry",
    "parity error in a store commit buffer entry's state",
    "parity error in a store commit buffer entry's address",
    "parity error in a store commit buffer entry's data",
    "parity error in a write combining buffer entry",
    "poisoned line in a store commit buffer entry",
    "system read data error on L2 data for a load",
    "system read data error on L2 data for a store commit buffer store",
    "system read data error on L2 data for a write combining buffer store",
    "hardware assertion",
    "parity error in store-to-load forwarding, SCB EMEM or SRB store data",
};
constexpr const char* kInsnFetch[] = {
    "op cache microtag probe port parity error",
    "instruction cache microtag or full tag multi-hit",
    "instruction cache full tag parity error",
    "instruction cache data array parity error",
    "decoupling queue physical address parity error",
    "L0 ITLB parity error",
    "L1 ITLB parity error",
    "L2 ITLB parity error",
    "branch prediction queue thread 0 snoop parity error",
    "branch prediction queue thread 1 snoop parity error",
    "L1 BTB multi-match",
    "L2 BTB multi-match",
    "L2 cache response poison",
    "system read data error",
    "hardware assertion",
    "L1 TLB multi-hit",
    "L2 TLB multi-hit",
    "BSR parity error",
    "CT machine check",
};
constexpr const char* kL2Cache[] = {
    "L2 tag multiple-way hit",
    "L2 tag or state array ECC error",
    "L2 data array ECC error",
    "hardware assertion",
};
constexpr const char* kDecode[] = {
    "micro-op cache tag parity error",
    "micro-op cache data parity error",
    "instruction buffer parity error",
    "micro-op queue parity error",
    "instruction dispatch queue parity error",
    "fetch address FIFO parity error",
    "patch RAM data parity error",
    "patch RAM sequencer parity error",
    "micro-op buffer parity error",
    "hardware assertion",
};
constexpr const char* kExecution[] = {
    "watchdog timeout",
    "physical register file parity error",
    "flag register file parity error",
    "immediate displacement register file parity error",
    "address generator payload parity error",
    "execution payload parity error",
    "checkpoint queue parity error",
    "retire dispatch queue parity error",
    "retire status queue parity error",
    "scheduling queue parity error",
    "branch buffer queue parity error",
    "hardware assertion",
    "speculative map parity error",
    "retire map parity error",
};
constexpr const char* kFloatingPoint[] = {
    "physical register file parity error",
    "free list parity error",
    "schedule queue parity error",
    "NSQ parity error",
    "retire queue parity error",
    "status register file parity error",
    "hardware assertion",
};
constexpr const char* kL3Cache[] = {
    "shadow tag macro ECC error",
    "shadow tag macro multi-way hit",
    "L3 tag ECC error",
    "L3 tag multi-way hit",
    "L3 data ECC error",
    "SDP parity error from XI",
    "L3 victim queue data fabric error",
    "hardware assertion",
    "XI write combining buffer parity poison creation",
};
constexpr const char* kCoherentSlave[] = {
    "illegal request",
    "address violation",
    "security violation",
    "illegal response",
    "unexpected response",
    "request or probe parity error",
    "read response parity error",
    "atomic request parity error",
    "probe filter ECC error",
};
constexpr const char* kCoherentSlave2[] = {
    "illegal request",
    "address violation",
    "security violation",
    "illegal response",
    "unexpected response",
    "request or probe parity error",
    "read response parity error",
    "atomic request parity error",
    "SDP read response without a match in the queue",
    "probe filter protocol error",
    "probe filter ECC error",
    "SDP read response with an unexpected retry",
    "counter overflow",
    "counter underflow",
    "illegal request on the no-data channel",
    "address violation on the no-data channel",
    "security violation on the no-data channel",
    "hardware assertion",
};
constexpr const char* kPie[] = {
    "hardware assertion",
    "register security violation",
    "link error",
    "poison data consumption",
    "deferred error detected in the data fabric",
    "watchdog timer",
    "SRAM ECC error in the CNLI block",
};
// Unified memory controller, McaType 0 (DDR4 parts; 8..11 from Zen 4).
constexpr const char* kUmc[] = {
    "DRAM ECC error",
    "data poison error",
    "SDP parity error",
    "advanced peripheral bus error",
    "address/command parity error",
    "write data CRC error",
    "DCQ SRAM ECC error",
    "AES SRAM ECC error",
    "ECS row error",
    "ECS error",
    "UMC throttling error",
    "read CRC error",
};
// Unified memory controller, McaType 1.
constexpr const char* kUmc2[] = {
    "DRAM ECC error",
    "data poison error",
    "SDP parity error",
    "reserved",
    "address/command parity error",
    "write data parity error",
    "DCQ SRAM ECC error",
    "reserved",
    "read data parity error",
    "read data buffer SRAM ECC error",
    "read response SRAM ECC error",
    "LM32 MP error",
};
constexpr const char* kParamBlock[] = {"parameter block RAM ECC error"};
constexpr const char* kPsp[] = {"ECC or parity error in a PSP RAM"};
constexpr const char* kSmu[] = {"ECC or parity error in an SMU RAM"};
constexpr const char* kNbio[] = {
    "ECC or parity error", "PCIe error",           "SDP error event",
    "SDP egress poison",   "IOHC internal poison",
};
constexpr const char* kNbif[] = {
    "timeout from GMI",
    "SRAM ECC error",
    "NTB error event",
    "SDP parity error",
};
constexpr const char* kXgmiPhy[] = {
    "RAM ECC error",
    "ARC instruction buffer parity error",
    "ARC data buffer parity error",
    "PHY APB error",
};

// Bank types by (HardwareID, McaType), their units as Linux names them
// (arch/x86/kernel/cpu/mce/amd.c, smca_names) and their code tables.
struct SmcaUnit {
  uint16_t hwid, mcatype;
  const char* unit;
  Meanings meanings;
  bool umc = false;
};
constexpr SmcaUnit kUnits[] = {
    {0xB0, 0x0, "Load Store Unit", kLoadStore},
    {0xB0, 0x10, "Load Store Unit", kLoadStore2},
    {0xB0, 0x1, "Instruction Fetch Unit", kInsnFetch},
    {0xB0, 0x2, "L2 Cache", kL2Cache},
    {0xB0, 0x3, "Decode Unit", kDecode},
    {0xB0, 0x5, "Execution Unit", kExecution},
    {0xB0, 0x6, "Floating Point Unit", kFloatingPoint},
    {0xB0, 0x7, "L3 Cache", kL3Cache},
    {0x2E, 0x0, "Coherent Slave", kCoherentSlave},
    {0x2E, 0x2, "Coherent Slave", kCoherentSlave2},
    {0x2E, 0x1, "Power, Interrupts, etc.", kPie},
    {0x96, 0x0, "Unified Memory Controller", kUmc, true},
    {0x96, 0x1, "Unified Memory Controller", kUmc2, true},
    {0x05, 0x0, "Parameter Block", kParamBlock},
    {0xFF, 0x0, "Platform Security Processor", kPsp},
    {0x01, 0x0, "System Management Unit", kSmu},
    {0x18, 0x0, "Northbridge IO Unit", kNbio},
    {0x6C, 0x0, "NBIF Unit", kNbif},
    {0x80, 0x0, "SHUB Unit", kNbif},
    {0x259, 0x0, "Ext Global Memory Interconnect PHY Unit", kXgmiPhy},
    {0x267, 0x0, "WAFL PHY Unit", kXgmiPhy},
    {0x269, 0x0, "Global Memory Interconnect PHY Unit", kXgmiPhy},
};

}  // namespace

void decode_smca(const MceRegisters& regs, MceDecoded& d) {
  if (!regs.ipid)
    return;
  const uint64_t ipid = *regs.ipid;
  const uint64_t status = regs.status.value_or(0);
  const uint16_t hwid = (ipid >> 32) & 0xFFF;
  const uint16_t mcatype = (ipid >> 48) & 0xFFFF;
  // STATUS[21:16]: six bits on SMCA (the older families used fewer).
  d.xec = uint8_t((status >> 16) & 0x3F);
  const SmcaUnit* unit = nullptr;
  for (const SmcaUnit& u : kUnits)
    if (u.hwid == hwid && u.mcatype == mcatype)
      unit = &u;
  if (!unit)
    return;
  d.unit = unit->unit;
  if (*d.xec < unit->meanings.size())
    d.xec_meaning = unit->meanings[*d.xec];
  if (!unit->umc)
    return;
  // The UMC channel: Linux's amd64_edac (umc_get_err_info()) reads it from
  // the instance id, IPID[31:20]; for a DRAM ECC error (code 0) with SyndV
  // the chip select is MCA_SYND[2:0] (the PPR's ErrorInformation field).
  MemoryLocation loc;
  loc.socket = regs.socketid;
  loc.channel = uint32_t((ipid & 0xFFFFFFFF) >> 20);
  if (*d.xec == 0 && (status & kSyndv) && regs.synd)
    loc.chip_select = uint32_t(*regs.synd & 0x7);
  if (regs.addr && (status & kAddrv)) {
    // On SMCA the UMC logs a normalized (channel) address, not a system
    // physical one: kept, but no page.
    loc.address = *regs.addr;
    d.notes.push_back("UMC address is the controller's normalized address, not a physical one");
  }
  d.location = loc;
}

}  // namespace pp::mce

// The perf ABI's sample layout, written once: which fields a
// PERF_RECORD_SAMPLE holds for an attr's sample_type and read_format, in
// the order the kernel writes them (perf_output_sample()), and the
// sample_id trailer that non-sample records carry when attr.sample_id_all
// is set. One encoder (the fake kernel's samples, the perf.data writer's
// trailers) and one decoder (the perf.data reader, the ring reader's
// resynchronisation) read this table; a new sample_type bit is added here
// and nowhere else.
//
// A PERF_RECORD_SAMPLE, after its 8-byte header, each field present only
// when its bit is in sample_type:
//
//   u64 id                 IDENTIFIER
//   u64 ip                 IP
//   u32 pid, tid           TID
//   u64 time               TIME
//   u64 addr               ADDR
//   u64 id                 ID
//   u64 stream_id          STREAM_ID
//   u32 cpu, res           CPU
//   u64 period             PERIOD
//   read_format block      READ   { value, [enabled], [running], [id], [lost] } or, with
//                                 GROUP, { nr, [enabled], [running], { value, [id], [lost] }[nr] }
//   u64 nr, u64 ips[nr]    CALLCHAIN
//   u32 size, u8 [size]    RAW    (the kernel pads size so the record stays u64-aligned)
//   u64 nr, [u64 hw_idx],  BRANCH_STACK  (hw_idx when branch_sample_type has HW_INDEX;
//     {u64 from, to, flags}[nr]           entries of 24 bytes)
//   u64 abi, u64 regs[]    REGS_USER  (regs only when abi != NONE, one per sample_regs_user bit)
//   u64 size, u8 [size],   STACK_USER (dyn_size only when size != 0)
//     u64 dyn_size
//   u64 weight             WEIGHT or WEIGHT_STRUCT
//   u64 data_src           DATA_SRC
//   u64 transaction        TRANSACTION
//   u64 abi, u64 regs[]    REGS_INTR  (one per sample_regs_intr bit)
//   u64 phys_addr          PHYS_ADDR
//   u64 cgroup             CGROUP
//   u64 data_page_size     DATA_PAGE_SIZE
//   u64 code_page_size     CODE_PAGE_SIZE
//   u64 size, u8 [size]    AUX
//
// The sample_id trailer, at the end of every other record: u32 pid, tid
// (TID), u64 time (TIME), u64 id (ID), u64 stream_id (STREAM_ID), u32 cpu,
// res (CPU), u64 id (IDENTIFIER).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::sys {

// How a field's bytes are laid out (see the table above).
enum class SampleFieldShape {
  kU64,          // one u64
  kU32Pair,      // two u32 (pid, tid; cpu, res)
  kReadBlock,    // the read_format block
  kCallchain,    // u64 nr, nr u64
  kRaw,          // u32 size, size bytes
  kBranchStack,  // u64 nr, [u64 hw_idx], nr entries of 24 bytes
  kRegs,         // u64 abi, a u64 per mask bit unless abi is NONE
  kStackUser,    // u64 size, size bytes, u64 dyn_size unless size is 0
  kAux,          // u64 size, size bytes
};

struct SampleField {
  uint64_t bits;  // the PERF_SAMPLE_* bit(s) that put the field in a record
  std::string_view name;
  SampleFieldShape shape;
};

// PERF_RECORD_SAMPLE's fields in the kernel's order.
std::span<const SampleField> sample_fields();

// The sample_id trailer's fields in the kernel's order.
std::span<const SampleField> sample_id_fields();

// Every sample_type bit the table knows: what the encoder writes and the
// decoder reads. Bits outside it are taken as absent.
uint64_t known_sample_type();

// The sample_type bits of the trailer; two attrs whose trailers differ
// cannot share one perf.data (perf refuses: "non matching sample_id_all").
inline uint64_t sample_id_bits(uint64_t sample_type) {
  return sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                        PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
}

// Bytes of the sample_id trailer for `sample_type` (pass 0 when
// attr.sample_id_all is not set: there is no trailer then).
size_t sample_id_size(uint64_t sample_type);
// The same for an attr: 0 without sample_id_all.
inline size_t sample_id_size(const perf_event_attr& attr) {
  return attr.sample_id_all ? sample_id_size(attr.sample_type) : 0;
}

// The sample_id trailer's values. ID and IDENTIFIER both carry `id`.
struct SampleId {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// Appends the trailer for `sample_type` to `out`.
void encode_sample_id(uint64_t sample_type, const SampleId& value, std::vector<uint8_t>& out);

// Reads the trailer at the end of a non-sample record (whole record, header
// included). EINVAL when the record is too short for it.
Result<SampleId> decode_sample_id(uint64_t sample_type, std::span<const uint8_t> record);

// Byte offset of the u64 time in a PERF_RECORD_SAMPLE (header included), or
// nothing when the sample_type has no PERF_SAMPLE_TIME.
std::optional<size_t> sample_time_offset(uint64_t sample_type);

// A PERF_RECORD_SAMPLE's fields. Those whose bit is absent stay 0 / empty.
// Variable parts are spans: into the record when decoded, into the
// caller's memory when encoding.
struct Sample {
  uint64_t identifier = 0;
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  std::span<const uint8_t> read;       // the read_format block, undecoded
  std::span<const uint8_t> callchain;  // nr u64 ips; records need not be 8-aligned
  std::span<const uint8_t> raw;        // PERF_SAMPLE_RAW payload (size bytes, padding included)
  uint64_t branch_hw_index = 0;        // with PERF_SAMPLE_BRANCH_HW_INDEX
  std::span<const uint8_t> branches;   // nr entries of 24 bytes
  uint64_t regs_user_abi = PERF_SAMPLE_REGS_ABI_NONE;
  std::span<const uint8_t> regs_user;  // a u64 per sample_regs_user bit (none when abi is NONE)
  std::span<const uint8_t> stack_user;
  uint64_t stack_user_dyn_size = 0;
  uint64_t weight = 0;
  uint64_t data_src = 0;
  uint64_t transaction = 0;
  uint64_t regs_intr_abi = PERF_SAMPLE_REGS_ABI_NONE;
  std::span<const uint8_t> regs_intr;
  uint64_t phys_addr = 0;
  uint64_t cgroup = 0;
  uint64_t data_page_size = 0;
  uint64_t code_page_size = 0;
  std::span<const uint8_t> aux;

  size_t callchain_depth() const { return callchain.size() / sizeof(uint64_t); }
  uint64_t callchain_ip(size_t i) const {
    uint64_t value;
    std::memcpy(&value, callchain.data() + i * sizeof(uint64_t), sizeof(value));
    return value;
  }
};

// Appends a whole PERF_RECORD_SAMPLE (header with `misc` and the size)
// laid out for `attr`. Variable parts are written as given: pass `raw`
// through pad_raw() to get the kernel's padding, and `read` as the block
// read_format describes.
void encode_sample(const perf_event_attr& attr, const Sample& sample, uint16_t misc,
                   std::vector<uint8_t>& out);

// `payload` with zeros after it so that u32 size + payload end on a u64
// boundary, as the kernel pads PERF_SAMPLE_RAW.
std::vector<uint8_t> pad_raw(std::span<const uint8_t> payload);

// Decodes a PERF_RECORD_SAMPLE (whole record, header included) as written
// by an event with `attr`. EINVAL when the record is too short for its
// sample_type, a count is implausible, or IDENTIFIER and ID differ. Bytes
// after the last field are allowed (see sample_fields_end()). The spans in
// the result point into `record`.
Result<Sample> decode_sample(const perf_event_attr& attr, std::span<const uint8_t> record);

// decode_sample() for the many samples of one event, with the layout
// worked out once: when every field up to RAW has a fixed size and none
// follows it (what tracepoint and software events sample: IDENTIFIER, IP,
// TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, READ without GROUP, RAW),
// each field is read at its offset; any other sample_type, a record of
// another shape, or one decode_sample() refuses goes to decode_sample().
// The result is always decode_sample()'s, errors and their messages
// included (a test compares the two on every sample_type bit).
class SampleLayout {
 public:
  explicit SampleLayout(const perf_event_attr& attr);

  // Decodes `record` (whole, header included) into `out`.
  Status decode(std::span<const uint8_t> record, Sample& out) const;

 private:
  static constexpr uint16_t kAbsent = 0xffff;
  perf_event_attr attr_;
  bool fixed_ = false;  // the fast path applies to this sample_type
  // Byte offsets in the record (header included), kAbsent when not sampled.
  uint16_t identifier_ = kAbsent, ip_ = kAbsent, tid_ = kAbsent, time_ = kAbsent, addr_ = kAbsent,
           id_ = kAbsent, stream_id_ = kAbsent, cpu_ = kAbsent, period_ = kAbsent, read_ = kAbsent,
           raw_ = kAbsent;
  uint16_t read_size_ = 0;
  uint16_t end_ = 0;  // where the fixed fields end (RAW's u32 size included)
};

// Where the fields of a sample laid out for `attr` end in `record`, without
// allocating (the ring reader tries it on many candidate records); nothing
// when they do not fit. A record the kernel wrote ends exactly there.
// `out`, when given, receives the fields.
std::optional<size_t> sample_fields_end(const perf_event_attr& attr,
                                        std::span<const uint8_t> record, Sample* out = nullptr);

// What a reader knows about a record that the record may not say: which
// buffer it came from. fill_missing() and relayout_record() take the fields
// a record lacks from here.
struct SampleFill {
  uint64_t id = 0;      // the buffer's perf event id (PERF_EVENT_IOC_ID): ID, IDENTIFIER
  uint32_t cpu = 0;     // the CPU the per-CPU buffer belongs to
  uint64_t period = 1;  // the event's sample_period (1 for a tracepoint)
};

// What a reader supplies for the records of one buffer of an event with
// `attr`: the buffer's CPU and event id (0 when the reader has no use for
// it), and the period (sample_period; 1 for a frequency event).
SampleFill sample_fill(const perf_event_attr& attr, int cpu, uint64_t id);

// Completes a sample decoded from a record of an event whose sample_type is
// `have`: each of CPU, PERIOD and ID/IDENTIFIER that `have` lacks takes
// `fill`'s value; the fields the record has are kept. Every reader of a lean
// event (persistent/sample_layout.h) does this, as decoded or before
// relaying a record out.
void fill_missing(Sample& sample, uint64_t have, const SampleFill& fill);

// Appends `record` (whole, header included), written by an event with
// `from`, laid out as an event with `to` writes it: each field both have is
// copied, each field only `to` has takes `fill`'s value (CPU, PERIOD, ID,
// IDENTIFIER: fill_missing(); any other field, IP among them, 0 or empty),
// each field only `from` has is dropped. A non-sample record keeps its body
// and gets `to`'s sample_id trailer (none without to.sample_id_all) from
// `from`'s trailer and `fill`.
// The header's type and misc are kept. EINVAL, with `out` as it was, when
// the record does not decode with `from` or would outgrow a u16 size.
//
//   lean (IP|TID|TIME|RAW):  hdr | ip | pid tid | time | raw
//   full (IP|TID|TIME|CPU|PERIOD|IDENTIFIER|RAW):
//                            hdr | id | ip | pid tid | time | cpu 0 | period | raw
Status relayout_record(const perf_event_attr& from, const perf_event_attr& to,
                       const SampleFill& fill, std::span<const uint8_t> record,
                       std::vector<uint8_t>& out);

}  // namespace pp::sys

// The sample layout against hand-built records, and the encoder and decoder
// against each other for every sample_type bit the table knows.
#include "sys/perf_abi_sample.h"

#include <bit>
#include <cstring>
#include <gtest/gtest.h>

namespace pp::sys {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint64_t kTracepointSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                           PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW |
                                           PERF_SAMPLE_IDENTIFIER;

// Little helpers to build records by hand, independent of the encoder.
struct Builder {
  Bytes out;
  void u8(uint8_t v) { out.push_back(v); }
  void u16(uint16_t v) { raw(&v, sizeof(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void header(uint16_t misc, size_t size) {
    u32(PERF_RECORD_SAMPLE);
    u16(misc);
    u16(uint16_t(size));
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  // A tracepoint's RAW field as the kernel writes it: u32 size, `size`
  // payload bytes 0, 1, 2..., zeros to the next u64 boundary.
  void raw_field(uint32_t size) {
    u32(size);
    for (uint32_t i = 0; i < size; i++)
      u8(uint8_t(i));
    while (out.size() % 8)
      u8(0);
  }
};

TEST(SampleId, SizeCountsOnlyTrailerFields) {
  EXPECT_EQ(sample_id_size(0), 0u);
  EXPECT_EQ(sample_id_size(PERF_SAMPLE_IP | PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD), 0u);
  // TID, TIME, CPU, IDENTIFIER: 8 each.
  EXPECT_EQ(sample_id_size(kTracepointSampleType), 32u);
  EXPECT_EQ(sample_id_size(PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID), 16u);
}

TEST(SampleId, FieldsInTheKernelsOrder) {
  SampleId sid;
  sid.pid = 10;
  sid.tid = 11;
  sid.time = 0x1122334455667788ULL;
  sid.id = 42;
  sid.stream_id = 43;
  sid.cpu = 3;
  Bytes out;
  uint64_t type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                  PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  encode_sample_id(type, sid, out);
  Bytes expected = {10,   0,    0,    0,    11,   0,    0,    0,     // pid, tid
                    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // time
                    42,   0,    0,    0,    0,    0,    0,    0,     // id
                    43,   0,    0,    0,    0,    0,    0,    0,     // stream_id
                    3,    0,    0,    0,    0,    0,    0,    0,     // cpu, res
                    42,   0,    0,    0,    0,    0,    0,    0};    // identifier
  EXPECT_EQ(out, expected);

  Bytes record(8, 0);  // a header, then the trailer
  record.insert(record.end(), out.begin(), out.end());
  auto back = decode_sample_id(type, record);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->pid, 10u);
  EXPECT_EQ(back->tid, 11u);
  EXPECT_EQ(back->time, sid.time);
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->stream_id, 43u);
  EXPECT_EQ(back->cpu, 3u);
}

TEST(SampleId, RecordTooShortIsAnError) {
  Bytes record(16, 0);
  EXPECT_FALSE(decode_sample_id(kTracepointSampleType, record).ok());
}

TEST(SampleId, EveryTrailerBitRoundTrips) {
  for (const SampleField& f : sample_id_fields()) {
    SampleId sid{.pid = 1, .tid = 2, .time = 3, .id = 4, .stream_id = 5, .cpu = 6};
    Bytes record(8, 0);
    encode_sample_id(f.bits, sid, record);
    EXPECT_EQ(record.size(), 8 + sample_id_size(f.bits)) << f.name;
    auto back = decode_sample_id(f.bits, record);
    ASSERT_TRUE(back.ok()) << f.name << ": " << back.error().message();
    switch (f.bits) {
      case PERF_SAMPLE_TID:
        EXPECT_EQ(back->pid, 1u);
        EXPECT_EQ(back->tid, 2u);
        break;
      case PERF_SAMPLE_TIME:
        EXPECT_EQ(back->time, 3u);
        break;
      case PERF_SAMPLE_ID:
      case PERF_SAMPLE_IDENTIFIER:
        EXPECT_EQ(back->id, 4u) << f.name;
        break;
      case PERF_SAMPLE_STREAM_ID:
        EXPECT_EQ(back->stream_id, 5u);
        break;
      case PERF_SAMPLE_CPU:
        EXPECT_EQ(back->cpu, 6u);
        break;
      default:
        ADD_FAILURE() << "untested trailer field " << f.name;
    }
  }
}

TEST(SampleTime, OffsetFollowsIdentifierIpAndTid) {
  EXPECT_EQ(sample_time_offset(kTracepointSampleType), std::optional<size_t>(32));
  EXPECT_EQ(sample_time_offset(PERF_SAMPLE_TIME), std::optional<size_t>(8));
  EXPECT_EQ(sample_time_offset(PERF_SAMPLE_IP | PERF_SAMPLE_RAW), std::nullopt);
}

Bytes tracepoint_sample(uint32_t raw_size) {
  Builder w;
  size_t raw_padded = (4 + raw_size + 7) / 8 * 8;
  w.header(PERF_RECORD_MISC_KERNEL, 8 + 6 * 8 + raw_padded);
  w.u64(77);                     // identifier
  w.u64(0xffffffff81000010ULL);  // ip
  w.u32(100);                    // pid
  w.u32(101);                    // tid
  w.u64(5000);                   // time
  w.u32(1);                      // cpu
  w.u32(0);
  w.u64(1);  // period
  w.raw_field(raw_size);
  return w.out;
}

TEST(DecodeSample, TracepointSample) {
  perf_event_attr attr = {};
  attr.sample_type = kTracepointSampleType;
  Bytes record = tracepoint_sample(20);
  auto s = decode_sample(attr, record);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->id, 77u);
  EXPECT_EQ(s->ip, 0xffffffff81000010ULL);
  EXPECT_EQ(s->pid, 100u);
  EXPECT_EQ(s->tid, 101u);
  EXPECT_EQ(s->time, 5000u);
  EXPECT_EQ(s->cpu, 1u);
  EXPECT_EQ(s->period, 1u);
  ASSERT_EQ(s->raw.size(), 20u);
  EXPECT_EQ(s->raw[19], 19);
}

TEST(DecodeSample, CallchainAndRead) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  Builder w;
  w.header(0, 8 + (8 + 2 * 16) + (8 + 3 * 8));
  w.u64(2);  // group of two: value, id each
  w.u64(10);
  w.u64(1);
  w.u64(20);
  w.u64(2);
  w.u64(3);  // callchain depth
  w.u64(0xa);
  w.u64(0xb);
  w.u64(0xc);
  auto s = decode_sample(attr, w.out);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->read.size(), 40u);
  ASSERT_EQ(s->callchain_depth(), 3u);
  EXPECT_EQ(s->callchain_ip(2), 0xcu);
}

// Every field at once, laid out by hand in perf_output_sample()'s order
// (kernel/events/core.c), each holding a value no other field holds: the
// encoder and the decoder share one table, so only a record built without
// it can catch two rows in the wrong order.
TEST(DecodeSample, EveryFieldInTheKernelsOrder) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                     PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN |
                     PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER |
                     PERF_SAMPLE_STACK_USER | PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC |
                     PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR |
                     PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE |
                     PERF_SAMPLE_AUX;
  attr.read_format = 0;  // READ is one u64
  attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  attr.sample_regs_user = 0x5;  // two registers
  attr.sample_regs_intr = 0x1;  // one register
  Builder w;
  w.header(0, 0);  // size patched below
  w.u64(107);      // IDENTIFIER: the same id as ID, as the kernel writes both
  w.u64(102);      // IP
  w.u32(103);      // TID: pid
  w.u32(104);      //      tid
  w.u64(105);      // TIME
  w.u64(106);      // ADDR
  w.u64(107);      // ID
  w.u64(108);      // STREAM_ID
  w.u32(109);      // CPU: cpu
  w.u32(0);        //      res
  w.u64(110);      // PERIOD
  w.u64(111);      // READ: value
  w.u64(2);        // CALLCHAIN: nr
  w.u64(112);
  w.u64(113);
  w.u32(12);  // RAW: size, so that the u32 and the payload end 8-aligned
  for (uint8_t b = 0; b < 12; b++)
    w.u8(0xa0 + b);
  w.u64(1);                        // BRANCH_STACK: nr
  w.u64(114);                      //   hw_idx (PERF_SAMPLE_BRANCH_HW_INDEX)
  w.u64(115);                      //   from
  w.u64(116);                      //   to
  w.u64(117);                      //   flags
  w.u64(PERF_SAMPLE_REGS_ABI_64);  // REGS_USER: abi
  w.u64(118);
  w.u64(119);
  w.u64(16);  // STACK_USER: size
  w.u64(120);
  w.u64(121);
  w.u64(8);                        //   dyn_size
  w.u64(122);                      // WEIGHT
  w.u64(123);                      // DATA_SRC
  w.u64(124);                      // TRANSACTION
  w.u64(PERF_SAMPLE_REGS_ABI_64);  // REGS_INTR: abi
  w.u64(125);
  w.u64(126);  // PHYS_ADDR
  w.u64(127);  // CGROUP
  w.u64(128);  // DATA_PAGE_SIZE
  w.u64(129);  // CODE_PAGE_SIZE
  w.u64(8);    // AUX: size
  w.u64(130);
  uint16_t size = uint16_t(w.out.size());
  std::memcpy(w.out.data() + 6, &size, sizeof(size));

  auto s = decode_sample(attr, w.out);
  ASSERT_TRUE(s.ok()) << s.error().message();
  auto u64_at = [](std::span<const uint8_t> bytes, size_t i) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + 8 * i, sizeof(v));
    return v;
  };
  EXPECT_EQ(s->identifier, 107u);
  EXPECT_EQ(s->ip, 102u);
  EXPECT_EQ(s->pid, 103u);
  EXPECT_EQ(s->tid, 104u);
  EXPECT_EQ(s->time, 105u);
  EXPECT_EQ(s->addr, 106u);
  EXPECT_EQ(s->id, 107u);
  EXPECT_EQ(s->stream_id, 108u);
  EXPECT_EQ(s->cpu, 109u);
  EXPECT_EQ(s->period, 110u);
  ASSERT_EQ(s->read.size(), 8u);
  EXPECT_EQ(u64_at(s->read, 0), 111u);
  ASSERT_EQ(s->callchain_depth(), 2u);
  EXPECT_EQ(s->callchain_ip(0), 112u);
  EXPECT_EQ(s->callchain_ip(1), 113u);
  ASSERT_EQ(s->raw.size(), 12u);
  EXPECT_EQ(s->raw[0], 0xa0);
  EXPECT_EQ(s->raw[11], 0xab);
  EXPECT_EQ(s->branch_hw_index, 114u);
  ASSERT_EQ(s->branches.size(), 24u);
  EXPECT_EQ(u64_at(s->branches, 0), 115u);
  EXPECT_EQ(u64_at(s->branches, 2), 117u);
  EXPECT_EQ(s->regs_user_abi, uint64_t(PERF_SAMPLE_REGS_ABI_64));
  ASSERT_EQ(s->regs_user.size(), 16u);
  EXPECT_EQ(u64_at(s->regs_user, 1), 119u);
  ASSERT_EQ(s->stack_user.size(), 16u);
  EXPECT_EQ(u64_at(s->stack_user, 0), 120u);
  EXPECT_EQ(s->stack_user_dyn_size, 8u);
  EXPECT_EQ(s->weight, 122u);
  EXPECT_EQ(s->data_src, 123u);
  EXPECT_EQ(s->transaction, 124u);
  ASSERT_EQ(s->regs_intr.size(), 8u);
  EXPECT_EQ(u64_at(s->regs_intr, 0), 125u);
  EXPECT_EQ(s->phys_addr, 126u);
  EXPECT_EQ(s->cgroup, 127u);
  EXPECT_EQ(s->data_page_size, 128u);
  EXPECT_EQ(s->code_page_size, 129u);
  ASSERT_EQ(s->aux.size(), 8u);
  EXPECT_EQ(u64_at(s->aux, 0), 130u);

  // And the encoder writes those very bytes back.
  Bytes encoded;
  encode_sample(attr, *s, 0, encoded);
  EXPECT_EQ(encoded, w.out);
}

TEST(DecodeSample, EveryTruncationIsRejected) {
  perf_event_attr attr = {};
  attr.sample_type = kTracepointSampleType;
  Bytes record = tracepoint_sample(20);
  // Every cut, the last byte of the raw payload included.
  for (size_t n = 0; n < record.size(); n++)
    EXPECT_FALSE(decode_sample(attr, {record.data(), n}).ok()) << n;
}

TEST(DecodeSample, HugeCallchainCountIsRejected) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_CALLCHAIN;
  Builder w;
  w.header(0, 16);
  w.u64(~0ULL);
  auto s = decode_sample(attr, w.out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("CALLCHAIN"), std::string::npos) << s.error().message();
}

TEST(DecodeSample, IdentifierAndIdMustAgree) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID;
  Builder w;
  w.header(0, 24);
  w.u64(1);
  w.u64(2);
  EXPECT_FALSE(decode_sample(attr, w.out).ok());
}

// A sample with every field of `attr` set to something recognisable.
struct FullSample {
  Bytes read, callchain, raw, branches, regs_user, stack_user, regs_intr, aux;
  Sample sample;

  explicit FullSample(const perf_event_attr& attr) {
    auto u64s = [](std::initializer_list<uint64_t> values) {
      Bytes out;
      for (uint64_t v : values)
        out.insert(out.end(), reinterpret_cast<const uint8_t*>(&v),
                   reinterpret_cast<const uint8_t*>(&v) + 8);
      return out;
    };
    read = (attr.read_format & PERF_FORMAT_GROUP) ? u64s({2, 10, 11, 20, 21}) : u64s({10, 11});
    callchain = u64s({0xa, 0xb, 0xc});
    raw = pad_raw(Bytes{1, 2, 3, 4, 5});
    branches = u64s({1, 2, 3, 4, 5, 6});  // two entries of 24 bytes
    regs_user = u64s({7, 8});             // sample_regs_user has two bits
    stack_user = u64s({9, 9});
    regs_intr = u64s({10});  // sample_regs_intr has one bit
    aux = u64s({11, 12});
    Sample& s = sample;
    s.identifier = s.id = 0x1d;
    s.ip = 0x1111;
    s.pid = 22;
    s.tid = 23;
    s.time = 0x7777;
    s.addr = 0xadd;
    s.stream_id = 0x57;
    s.cpu = 3;
    s.period = 1000;
    s.read = read;
    s.callchain = callchain;
    s.raw = raw;
    s.branch_hw_index = 5;
    s.branches = branches;
    s.regs_user_abi = PERF_SAMPLE_REGS_ABI_64;
    s.regs_user = regs_user;
    s.stack_user = stack_user;
    s.stack_user_dyn_size = 16;
    s.weight = 0x3e;
    s.data_src = 0xd5;
    s.transaction = 0x7a;
    s.regs_intr_abi = PERF_SAMPLE_REGS_ABI_64;
    s.regs_intr = regs_intr;
    s.phys_addr = 0xf00;
    s.cgroup = 0xc9;
    s.data_page_size = 4096;
    s.code_page_size = 8192;
    s.aux = aux;
  }
};

perf_event_attr attr_with(uint64_t sample_type) {
  perf_event_attr attr = {};
  attr.sample_type = sample_type;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
  attr.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX;
  attr.sample_regs_user = 0x3;
  attr.sample_regs_intr = 0x8;
  return attr;
}

// What decoding gives back for the field(s) of `bits`, as bytes to compare.
void expect_field(const Sample& want, const Sample& got, uint64_t bits, std::string_view name) {
  auto same = [](std::span<const uint8_t> a, std::span<const uint8_t> b) {
    return Bytes(a.begin(), a.end()) == Bytes(b.begin(), b.end());
  };
  SCOPED_TRACE(std::string(name));
  switch (bits) {
    case PERF_SAMPLE_IDENTIFIER:
    case PERF_SAMPLE_ID:
      EXPECT_EQ(got.id, want.id);
      break;
    case PERF_SAMPLE_IP:
      EXPECT_EQ(got.ip, want.ip);
      break;
    case PERF_SAMPLE_TID:
      EXPECT_EQ(got.pid, want.pid);
      EXPECT_EQ(got.tid, want.tid);
      break;
    case PERF_SAMPLE_TIME:
      EXPECT_EQ(got.time, want.time);
      break;
    case PERF_SAMPLE_ADDR:
      EXPECT_EQ(got.addr, want.addr);
      break;
    case PERF_SAMPLE_STREAM_ID:
      EXPECT_EQ(got.stream_id, want.stream_id);
      break;
    case PERF_SAMPLE_CPU:
      EXPECT_EQ(got.cpu, want.cpu);
      break;
    case PERF_SAMPLE_PERIOD:
      EXPECT_EQ(got.period, want.period);
      break;
    case PERF_SAMPLE_READ:
      EXPECT_TRUE(same(got.read, want.read));
      break;
    case PERF_SAMPLE_CALLCHAIN:
      EXPECT_TRUE(same(got.callchain, want.callchain));
      EXPECT_EQ(got.callchain_depth(), 3u);
      break;
    case PERF_SAMPLE_RAW:
      EXPECT_TRUE(same(got.raw, want.raw));
      break;
    case PERF_SAMPLE_BRANCH_STACK:
      EXPECT_EQ(got.branch_hw_index, want.branch_hw_index);
      EXPECT_TRUE(same(got.branches, want.branches));
      break;
    case PERF_SAMPLE_REGS_USER:
      EXPECT_EQ(got.regs_user_abi, want.regs_user_abi);
      EXPECT_TRUE(same(got.regs_user, want.regs_user));
      break;
    case PERF_SAMPLE_STACK_USER:
      EXPECT_TRUE(same(got.stack_user, want.stack_user));
      EXPECT_EQ(got.stack_user_dyn_size, want.stack_user_dyn_size);
      break;
    case PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT:
      EXPECT_EQ(got.weight, want.weight);
      break;
    case PERF_SAMPLE_DATA_SRC:
      EXPECT_EQ(got.data_src, want.data_src);
      break;
    case PERF_SAMPLE_TRANSACTION:
      EXPECT_EQ(got.transaction, want.transaction);
      break;
    case PERF_SAMPLE_REGS_INTR:
      EXPECT_EQ(got.regs_intr_abi, want.regs_intr_abi);
      EXPECT_TRUE(same(got.regs_intr, want.regs_intr));
      break;
    case PERF_SAMPLE_PHYS_ADDR:
      EXPECT_EQ(got.phys_addr, want.phys_addr);
      break;
    case PERF_SAMPLE_CGROUP:
      EXPECT_EQ(got.cgroup, want.cgroup);
      break;
    case PERF_SAMPLE_DATA_PAGE_SIZE:
      EXPECT_EQ(got.data_page_size, want.data_page_size);
      break;
    case PERF_SAMPLE_CODE_PAGE_SIZE:
      EXPECT_EQ(got.code_page_size, want.code_page_size);
      break;
    case PERF_SAMPLE_AUX:
      EXPECT_TRUE(same(got.aux, want.aux));
      break;
    default:
      ADD_FAILURE() << "no round-trip check for this field";
  }
}

TEST(SampleRoundTrip, EveryBitAloneAndAllTogether) {
  std::vector<uint64_t> types;
  for (const SampleField& f : sample_fields())
    for (uint64_t bit = 1; bit; bit <<= 1)
      if (f.bits & bit)
        types.push_back(bit);  // WEIGHT and WEIGHT_STRUCT each alone
  types.push_back(known_sample_type() & ~uint64_t(PERF_SAMPLE_WEIGHT_STRUCT));
  types.push_back(known_sample_type() & ~uint64_t(PERF_SAMPLE_WEIGHT));
  for (uint64_t type : types) {
    SCOPED_TRACE(type);
    perf_event_attr attr = attr_with(type);
    FullSample full(attr);
    Bytes record = {0xee};  // the encoder appends
    encode_sample(attr, full.sample, PERF_RECORD_MISC_USER, record);
    std::span<const uint8_t> whole = std::span<const uint8_t>(record).subspan(1);
    perf_event_header header;
    std::memcpy(&header, whole.data(), sizeof(header));
    EXPECT_EQ(header.type, PERF_RECORD_SAMPLE);
    EXPECT_EQ(header.misc, PERF_RECORD_MISC_USER);
    EXPECT_EQ(header.size, whole.size());
    EXPECT_EQ(whole.size() % 8, 0u) << "the kernel's records are u64-aligned";
    EXPECT_EQ(sample_fields_end(attr, whole), std::optional<size_t>(whole.size()));
    auto back = decode_sample(attr, whole);
    ASSERT_TRUE(back.ok()) << back.error().message();
    for (const SampleField& f : sample_fields())
      if (type & f.bits)
        expect_field(full.sample, *back, f.bits, f.name);
    // Any cut leaves a field without its bytes.
    for (size_t n = sizeof(perf_event_header); n < whole.size(); n += 4)
      EXPECT_FALSE(sample_fields_end(attr, whole.first(n)).has_value()) << n;
  }
}

TEST(SampleRoundTrip, TheTableCoversEveryBitTheHeaderDefines) {
  // Bits 0..PERF_SAMPLE_MAX-1: a new one in <linux/perf_event.h> fails here
  // until the table (and so the encoder and decoder) knows it.
  EXPECT_EQ(known_sample_type(), uint64_t(PERF_SAMPLE_MAX) - 1);
}

TEST(SampleRoundTrip, StackUserOfSizeZeroHasNoDynSize) {
  perf_event_attr attr = attr_with(PERF_SAMPLE_STACK_USER);
  Sample s;
  Bytes record;
  encode_sample(attr, s, 0, record);
  EXPECT_EQ(record.size(), 16u);
}

TEST(PadRaw, PadsToTheKernelsAlignment) {
  EXPECT_EQ(pad_raw(Bytes{}).size(), 4u);
  EXPECT_EQ(pad_raw(Bytes(4, 1)).size(), 4u);
  EXPECT_EQ(pad_raw(Bytes(5, 1)).size(), 12u);
  EXPECT_EQ(pad_raw(Bytes(12, 1)).size(), 12u);
}

// relayout_record(): a lean tracepoint sample (IP|TID|TIME|RAW, what the
// broker creates: persistent/sample_layout.h) in, the full one perf record
// writes out, with what the reader knows supplied. Both built by hand, byte
// for byte.
constexpr uint64_t kLeanSampleType =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
// An event made lean without IP, by a broker before IP stayed: it lives on
// in a registry across broker restarts (persistent::is_lean() takes it).
constexpr uint64_t kLeanWithoutIpSampleType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;

Bytes lean_sample(uint32_t raw_size, uint16_t misc = PERF_RECORD_MISC_KERNEL,
                  uint64_t sample_type = kLeanSampleType) {
  Builder w;
  bool ip = sample_type & PERF_SAMPLE_IP;
  size_t raw_padded = (4 + raw_size + 7) / 8 * 8;
  w.header(misc, 8 + (ip ? 3 : 2) * 8 + raw_padded);
  if (ip)
    w.u64(0xffffffff81000010ULL);  // ip, as in tracepoint_sample()
  w.u32(100);                      // pid
  w.u32(101);                      // tid
  w.u64(5000);                     // time
  w.raw_field(raw_size);
  return w.out;
}

perf_event_attr lean_attr(uint64_t sample_type = kLeanSampleType) {
  perf_event_attr a = {};
  a.type = PERF_TYPE_TRACEPOINT;
  a.sample_type = sample_type;
  a.sample_period = 1;
  a.sample_id_all = 1;
  return a;
}

perf_event_attr full_attr() {
  perf_event_attr a = lean_attr();
  a.sample_type = kTracepointSampleType;
  return a;
}

constexpr SampleFill kFill{.id = 77, .cpu = 1, .period = 1};

TEST(Relayout, LeanSampleGetsIdCpuAndPeriod) {
  // Sizes the kernel writes: it pads RAW so that u32 size + payload end on a
  // u64 boundary, and counts the padding in the size.
  for (uint32_t raw_size : {4u, 12u, 20u, 100u}) {
    Bytes out = {0xaa};  // appended after what is there
    ASSERT_TRUE(relayout_record(lean_attr(), full_attr(), kFill, lean_sample(raw_size), out).ok());
    Bytes expected = {0xaa};
    Bytes full = tracepoint_sample(raw_size);  // id 77, the record's ip, cpu 1, period 1
    expected.insert(expected.end(), full.begin(), full.end());
    EXPECT_EQ(out, expected) << "raw size " << raw_size;
  }
}

TEST(Relayout, LeanSampleWithoutIpGetsIpZero) {
  for (uint32_t raw_size : {4u, 20u}) {
    Bytes out;
    ASSERT_TRUE(relayout_record(
                    lean_attr(kLeanWithoutIpSampleType), full_attr(), kFill,
                    lean_sample(raw_size, PERF_RECORD_MISC_KERNEL, kLeanWithoutIpSampleType), out)
                    .ok());
    Bytes expected = tracepoint_sample(raw_size);
    uint64_t ip = 0;
    std::memcpy(expected.data() + 16, &ip, sizeof(ip));
    EXPECT_EQ(out, expected) << "raw size " << raw_size;
  }
}

TEST(FillMissing, SampleFillTakesTheEventsPeriod) {
  perf_event_attr a = lean_attr();
  a.sample_period = 5;
  SampleFill fill = sample_fill(a, 2, 9);
  EXPECT_EQ(fill.cpu, 2u);
  EXPECT_EQ(fill.id, 9u);
  EXPECT_EQ(fill.period, 5u);
  a.freq = 1;
  a.sample_freq = 4000;
  EXPECT_EQ(sample_fill(a, 2, 9).period, 1u) << "a frequency event's period is its own per record";
}

// fill_missing(): what a reader that decodes for itself (top, report -e,
// watch) does with a lean record; a full record's own fields are kept.
TEST(FillMissing, TakesOnlyWhatTheRecordLacks) {
  auto lean = decode_sample(lean_attr(), lean_sample(20));
  ASSERT_TRUE(lean.ok()) << lean.error().message();
  fill_missing(*lean, kLeanSampleType, {.id = 7, .cpu = 3, .period = 1});
  EXPECT_EQ(lean->cpu, 3u);
  EXPECT_EQ(lean->period, 1u);
  EXPECT_EQ(lean->id, 7u);
  EXPECT_EQ(lean->identifier, 7u);
  EXPECT_EQ(lean->ip, 0xffffffff81000010ULL);
  EXPECT_EQ(lean->tid, 101u);

  auto full = decode_sample(full_attr(), tracepoint_sample(20));
  ASSERT_TRUE(full.ok()) << full.error().message();
  fill_missing(*full, kTracepointSampleType, {.id = 7, .cpu = 3, .period = 9});
  EXPECT_EQ(full->cpu, 1u);
  EXPECT_EQ(full->period, 1u);
  EXPECT_EQ(full->identifier, 77u);
}

TEST(Relayout, MiscIsKept) {
  Bytes out;
  ASSERT_TRUE(
      relayout_record(lean_attr(), full_attr(), kFill, lean_sample(12, PERF_RECORD_MISC_USER), out)
          .ok());
  perf_event_header h;
  std::memcpy(&h, out.data(), sizeof(h));
  EXPECT_EQ(h.misc, PERF_RECORD_MISC_USER);
  EXPECT_EQ(h.size, out.size());
}

TEST(Relayout, SameLayoutIsCopiedAsIs) {
  Bytes full = tracepoint_sample(20);
  Bytes out;
  ASSERT_TRUE(relayout_record(full_attr(), full_attr(), kFill, full, out).ok());
  EXPECT_EQ(out, full) << "fields the record has are never replaced";
}

TEST(Relayout, NonSampleRecordGetsTheFullTrailer) {
  // PERF_RECORD_LOST {id, lost} with the lean trailer (TID, TIME), and the
  // same with the full one (TID, TIME, CPU, IDENTIFIER).
  Builder lean;
  lean.u32(PERF_RECORD_LOST);
  lean.u16(0);
  lean.u16(8 + 16 + 16);
  lean.u64(0);   // id: the kernel's own is the event's, here unknown
  lean.u64(12);  // lost
  lean.u32(100);
  lean.u32(101);
  lean.u64(5000);
  Builder full;
  full.u32(PERF_RECORD_LOST);
  full.u16(0);
  full.u16(8 + 16 + 32);
  full.u64(0);
  full.u64(12);
  full.u32(100);
  full.u32(101);
  full.u64(5000);
  full.u32(1);  // cpu
  full.u32(0);
  full.u64(77);  // identifier
  Bytes out;
  ASSERT_TRUE(relayout_record(lean_attr(), full_attr(), kFill, lean.out, out).ok());
  EXPECT_EQ(out, full.out);
}

TEST(Relayout, AMalformedRecordIsRefusedAndNothingAppended) {
  Bytes cut = lean_sample(20);
  cut.resize(16);
  uint16_t size = 16;
  std::memcpy(cut.data() + 6, &size, sizeof(size));
  Bytes out = {1, 2, 3};
  EXPECT_FALSE(relayout_record(lean_attr(), full_attr(), kFill, cut, out).ok());
  EXPECT_EQ(out, (Bytes{1, 2, 3}));

  Builder lost;  // too short for its trailer
  lost.u32(PERF_RECORD_LOST);
  lost.u16(0);
  lost.u16(16);
  lost.u64(0);
  EXPECT_FALSE(relayout_record(lean_attr(), full_attr(), kFill, lost.out, out).ok());
  EXPECT_EQ(out, (Bytes{1, 2, 3}));
}

TEST(Relayout, ARecordThatWouldOutgrowU16IsRefused) {
  // A raw payload so large that 24 more bytes (id, cpu, period) pass 65535.
  Bytes big = lean_sample(65490);  // 65528 bytes; completed 65552
  ASSERT_LE(big.size(), 65535u);
  Bytes out;
  EXPECT_FALSE(relayout_record(lean_attr(), full_attr(), kFill, big, out).ok());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace pp::sys

namespace pp::sys {
namespace {

// Every member of two samples, spans by where they point and how long.
void expect_same_sample(const Sample& a, const Sample& b) {
  auto span_eq = [](std::span<const uint8_t> x, std::span<const uint8_t> y) {
    return x.data() == y.data() && x.size() == y.size();
  };
  EXPECT_EQ(a.identifier, b.identifier);
  EXPECT_EQ(a.ip, b.ip);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.time, b.time);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.stream_id, b.stream_id);
  EXPECT_EQ(a.cpu, b.cpu);
  EXPECT_EQ(a.period, b.period);
  EXPECT_TRUE(span_eq(a.read, b.read));
  EXPECT_TRUE(span_eq(a.callchain, b.callchain));
  EXPECT_TRUE(span_eq(a.raw, b.raw));
  EXPECT_EQ(a.branch_hw_index, b.branch_hw_index);
  EXPECT_TRUE(span_eq(a.branches, b.branches));
  EXPECT_EQ(a.regs_user_abi, b.regs_user_abi);
  EXPECT_TRUE(span_eq(a.regs_user, b.regs_user));
  EXPECT_TRUE(span_eq(a.stack_user, b.stack_user));
  EXPECT_EQ(a.stack_user_dyn_size, b.stack_user_dyn_size);
  EXPECT_EQ(a.weight, b.weight);
  EXPECT_EQ(a.data_src, b.data_src);
  EXPECT_EQ(a.transaction, b.transaction);
  EXPECT_EQ(a.regs_intr_abi, b.regs_intr_abi);
  EXPECT_TRUE(span_eq(a.regs_intr, b.regs_intr));
  EXPECT_EQ(a.phys_addr, b.phys_addr);
  EXPECT_EQ(a.cgroup, b.cgroup);
  EXPECT_EQ(a.data_page_size, b.data_page_size);
  EXPECT_EQ(a.code_page_size, b.code_page_size);
  EXPECT_TRUE(span_eq(a.aux, b.aux));
}

// SampleLayout::decode() and decode_sample() on one record: the same
// sample, or the same error.
void expect_same_decoding(const perf_event_attr& attr, std::span<const uint8_t> record) {
  SampleLayout layout(attr);
  Sample fast;
  fast.ip = 0xdead;  // whatever was there before is overwritten
  Status got = layout.decode(record, fast);
  auto want = decode_sample(attr, record);
  ASSERT_EQ(got.ok(), want.ok()) << record.size() << " bytes";
  if (!want.ok()) {
    EXPECT_EQ(got.error().message(), want.error().message());
    return;
  }
  expect_same_sample(fast, *want);
}

// Every sample_type a tracepoint or software event uses, each known bit
// alone, a few of the variable ones around RAW, READ with and without
// GROUP; each record whole, cut at every length, with a RAW size that runs
// past the end, and with IDENTIFIER and ID apart.
TEST(SampleLayout, DecodesAsDecodeSampleDoes) {
  std::vector<uint64_t> types = {
      kTracepointSampleType,
      kTracepointSampleType & ~uint64_t(PERF_SAMPLE_IDENTIFIER),
      PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
      PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW,
      PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
          PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
          PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_RAW,
      kTracepointSampleType | PERF_SAMPLE_CALLCHAIN,
      kTracepointSampleType | PERF_SAMPLE_BRANCH_STACK,
      kTracepointSampleType | PERF_SAMPLE_WEIGHT,
      0,
  };
  for (const SampleField& f : sample_fields())
    for (uint64_t bit = 1; bit; bit <<= 1)
      if (f.bits & bit)
        types.push_back(bit);
  for (uint64_t type : types) {
    for (uint64_t read_format :
         {uint64_t(PERF_FORMAT_TOTAL_TIME_ENABLED),
          uint64_t(PERF_FORMAT_ID | PERF_FORMAT_LOST | PERF_FORMAT_TOTAL_TIME_RUNNING),
          uint64_t(PERF_FORMAT_GROUP | PERF_FORMAT_ID)}) {
      SCOPED_TRACE(std::to_string(type) + " read_format " + std::to_string(read_format));
      perf_event_attr attr = attr_with(type);
      attr.read_format = read_format;
      FullSample full(attr);
      Bytes record;
      encode_sample(attr, full.sample, 0, record);
      expect_same_decoding(attr, record);
      for (size_t n = 0; n < record.size(); n++)
        expect_same_decoding(attr, std::span<const uint8_t>(record).first(n));
      // Bytes after the last field are allowed.
      Bytes longer = record;
      longer.resize(record.size() + 16, 0x5a);
      expect_same_decoding(attr, longer);
      if (type & PERF_SAMPLE_RAW) {
        // A RAW size past the end: find the u32 by its value (5 bytes + pad).
        Bytes bad = record;
        uint32_t raw_size = uint32_t(full.raw.size());
        for (size_t at = 8; at + 4 <= bad.size(); at += 4) {
          uint32_t v;
          std::memcpy(&v, bad.data() + at, 4);
          if (v == raw_size) {
            uint32_t huge = 0x10000;
            std::memcpy(bad.data() + at, &huge, 4);
            break;
          }
        }
        expect_same_decoding(attr, bad);
      }
      if ((type & PERF_SAMPLE_IDENTIFIER) && (type & PERF_SAMPLE_ID)) {
        Sample apart = full.sample;
        apart.id = apart.identifier + 1;
        Bytes bad;
        encode_sample(attr, apart, 0, bad);
        expect_same_decoding(attr, bad);
      }
    }
  }
}

}  // namespace
}  // namespace pp::sys

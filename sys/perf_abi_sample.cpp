#include "sys/perf_abi_sample.h"

#include <bit>

namespace pp::sys {
namespace {

using Shape = SampleFieldShape;

constexpr SampleField kSampleFields[] = {
    {PERF_SAMPLE_IDENTIFIER, "IDENTIFIER", Shape::kU64},
    {PERF_SAMPLE_IP, "IP", Shape::kU64},
    {PERF_SAMPLE_TID, "TID", Shape::kU32Pair},
    {PERF_SAMPLE_TIME, "TIME", Shape::kU64},
    {PERF_SAMPLE_ADDR, "ADDR", Shape::kU64},
    {PERF_SAMPLE_ID, "ID", Shape::kU64},
    {PERF_SAMPLE_STREAM_ID, "STREAM_ID", Shape::kU64},
    {PERF_SAMPLE_CPU, "CPU", Shape::kU32Pair},
    {PERF_SAMPLE_PERIOD, "PERIOD", Shape::kU64},
    {PERF_SAMPLE_READ, "READ", Shape::kReadBlock},
    {PERF_SAMPLE_CALLCHAIN, "CALLCHAIN", Shape::kCallchain},
    {PERF_SAMPLE_RAW, "RAW", Shape::kRaw},
    {PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK", Shape::kBranchStack},
    {PERF_SAMPLE_REGS_USER, "REGS_USER", Shape::kRegs},
    {PERF_SAMPLE_STACK_USER, "STACK_USER", Shape::kStackUser},
    {PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT", Shape::kU64},
    {PERF_SAMPLE_DATA_SRC, "DATA_SRC", Shape::kU64},
    {PERF_SAMPLE_TRANSACTION, "TRANSACTION", Shape::kU64},
    {PERF_SAMPLE_REGS_INTR, "REGS_INTR", Shape::kRegs},
    {PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR", Shape::kU64},
    {PERF_SAMPLE_CGROUP, "CGROUP", Shape::kU64},
    {PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE", Shape::kU64},
    {PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE", Shape::kU64},
    {PERF_SAMPLE_AUX, "AUX", Shape::kAux},
};

constexpr SampleField kSampleIdFields[] = {
    {PERF_SAMPLE_TID, "TID", Shape::kU32Pair}, {PERF_SAMPLE_TIME, "TIME", Shape::kU64},
    {PERF_SAMPLE_ID, "ID", Shape::kU64},       {PERF_SAMPLE_STREAM_ID, "STREAM_ID", Shape::kU64},
    {PERF_SAMPLE_CPU, "CPU", Shape::kU32Pair}, {PERF_SAMPLE_IDENTIFIER, "IDENTIFIER", Shape::kU64},
};

// Counts larger than any kernel writes (u16 sample_max_stack, group sizes).
constexpr uint64_t kMaxCount = 0xffff;
constexpr size_t kBranchEntryBytes = 24;

// The u64 fields of a sample (and of the trailer, kept in a Sample too),
// by bit: one place says which member a u64 goes to, for both directions.
template <typename S>  // Sample or const Sample
auto* u64_member(S& s, uint64_t bits) {
  using Member = decltype(&s.ip);
  switch (bits) {
    case PERF_SAMPLE_IDENTIFIER:
      return &s.identifier;
    case PERF_SAMPLE_IP:
      return &s.ip;
    case PERF_SAMPLE_TIME:
      return &s.time;
    case PERF_SAMPLE_ADDR:
      return &s.addr;
    case PERF_SAMPLE_ID:
      return &s.id;
    case PERF_SAMPLE_STREAM_ID:
      return &s.stream_id;
    case PERF_SAMPLE_PERIOD:
      return &s.period;
    case PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT:
      return &s.weight;
    case PERF_SAMPLE_DATA_SRC:
      return &s.data_src;
    case PERF_SAMPLE_TRANSACTION:
      return &s.transaction;
    case PERF_SAMPLE_PHYS_ADDR:
      return &s.phys_addr;
    case PERF_SAMPLE_CGROUP:
      return &s.cgroup;
    case PERF_SAMPLE_DATA_PAGE_SIZE:
      return &s.data_page_size;
    case PERF_SAMPLE_CODE_PAGE_SIZE:
      return &s.code_page_size;
    default:
      return Member(nullptr);
  }
}

void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  put(out, &v, sizeof(v));
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  put(out, &v, sizeof(v));
}

void put_bytes(std::vector<uint8_t>& out, std::span<const uint8_t> bytes) {
  put(out, bytes.data(), bytes.size());
}

// Reads fields off a record without allocating; the first failure is kept
// (which field, and why) for decode_sample()'s message.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, size_t at) : bytes_(bytes), at_(at) {}

  bool u64(uint64_t& v) { return fixed(&v, sizeof(v)); }
  bool u32(uint32_t& v) { return fixed(&v, sizeof(v)); }
  bool bytes(uint64_t n, std::span<const uint8_t>& out) {
    if (n > bytes_.size() - at_)
      return fail("runs past the end of the record");
    out = bytes_.subspan(at_, size_t(n));
    at_ += size_t(n);
    return true;
  }
  // A count of `unit`-byte items that must fit in what is left.
  bool count(uint64_t& nr, size_t unit) {
    if (!u64(nr))
      return false;
    if (nr > kMaxCount || nr > (bytes_.size() - at_) / unit)
      return fail("claims more entries than the record holds");
    return true;
  }
  bool fail(const char* why) {
    if (!why_)
      why_ = why;
    return false;
  }
  size_t at() const { return at_; }
  const char* why() const { return why_; }
  const char* field = "header";

 private:
  bool fixed(void* v, size_t n) {
    if (n > bytes_.size() - at_)
      return fail("runs past the end of the record");
    std::memcpy(v, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }

  std::span<const uint8_t> bytes_;
  size_t at_;
  const char* why_ = nullptr;
};

// Bytes of the read_format block; GROUP's nr is read from the record.
bool read_block(Cursor& in, uint64_t read_format, std::span<const uint8_t>& out) {
  uint64_t per_value =
      8 + ((read_format & PERF_FORMAT_ID) ? 8 : 0) + ((read_format & PERF_FORMAT_LOST) ? 8 : 0);
  uint64_t times = ((read_format & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0) +
                   ((read_format & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0);
  if (!(read_format & PERF_FORMAT_GROUP))
    return in.bytes(per_value + times, out);
  Cursor peek = in;
  uint64_t nr;
  if (!peek.u64(nr))
    return in.fail("runs past the end of the record");
  if (nr > kMaxCount)
    return in.fail("claims more group members than a group holds");
  return in.bytes(8 + times + nr * per_value, out);
}

bool registers(Cursor& in, uint64_t mask, uint64_t& abi, std::span<const uint8_t>& regs) {
  if (!in.u64(abi))
    return false;
  if (abi == PERF_SAMPLE_REGS_ABI_NONE)
    return true;
  return in.bytes(uint64_t(std::popcount(mask)) * 8, regs);
}

bool decode_field(Cursor& in, const SampleField& f, const perf_event_attr& attr, Sample& s) {
  uint64_t nr = 0;
  switch (f.shape) {
    case Shape::kU64:
      return in.u64(*u64_member(s, f.bits));
    case Shape::kU32Pair: {
      uint32_t reserved;  // CPU's second u32
      if (f.bits == PERF_SAMPLE_TID)
        return in.u32(s.pid) && in.u32(s.tid);
      return in.u32(s.cpu) && in.u32(reserved);
    }
    case Shape::kReadBlock:
      return read_block(in, attr.read_format, s.read);
    case Shape::kCallchain:
      return in.count(nr, 8) && in.bytes(nr * 8, s.callchain);
    case Shape::kRaw: {
      uint32_t size;
      return in.u32(size) && in.bytes(size, s.raw);
    }
    case Shape::kBranchStack:
      if (!in.u64(nr))
        return false;
      if (nr > kMaxCount)
        return in.fail("claims more entries than the record holds");
      if ((attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) && !in.u64(s.branch_hw_index))
        return false;
      return in.bytes(nr * kBranchEntryBytes, s.branches);
    case Shape::kRegs:
      if (f.bits == PERF_SAMPLE_REGS_USER)
        return registers(in, attr.sample_regs_user, s.regs_user_abi, s.regs_user);
      return registers(in, attr.sample_regs_intr, s.regs_intr_abi, s.regs_intr);
    case Shape::kStackUser: {
      uint64_t size;
      if (!in.u64(size) || !in.bytes(size, s.stack_user))
        return false;
      return size == 0 || in.u64(s.stack_user_dyn_size);
    }
    case Shape::kAux: {
      uint64_t size;
      return in.u64(size) && in.bytes(size, s.aux);
    }
  }
  return false;
}

void encode_field(std::vector<uint8_t>& out, const SampleField& f, const perf_event_attr& attr,
                  const Sample& s) {
  switch (f.shape) {
    case Shape::kU64:
      put_u64(out, *u64_member(s, f.bits));
      return;
    case Shape::kU32Pair:
      put_u32(out, f.bits == PERF_SAMPLE_TID ? s.pid : s.cpu);
      put_u32(out, f.bits == PERF_SAMPLE_TID ? s.tid : 0);
      return;
    case Shape::kReadBlock:
      put_bytes(out, s.read);
      return;
    case Shape::kCallchain:
      put_u64(out, s.callchain.size() / 8);
      put_bytes(out, s.callchain);
      return;
    case Shape::kRaw:
      put_u32(out, uint32_t(s.raw.size()));
      put_bytes(out, s.raw);
      return;
    case Shape::kBranchStack:
      put_u64(out, s.branches.size() / kBranchEntryBytes);
      if (attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
        put_u64(out, s.branch_hw_index);
      put_bytes(out, s.branches);
      return;
    case Shape::kRegs: {
      bool user = f.bits == PERF_SAMPLE_REGS_USER;
      uint64_t abi = user ? s.regs_user_abi : s.regs_intr_abi;
      put_u64(out, abi);
      if (abi != PERF_SAMPLE_REGS_ABI_NONE)
        put_bytes(out, user ? s.regs_user : s.regs_intr);
      return;
    }
    case Shape::kStackUser:
      put_u64(out, s.stack_user.size());
      put_bytes(out, s.stack_user);
      if (!s.stack_user.empty())
        put_u64(out, s.stack_user_dyn_size);
      return;
    case Shape::kAux:
      put_u64(out, s.aux.size());
      put_bytes(out, s.aux);
      return;
  }
}

// The trailer's members live in a Sample too, so both share u64_member().
Sample as_sample(const SampleId& id) {
  Sample s;
  s.pid = id.pid;
  s.tid = id.tid;
  s.time = id.time;
  s.id = id.id;
  s.identifier = id.id;
  s.stream_id = id.stream_id;
  s.cpu = id.cpu;
  return s;
}

}  // namespace

std::span<const SampleField> sample_fields() {
  return kSampleFields;
}

std::span<const SampleField> sample_id_fields() {
  return kSampleIdFields;
}

uint64_t known_sample_type() {
  uint64_t bits = 0;
  for (const SampleField& f : kSampleFields)
    bits |= f.bits;
  return bits;
}

size_t sample_id_size(uint64_t sample_type) {
  return size_t(std::popcount(sample_id_bits(sample_type))) * 8;
}

void encode_sample_id(uint64_t sample_type, const SampleId& value, std::vector<uint8_t>& out) {
  Sample s = as_sample(value);
  perf_event_attr attr = {};
  for (const SampleField& f : kSampleIdFields)
    if (sample_type & f.bits)
      encode_field(out, f, attr, s);
}

Result<SampleId> decode_sample_id(uint64_t sample_type, std::span<const uint8_t> record) {
  size_t size = sample_id_size(sample_type);
  if (record.size() < sizeof(perf_event_header) + size)
    return errorf(EINVAL, "record of %zu bytes is too short for a %zu-byte sample_id trailer",
                  record.size(), size);
  Cursor in(record, record.size() - size);
  Sample s;
  perf_event_attr attr = {};
  for (const SampleField& f : kSampleIdFields)
    if (sample_type & f.bits)
      (void)decode_field(in, f, attr, s);  // fits: the size was checked
  SampleId out;
  out.pid = s.pid;
  out.tid = s.tid;
  out.time = s.time;
  out.id = (sample_type & PERF_SAMPLE_IDENTIFIER) ? s.identifier : s.id;
  out.stream_id = s.stream_id;
  out.cpu = s.cpu;
  return out;
}

std::optional<size_t> sample_time_offset(uint64_t sample_type) {
  if (!(sample_type & PERF_SAMPLE_TIME))
    return std::nullopt;
  size_t offset = sizeof(perf_event_header);
  for (const SampleField& f : kSampleFields) {
    if (f.bits == PERF_SAMPLE_TIME)
      break;
    if (sample_type & f.bits)
      offset += 8;  // the fields before TIME are fixed-size
  }
  return offset;
}

void encode_sample(const perf_event_attr& attr, const Sample& sample, uint16_t misc,
                   std::vector<uint8_t>& out) {
  size_t start = out.size();
  out.resize(start + sizeof(perf_event_header));
  for (const SampleField& f : kSampleFields)
    if (attr.sample_type & f.bits)
      encode_field(out, f, attr, sample);
  perf_event_header header{PERF_RECORD_SAMPLE, misc, uint16_t(out.size() - start)};
  std::memcpy(out.data() + start, &header, sizeof(header));
}

std::vector<uint8_t> pad_raw(std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(payload.begin(), payload.end());
  size_t padded = (sizeof(uint32_t) + payload.size() + 7) & ~size_t(7);
  out.resize(padded - sizeof(uint32_t), 0);
  return out;
}

namespace {

// The fields in order; on failure `in` says which and why.
bool decode_fields(Cursor& in, const perf_event_attr& attr, Sample& s) {
  for (const SampleField& f : kSampleFields) {
    if (!(attr.sample_type & f.bits))
      continue;
    in.field = f.name.data();
    if (!decode_field(in, f, attr, s))
      return false;
  }
  return true;
}

}  // namespace

std::optional<size_t> sample_fields_end(const perf_event_attr& attr,
                                        std::span<const uint8_t> record, Sample* out) {
  if (record.size() < sizeof(perf_event_header))
    return std::nullopt;
  Cursor in(record, sizeof(perf_event_header));
  bool decoded;
  if (out) {
    decoded = decode_fields(in, attr, *out);
  } else {
    Sample discarded;
    decoded = decode_fields(in, attr, discarded);
  }
  if (!decoded)
    return std::nullopt;
  return in.at();
}

Result<Sample> decode_sample(const perf_event_attr& attr, std::span<const uint8_t> record) {
  if (record.size() < sizeof(perf_event_header))
    return errorf(EINVAL, "sample record of %zu bytes is shorter than its header", record.size());
  Cursor in(record, sizeof(perf_event_header));
  Sample s;
  if (!decode_fields(in, attr, s))
    return errorf(EINVAL, "PERF_RECORD_SAMPLE of %zu bytes: its %s field at offset %zu %s",
                  record.size(), in.field, in.at(), in.why() ? in.why() : "is malformed");
  const uint64_t type = attr.sample_type;
  if (type & PERF_SAMPLE_IDENTIFIER && type & PERF_SAMPLE_ID && s.identifier != s.id)
    return errorf(EINVAL, "sample's IDENTIFIER %llu and ID %llu differ",
                  static_cast<unsigned long long>(s.identifier),
                  static_cast<unsigned long long>(s.id));
  if (type & PERF_SAMPLE_IDENTIFIER)
    s.id = s.identifier;
  return s;
}

SampleLayout::SampleLayout(const perf_event_attr& attr) : attr_(attr) {
  constexpr uint64_t kFixed = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                              PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                              PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                              PERF_SAMPLE_READ | PERF_SAMPLE_RAW;
  const uint64_t type = attr.sample_type;
  if ((type & ~kFixed) || ((type & PERF_SAMPLE_READ) && (attr.read_format & PERF_FORMAT_GROUP)))
    return;
  size_t at = sizeof(perf_event_header);
  for (const SampleField& f : kSampleFields) {
    if (!(type & f.bits))
      continue;
    uint16_t here = uint16_t(at);
    switch (f.bits) {
      case PERF_SAMPLE_IDENTIFIER:
        identifier_ = here;
        break;
      case PERF_SAMPLE_IP:
        ip_ = here;
        break;
      case PERF_SAMPLE_TID:
        tid_ = here;
        break;
      case PERF_SAMPLE_TIME:
        time_ = here;
        break;
      case PERF_SAMPLE_ADDR:
        addr_ = here;
        break;
      case PERF_SAMPLE_ID:
        id_ = here;
        break;
      case PERF_SAMPLE_STREAM_ID:
        stream_id_ = here;
        break;
      case PERF_SAMPLE_CPU:
        cpu_ = here;
        break;
      case PERF_SAMPLE_PERIOD:
        period_ = here;
        break;
      case PERF_SAMPLE_READ: {
        const uint64_t rf = attr.read_format;
        read_ = here;
        read_size_ =
            uint16_t(8 + ((rf & PERF_FORMAT_ID) ? 8 : 0) + ((rf & PERF_FORMAT_LOST) ? 8 : 0) +
                     ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0) +
                     ((rf & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0));
        at += read_size_;
        continue;
      }
      case PERF_SAMPLE_RAW:
        raw_ = here;
        at += 4;
        continue;
      default:
        return;  // not a fixed field: the table's way
    }
    at += 8;
  }
  end_ = uint16_t(at);
  fixed_ = true;
}

Status SampleLayout::decode(std::span<const uint8_t> record, Sample& out) const {
  auto slow = [&]() -> Status {
    PP_ASSIGN_OR_RETURN(out, decode_sample(attr_, record));
    return ok_status();
  };
  if (!fixed_ || record.size() < end_)
    return slow();
  const uint8_t* p = record.data();
  auto u64 = [p](uint16_t at) {
    uint64_t v;
    std::memcpy(&v, p + at, sizeof(v));
    return v;
  };
  auto u32 = [p](size_t at) {
    uint32_t v;
    std::memcpy(&v, p + at, sizeof(v));
    return v;
  };
  uint32_t raw_size = 0;
  if (raw_ != kAbsent) {
    raw_size = u32(raw_);
    if (raw_size > record.size() - end_)
      return slow();  // says which field and why
  }
  out = Sample{};
  if (identifier_ != kAbsent)
    out.identifier = u64(identifier_);
  if (id_ != kAbsent) {
    out.id = u64(id_);
    if (identifier_ != kAbsent && out.id != out.identifier)
      return slow();
  }
  if (identifier_ != kAbsent)
    out.id = out.identifier;
  if (ip_ != kAbsent)
    out.ip = u64(ip_);
  if (tid_ != kAbsent) {
    out.pid = u32(tid_);
    out.tid = u32(tid_ + 4u);
  }
  if (time_ != kAbsent)
    out.time = u64(time_);
  if (addr_ != kAbsent)
    out.addr = u64(addr_);
  if (stream_id_ != kAbsent)
    out.stream_id = u64(stream_id_);
  if (cpu_ != kAbsent)
    out.cpu = u32(cpu_);
  if (period_ != kAbsent)
    out.period = u64(period_);
  if (read_ != kAbsent)
    out.read = record.subspan(read_, read_size_);
  if (raw_ != kAbsent)
    out.raw = record.subspan(end_, raw_size);
  return ok_status();
}

SampleFill sample_fill(const perf_event_attr& attr, int cpu, uint64_t id) {
  return {.id = id, .cpu = uint32_t(cpu), .period = attr.freq ? 1 : attr.sample_period};
}

void fill_missing(Sample& sample, uint64_t have, const SampleFill& fill) {
  if (!(have & PERF_SAMPLE_CPU))
    sample.cpu = fill.cpu;
  if (!(have & PERF_SAMPLE_PERIOD))
    sample.period = fill.period;
  if (!(have & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER))) {
    sample.id = fill.id;
    sample.identifier = fill.id;
  }
}

Status relayout_record(const perf_event_attr& from, const perf_event_attr& to,
                       const SampleFill& fill, std::span<const uint8_t> record,
                       std::vector<uint8_t>& out) {
  if (record.size() < sizeof(perf_event_header))
    return errorf(EINVAL, "record of %zu bytes is shorter than its header", record.size());
  perf_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  const size_t start = out.size();
  if (header.type == PERF_RECORD_SAMPLE) {
    PP_ASSIGN_OR_RETURN(Sample s, decode_sample(from, record));
    fill_missing(s, from.sample_type, fill);
    encode_sample(to, s, header.misc, out);
  } else {
    size_t old_trailer = sample_id_size(from);
    if (record.size() < sizeof(perf_event_header) + old_trailer)
      return errorf(EINVAL,
                    "record of type %u and %zu bytes is too short for a %zu-byte "
                    "sample_id trailer",
                    unsigned(header.type), record.size(), old_trailer);
    SampleId id;
    if (from.sample_id_all) {
      PP_ASSIGN_OR_RETURN(id, decode_sample_id(from.sample_type, record));
    }
    const uint64_t had = from.sample_id_all ? sample_id_bits(from.sample_type) : 0;
    if (!(had & PERF_SAMPLE_CPU))
      id.cpu = fill.cpu;
    if (!(had & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)))
      id.id = fill.id;
    put(out, record.data(), record.size() - old_trailer);
    if (to.sample_id_all)
      encode_sample_id(to.sample_type, id, out);
    size_t size = out.size() - start;
    if (size <= 0xffff) {
      header.size = uint16_t(size);
      std::memcpy(out.data() + start, &header, sizeof(header));
    }
  }
  if (out.size() - start > 0xffff) {
    out.resize(start);
    return errorf(EINVAL, "record of type %u grows past 65535 bytes when laid out anew",
                  unsigned(header.type));
  }
  return ok_status();
}

}  // namespace pp::sys

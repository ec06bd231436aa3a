#include "report/sample_layout.h"

namespace pp::report {

size_t id_trailer_size(uint64_t sample_type) {
  size_t size = 0;
  if (sample_type & PERF_SAMPLE_TID)
    size += 8;
  if (sample_type & PERF_SAMPLE_TIME)
    size += 8;
  if (sample_type & PERF_SAMPLE_ID)
    size += 8;
  if (sample_type & PERF_SAMPLE_STREAM_ID)
    size += 8;
  if (sample_type & PERF_SAMPLE_CPU)
    size += 8;
  if (sample_type & PERF_SAMPLE_IDENTIFIER)
    size += 8;
  return size;
}

void write_id_trailer(uint64_t sample_type, const SampleId& value, ByteWriter& out) {
  if (sample_type & PERF_SAMPLE_TID) {
    out.u32(value.pid);
    out.u32(value.tid);
  }
  if (sample_type & PERF_SAMPLE_TIME)
    out.u64(value.time);
  if (sample_type & PERF_SAMPLE_ID)
    out.u64(value.id);
  if (sample_type & PERF_SAMPLE_STREAM_ID)
    out.u64(value.stream_id);
  if (sample_type & PERF_SAMPLE_CPU) {
    out.u32(value.cpu);
    out.u32(0);
  }
  if (sample_type & PERF_SAMPLE_IDENTIFIER)
    out.u64(value.id);
}

Result<SampleId> read_id_trailer(uint64_t sample_type, std::span<const uint8_t> record) {
  size_t size = id_trailer_size(sample_type);
  if (record.size() < sizeof(perf_event_header) + size)
    return errorf(EINVAL, "record of %zu bytes is too short for a %zu-byte sample_id trailer",
                  record.size(), size);
  ByteReader in(record.subspan(record.size() - size), "sample_id trailer");
  SampleId out;
  if (sample_type & PERF_SAMPLE_TID) {
    PP_ASSIGN_OR_RETURN(out.pid, in.u32());
    PP_ASSIGN_OR_RETURN(out.tid, in.u32());
  }
  if (sample_type & PERF_SAMPLE_TIME) {
    PP_ASSIGN_OR_RETURN(out.time, in.u64());
  }
  if (sample_type & PERF_SAMPLE_ID) {
    PP_ASSIGN_OR_RETURN(out.id, in.u64());
  }
  if (sample_type & PERF_SAMPLE_STREAM_ID) {
    PP_ASSIGN_OR_RETURN(out.stream_id, in.u64());
  }
  if (sample_type & PERF_SAMPLE_CPU) {
    PP_ASSIGN_OR_RETURN(out.cpu, in.u32());
    PP_RETURN_IF_ERROR(in.skip(4));
  }
  if (sample_type & PERF_SAMPLE_IDENTIFIER) {
    PP_ASSIGN_OR_RETURN(out.id, in.u64());
  }
  return out;
}

std::optional<size_t> sample_time_offset(uint64_t sample_type) {
  if (!(sample_type & PERF_SAMPLE_TIME))
    return std::nullopt;
  size_t offset = sizeof(perf_event_header);
  if (sample_type & PERF_SAMPLE_IDENTIFIER)
    offset += 8;
  if (sample_type & PERF_SAMPLE_IP)
    offset += 8;
  if (sample_type & PERF_SAMPLE_TID)
    offset += 8;
  return offset;
}

namespace {

// Bytes of the PERF_SAMPLE_READ block for `read_format`, given the number
// of group members (read from the record when PERF_FORMAT_GROUP).
Result<size_t> read_block_size(uint64_t read_format, ByteReader& in) {
  size_t per_value = 8;
  if (read_format & PERF_FORMAT_ID)
    per_value += 8;
  if (read_format & PERF_FORMAT_LOST)
    per_value += 8;
  size_t times = 0;
  if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
    times += 8;
  if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
    times += 8;
  if (!(read_format & PERF_FORMAT_GROUP))
    return per_value + times;
  ByteReader peek = in;
  PP_ASSIGN_OR_RETURN(uint64_t nr, peek.u64());
  if (nr > (1u << 16))
    return errorf(EINVAL, "sample's read group claims %llu members",
                  static_cast<unsigned long long>(nr));
  return 8 + times + size_t(nr) * per_value;
}

}  // namespace

Result<Sample> parse_sample(const perf_event_attr& attr, std::span<const uint8_t> record) {
  if (record.size() < sizeof(perf_event_header))
    return errorf(EINVAL, "sample record of %zu bytes is shorter than its header", record.size());
  ByteReader in(record.subspan(sizeof(perf_event_header)), "PERF_RECORD_SAMPLE");
  const uint64_t type = attr.sample_type;
  Sample s;
  if (type & PERF_SAMPLE_IDENTIFIER) {
    PP_ASSIGN_OR_RETURN(s.identifier, in.u64());
  }
  if (type & PERF_SAMPLE_IP) {
    PP_ASSIGN_OR_RETURN(s.ip, in.u64());
  }
  if (type & PERF_SAMPLE_TID) {
    PP_ASSIGN_OR_RETURN(s.pid, in.u32());
    PP_ASSIGN_OR_RETURN(s.tid, in.u32());
  }
  if (type & PERF_SAMPLE_TIME) {
    PP_ASSIGN_OR_RETURN(s.time, in.u64());
  }
  if (type & PERF_SAMPLE_ADDR) {
    PP_ASSIGN_OR_RETURN(s.addr, in.u64());
  }
  if (type & PERF_SAMPLE_ID) {
    PP_ASSIGN_OR_RETURN(s.id, in.u64());
  }
  if (type & PERF_SAMPLE_STREAM_ID) {
    PP_ASSIGN_OR_RETURN(s.stream_id, in.u64());
  }
  if (type & PERF_SAMPLE_CPU) {
    PP_ASSIGN_OR_RETURN(s.cpu, in.u32());
    PP_RETURN_IF_ERROR(in.skip(4));
  }
  if (type & PERF_SAMPLE_PERIOD) {
    PP_ASSIGN_OR_RETURN(s.period, in.u64());
  }
  if (type & PERF_SAMPLE_READ) {
    PP_ASSIGN_OR_RETURN(size_t size, read_block_size(attr.read_format, in));
    PP_ASSIGN_OR_RETURN(s.read, in.bytes(size));
  }
  if (type & PERF_SAMPLE_CALLCHAIN) {
    PP_ASSIGN_OR_RETURN(uint64_t nr, in.u64());
    if (nr > in.remaining() / 8)
      return errorf(EINVAL, "sample's callchain claims %llu entries in %zu bytes",
                    static_cast<unsigned long long>(nr), in.remaining());
    PP_ASSIGN_OR_RETURN(s.callchain, in.bytes(nr * 8));
  }
  if (type & PERF_SAMPLE_RAW) {
    PP_ASSIGN_OR_RETURN(uint32_t size, in.u32());
    PP_ASSIGN_OR_RETURN(s.raw, in.bytes(size));
  }
  if (type & PERF_SAMPLE_IDENTIFIER && type & PERF_SAMPLE_ID && s.identifier != s.id)
    return errorf(EINVAL, "sample's IDENTIFIER %llu and ID %llu differ",
                  static_cast<unsigned long long>(s.identifier),
                  static_cast<unsigned long long>(s.id));
  if (type & PERF_SAMPLE_IDENTIFIER)
    s.id = s.identifier;
  return s;
}

}  // namespace pp::report

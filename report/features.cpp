#include "report/features.h"

#include <cstring>

#include "report/perf_data_format.h"
#include "sys/perf_abi_records.h"

namespace pp::report {

Bytes encode_string_feature(std::string_view value) {
  Bytes out;
  ByteWriter(&out).perf_string(value);
  return out;
}

Bytes encode_nr_cpus(uint32_t available, uint32_t online) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(available);
  w.u32(online);
  return out;
}

Bytes encode_total_mem(uint64_t kb) {
  Bytes out;
  ByteWriter(&out).u64(kb);
  return out;
}

Bytes encode_cmdline(std::span<const std::string> argv) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(uint32_t(argv.size()));
  for (const std::string& arg : argv)
    w.perf_string(arg);
  return out;
}

Bytes encode_event_desc(std::span<const EventDesc> events, uint32_t attr_size) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(uint32_t(events.size()));
  w.u32(attr_size);
  for (const EventDesc& event : events) {
    w.bytes({reinterpret_cast<const uint8_t*>(event.attr.words), attr_size});
    w.u32(uint32_t(event.ids.size()));
    w.perf_string(event.name);
    for (uint64_t id : event.ids)
      w.u64(id);
  }
  return out;
}

Bytes encode_pmu_mappings(std::span<const std::pair<uint32_t, std::string>> pmus) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(uint32_t(pmus.size()));
  for (const auto& [type, name] : pmus) {
    w.u32(type);
    w.perf_string(name);
  }
  return out;
}

Bytes encode_sample_time(uint64_t first, uint64_t last) {
  Bytes out;
  ByteWriter w(&out);
  w.u64(first);
  w.u64(last);
  return out;
}

Bytes encode_clockid(uint64_t resolution_ns) {
  Bytes out;
  ByteWriter(&out).u64(resolution_ns);
  return out;
}

Bytes encode_clock_data(const sys::ClockPair& pair) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(1);
  w.u32(uint32_t(pair.clockid));
  w.u64(pair.wall_ns);
  w.u64(pair.clock_ns);
  return out;
}

FeatureMap host_features(const HostInfo& host, std::span<const EventDesc> events,
                         uint32_t attr_size) {
  FeatureMap out;
  auto add_string = [&](int feature, const std::string& value) {
    if (!value.empty())
      out[feature] = encode_string_feature(value);
  };
  add_string(kFeatureHostname, host.hostname);
  add_string(kFeatureOsRelease, host.os_release);
  add_string(kFeatureVersion, host.version);
  add_string(kFeatureArch, host.arch);
  if (host.nr_cpus_available || host.nr_cpus_online)
    out[kFeatureNrCpus] = encode_nr_cpus(host.nr_cpus_available, host.nr_cpus_online);
  add_string(kFeatureCpuDesc, host.cpu_desc);
  add_string(kFeatureCpuId, host.cpuid);
  if (host.total_mem_kb)
    out[kFeatureTotalMem] = encode_total_mem(host.total_mem_kb);
  if (!host.cmdline.empty())
    out[kFeatureCmdline] = encode_cmdline(host.cmdline);
  out[kFeatureEventDesc] = encode_event_desc(events, attr_size);
  if (!host.pmu_types.empty())
    out[kFeaturePmuMappings] = encode_pmu_mappings(host.pmu_types);
  return out;
}

Result<std::string> decode_string_feature(std::span<const uint8_t> section) {
  ByteReader in(section, "string feature");
  return in.perf_string();
}

Result<std::pair<uint32_t, uint32_t>> decode_nr_cpus(std::span<const uint8_t> section) {
  ByteReader in(section, "HEADER_NRCPUS");
  PP_ASSIGN_OR_RETURN(uint32_t available, in.u32());
  PP_ASSIGN_OR_RETURN(uint32_t online, in.u32());
  return std::pair{available, online};
}

Result<uint64_t> decode_u64_feature(std::span<const uint8_t> section, const char* what) {
  ByteReader in(section, what);
  return in.u64();
}

Result<std::vector<std::string>> decode_cmdline(std::span<const uint8_t> section) {
  ByteReader in(section, "HEADER_CMDLINE");
  PP_ASSIGN_OR_RETURN(uint32_t nr, in.u32());
  std::vector<std::string> argv;
  for (uint32_t i = 0; i < nr; i++) {
    PP_ASSIGN_OR_RETURN(std::string arg, in.perf_string());
    argv.push_back(std::move(arg));
  }
  return argv;
}

Result<std::vector<EventDesc>> decode_event_desc(std::span<const uint8_t> section) {
  ByteReader in(section, "HEADER_EVENT_DESC");
  PP_ASSIGN_OR_RETURN(uint32_t nr, in.u32());
  PP_ASSIGN_OR_RETURN(uint32_t attr_size, in.u32());
  if (attr_size < kAttrSizeVer0)
    return errorf(EINVAL, "HEADER_EVENT_DESC: attr size %u is below perf's minimum of %u",
                  attr_size, kAttrSizeVer0);
  std::vector<EventDesc> events;
  for (uint32_t i = 0; i < nr; i++) {
    EventDesc event;
    PP_ASSIGN_OR_RETURN(auto attr, in.bytes(attr_size));
    std::memcpy(event.attr.words, attr.data(), std::min<size_t>(attr.size(), sizeof(event.attr)));
    PP_ASSIGN_OR_RETURN(uint32_t nr_ids, in.u32());
    PP_ASSIGN_OR_RETURN(event.name, in.perf_string());
    if (nr_ids > in.remaining() / 8)
      return errorf(EINVAL, "HEADER_EVENT_DESC: event '%s' claims %u ids in %zu bytes",
                    event.name.c_str(), nr_ids, in.remaining());
    for (uint32_t j = 0; j < nr_ids; j++) {
      PP_ASSIGN_OR_RETURN(uint64_t id, in.u64());
      event.ids.push_back(id);
    }
    events.push_back(std::move(event));
  }
  return events;
}

Result<std::pair<uint64_t, uint64_t>> decode_sample_time(std::span<const uint8_t> section) {
  ByteReader in(section, "HEADER_SAMPLE_TIME");
  PP_ASSIGN_OR_RETURN(uint64_t first, in.u64());
  PP_ASSIGN_OR_RETURN(uint64_t last, in.u64());
  return std::pair{first, last};
}

Result<sys::ClockPair> decode_clock_data(std::span<const uint8_t> section) {
  if (section.size() < 24)
    return errorf(EINVAL, "HEADER_CLOCK_DATA has %zu bytes, fewer than its 24", section.size());
  uint32_t version, clockid;
  std::memcpy(&version, section.data(), 4);
  std::memcpy(&clockid, section.data() + 4, 4);
  if (version != 1)
    return errorf(EINVAL, "HEADER_CLOCK_DATA is version %u; this reader knows version 1", version);
  sys::ClockPair pair;
  pair.clockid = int(int32_t(clockid));
  std::memcpy(&pair.wall_ns, section.data() + 8, 8);
  std::memcpy(&pair.clock_ns, section.data() + 16, 8);
  return pair;
}

Bytes encode_pipe_header(std::span<const EventDesc> events, uint32_t attr_size,
                         const FeatureMap& features) {
  Bytes head;
  ByteWriter w(&head);
  PipeHeader pipe_header;
  w.bytes({reinterpret_cast<const uint8_t*>(&pipe_header), sizeof(pipe_header)});
  for (const EventDesc& e : events) {
    w.u32(kRecordHeaderAttr);
    w.u16(0);
    w.u16(uint16_t(sizeof(perf_event_header) + attr_size + 8 * e.ids.size()));
    w.bytes({reinterpret_cast<const uint8_t*>(e.attr.words), attr_size});
    for (uint64_t id : e.ids)
      w.u64(id);
  }
  // Features as HEADER_FEATURE records, then the one that ends them. Tracing
  // data has its own record; sample time is unknown until the end, which a
  // pipe never revisits.
  for (const auto& [feature, bytes] : features) {
    if (feature == kFeatureTracingData || feature == kFeatureBuildId)
      continue;
    size_t size = sizeof(perf_event_header) + 8 + bytes.size();
    if (size > kMaxRecordSize)
      continue;  // as perf does: a feature too big for a record is left out
    w.u32(kRecordHeaderFeature);
    w.u16(0);
    w.u16(uint16_t(size));
    w.u64(uint64_t(feature));
    w.bytes(bytes);
  }
  w.u32(kRecordHeaderFeature);
  w.u16(0);
  w.u16(uint16_t(sizeof(perf_event_header) + 8));
  w.u64(kFeatureLast);
  if (auto tracing = features.find(kFeatureTracingData); tracing != features.end()) {
    const Bytes& data = tracing->second;
    w.u32(kRecordHeaderTracingData);
    w.u16(0);
    w.u16(kTracingDataRecordSize);
    w.u32(uint32_t(align_up(data.size(), 8)));
    w.u32(0);
    w.bytes(data);
    w.zeros(align_up(data.size(), 8) - data.size());
  }
  // Build-ids travel as records of their own in a pipe.
  if (auto ids = features.find(kFeatureBuildId); ids != features.end()) {
    Bytes records = ids->second;
    const uint32_t type = kRecordHeaderBuildId;
    sys::walk_records(records, [&](const perf_event_header&, size_t offset) {
      std::memcpy(records.data() + offset, &type, sizeof(type));
      return true;
    });
    w.bytes(records);
  }
  return head;
}

}  // namespace pp::report

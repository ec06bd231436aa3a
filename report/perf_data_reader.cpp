#include "report/perf_data_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdarg>
#include <cstdio>

#include "sys/fd.h"
#include "sys/perf_abi_records.h"

namespace pp::report {
namespace {

// perf.data files this reader takes into memory: above this, something is wrong.
constexpr uint64_t kMaxFileSize = uint64_t(16) << 30;

// perf_event_attr's size field sits after the u32 type.
constexpr size_t kAttrSizeOffset = 4;

bool fits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

uint32_t u32_at(std::span<const uint8_t> bytes, size_t offset) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + offset, sizeof(v));
  return v;
}

uint64_t u64_at(std::span<const uint8_t> bytes, size_t offset) {
  return sys::u64_at(bytes.data() + offset);
}

}  // namespace

Error PerfDataReader::malformed(const char* format, ...) const {
  va_list ap;
  va_start(ap, format);
  char buf[512];
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  return errorf(EINVAL, "%s is not a valid perf.data file: %s", name_.c_str(), buf);
}

Result<PerfDataReader> PerfDataReader::read_file(const std::string& path) {
  PP_ASSIGN_OR_RETURN(std::optional<sys::FileMap> map, sys::FileMap::open(path));
  if (map) {
    if (map->bytes().size() > kMaxFileSize)
      return errorf(EFBIG, "%s is larger than %llu bytes", path.c_str(),
                    static_cast<unsigned long long>(kMaxFileSize));
    PerfDataReader r;
    r.name_ = path;
    r.mapped_ = std::move(*map);
    r.bytes_ = r.mapped_.bytes();
    PP_RETURN_IF_ERROR(r.parse_bytes());
    return r;
  }
  sys::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open " + path);
  Bytes bytes;
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error_from_errno(errno, "cannot read " + path);
    }
    if (n == 0)
      break;
    if (bytes.size() + size_t(n) > kMaxFileSize)
      return errorf(EFBIG, "%s is larger than %llu bytes", path.c_str(),
                    static_cast<unsigned long long>(kMaxFileSize));
    bytes.insert(bytes.end(), buf, buf + n);
  }
  return parse(std::move(bytes), path);
}

Result<PerfDataReader> PerfDataReader::parse(Bytes bytes, std::string name) {
  PerfDataReader r;
  r.name_ = std::move(name);
  r.owned_ = std::move(bytes);
  r.bytes_ = r.owned_;
  PP_RETURN_IF_ERROR(r.parse_bytes());
  return r;
}

Status PerfDataReader::parse_bytes() {
  if (bytes_.size() < sizeof(PipeHeader))
    return malformed("%zu bytes is shorter than any perf.data header", bytes_.size());
  uint64_t magic = u64_at(bytes_, 0);
  if (std::memcmp(bytes_.data(), "PERFFILE", 8) == 0)
    return malformed("it is the legacy PERFFILE format, which this reader does not read");
  if (magic == kPerfMagicSwapped)
    return malformed("it was written on a host of the other byte order");
  if (magic != kPerfMagic)
    return malformed("it does not start with PERFILE2");
  uint64_t size = u64_at(bytes_, 8);
  if (size == sizeof(PipeHeader)) {
    pipe_ = true;
    PP_RETURN_IF_ERROR(parse_pipe());
  } else if (size == sizeof(FileHeader)) {
    PP_RETURN_IF_ERROR(parse_file());
  } else {
    return malformed("header size %llu is neither 104 (file) nor 16 (pipe)",
                     static_cast<unsigned long long>(size));
  }
  PP_RETURN_IF_ERROR(read_event_names());
  index_events();
  return ok_status();
}

void PerfDataReader::index_events() {
  layouts_.clear();
  event_of_id_.clear();
  for (size_t i = 0; i < events_.size(); i++) {
    layouts_.emplace_back(events_[i].attr.attr);
    for (uint64_t id : events_[i].ids)
      event_of_id_.emplace_back(id, uint32_t(i));
  }
  // The first event that lists an id is its event (event_for_id()'s order).
  std::stable_sort(event_of_id_.begin(), event_of_id_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

Status PerfDataReader::parse_file() {
  const uint64_t total = bytes_.size();
  if (total < sizeof(FileHeader))
    return malformed("%llu bytes is shorter than the 104-byte header",
                     static_cast<unsigned long long>(total));
  std::memcpy(&header_, bytes_.data(), sizeof(header_));
  const FileHeader& h = header_;

  if (h.attr_size < kAttrSizeVer0 + sizeof(FileSection) || h.attr_size > 4096)
    return malformed("attr size %llu is outside %zu..4096",
                     static_cast<unsigned long long>(h.attr_size),
                     kAttrSizeVer0 + sizeof(FileSection));
  attr_size_ = uint32_t(h.attr_size - sizeof(FileSection));
  if (!fits(h.attrs.offset, h.attrs.size, total))
    return malformed("the attrs section (%llu bytes at %llu) runs past the end (%llu bytes)",
                     static_cast<unsigned long long>(h.attrs.size),
                     static_cast<unsigned long long>(h.attrs.offset),
                     static_cast<unsigned long long>(total));
  if (h.attrs.size % h.attr_size != 0)
    return malformed("the attrs section's size %llu is not a multiple of the attr size %llu",
                     static_cast<unsigned long long>(h.attrs.size),
                     static_cast<unsigned long long>(h.attr_size));
  if (h.attrs.size == 0)
    return malformed("it has no events");
  for (uint64_t at = h.attrs.offset; at < h.attrs.offset + h.attrs.size; at += h.attr_size) {
    EventDesc event;
    std::memcpy(event.attr.words, bytes_.data() + at,
                std::min<size_t>(attr_size_, sizeof(event.attr)));
    uint32_t own_size = u32_at(bytes_, size_t(at + kAttrSizeOffset));
    if (own_size != 0 && own_size != attr_size_)
      return malformed("event %zu's attr.size is %u, but the header says %u", events_.size(),
                       own_size, attr_size_);
    FileSection ids;
    std::memcpy(&ids, bytes_.data() + at + attr_size_, sizeof(ids));
    if (!fits(ids.offset, ids.size, total) || ids.size % 8 != 0)
      return malformed("event %zu's ids (%llu bytes at %llu) are not whole u64s inside the file",
                       events_.size(), static_cast<unsigned long long>(ids.size),
                       static_cast<unsigned long long>(ids.offset));
    for (uint64_t i = 0; i < ids.size; i += 8)
      event.ids.push_back(u64_at(bytes_, size_t(ids.offset + i)));
    events_.push_back(std::move(event));
  }

  if (!fits(h.data.offset, h.data.size, total))
    return malformed("the data section (%llu bytes at %llu) runs past the end (%llu bytes)",
                     static_cast<unsigned long long>(h.data.size),
                     static_cast<unsigned long long>(h.data.offset),
                     static_cast<unsigned long long>(total));
  PP_RETURN_IF_ERROR(add_data_range(h.data.offset, h.data.offset + h.data.size));

  // The feature table follows the data: one section per bit, in bit order.
  uint64_t table = h.data.offset + h.data.size;
  size_t nr = 0;
  for (uint64_t word : h.features)
    nr += size_t(std::popcount(word));
  if (!fits(table, nr * sizeof(FileSection), total))
    return malformed("the table of %zu features at %llu runs past the end (%llu bytes)", nr,
                     static_cast<unsigned long long>(table),
                     static_cast<unsigned long long>(total));
  size_t index = 0;
  for (int bit = 0; bit < int(kFeatureBits); bit++) {
    if (!(h.features[bit / 64] & (1ULL << (bit % 64))))
      continue;
    FileSection section;
    std::memcpy(&section, bytes_.data() + table + index * sizeof(FileSection), sizeof(section));
    index++;
    if (!fits(section.offset, section.size, total))
      return malformed("feature %s (%d) has %llu bytes at %llu, past the end (%llu bytes)",
                       feature_name(bit), bit, static_cast<unsigned long long>(section.size),
                       static_cast<unsigned long long>(section.offset),
                       static_cast<unsigned long long>(total));
    features_[bit] = section;
  }
  return ok_status();
}

Status PerfDataReader::parse_pipe() {
  const uint64_t total = bytes_.size();
  uint64_t pos = sizeof(PipeHeader);
  uint64_t data_begin = pos;
  auto close_range = [&](uint64_t end) -> Status {
    if (end > data_begin)
      PP_RETURN_IF_ERROR(add_data_range(data_begin, end));
    return ok_status();
  };
  while (pos < total) {
    perf_event_header h;
    sys::RecordProblem problem = sys::check_record(span(pos, total - pos), h);
    if (problem == sys::RecordProblem::kCutOff)
      return malformed("a record at %llu is cut off after %llu bytes",
                       static_cast<unsigned long long>(pos),
                       static_cast<unsigned long long>(total - pos));
    if (problem != sys::RecordProblem::kNone)
      return malformed("the record at %llu (type %u) has size %u with %llu bytes left",
                       static_cast<unsigned long long>(pos), h.type, h.size,
                       static_cast<unsigned long long>(total - pos));
    uint64_t next = pos + h.size;
    if (h.type == kRecordHeaderAttr) {
      PP_RETURN_IF_ERROR(close_range(pos));
      uint64_t body = h.size - sizeof(perf_event_header);
      if (body < kAttrSizeVer0)
        return malformed("the ATTR record at %llu is too short for an attr",
                         static_cast<unsigned long long>(pos));
      uint32_t size = u32_at(bytes_, size_t(pos + 8 + kAttrSizeOffset));
      if (size == 0)
        size = kAttrSizeVer0;
      if (size < kAttrSizeVer0 || size > body || (body - size) % 8 != 0)
        return malformed("the ATTR record at %llu has attr.size %u in a %llu-byte body",
                         static_cast<unsigned long long>(pos), size,
                         static_cast<unsigned long long>(body));
      if (attr_size_ && size != attr_size_)
        return malformed("events have attrs of %u and %u bytes", attr_size_, size);
      attr_size_ = size;
      EventDesc event;
      std::memcpy(event.attr.words, bytes_.data() + pos + 8,
                  std::min<size_t>(size, sizeof(event.attr)));
      for (uint64_t at = pos + 8 + size; at < next; at += 8)
        event.ids.push_back(u64_at(bytes_, size_t(at)));
      events_.push_back(std::move(event));
      data_begin = next;
    } else if (h.type == kRecordHeaderFeature) {
      PP_RETURN_IF_ERROR(close_range(pos));
      if (h.size < sizeof(perf_event_header) + 8)
        return malformed("the FEATURE record at %llu has no feature id",
                         static_cast<unsigned long long>(pos));
      uint64_t id = u64_at(bytes_, size_t(pos + 8));
      if (id == kFeatureReserved || id >= kFeatureBits)
        return malformed("the FEATURE record at %llu has feature id %llu",
                         static_cast<unsigned long long>(pos), static_cast<unsigned long long>(id));
      if (id != kFeatureLast)  // perf's end-of-features marker
        features_[int(id)] = {pos + 16, h.size - 16u};
      data_begin = next;
    } else if (h.type == kRecordHeaderTracingData) {
      PP_RETURN_IF_ERROR(close_range(pos));
      if (h.size < 12)
        return malformed("the TRACING_DATA record at %llu has no size",
                         static_cast<unsigned long long>(pos));
      uint32_t size = u32_at(bytes_, size_t(pos + 8));
      if (!fits(next, size, total))
        return malformed("the tracing data at %llu (%u bytes) runs past the end",
                         static_cast<unsigned long long>(next), size);
      features_[kFeatureTracingData] = {next, size};
      next += size;
      data_begin = next;
    }
    pos = next;
  }
  PP_RETURN_IF_ERROR(close_range(total));
  if (events_.empty())
    return malformed("the pipe stream has no ATTR record");
  return ok_status();
}

Status PerfDataReader::add_data_range(uint64_t begin, uint64_t end) {
  sys::RecordWalk walk = sys::walk_records(span(begin, end - begin),
                                           [](const perf_event_header&, size_t) { return true; });
  uint64_t pos = begin + walk.offset;
  if (walk.problem == sys::RecordProblem::kCutOff)
    return malformed("the record at %llu is cut off after %llu bytes",
                     static_cast<unsigned long long>(pos),
                     static_cast<unsigned long long>(end - pos));
  if (walk.problem != sys::RecordProblem::kNone)
    return malformed("the record at %llu (type %u) has size %u with %llu bytes of data left",
                     static_cast<unsigned long long>(pos), walk.header.type, walk.header.size,
                     static_cast<unsigned long long>(end - pos));
  record_count_ += walk.records;
  if (end > begin)
    data_ranges_.push_back({begin, end - begin});
  return ok_status();
}

Status PerfDataReader::read_event_names() {
  auto desc = feature(kFeatureEventDesc);
  if (!desc)
    return ok_status();
  auto decoded = decode_event_desc(*desc);
  if (!decoded.ok())
    return malformed("%s", decoded.error().message().c_str());
  for (size_t i = 0; i < decoded->size() && i < events_.size(); i++)
    events_[i].name = (*decoded)[i].name;
  return ok_status();
}

std::vector<int> PerfDataReader::features() const {
  std::vector<int> out;
  for (const auto& [feature, section] : features_)
    out.push_back(feature);
  return out;
}

std::optional<std::span<const uint8_t>> PerfDataReader::feature(int feature) const {
  auto it = features_.find(feature);
  if (it == features_.end())
    return std::nullopt;
  return span(it->second.offset, it->second.size);
}

Result<TracingData> PerfDataReader::tracing_data() const {
  auto section = feature(kFeatureTracingData);
  if (!section)
    return errorf(ENOENT, "%s has no tracing data (HEADER_TRACING_DATA)", name_.c_str());
  return parse_tracing_data(*section);
}

Result<std::string> PerfDataReader::string_feature(int feature) const {
  auto section = this->feature(feature);
  if (!section)
    return errorf(ENOENT, "%s has no %s feature", name_.c_str(), feature_name(feature));
  return decode_string_feature(*section);
}

Status PerfDataReader::for_each_record(
    const std::function<Status(const PerfDataRecord&)>& fn) const {
  Status status = ok_status();
  for (const FileSection& range : data_ranges_) {
    // Every record in a range was checked whole when it was added.
    sys::walk_records(span(range.offset, range.size),
                      [&](const perf_event_header& h, size_t offset) {
                        uint64_t pos = range.offset + offset;
                        status = fn(PerfDataRecord{h.type, h.misc, pos, span(pos, h.size)});
                        return status.ok();
                      });
    PP_RETURN_IF_ERROR(status);
  }
  return ok_status();
}

const EventDesc* PerfDataReader::event_for_id(uint64_t id) const {
  if (events_.size() == 1)
    return &events_.front();
  for (const EventDesc& e : events_)
    for (uint64_t own : e.ids)
      if (own == id)
        return &e;
  return nullptr;
}

Result<Sample> PerfDataReader::sample(const PerfDataRecord& record) const {
  Sample s;
  PP_RETURN_IF_ERROR(decode_sample(record, s));
  return s;
}

Status PerfDataReader::decode_sample(const PerfDataRecord& record, Sample& out) const {
  if (record.type != PERF_RECORD_SAMPLE)
    return errorf(EINVAL, "record at %llu is not a sample (type %u)",
                  static_cast<unsigned long long>(record.offset), record.type);
  size_t event = 0;
  if (events_.size() > 1 && (events_.front().attr.attr.sample_type & PERF_SAMPLE_IDENTIFIER)) {
    if (record.bytes.size() < 16)
      return malformed("the sample at %llu has no IDENTIFIER",
                       static_cast<unsigned long long>(record.offset));
    uint64_t id = u64_at(record.bytes, 8);
    auto at = std::lower_bound(event_of_id_.begin(), event_of_id_.end(), id,
                               [](const auto& entry, uint64_t v) { return entry.first < v; });
    if (at == event_of_id_.end() || at->first != id)
      return malformed("the sample at %llu has id %llu, which no event has",
                       static_cast<unsigned long long>(record.offset),
                       static_cast<unsigned long long>(id));
    event = at->second;
  }
  Status decoded = layouts_[event].decode(record.bytes, out);
  if (!decoded.ok())
    return std::move(decoded).error().with_context(name_ + ": sample at " +
                                                   std::to_string(record.offset));
  return ok_status();
}

}  // namespace pp::report

#include "report/perf_data_writer.h"

#include <algorithm>

#include "report/synthesize.h"
#include "report/tracing_data.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/perf_abi_records.h"
#include "sys/perf_abi_sample.h"

namespace pp::report {
namespace {

constexpr size_t kMinBufferSize = 64 << 10;

// Offsets of the record boundaries in `records` (whole, already validated):
// 0, the end of the first record, ..., records.size().
std::vector<size_t> record_boundaries(std::span<const uint8_t> records) {
  std::vector<size_t> out{0};
  sys::walk_records(records, [&](const perf_event_header& h, size_t offset) {
    out.push_back(offset + h.size);
    return true;
  });
  return out;
}

bool samples_ips_outside_tracepoints(const std::vector<EventDesc>& events) {
  for (const EventDesc& e : events)
    if (e.attr.attr.type != PERF_TYPE_TRACEPOINT && (e.attr.attr.sample_type & PERF_SAMPLE_IP))
      return true;
  return false;
}

unsigned long long ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

}  // namespace

void PerfDataWriter::Counts::add(const Counts& other) {
  records += other.records;
  samples += other.samples;
  lost_records += other.lost_records;
  lost += other.lost;
  if (other.first_time && (!first_time || other.first_time < first_time))
    first_time = other.first_time;
  if (other.last_time > last_time)
    last_time = other.last_time;
}

PerfDataWriter::PerfDataWriter(std::unique_ptr<Output> output, WriterConfig config, bool pipe)
    : output_(std::move(output)), config_(std::move(config)), pipe_(pipe) {}

PerfDataWriter::~PerfDataWriter() {
  if (!finished_)
    (void)finish();
}

Result<std::unique_ptr<PerfDataWriter>> PerfDataWriter::create_file(const std::string& path,
                                                                    WriterConfig config) {
  PP_ASSIGN_OR_RETURN(auto output, create_file_output(path));
  return create(std::move(output), std::move(config), false);
}

Result<std::unique_ptr<PerfDataWriter>> PerfDataWriter::create_pipe(int fd, WriterConfig config,
                                                                    std::string name) {
  return create(stream_output(fd, std::move(name)), std::move(config), true);
}

Result<std::unique_ptr<PerfDataWriter>> PerfDataWriter::create(std::unique_ptr<Output> output,
                                                               WriterConfig config, bool pipe) {
  bool pipe_mode = pipe || !output->seekable();
  std::unique_ptr<PerfDataWriter> writer(
      new PerfDataWriter(std::move(output), std::move(config), pipe_mode));
  Status prepared = writer->prepare();
  if (!prepared.ok()) {
    writer->finished_ = true;  // nothing written, nothing to finish
    return std::move(prepared).error();
  }
  Status started = writer->pipe_ ? writer->start_pipe() : writer->start_file();
  if (!started.ok()) {
    writer->finished_ = true;  // nothing valid to finish
    return std::move(started).error();
  }
  Status side_band = writer->synthesize_side_band();
  if (!side_band.ok()) {
    writer->finished_ = true;
    return std::move(side_band).error();
  }
  return writer;
}

// Checks the events against what perf can read and precomputes the layout.
Status PerfDataWriter::prepare() {
  std::vector<EventDesc>& events = config_.events;
  if (events.empty())
    return errorf(EINVAL, "a perf.data file needs at least one event");
  if (config_.buffer_size < kMinBufferSize)
    config_.buffer_size = kMinBufferSize;

  for (EventDesc& e : events) {
    uint32_t size = e.attr.attr.size ? e.attr.attr.size : sys::kAttrSizeVer7;
    if (size < kAttrSizeVer0 || size > sizeof(sys::EventAttr))
      return errorf(EINVAL, "event '%s': attr size %u is outside %u..%zu", e.name.c_str(), size,
                    kAttrSizeVer0, sizeof(sys::EventAttr));
    attr_size_ = std::max(attr_size_, size);
  }
  const perf_event_attr& first = events.front().attr.attr;
  for (EventDesc& e : events) {
    e.attr.attr.size = attr_size_;
    const perf_event_attr& a = e.attr.attr;
    if (a.sample_id_all != first.sample_id_all)
      return errorf(EINVAL,
                    "events '%s' and '%s' differ in sample_id_all; perf reads a file only when "
                    "all its events agree",
                    events.front().name.c_str(), e.name.c_str());
    if (a.sample_id_all &&
        sys::sample_id_bits(a.sample_type) != sys::sample_id_bits(first.sample_type))
      return errorf(EINVAL,
                    "events '%s' and '%s' have different sample_id trailers (sample_type %#llx "
                    "and %#llx); perf needs the same TID, TIME, ID, STREAM_ID, CPU and "
                    "IDENTIFIER bits in every event",
                    events.front().name.c_str(), e.name.c_str(), ull(first.sample_type),
                    ull(a.sample_type));
    if (events.size() > 1 && !(a.sample_type & PERF_SAMPLE_IDENTIFIER) &&
        !((a.sample_type & PERF_SAMPLE_ID) && a.sample_type == first.sample_type))
      return errorf(EINVAL,
                    "event '%s': with %zu events perf tells samples apart by their id; sample "
                    "PERF_SAMPLE_IDENTIFIER (or the same sample_type with PERF_SAMPLE_ID)",
                    e.name.c_str(), events.size());
    size_t attr_record = sizeof(perf_event_header) + attr_size_ + 8 * e.ids.size();
    if (attr_record > kMaxRecordSize)
      return errorf(EINVAL, "event '%s' has %zu ids, more than a perf header record can hold",
                    e.name.c_str(), e.ids.size());
  }
  trailer_type_ = first.sample_id_all ? first.sample_type : 0;

  // Where TIME sits in a sample, when every event puts it in the same place.
  time_offset_ = sys::sample_time_offset(first.sample_type);
  for (const EventDesc& e : events)
    if (sys::sample_time_offset(e.attr.attr.sample_type) != time_offset_)
      time_offset_.reset();

  // Host features.
  HostInfo host;
  if (config_.host) {
    host = *config_.host;
  } else {
    auto collected = collect_host_info(sys::Tree(config_.proc_root), sys::Tree(config_.sysfs_root));
    if (!collected.ok())
      return std::move(collected).error().with_context("collecting the host features");
    host = std::move(*collected);
  }
  if (!config_.cmdline.empty())
    host.cmdline = config_.cmdline;

  // Tracing data for the tracepoints.
  std::vector<Tracepoint> tracepoints;
  std::string tracefs_root =
      config_.tracefs_root.empty() ? sys::default_tracefs_root() : config_.tracefs_root;
  sys::Tree tracefs(tracefs_root);
  for (EventDesc& e : events) {
    if (e.attr.attr.type != PERF_TYPE_TRACEPOINT)
      continue;
    auto tp = find_tracepoint(tracefs, e.attr.attr.config, e.name);
    if (!tp.ok())
      return std::move(tp).error().with_context("event '" + e.name + "'");
    if (e.name.empty())
      e.name = tp->system + ":" + tp->name;
    tracepoints.push_back(std::move(*tp));
  }
  features_ = host_features(host, events, attr_size_);
  if (!tracepoints.empty()) {
    uint32_t page = config_.page_size ? config_.page_size : uint32_t(sys::page_size());
    auto tracing = build_tracing_data(tracefs, tracepoints, page);
    if (!tracing.ok())
      return std::move(tracing).error();
    features_[kFeatureTracingData] = std::move(*tracing);
  }
  // The running kernel's build-id beside the kernel map, as perf record
  // writes it: perf report then uses /proc/kallsyms only on that kernel.
  if (config_.side_band != SideBand::kNever) {
    auto id = kernel_build_id(sys::Tree(config_.sysfs_root));
    if (id.ok() && !id->empty()) {
      Bytes entry;
      build_id_entry(0, PERF_RECORD_MISC_KERNEL, kHostKernelPid, *id, "[kernel.kallsyms]", &entry);
      features_[kFeatureBuildId] = std::move(entry);
    }
  }
  auto clock_of = [](const perf_event_attr& a) {
    return a.use_clockid ? sys::clock_name(a.clockid) : std::string("perf's default clock");
  };
  for (const EventDesc& e : events)
    if (e.attr.attr.use_clockid != first.use_clockid ||
        (first.use_clockid && e.attr.attr.clockid != first.clockid))
      return errorf(EINVAL,
                    "events '%s' and '%s' stamp their records with different clocks (%s and "
                    "%s); perf orders and converts the times of a file by one clock",
                    events.front().name.c_str(), e.name.c_str(), clock_of(first).c_str(),
                    clock_of(e.attr.attr).c_str());
  if (first.use_clockid) {
    // HEADER_CLOCKID and HEADER_CLOCK_DATA: what `perf script -F tod` needs.
    ClockData clock;
    if (config_.clock) {
      clock = *config_.clock;
    } else {
      PP_ASSIGN_OR_RETURN(clock.resolution_ns, sys::clock_resolution_ns(first.clockid));
      PP_ASSIGN_OR_RETURN(clock.pair, sys::read_clock_pair(first.clockid));
    }
    if (clock.pair.clockid != int(first.clockid))
      return internal_error("the clock data given is of clock " +
                            sys::clock_name(clock.pair.clockid) + ", the events use " +
                            sys::clock_name(int(first.clockid)));
    features_[kFeatureClockId] = encode_clockid(clock.resolution_ns);
    features_[kFeatureClockData] = encode_clock_data(clock.pair);
  }
  buffer_.reserve(config_.buffer_size);
  return ok_status();
}

// The feature table and sections, laid out to start at file offset `at`.
Bytes PerfDataWriter::feature_block(uint64_t at, const Counts& pending) const {
  FeatureMap all = features_;
  if (time_offset_) {
    Counts times;
    times.first_time = stats_.first_sample_time;
    times.last_time = stats_.last_sample_time;
    times.add(pending);
    all[kFeatureSampleTime] = encode_sample_time(times.first_time, times.last_time);
  }
  Bytes out;
  ByteWriter w(&out);
  uint64_t offset = at + all.size() * sizeof(FileSection);
  for (const auto& [feature, bytes] : all) {
    w.u64(offset);
    w.u64(bytes.size());
    offset += bytes.size();
  }
  for (const auto& [feature, bytes] : all)
    w.bytes(bytes);
  return out;
}

Status PerfDataWriter::write_header() {
  header_.data.size = stats_.data_bytes;
  iovec part = {&header_, sizeof(header_)};
  return output_->write_at(0, {&part, 1}, nullptr);
}

Status PerfDataWriter::start_file() {
  const std::vector<EventDesc>& events = config_.events;
  Bytes head;
  ByteWriter w(&head);
  w.zeros(sizeof(FileHeader));
  std::vector<FileSection> id_sections;
  for (const EventDesc& e : events) {
    id_sections.push_back({head.size(), e.ids.size() * 8});
    for (uint64_t id : e.ids)
      w.u64(id);
  }
  uint64_t attrs_offset = head.size();
  for (size_t i = 0; i < events.size(); i++) {
    w.bytes({reinterpret_cast<const uint8_t*>(events[i].attr.words), attr_size_});
    w.u64(id_sections[i].offset);
    w.u64(id_sections[i].size);
  }
  data_offset_ = head.size();

  header_.size = sizeof(FileHeader);
  header_.attr_size = attr_size_ + sizeof(FileSection);
  header_.attrs = {attrs_offset, events.size() * header_.attr_size};
  header_.data = {data_offset_, 0};
  FeatureMap all = features_;
  if (time_offset_)
    all[kFeatureSampleTime] = {};
  for (const auto& [feature, bytes] : all)
    header_.features[feature / 64] |= 1ULL << (feature % 64);
  std::memcpy(head.data(), &header_, sizeof(header_));

  last_block_ = feature_block(data_offset_, {});
  iovec parts[] = {{head.data(), head.size()}, {last_block_.data(), last_block_.size()}};
  PP_RETURN_IF_ERROR(output_->write_at(0, parts, nullptr));
  stats_.file_bytes = head.size() + last_block_.size();
  stats_.write_calls = output_->write_calls();
  return ok_status();
}

Status PerfDataWriter::start_pipe() {
  Bytes head = encode_pipe_header(config_.events, attr_size_, features_);
  iovec part = {head.data(), head.size()};
  PP_RETURN_IF_ERROR(output_->append({&part, 1}));
  stats_.file_bytes = head.size();
  stats_.write_calls = output_->write_calls();
  return ok_status();
}

Status PerfDataWriter::synthesize_side_band() {
  if (config_.side_band == SideBand::kNever)
    return ok_status();
  // The kernel map and the threads' names always (cheap, and perf names
  // tasks and kernel addresses with them); the processes' mappings when
  // user-space instruction pointers are sampled.
  MapsMode maps =
      config_.side_band == SideBand::kAlways || samples_ips_outside_tracepoints(config_.events)
          ? MapsMode::kExecutable
          : MapsMode::kNone;
  TrailerLayout trailer{trailer_type_, trailer_type_ != 0};
  sys::Tree proc(config_.proc_root);
  Bytes records;
  auto kernel = synthesize_kernel_mmap(proc, trailer, &records);
  if (!kernel.ok())
    return std::move(kernel).error().with_context("synthesising the kernel map");
  auto processes = synthesize_processes(proc, trailer, maps, &records);
  if (!processes.ok())
    return std::move(processes).error().with_context("synthesising COMM and MMAP2 records");
  return append(records);
}

Result<PerfDataWriter::Counts> PerfDataWriter::scan(std::span<const uint8_t> records) const {
  Counts counts;
  sys::RecordWalk walk = sys::walk_records(records, [&](const perf_event_header& h, size_t pos) {
    const uint8_t* record = records.data() + pos;
    if (h.type == PERF_RECORD_SAMPLE) {
      counts.samples++;
      if (time_offset_ && *time_offset_ + 8 <= h.size) {
        uint64_t t = sys::u64_at(record + *time_offset_);
        if (t && (!counts.first_time || t < counts.first_time))
          counts.first_time = t;
        counts.last_time = std::max(counts.last_time, t);
      }
    } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
      counts.lost_records++;
      counts.lost += sys::u64_at(record + 16);
    } else if (h.type == PERF_RECORD_LOST_SAMPLES && h.size >= 16) {
      counts.lost_records++;
      counts.lost += sys::u64_at(record + 8);
    }
    return true;
  });
  counts.records = walk.records;
  if (walk.problem == sys::RecordProblem::kCutOff)
    return errorf(EINVAL, "record at byte %zu of the batch is cut off after %zu bytes", walk.offset,
                  records.size() - walk.offset);
  if (walk.problem != sys::RecordProblem::kNone)
    return errorf(EINVAL,
                  "record at byte %zu of the batch (type %u) has size %u, but %zu bytes are "
                  "left; records must be whole",
                  walk.offset, walk.header.type, walk.header.size, records.size() - walk.offset);
  return counts;
}

void PerfDataWriter::drop(const Counts& counts) {
  stats_.dropped_records += counts.records;
  stats_.dropped_samples += counts.samples;
}

Error PerfDataWriter::fail(Error error) {
  if (!failed_)
    failed_ = error;
  return error;
}

// The error every call returns once a write failed, with what happened since.
Error PerfDataWriter::dropped_error() const {
  std::string message = failed_->message();
  message += "; " + output_->name() + " holds " + std::to_string(stats_.records) + " records (" +
             std::to_string(stats_.samples) + " samples) and stays readable; " +
             std::to_string(stats_.dropped_records) + " records (" +
             std::to_string(stats_.dropped_samples) + " samples) were not written";
  return Error(failed_->kind(), failed_->code(), std::move(message));
}

Status PerfDataWriter::append(std::span<const uint8_t> records) {
  if (finished_)
    return errorf(EINVAL, "%s is already finished", output_->name().c_str());
  PP_ASSIGN_OR_RETURN(Counts counts, scan(records));
  return append_scanned(records, counts);
}

Status PerfDataWriter::append_scanned(std::span<const uint8_t> records, const Counts& counts) {
  if (failed_) {
    drop(counts);
    return dropped_error();
  }
  if (records.empty())
    return ok_status();
  round_pending_ = true;
  if (buffer_.size() + records.size() <= config_.buffer_size) {
    buffer_.insert(buffer_.end(), records.begin(), records.end());
    pending_.add(counts);
    return ok_status();
  }
  // More than the room left: take as many whole records as fit, flush, go on.
  size_t pos = 0;
  while (pos < records.size()) {
    size_t room = config_.buffer_size - buffer_.size();
    size_t end = pos + sys::walk_records(records.subspan(pos), [&](const perf_event_header& h,
                                                                   size_t offset) {
                         return offset + h.size <= room;
                       }).offset;
    if (end == pos) {
      // Not one more record fits; an empty buffer holds any record.
      Status flushed = flush_buffer();
      if (!flushed.ok()) {
        PP_ASSIGN_OR_RETURN(Counts rest, scan(records.subspan(pos)));
        drop(rest);
        return dropped_error();
      }
      continue;
    }
    auto chunk = records.subspan(pos, end - pos);
    PP_ASSIGN_OR_RETURN(Counts chunk_counts, scan(chunk));
    buffer_.insert(buffer_.end(), chunk.begin(), chunk.end());
    pending_.add(chunk_counts);
    pos = end;
  }
  return ok_status();
}

Status PerfDataWriter::append_lost(const LostReport& lost) {
  Bytes record;
  ByteWriter w(&record);
  size_t size = sizeof(perf_event_header) + 16 + sys::sample_id_size(trailer_type_);
  w.u32(PERF_RECORD_LOST);
  w.u16(0);
  w.u16(uint16_t(size));
  w.u64(lost.id);
  w.u64(lost.lost);
  if (trailer_type_) {
    sys::SampleId sid;
    sid.pid = lost.pid;
    sid.tid = lost.tid;
    sid.time = lost.time;
    sid.id = lost.id;
    sid.cpu = lost.cpu;
    sys::encode_sample_id(trailer_type_, sid, record);
  }
  return append(record);
}

Status PerfDataWriter::finished_round() {
  Bytes record;
  ByteWriter w(&record);
  w.u32(kRecordFinishedRound);
  w.u16(0);
  w.u16(sizeof(perf_event_header));
  PP_RETURN_IF_ERROR(append(record));
  round_pending_ = false;
  return ok_status();
}

Status PerfDataWriter::flush() {
  if (finished_)
    return finish_error_ ? Status(*finish_error_) : ok_status();
  if (failed_)
    return dropped_error();
  return flush_buffer();
}

Status PerfDataWriter::flush_buffer() {
  Status s = pipe_ ? flush_pipe() : flush_file();
  stats_.write_calls = output_->write_calls();
  return s;
}

Status PerfDataWriter::flush_pipe() {
  if (buffer_.empty())
    return ok_status();
  iovec part = {buffer_.data(), buffer_.size()};
  Status written = output_->append({&part, 1});
  if (!written.ok()) {
    drop(pending_);
    buffer_.clear();
    pending_ = {};
    return fail(std::move(written).error());
  }
  stats_.data_bytes += buffer_.size();
  stats_.file_bytes += buffer_.size();
  stats_.records += pending_.records;
  stats_.samples += pending_.samples;
  stats_.lost_records += pending_.lost_records;
  stats_.lost += pending_.lost;
  buffer_.clear();
  pending_ = {};
  return ok_status();
}

Status PerfDataWriter::flush_file() {
  if (buffer_.empty())
    return ok_status();  // the file on disk is already complete
  const uint64_t data_end = data_offset_ + stats_.data_bytes;
  size_t keep = buffer_.size();
  Counts kept = pending_;
  Bytes block = feature_block(data_end + keep, kept);
  std::optional<Error> no_space;

  if (can_reserve_) {
    Status reserved = output_->reserve(data_end, keep + block.size());
    if (!reserved.ok()) {
      int code = reserved.error().code();
      if (code == EOPNOTSUPP) {
        can_reserve_ = false;
      } else if (code == ENOSPC || code == EDQUOT) {
        // Keep the longest run of whole records that fits with the features.
        std::vector<size_t> bounds = record_boundaries(buffer_);
        size_t lo = 0, hi = bounds.size() - 1;  // bounds[lo] fits, bounds[hi+1..] do not
        while (lo < hi) {
          size_t mid = (lo + hi + 1) / 2;
          if (output_->reserve(data_end, bounds[mid] + block.size()).ok())
            lo = mid;
          else
            hi = mid - 1;
        }
        keep = bounds[lo];
        PP_ASSIGN_OR_RETURN(kept, scan({buffer_.data(), keep}));
        block = feature_block(data_end + keep, kept);
        if (!output_->reserve(data_end, keep + block.size()).ok() && keep > 0) {
          keep = 0;
          kept = {};
          block = feature_block(data_end, kept);
        }
        no_space = errorf(ErrorKind::kOutput, code,
                          "no space left on the device of %s; free some space or write "
                          "elsewhere with -o",
                          output_->name().c_str());
      } else {
        return fail(std::move(reserved).error());
      }
    }
  }

  iovec parts[] = {{buffer_.data(), keep}, {block.data(), block.size()}};
  Status written = output_->write_at(data_end, parts, nullptr);
  if (!written.ok()) {
    // Put back the features the header points at: the file stays as it was
    // after the last complete flush.
    iovec restore = {last_block_.data(), last_block_.size()};
    Status restored = output_->write_at(data_end, {&restore, 1}, nullptr);
    if (restored.ok())
      (void)output_->truncate(data_end + last_block_.size());
    drop(pending_);
    buffer_.clear();
    pending_ = {};
    if (!restored.ok())
      return fail(std::move(written).error().with_context(
          "and the features could not be restored, so the file is damaged"));
    return fail(std::move(written).error());
  }

  stats_.data_bytes += keep;
  stats_.records += kept.records;
  stats_.samples += kept.samples;
  stats_.lost_records += kept.lost_records;
  stats_.lost += kept.lost;
  if (kept.first_time && (!stats_.first_sample_time || kept.first_time < stats_.first_sample_time))
    stats_.first_sample_time = kept.first_time;
  stats_.last_sample_time = std::max(stats_.last_sample_time, kept.last_time);
  stats_.file_bytes = data_offset_ + stats_.data_bytes + block.size();
  last_block_ = std::move(block);
  if (keep < buffer_.size()) {
    Counts rest = pending_;
    rest.records -= kept.records;
    rest.samples -= kept.samples;
    drop(rest);
  }
  buffer_.clear();
  pending_ = {};
  Status header = write_header();
  if (!header.ok())
    return fail(std::move(header).error());
  if (no_space)
    return fail(std::move(*no_space));
  return ok_status();
}

Status PerfDataWriter::finish() {
  if (finished_)
    return finish_error_ ? Status(*finish_error_) : ok_status();
  if (!failed_ && round_pending_)
    (void)finished_round();
  if (!failed_)
    (void)flush_buffer();
  finished_ = true;
  if (!pipe_ && failed_)
    (void)output_->truncate(data_offset_ + stats_.data_bytes + last_block_.size());
  stats_.write_calls = output_->write_calls();
  if (failed_)
    finish_error_ = dropped_error();
  return finish_error_ ? Status(*finish_error_) : ok_status();
}

}  // namespace pp::report

// Reads perf.data, file mode or pipe mode (the format is told by the
// magic's size field: 104 for a file header, 16 for a pipe header), as
// written by perf record or by PerfDataWriter; see report/perf_data_format.h
// for the layout.
//
//   PP_ASSIGN_OR_RETURN(auto data, PerfDataReader::read_file("perf.data"));
//   for (const EventDesc& e : data.events()) ...            // attrs, ids, names
//   if (data.has_feature(kFeatureTracingData)) ...
//   PP_RETURN_IF_ERROR(data.for_each_record([&](const PerfDataRecord& r) -> Status {
//     if (r.type == PERF_RECORD_SAMPLE) { PP_ASSIGN_OR_RETURN(Sample s, data.sample(r)); ... }
//     return ok_status();
//   }));
//
// Everything is checked when the file is parsed: every section lies inside
// the file, every record's size is at least its header and fits in its
// section, ids and attrs are whole. A malformed file is an EINVAL that says
// what is wrong and where; the reader never reads outside its input.
// A regular file is mapped (sys/file_map.h: it must not shrink while it is
// read); a pipe or a FIFO is read into memory whole.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/bytes.h"
#include "report/features.h"
#include "report/perf_data_format.h"
#include "report/tracing_data.h"
#include "sys/file_map.h"
#include "sys/perf_abi_sample.h"

namespace pp::report {

// A decoded PERF_RECORD_SAMPLE (sys/perf_abi_sample.h lays it out).
using Sample = sys::Sample;

struct PerfDataRecord {
  uint32_t type = 0;
  uint16_t misc = 0;
  uint64_t offset = 0;             // in the file
  std::span<const uint8_t> bytes;  // the whole record, header included
};

class PerfDataReader {
 public:
  // Parses `bytes` (the whole file or pipe stream). `name` is used in messages.
  static Result<PerfDataReader> parse(Bytes bytes, std::string name = "perf.data");
  // Reads and parses a file (or anything readable: a FIFO, /dev/stdin).
  static Result<PerfDataReader> read_file(const std::string& path);

  PerfDataReader(PerfDataReader&&) = default;
  PerfDataReader& operator=(PerfDataReader&&) = default;

  bool pipe_mode() const { return pipe_; }
  // Bytes of each perf_event_attr in the file.
  uint32_t attr_size() const { return attr_size_; }
  // The events in file order: attr, ids, and the name from EVENT_DESC ("" when absent).
  const std::vector<EventDesc>& events() const { return events_; }
  // File mode only: the header as read.
  const FileHeader& file_header() const { return header_; }

  bool has_feature(int feature) const { return features_.count(feature) > 0; }
  // The feature bits present, ascending.
  std::vector<int> features() const;
  // A feature's section (file mode) or HEADER_FEATURE payload (pipe mode);
  // the tracing data in pipe mode is what follows HEADER_TRACING_DATA.
  std::optional<std::span<const uint8_t>> feature(int feature) const;

  // Decoded features; ENOENT when the file does not have the feature.
  Result<TracingData> tracing_data() const;
  Result<std::string> string_feature(int feature) const;

  // Number of data records (file: the data section; pipe: all but the
  // ATTR, FEATURE and TRACING_DATA header records).
  size_t record_count() const { return record_count_; }
  // Calls `fn` for each data record in order; stops at its first error.
  Status for_each_record(const std::function<Status(const PerfDataRecord&)>& fn) const;

  // The event a sample id belongs to; with one event, that event for any id.
  const EventDesc* event_for_id(uint64_t id) const;
  // Decodes a PERF_RECORD_SAMPLE with its event's attr (found by the
  // sample's IDENTIFIER when the events have one, else the first event's).
  Result<Sample> sample(const PerfDataRecord& record) const;
  // The same into `out`, for readers of every sample of a file: each
  // event's layout is worked out once (sys::SampleLayout), ids are found in
  // a sorted table.
  Status decode_sample(const PerfDataRecord& record, Sample& out) const;

 private:
  PerfDataReader() = default;

  Status parse_bytes();
  Status parse_file();
  Status parse_pipe();
  Status read_event_names();
  // The layouts and the id table, once the events are known.
  void index_events();
  // Validates the records in [begin, end) and adds them as one data range.
  Status add_data_range(uint64_t begin, uint64_t end);
  std::span<const uint8_t> span(uint64_t offset, uint64_t size) const {
    return std::span<const uint8_t>(bytes_).subspan(size_t(offset), size_t(size));
  }
  Error malformed(const char* format, ...) const __attribute__((format(printf, 2, 3)));

  std::string name_;
  Bytes owned_;                     // parse()'s bytes, or a pipe's
  sys::FileMap mapped_;             // read_file()'s regular file
  std::span<const uint8_t> bytes_;  // the input: owned_'s or mapped_'s
  bool pipe_ = false;
  FileHeader header_;
  uint32_t attr_size_ = 0;
  std::vector<EventDesc> events_;
  std::map<int, FileSection> features_;  // offsets into bytes_
  std::vector<FileSection> data_ranges_;
  size_t record_count_ = 0;
  std::vector<sys::SampleLayout> layouts_;                  // by event
  std::vector<std::pair<uint64_t, uint32_t>> event_of_id_;  // sorted: id, event index
};

}  // namespace pp::report

// Writes perf.data that the real perf (6.1 and later) reads: file mode
// ("PERFILE2", perf record -o FILE) or pipe mode (perf record -o -).
//
// The caller hands over complete records exactly as the kernel wrote them
// into a ring buffer (a perf_event_header and its payload, back to back),
// reports losses, and finishes:
//
//   WriterConfig config;
//   config.events.push_back({attr, "syscalls:sys_enter_getppid", {id_cpu0, id_cpu1}});
//   config.cmdline = {"perf-persistent", "record", "-e", "persistent/getppid/"};
//   PP_ASSIGN_OR_RETURN(auto writer, PerfDataWriter::create_file("perf.data", config));
//   PP_RETURN_IF_ERROR(writer->append(records));           // any number of times
//   PP_RETURN_IF_ERROR(writer->append_lost({.id = id_cpu1, .lost = 12, .cpu = 1}));
//   PP_RETURN_IF_ERROR(writer->finished_round());           // after each pass over the rings
//   PP_RETURN_IF_ERROR(writer->finish());
//
// What it writes:
// - the attrs with their sample ids; HEADER_TRACING_DATA with the tracefs
//   formats of the recorded tracepoints; HOSTNAME, OSRELEASE, VERSION,
//   ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE, EVENT_DESC,
//   PMU_MAPPINGS, SAMPLE_TIME (when the events sample TIME), CLOCKID and
//   CLOCK_DATA (when they use_clockid);
// - first in the data, records synthesised from /proc as perf record does:
//   the kernel's MMAP and a COMM per thread (so perf names tasks and kernel
//   addresses), and for events that sample instruction pointers outside
//   tracepoints (cpu-clock, hardware events) an MMAP2 per executable
//   mapping, so `perf report` names the functions (WriterConfig::side_band).
//
// Buffered: records collect in one buffer (WriterConfig::buffer_size) that
// goes out in a single pwritev/writev when full, at flush() and at finish().
//
// Always readable (file mode): at every flush the data is followed by the
// feature sections and the header's data size is updated, so a file cut
// off at any moment between flushes (SIGKILL, a crash) is a complete
// perf.data holding everything flushed so far. finish() (also run by the
// destructor) writes the last records, the final features and header.
//
// A full disk: before each flush the writer reserves the space the data
// and the features need (fallocate KEEP_SIZE). When the space is not there
// it writes the largest run of whole records that fits with the features,
// and fails with ENOSPC; later appends fail the same way and count what
// they drop. Where a file system cannot reserve, a write that fails half
// way is undone: the features are put back after the last complete flush.
// Either way the file stays valid up to its last complete record.
//
// Pipe mode is read by `perf script -i -` and `perf report -D -i -`; perf
// 6.1's `report --stats -i -` and `inject` stop at the tracing data of any
// pipe, perf record's own included ("unexpected end of event stream").
//
// One thread at a time: the caller serialises calls.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/features.h"
#include "report/host_info.h"
#include "report/output.h"
#include "report/perf_data_format.h"
#include "sys/clock.h"
#include "sys/tree.h"

namespace pp::report {

// Which records to synthesise from /proc at start.
enum class SideBand {
  kAuto,    // kernel MMAP and COMMs; MMAP2s when an event samples IP outside tracepoints
  kAlways,  // kernel MMAP, COMMs and MMAP2s
  kNever,   // none
};

// HEADER_CLOCKID and HEADER_CLOCK_DATA: the clock's resolution and a pair
// of readings of it and of CLOCK_REALTIME taken together.
struct ClockData {
  uint64_t resolution_ns = 1;
  sys::ClockPair pair;  // of the events' clock
};

struct WriterConfig {
  // The events, in the order perf will number them. Every attr is written
  // with the same size: the largest attr.size given (0 means 128, what
  // perf 6.1 reads; perf 6.1 refuses files whose attrs are larger).
  std::vector<EventDesc> events;
  // HEADER_CMDLINE: the recording command's argv.
  std::vector<std::string> cmdline;
  // The host features; collected from proc_root and sysfs_root when absent.
  std::optional<HostInfo> host;
  std::string tracefs_root;  // "" = sys::default_tracefs_root()
  std::string proc_root = sys::kDefaultProcRoot;
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  SideBand side_band = SideBand::kAuto;
  size_t buffer_size = 4 << 20;  // at least 64 KiB
  uint32_t page_size = 0;        // 0 = this host's
  // The clock features, for events that use_clockid (all must use the same
  // clock); read from the clocks (sys/clock.h) as the file starts when
  // absent.
  std::optional<ClockData> clock;
};

// A loss the caller (the ring reader) counted. It is written as
// PERF_RECORD_LOST {id, lost} with the sample_id trailer when the events
// have sample_id_all, so `perf report --stats` and `perf report -D` show it.
struct LostReport {
  uint64_t id = 0;    // sample id of the event instance (CPU) that lost them
  uint64_t lost = 0;  // records lost
  uint32_t cpu = 0;
  uint64_t time = 0;
  uint32_t pid = UINT32_MAX;  // -1: no task
  uint32_t tid = UINT32_MAX;
};

struct WriterStats {
  uint64_t records = 0;          // records written (all types: samples, side band, losses)
  uint64_t samples = 0;          // PERF_RECORD_SAMPLE written
  uint64_t lost_records = 0;     // PERF_RECORD_LOST and LOST_SAMPLES written
  uint64_t lost = 0;             // the losses they report
  uint64_t data_bytes = 0;       // the data section
  uint64_t file_bytes = 0;       // everything written: header, data, features
  uint64_t dropped_records = 0;  // not written: the output failed (disk full)
  uint64_t dropped_samples = 0;
  uint64_t first_sample_time = 0;  // 0 when none (or the events have no TIME)
  uint64_t last_sample_time = 0;
  uint64_t write_calls = 0;  // pwritev/writev/pwrite system calls
};

class PerfDataWriter {
 public:
  // File mode at `path`; an existing non-empty file becomes "<path>.old".
  // A FIFO or a device at `path` gets pipe mode.
  static Result<std::unique_ptr<PerfDataWriter>> create_file(const std::string& path,
                                                             WriterConfig config);
  // Pipe mode on `fd` (not closed), named `name` in messages.
  static Result<std::unique_ptr<PerfDataWriter>> create_pipe(int fd, WriterConfig config,
                                                             std::string name = "standard output");
  // Any output: file mode when it is seekable, pipe mode when not or when
  // `pipe` is set.
  static Result<std::unique_ptr<PerfDataWriter>> create(std::unique_ptr<Output> output,
                                                        WriterConfig config, bool pipe = false);

  // Finishes the file when the caller did not (errors are dropped: call
  // finish() to see them).
  ~PerfDataWriter();

  PerfDataWriter(const PerfDataWriter&) = delete;
  PerfDataWriter& operator=(const PerfDataWriter&) = delete;

  // Appends whole records: each a perf_event_header whose size covers it,
  // back to back. A batch with a malformed record is refused whole
  // (EINVAL). After a failed write every append fails with that error.
  Status append(std::span<const uint8_t> records);

  // Appends a PERF_RECORD_LOST for a loss the caller counted.
  Status append_lost(const LostReport& lost);

  // Appends a FINISHED_ROUND record: perf may sort and deliver everything
  // before it (call after each pass over all ring buffers).
  Status finished_round();

  // Writes what is buffered (and, in file mode, the features and header).
  Status flush();

  // Writes the rest and the final header and features. Idempotent: later
  // calls return the first call's result. After a failed write it still
  // leaves the file valid and returns the failure, with what the file holds.
  Status finish();

  const WriterStats& stats() const { return stats_; }
  // Bytes appended and not yet written: the file grows by these at the next
  // flush.
  uint64_t buffered_bytes() const { return buffer_.size(); }
  bool pipe_mode() const { return pipe_; }
  const std::string& output_name() const { return output_->name(); }
  const std::vector<EventDesc>& events() const { return config_.events; }

 private:
  struct Counts {
    uint64_t records = 0, samples = 0, lost_records = 0, lost = 0;
    uint64_t first_time = 0, last_time = 0;  // 0: none
    void add(const Counts& other);
  };

  PerfDataWriter(std::unique_ptr<Output> output, WriterConfig config, bool pipe);

  Status prepare();
  Status start_file();
  Status start_pipe();
  Status synthesize_side_band();

  // Validates a batch and counts what is in it.
  Result<Counts> scan(std::span<const uint8_t> records) const;
  Status append_scanned(std::span<const uint8_t> records, const Counts& counts);
  Status flush_buffer();
  Status flush_file();
  Status flush_pipe();
  Status write_header();
  Bytes feature_block(uint64_t at, const Counts& pending) const;
  Error fail(Error error);
  Error dropped_error() const;
  void drop(const Counts& counts);

  std::unique_ptr<Output> output_;
  WriterConfig config_;
  bool pipe_;
  uint32_t attr_size_ = 0;
  uint64_t trailer_type_ = 0;          // sample_type for sample_id trailers (0: none)
  std::optional<size_t> time_offset_;  // of TIME in every event's samples; none: no
                                       // SAMPLE_TIME feature
  FeatureMap features_;                // all but SAMPLE_TIME, which changes as data comes

  FileHeader header_;
  uint64_t data_offset_ = 0;
  Bytes last_block_;  // the feature block now on disk after the data
  bool can_reserve_ = true;

  Bytes buffer_;
  Counts pending_;
  bool round_pending_ = false;

  WriterStats stats_;
  std::optional<Error> failed_;
  bool finished_ = false;
  std::optional<Error> finish_error_;
};

}  // namespace pp::report

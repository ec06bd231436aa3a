// `perf persistent record`: reads persistent events' buffers read-only and
// writes what they hold into perf.data, losing nothing it could have kept and
// accounting for everything it could not.
//
//   -e persistent/NAME/ ... -> parse/ (through pmu/, kernel sysfs or the
//   broker's run dir) -> the persistent id -> Backend::open() per CPU -> a
//   read-only mapping and a RingReader each -> PerfDataWriter.
//
// The readers attach before COMMAND starts, so everything COMMAND causes is
// recorded; with `snapshot` the first read takes everything the buffers
// already hold (the flight recorder: what happened before anyone looked).
// The loop polls the buffers, COMMAND's pidfd and a signalfd for SIGINT,
// SIGTERM and SIGHUP; a poll timeout bounds how late a lone sample reaches
// the file (flush_interval_ms). After each pass over every buffer it writes
// a FINISHED_ROUND, so perf orders samples across CPUs as for perf record.
// Records the writer overran before the reader copied them become
// PERF_RECORD_LOST records in the file. A lean tracepoint event's records
// (IP|TID|TIME|RAW, persistent/sample_layout.h) are completed on the way
// in: the file's attr has the full sample_type, and each record gets the
// CPU and id of the buffer it came from and PERIOD sample_period.
//
// The steps are the engine's parts, which other readers share:
// record/events.h resolves -e and -C, record/attach.h attaches to the
// buffers, record/drain.h drains them into a sink; this session ties them
// to perf.data, COMMAND and the signals.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "pmu/model.h"
#include "record/record_options.h"

namespace pp::record {

struct RecordRequest {
  std::vector<std::string> events;   // -e, each naming persistent events
  std::string output = "perf.data";  // "-": perf's pipe format on standard output
  std::string cpus;                  // -C: "" means every CPU each event covers
  bool snapshot = false;             // first write what the buffers already hold
  bool follow = true;                // false: write the snapshot and stop
  std::vector<std::string> command;  // run this, record until it exits
  std::vector<std::string> cmdline;  // for the file's HEADER_CMDLINE
  pmu::Roots roots;                  // where persistent/NAME/ is looked up
  persistent::BackendOptions backend;
  int flush_interval_ms = 250;    // the longest a record waits before it is written
  int verbose = 0;                // -v: notes on each buffer attached, the clock, each file
  SwitchOutput switch_output;     // --switch-output: rotate the output file
  uint64_t switch_max_files = 0;  // --switch-max-files: keep this many switched files (0: all)
  uint64_t max_size = 0;          // --max-size: stop once the output has this many bytes (0: no)
};

// What one CPU's buffer of one event gave, over the whole recording.
struct BufferResult {
  std::string event;  // as the user named it ("persistent/gp/"), or the tracking event's name
  int cpu = 0;
  uint64_t id = 0;                   // its sample id (0: none)
  uint64_t records = 0;              // read from it
  uint64_t samples = 0;              // of which PERF_RECORD_SAMPLE
  uint64_t bytes = 0;                // read from it
  uint64_t overwritten = 0;          // records overwritten before they were read (estimated)
  uint64_t kernel_lost = 0;          // PERF_RECORD_LOST in it
  uint64_t kernel_lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES in it
};

struct RecordResult {
  std::string output;                // the file written ("standard output" in pipe mode)
  uint64_t samples = 0;              // PERF_RECORD_SAMPLE written
  uint64_t records = 0;              // every record written (samples, side band, losses)
  uint64_t bytes = 0;                // of the output file
  uint64_t kernel_lost = 0;          // PERF_RECORD_LOST from the kernel: the buffer was full
  uint64_t kernel_lost_samples = 0;  // PERF_RECORD_LOST_SAMPLES from the kernel
  uint64_t overwritten = 0;          // records overwritten before they were read (estimated)
  uint64_t overwritten_bytes = 0;
  // data_head values no kernel writes (another holder scribbled on a
  // writable mapping): the reader resynchronised; not counted as lost.
  uint64_t corrupt_heads = 0;
  uint64_t corrupt_bytes = 0;  // bytes skipped that could not start a record
  uint64_t dropped = 0;        // read but not written: the output failed
  // Per event: records of a lean event that did not decode with its attr,
  // so could not be completed to the file's layout (sys::relayout_record),
  // and were left out.
  struct LeftOut {
    std::string event;  // as the user named it: "persistent/gp/"
    uint64_t records = 0;
    std::string reason;  // why the first of them could not be completed
  };
  std::vector<LeftOut> left_out;
  int buffers = 0;                     // per-CPU buffers read
  std::optional<int> command_status;   // COMMAND's exit status (128 + signal)
  std::optional<Error> command_error;  // COMMAND could not be started (kind command;
                                       // nothing recorded)
  int signal = 0;                      // the signal that stopped the recording, if any
  std::optional<Error> stopped_error;  // what stopped the recording early: the output
                                       // (kind output: ENOSPC...) or the wait for the
                                       // buffers; the file holds everything up to the
                                       // last complete record
  bool max_size_reached = false;       // --max-size stopped it
  bool events_gone = false;            // every event's buffer hung up (POLLHUP)
  std::vector<std::string> files;      // --switch-output: every file written, in order
                                       // (the last is the one the recording ended in)
  std::vector<std::string> removed;    // of those, removed by --switch-max-files
  std::vector<BufferResult> per_buffer;
};

// Why a recording ended, for the JSON summary: "command" (COMMAND exited),
// "signal", "max-size", "events-gone" (every event's buffer hung up),
// "snapshot" (--no-follow wrote what the buffers held), "error"
// (stopped_error), "command-error" (COMMAND could not start).
std::string exit_reason(const RecordResult& result);

// Records until COMMAND exits, a signal arrives, every event's buffer hangs
// up, or (follow = false) the snapshot is written. Errors before anything is written (a bad event,
// an event that is not persistent, a CPU it does not cover, a refused open) are returned as errors;
// a failure once writing has started is in RecordResult::stopped_error, with the file left valid.
// `notes` gets the lines for the user that are not errors.
Result<RecordResult> record(const RecordRequest& request, std::ostream& notes);

// perf's summary lines for stderr:
//   [ perf persistent record: Captured and wrote 0.017 MB perf.data (123 samples) ]
//   [ perf persistent record: lost 12 samples: ... ]
std::string record_summary(const RecordResult& result);

// How a recording that ran ends: the error to print, if any (COMMAND could
// not be run; the recording stopped early; COMMAND exited 127, which perf's
// dispatcher would read as "perf-persistent is missing"), and the exit
// status: the error's kind's, else COMMAND's own status (0 without one).
std::optional<Error> final_error(const RecordResult& result);
int exit_status(const RecordResult& result);

}  // namespace pp::record

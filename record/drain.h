// Draining the rings: each pass reads what every attached buffer holds
// beyond what was read before and hands it on, whole records only, to a
// RecordSink: perf.data's writer for record; top's views and a live report
// later. Records the kernel overwrote before the reader copied them are
// counted and reported to the sink, per buffer, as perf's PERF_RECORD_LOST.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "record/attach.h"

namespace pp::record {

class RecordSink {
 public:
  virtual ~RecordSink() = default;

  // `records` records of `stream` were overwritten before they were read.
  virtual Status lost(const Stream& stream, uint64_t records) = 0;

  // Whole records of `stream`, back to back as they lay in the buffer
  // (perf_event_header first, sizes as the headers say).
  virtual Status append(const Stream& stream, std::span<const uint8_t> records) = 0;

  // A pass over every buffer handed something on: the records of this round
  // may be ordered by time across CPUs (perf's FINISHED_ROUND).
  virtual Status end_round() = 0;
};

// What the rings lost before they were read, summed over the passes.
struct DrainTotals {
  uint64_t overwritten = 0;  // records (the reader's estimate)
  uint64_t overwritten_bytes = 0;
};

// One pass over `streams`: hands on what each holds (the first read of a
// stream takes whatever its reader's start says; later ones only new
// records), ends the round when anything was handed on, and says whether
// anything was. Spans that lie back to back in a reader's copy go to the
// sink as one append.
Result<bool> drain_all(std::vector<Stream>& streams, RecordSink& sink, DrainTotals& totals);

}  // namespace pp::record

#include "record/drain.h"

namespace pp::record {
namespace {

// Hands on what one buffer holds beyond what was read; says whether it
// handed on anything.
Result<bool> drain(Stream& stream, RecordSink& sink, DrainTotals& totals) {
  if (stream.read_once && !stream.reader->has_new_data())
    return false;
  stream.read_once = true;
  const sys::RingBatch& batch = stream.reader->read();
  bool handed_on = false;
  if (batch.lost.records) {
    totals.overwritten += batch.lost.records;
    totals.overwritten_bytes += batch.lost.bytes;
    PP_RETURN_IF_ERROR(sink.lost(stream, batch.lost.records));
    handed_on = true;
  }
  const uint8_t* run = nullptr;
  size_t run_size = 0;
  for (std::span<const uint8_t> record : batch) {
    if (run && run + run_size == record.data()) {
      run_size += record.size();
      continue;
    }
    if (run)
      PP_RETURN_IF_ERROR(sink.append(stream, {run, run_size}));
    run = record.data();
    run_size = record.size();
  }
  if (run) {
    PP_RETURN_IF_ERROR(sink.append(stream, {run, run_size}));
    handed_on = true;
  }
  return handed_on;
}

}  // namespace

Result<bool> drain_all(std::vector<Stream>& streams, RecordSink& sink, DrainTotals& totals) {
  bool any = false;
  for (Stream& s : streams) {
    PP_ASSIGN_OR_RETURN(bool handed_on, drain(s, sink, totals));
    any |= handed_on;
  }
  if (any)
    PP_RETURN_IF_ERROR(sink.end_round());
  return any;
}

}  // namespace pp::record

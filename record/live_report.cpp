#include "record/live_report.h"

#include <deque>
#include <memory>

#include "mce/edac.h"
#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "report/tracing_data.h"
#include "sys/edac.h"
#include "sys/kernel.h"
#include "sys/perf_abi_records.h"
#include "sys/tree.h"

namespace pp::record {
namespace {

// The drained records, kept (the report prints them in time order at the
// end) and handed to the report one by one.
class ReportSink final : public RecordSink {
 public:
  ReportSink(report::TraceReport& report, const std::vector<ResolvedEvent>& events)
      : report_(report), events_(events) {}

  Status lost(const Stream& stream, uint64_t records) override {
    report_.bad_record(
        "persistent/" + events_[stream.event].info.name + "/ CPU " + std::to_string(stream.cpu), 0,
        errorf(EIO, "%llu records were overwritten while they were read",
               static_cast<unsigned long long>(records)));
    return ok_status();
  }

  // The stream says whose records these are and on which CPU: a lean
  // event's records carry neither (persistent/sample_layout.h).
  Status append(const Stream& stream, std::span<const uint8_t> records) override {
    const ResolvedEvent& event = events_[stream.event];
    const perf_event_attr& attr = event.info.attr.attr;
    chunks_.emplace_back(records.begin(), records.end());
    std::span<const uint8_t> kept = chunks_.back();
    sys::walk_records(kept, [&](const perf_event_header& h, size_t offset) {
      std::span<const uint8_t> record = kept.subspan(offset, h.size);
      uint64_t at = position_ + offset;
      if (h.type != PERF_RECORD_SAMPLE) {
        report_.other_record();
        return true;
      }
      auto sample = sys::decode_sample(attr, record);
      if (!sample.ok()) {
        report_.bad_record("the buffers of persistent/" + event.info.name + "/", at,
                           sample.error());
        return true;
      }
      sys::fill_missing(*sample, attr.sample_type,
                        sys::sample_fill(event.info.attr.attr, stream.cpu, stream.id));
      report_.sample(*sample, "the buffers", at);
      return true;
    });
    position_ += records.size();
    return ok_status();
  }

  Status end_round() override { return ok_status(); }

 private:
  report::TraceReport& report_;
  const std::vector<ResolvedEvent>& events_;
  std::deque<std::vector<uint8_t>> chunks_;
  uint64_t position_ = 0;  // bytes handed on before this append
};

}  // namespace

Result<report::ReportStats> live_report(const LiveReportRequest& request,
                                        const report::ReportOptions& options, std::ostream& out,
                                        std::ostream& err) {
  PP_ASSIGN_OR_RETURN(pmu::Model model, pmu::Model::load(request.roots));
  std::unique_ptr<persistent::Backend> backend = persistent::make_backend(request.backend);
  PP_ASSIGN_OR_RETURN(std::vector<ResolvedEvent> events,
                      resolve_events(request.events, request.cpus, model, *backend, err));

  // The formats, as record would write them into the file.
  sys::Tree tracefs(request.roots.tracefs.empty() ? sys::default_tracefs_root()
                                                  : request.roots.tracefs);
  std::vector<report::Tracepoint> tracepoints;
  for (const ResolvedEvent& e : events) {
    if (e.info.attr.attr.type != PERF_TYPE_TRACEPOINT)
      return usage_error("persistent/" + e.info.name + "/ is " + e.name +
                         ", not a tracepoint: report decodes tracepoint records; use "
                         "'perf persistent record' and perf report for it");
    PP_ASSIGN_OR_RETURN(report::Tracepoint tp,
                        report::find_tracepoint(tracefs, e.info.attr.attr.config, e.name));
    tracepoints.push_back(std::move(tp));
  }
  PP_ASSIGN_OR_RETURN(report::Bytes built,
                      report::build_tracing_data(tracefs, tracepoints, uint32_t(sys::page_size())));
  PP_ASSIGN_OR_RETURN(report::TracingData tracing, report::parse_tracing_data(built));
  PP_ASSIGN_OR_RETURN(auto decoder, report::TraceDecoder::create(tracing));

  AttachOptions attach;
  attach.start = sys::RingStart::kOldest;
  attach.kernel = request.backend.kernel;
  attach.explain = {request.backend.proc_root, request.roots.sysfs};
  PP_ASSIGN_OR_RETURN(std::vector<Stream> streams, attach_events(*backend, events, attach));

  // The events' own clock, when they chose one, read beside the wall clock.
  std::optional<sys::ClockPair> wall = wall_clock_for(events);

  // This host's DIMM labels, for ras:mc_event records that name none.
  report::ReportOptions labelled = options;
  if (auto dimms = sys::read_edac_dimms(sys::Tree(request.roots.sysfs)); dimms.ok()) {
    mce::EdacLabels labels;
    for (const sys::EdacDimm& d : *dimms)
      labels[{d.mc, mce::edac_label_key_of_location(d.location)}] = {d.label, d.location};
    labelled.edac_labels = std::move(labels);
  }
  report::TraceReport report(labelled, *decoder, out, err);
  PP_RETURN_IF_ERROR(report.start(wall));
  ReportSink sink(report, events);
  DrainTotals totals;
  PP_RETURN_IF_ERROR(drain_all(streams, sink, totals));
  PP_RETURN_IF_ERROR(report.finish());
  return report.stats();
}

}  // namespace pp::record

// `perf persistent report -e persistent/NAME/`: the report straight from
// persistent events' buffers, with no file: what they hold now (the
// runbook's "show me the machine checks"). The engine's parts as record
// uses them (record/events.h resolves -e and -C, record/attach.h attaches
// read-only from the oldest record, record/drain.h hands the records on),
// one drain, into report/'s TraceReport; the formats come from the live
// tracefs, as record would write them into HEADER_TRACING_DATA. Nothing is
// consumed: other readers and later reports see the same records.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "pmu/model.h"
#include "report/trace_report.h"

namespace pp::record {

struct LiveReportRequest {
  std::vector<std::string> events;  // -e, each naming persistent events
  std::string cpus;                 // -C: "" means every CPU each event covers
  pmu::Roots roots;                 // where persistent/NAME/ and the formats are looked up
  persistent::BackendOptions backend;
};

// Prints what the events' buffers hold with `options`. Errors before any
// output (a bad event, one that is not a tracepoint, a refused open) are
// returned; undecodable records are reported on `err` and counted.
Result<report::ReportStats> live_report(const LiveReportRequest& request,
                                        const report::ReportOptions& options, std::ostream& out,
                                        std::ostream& err);

}  // namespace pp::record

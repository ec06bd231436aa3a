// record --json: the end-of-run summary as one JSON object, for runbooks.
// The schema (documented in perf-persistent-record(1)):
//
//   {"output": "perf.data",                 the file written ("perf.data.<timestamp>"
//                                           with --switch-output, "standard output")
//    "files": ["perf.data.2026120313522589", ...],  --switch-output: each file, in order
//    "removed": [...],                      of those, removed by --switch-max-files
//    "samples": 1000, "records": 1450, "bytes": 17200,
//    "lost": {"total": 0, "overwritten": 0, "overwritten_bytes": 0,
//             "kernel_lost": 0, "kernel_lost_samples": 0, "not_written": 0},
//    "buffers": [{"event": "persistent/gp/", "cpu": 0, "id": 14176, "records": 1002,
//                 "samples": 1000, "bytes": 96192, "overwritten": 0, "kernel_lost": 0,
//                 "kernel_lost_samples": 0}, ...],
//    "exit_reason": "command",              command, signal, max-size, snapshot, error,
//                                           command-error
//    "signal": null,                        "SIGINT", "SIGTERM", "SIGHUP" when one stopped it
//    "command_status": 0,                   COMMAND's exit status, null without one
//    "error": null,                         the one error shape's inner object
//    "exit_status": 0}                      record's own exit status
#pragma once

#include "base/json.h"
#include "record/recorder.h"

namespace pp::record {

json summary_json(const RecordResult& result);

}  // namespace pp::record

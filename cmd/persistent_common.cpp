#include "cmd/persistent_common.h"

#include <iostream>

#include "base/json.h"
#include "cmd/exit_codes.h"
#include "sys/process.h"
#include "sys/systemd.h"

namespace pp::cmd {

int report_error(std::string_view verb, const Error& error, bool json) {
  if (json)
    std::cout << dump_json(error_json(error)) << std::endl;
  else
    std::cerr << "perf persistent " << verb << ": " << error.message() << "\n";
  return exit_status_of(error.kind());
}

int report_usage_error(std::string_view verb, const Error& error, const OptionParser& options,
                       bool json) {
  int status = report_error(verb, error.with_kind(ErrorKind::kUsage), json);
  if (!json)
    std::cerr << "\n" << options.usage();
  return status;
}

persistent::BackendOptions backend_options(const std::string& run_dir, bool start_broker) {
  persistent::BackendOptions options;
  options.run_dir = run_dir.empty() ? persistent::default_run_dir() : run_dir;
  options.notes = &std::cerr;
  if (start_broker) {
    auto self = sys::self_executable();
    if (self.ok())
      options.daemon_command = {*self, "daemon", "--run-dir", options.run_dir};
    options.systemd = &sys::real_systemd();  // where systemd runs the broker, it starts it
  }
  return options;
}

}  // namespace pp::cmd

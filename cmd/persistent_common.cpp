#include "cmd/persistent_common.h"

#include <iostream>

#include "cmd/exit_codes.h"
#include "persistent/json_fields.h"
#include "sys/process.h"

namespace pp::cmd {

int exit_status_of(const Error& error) {
  switch (persistent::failure_of(error)) {
    case persistent::Failure::kUsage:
      return kExitUsage;
    case persistent::Failure::kNameTaken:
      return kExitNameTaken;
    case persistent::Failure::kNotFound:
      return kExitNotFound;
    case persistent::Failure::kRefused:
      return kExitRefused;
  }
  return kExitRefused;
}

namespace {

int print_error(std::string_view verb, const Error& error, bool json, int status) {
  if (json) {
    persistent::json doc = {{"error",
                             {{"message", error.message()},
                              {"errno", errno_name(error.code())},
                              {"exit_status", status}}}};
    std::cout << persistent::dump_json(doc) << std::endl;
  } else {
    std::cerr << "perf persistent " << verb << ": " << error.message() << "\n";
  }
  return status;
}

}  // namespace

int report_error(std::string_view verb, const Error& error, bool json) {
  return print_error(verb, error, json, exit_status_of(error));
}

int report_usage_error(std::string_view verb, const Error& error, const OptionParser& options,
                       bool json) {
  print_error(verb, error, json, kExitUsage);
  if (!json)
    std::cerr << "\n" << options.usage();
  return kExitUsage;
}

persistent::BackendOptions backend_options(const std::string& run_dir, bool start_broker) {
  persistent::BackendOptions options;
  options.run_dir = run_dir.empty() ? persistent::default_run_dir() : run_dir;
  options.notes = &std::cerr;
  if (start_broker) {
    auto self = sys::self_executable();
    if (self.ok())
      options.daemon_command = {*self, "daemon", "--run-dir", options.run_dir};
  }
  return options;
}

}  // namespace pp::cmd

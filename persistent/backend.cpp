#include "persistent/backend.h"

#include <cstdlib>
#include <set>

#include "persistent/broker_client.h"
#include "persistent/kernel_backend.h"
#include "persistent/names.h"

namespace pp::persistent {

std::string default_run_dir() {
  const char* env = std::getenv(kRunDirEnv);
  return env && *env ? env : kDefaultRunDir;
}

Result<bool> systemd_manages_broker(sys::Systemd& systemd, const std::string& run_dir,
                                    const std::string& unit_run_dir) {
  if (RunDir(run_dir).root() != RunDir(unit_run_dir).root() || !systemd.booted())
    return false;
  return systemd.unit_installed(kBrokerUnit);
}

bool kernel_has_persistent_pmu(const sys::Tree& sysfs) {
  return sysfs.is_directory("bus/event_source/devices/persistent");
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
  sys::Tree sysfs(options.sysfs_root);
  if (kernel_has_persistent_pmu(sysfs)) {
    sys::Kernel& kernel = options.kernel ? *options.kernel : sys::real_kernel();
    return std::make_unique<KernelBackend>(
        kernel, sysfs, RunDir(options.run_dir.empty() ? default_run_dir() : options.run_dir),
        options.resolver, options.tracefs_root);
  }
  return std::make_unique<BrokerBackend>(options);
}

int KillReport::exit_status() const {
  int status = 0;
  for (const auto& [reference, error] : failed) {
    int s = exit_status_of(error.kind());
    if (status == 0 || s == exit_status_of(ErrorKind::kNotFound))
      status = s;
  }
  return status;
}

Result<KillReport> kill_events(Backend& backend, const std::vector<std::string>& references,
                               bool all) {
  KillReport report;
  PP_ASSIGN_OR_RETURN(std::vector<EventInfo> events, backend.list(false, nullptr));
  std::vector<std::string> targets;
  std::set<uint64_t> seen;
  if (all) {
    for (const EventInfo& e : events) {
      if (e.is_context)  // goes with the last event it serves
        continue;
      targets.push_back(std::to_string(e.id));
      seen.insert(e.id);
    }
  }
  for (const std::string& reference : references) {
    auto found = find_event(events, reference);
    if (!found.ok()) {
      report.failed.emplace_back(reference, found.error());
      continue;
    }
    if (seen.insert((*found)->id).second)  // `kill 3 ctxsw` when ctxsw is 3 kills it once
      targets.push_back(std::to_string((*found)->id));
  }
  for (const std::string& target : targets) {
    auto killed = backend.kill(target);
    if (killed.ok())
      report.killed.push_back(std::move(*killed));
    else
      report.failed.emplace_back(target, killed.error());
  }
  return report;
}

}  // namespace pp::persistent

// Turns a failed perf_event_open, mmap, ioctl or read of a perf event into a
// message a user can act on, as perf's evsel__open_strerror() does: what
// failed, on what (the event as the user wrote it, the CPU), why as far as
// the system shows, and what to try. Every command reports kernel refusals
// through here.
//
//   auto fd = kernel.perf_event_open(attr, -1, cpu, -1, 0);
//   if (!fd.ok())
//     return sys::explain(fd.error(), {.event = "syscalls:sys_enter_getppid", .cpu = cpu,
//                                      .attr = attr});
//
// gives, for an unprivileged user:
//
//   cannot open event 'syscalls:sys_enter_getppid' on CPU 0: Permission denied (EACCES)
//     kernel.perf_event_paranoid is 2: without CAP_PERFMON a user may only profile
//     their own processes, in user space (no CPU-wide events, no kernel samples)
//     this process has neither CAP_PERFMON nor CAP_SYS_ADMIN (CapEff 0000000000000000)
//     try: run as root, give the program CAP_PERFMON (setcap cap_perfmon+ep ...),
//     or allow everyone: sysctl kernel.perf_event_paranoid=-1
//
// The facts come from files under a proc root and a sysfs root that are
// parameters, so tests use fake trees:
//   <proc>/sys/kernel/perf_event_paranoid       "2\n"
//   <proc>/sys/kernel/perf_event_mlock_kb       "516\n"
//   <proc>/sys/kernel/perf_event_max_sample_rate "100000\n"
//   <proc>/sys/kernel/osrelease                 "6.1.0-18-amd64\n"
//   <proc>/sys/fs/file-nr                       "1088\t0\t9223372036854775807\n"
//   <proc>/self/status                          "...\nCapEff:\t000001ffffffffff\n..."
//   <proc>/self/limits                          "Max open files  1024  524288  files\n"
//   <proc>/self/fd/                             one entry per open fd
//   <sysfs>/devices/system/cpu/online           "0-1\n"
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "sys/perf_attr.h"
#include "sys/tree.h"

namespace pp::sys {

enum class PerfCall { kOpen, kMmap, kIoctl, kRead };

// The call that failed, described as the caller knows it.
struct FailedCall {
  PerfCall call = PerfCall::kOpen;
  // The event as the user wrote it: "syscalls:sys_enter_getppid",
  // "persistent/mce_record/", "persistent event 7". "" when unknown.
  std::string event{};
  int cpu = -1;  // -1: not per CPU, or unknown
  pid_t pid = -1;
  std::optional<EventAttr> attr{};  // what was passed to perf_event_open, when known
  // The persistent PMU's type when the system has one (from
  // devices/persistent/type), so an open of that type is recognised; 0: none.
  uint32_t persistent_type = 0;
  unsigned long request = 0;  // kIoctl: the request
  size_t length = 0;          // kMmap: the bytes asked for
  int prot = 0;               // kMmap: PROT_READ, PROT_WRITE
};

struct ExplainEnv {
  std::string proc_root = kDefaultProcRoot;
  std::string sysfs_root = kDefaultSysfsRoot;
  // The systemd unit this process runs as ("perf-persistent.service"): out
  // of fds (EMFILE), the advice is its LimitNOFILE=, which a shell's
  // `ulimit -n` does not reach. "": run by hand.
  std::string service{};
};

// An Error with code `err` and a message in the form above.
Error explain(int err, const FailedCall& call, const ExplainEnv& env = {});
// The same for an Error a Kernel returned (its code is the errno).
Error explain(const Error& error, const FailedCall& call, const ExplainEnv& env = {});

// How many fds this process holds and may hold: the entries of
// <proc>/self/fd and the "Max open files" line of <proc>/self/limits
//   Max open files            1024                 524288               files
// nullopt when either cannot be read, or the soft limit is "unlimited".
struct FdUsage {
  size_t open = 0;
  long limit = 0;        // RLIMIT_NOFILE, soft (ulimit -n)
  long hard_limit = -1;  // -1: unlimited
};
std::optional<FdUsage> fd_usage(const ExplainEnv& env = {});
// The open-files limit to suggest to a process out of fds that is about to
// open `more`: at least 1024, four times its limit, twice what it would hold.
long suggested_fd_limit(const FdUsage& usage, size_t more = 0);
// The advice for a systemd service out of fds, whose LimitNOFILE= sets
// both limits: "raise LimitNOFILE= (e.g. LimitNOFILE=4096, 'systemctl edit
// perf-persistent.service') and restart it".
std::string limit_nofile_advice(const std::string& service, long wanted);

// The name of a perf ioctl request ("PERF_EVENT_IOC_DETACH"), or its number
// in hex.
std::string perf_ioctl_name(unsigned long request);

}  // namespace pp::sys

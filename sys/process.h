// Process-level services for the broker and its clients: who a process is
// (credentials and capabilities, from /proc/<pid>/status through a Tree),
// starting the broker and detaching it, signals as a pollable fd, and the
// lock that lets one broker own a run directory.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"
#include "sys/tree.h"

namespace pp::sys {

// Capability numbers (linux/capability.h).
inline constexpr int kCapIpcLock = 14;
inline constexpr int kCapSysAdmin = 21;
inline constexpr int kCapPerfmon = 38;

// Whether the capabilities `cap_effective` let a process open CPU-wide perf
// events and read raw tracepoint data at kernel.perf_event_paranoid
// `paranoid` (nullopt: unknown): CAP_PERFMON or CAP_SYS_ADMIN, as the
// kernel's perfmon_capable() asks; at the level 3 that Debian's and
// Android's kernels add, CAP_SYS_ADMIN alone (their check is
// capable(CAP_SYS_ADMIN), whatever CAP_PERFMON allows).
bool perf_capable_at(uint64_t cap_effective, std::optional<long> paranoid);

// What /proc/<pid>/status says about a process's identity:
//
//   Uid:	1000	1000	1000	1000      (real, effective, saved, filesystem)
//   CapEff:	000001ffffffffff              (hex bit mask)
struct ProcessStatus {
  uid_t real_uid = 0;
  uid_t effective_uid = 0;
  uid_t saved_uid = 0;
  uint64_t cap_effective = 0;

  bool has_capability(int cap) const { return cap >= 0 && cap < 64 && (cap_effective >> cap) & 1; }
  // What the kernel's perfmon_capable() asks: CAP_PERFMON or CAP_SYS_ADMIN.
  bool perfmon_capable() const {
    return has_capability(kCapPerfmon) || has_capability(kCapSysAdmin);
  }
  // Root, or perfmon_capable(): who may create, kill and open persistent events.
  bool may_use_persistent_events() const { return effective_uid == 0 || perfmon_capable(); }
  // Whether it runs a set-user-ID program: its effective or saved uid is not
  // its real one (the kernel set them from the file at exec).
  bool set_user_id() const { return effective_uid != real_uid || saved_uid != real_uid; }
};

// Parses the text of a status file. EINVAL names the missing or bad line.
Result<ProcessStatus> parse_process_status(std::string_view text);

// Reads <proc>/<pid>/status. ESRCH when the process is gone.
Result<ProcessStatus> read_process_status(const Tree& proc, pid_t pid);

// Whether process `pid` lives in the caller's user namespace, as far as
// `proc` shows it to the caller. The kernel's perfmon_capable() asks for a
// capability in the initial user namespace; CapEff in the status file is
// relative to the process's own one, where `unshare -U -r` gives a process
// of any user every capability. Two readings decide:
//
//   <pid>/uid_map   "         0      65534          1"  (as the caller sees it)
//   <pid>/ns/user   -> "user:[4026532174]"              (ptrace rules apply)
//
// The uid map must be the caller's own (self/uid_map; the initial
// namespace's is "0 0 4294967295") and, where the caller may read the link
// (a process it could ptrace), the namespace the caller's. Returns "" when
// both hold, else what differs ("its uid map is '0 65534 1'..."). A kernel
// without user namespaces (no self/uid_map) has only one: "". ESRCH when the
// process is gone.
Result<std::string> user_namespace_difference(const Tree& proc, pid_t pid);

// Whether a process whose comm (<pid>/comm, without its newline) is this
// is perf itself: "perf", or Debian's versioned binary that the /usr/bin/perf
// wrapper runs ("perf_6.1"). Not "perf-persisten" (our own, cut to 15 bytes).
bool is_perf_comm(std::string_view comm);

// `perf persistent VERB` runs this program as a child (perf-persistent VERB)
// and waits for it; a SIGTERM or SIGKILL to perf kills perf alone, and the
// child would go on, re-parented to init. When the parent (getppid(), its
// comm read from `proc`) is perf, this asks the kernel for SIGTERM when
// that parent dies (prctl PR_SET_PDEATHSIG), so the verb ends on its own
// SIGTERM path (files completed, the terminal restored) and its status
// reaches perf while perf lives. The parent may have died before the
// request: then getppid() differs from the pid read, and SIGTERM is sent
// to this process at once. The request is not inherited by a fork (the
// daemon's detached broker keeps running). Returns whether it was made.
bool end_with_perf_parent(const Tree& proc);

// The program process `pid` runs, as <pid>/exe names it, without the
// " (deleted)" the kernel adds once the file was replaced (an upgrade): the
// path it was started from. Needs ptrace access to the process (EACCES
// otherwise); ESRCH when it is gone.
Result<std::string> executable_path(const Tree& proc, pid_t pid);

// `bytes` random bytes from the kernel (getrandom(2)) as lowercase hex: a
// secret to write where only its intended reader can read it.
Result<std::string> random_hex(size_t bytes);

// The one PATH of the environment a daemon starts with.
inline constexpr const char* kDaemonPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The running program (readlink /proc/self/exe), to start the broker with.
Result<std::string> self_executable();

// Runs argv (argv[0] a path; stdin from /dev/null, stdout and stderr
// inherited, no other descriptor, the environment only PATH=kDaemonPath and
// LANG=C) and waits: its exit status, or 128 + the signal that killed it.
Result<int> run_and_wait(const std::vector<std::string>& argv);

// Raises the soft limit on open files to the hard limit: a broker holds one fd
// per (event, CPU) plus one per client. Best effort.
void raise_fd_limit();

// Whether a process with this pid exists (kill(pid, 0)).
bool process_exists(pid_t pid);

// A daemon that tells whoever started it when it is ready.
//
//   PP_ASSIGN_OR_RETURN(auto daemon, Detached::detach());  // the starter waits in here
//   ... bind the socket, restore the state ...
//   daemon.ready("/run/perf-persistent/broker.log");       // the starter exits 0
//
// detach() forks twice (the middle process makes a new session, so the
// daemon is not its leader and can never get a controlling terminal). The
// original process never returns from it: it exits 0 when the daemon calls
// ready(), or with the daemon's own exit status when the daemon exits first
// (after printing why on the still-shared stderr). The daemon keeps none of
// the caller's descriptors but 0-2 (stdin moves to /dev/null at once, stdout
// and stderr to the log in ready()), and none of its environment: only
// PATH=kDaemonPath and LANG=C. Its working directory is /, its umask 022.
class Detached {
 public:
  static Result<Detached> detach();

  // Releases the starter; stdout and stderr move to `log_path` (appended,
  // 0600), or to /dev/null when it is empty.
  Status ready(const std::string& log_path);

 private:
  explicit Detached(Fd pipe) : pipe_(std::move(pipe)) {}
  Fd pipe_;
};

// Signals as a readable fd (signalfd): open() blocks them for the calling
// thread, so they arrive only through read(). Closing it discards those still
// pending and unblocks those open() blocked, on the closing thread (the one
// that opened it): a process that no longer reads the fd, and the children it
// forks after, take them again.
class SignalFd {
 public:
  static Result<SignalFd> open(std::initializer_list<int> signals);
  SignalFd(SignalFd&& other) noexcept;
  SignalFd& operator=(SignalFd&& other) noexcept;
  ~SignalFd();
  int fd() const { return fd_.get(); }
  // The next pending signal number; EAGAIN when none is pending.
  Result<int> read();

 private:
  SignalFd(Fd fd, const sigset_t& blocked) : fd_(std::move(fd)), blocked_(blocked) {}
  void close();
  Fd fd_;
  sigset_t blocked_{};  // the signals open() blocked that were not blocked before
};

// An exclusive lock on a file (flock), held while the object lives: one
// broker per run directory. EBUSY (with the holder's pid, which the holder
// writes into the file) when another process holds it.
class LockFile {
 public:
  static Result<LockFile> acquire(const std::string& path);

  // The pid written in the lock file at `path` while some process holds its
  // lock, as the holder wrote it; ENOENT when nobody holds it.
  static Result<pid_t> holder(const std::string& path);

 private:
  explicit LockFile(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

// Sends `signal` to `pid`; ESRCH (it has gone) is not an error.
Status send_signal(pid_t pid, int signal);

}  // namespace pp::sys

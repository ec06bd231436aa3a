#include "tests/kernel/kernel_env.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "sys/kernel.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "tests/support/broker.h"

namespace pp::testing {

bool perf_allowed(std::string* why) {
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.attr.disabled = 1;
  auto fd = sys::real_kernel().perf_event_open(attr, -1, 0, -1, 0);
  if (!fd.ok() && why)
    *why = fd.error().message();
  return fd.ok();
}

std::string tracefs_root() {
  std::string root = sys::default_tracefs_root();
  return sys::Tree(root).exists("events") ? root : "";
}

long tracepoint_id(const std::string& sys, const std::string& name) {
  std::string root = tracefs_root();
  if (root.empty())
    return -1;
  auto text = sys::Tree(root).read("events/" + sys + "/" + name + "/id");
  return text.ok() ? std::strtol(text->c_str(), nullptr, 10) : -1;
}

pid_t workload_pid(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex("pid ([0-9]+)")))
    return -1;
  return pid_t(std::stol(m[1]));
}

int count_getppid(const std::string& script, pid_t pid) {
  int n = 0;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    long p = -1;
    std::string event;
    fields >> p >> event;
    if (p == pid && event.starts_with("syscalls:sys_enter_getppid"))
      n++;
  }
  return n;
}

int perf_script_count(const std::string& file, pid_t pid, std::string* err) {
  CommandResult r = run_command({"perf", "script", "-i", file, "-F", "pid,event"});
  if (err)
    *err = r.err;
  EXPECT_EQ(r.status, 0) << "perf script -i " << file << ": " << r.err;
  return count_getppid(r.out, pid);
}

bool wait_for_record_start(const std::string& file) {
  for (int i = 0; i < 1000; i++) {
    std::ifstream in(file, std::ios::binary);
    uint64_t data_size = 0;
    if (in.seekg(0x30) && in.read(reinterpret_cast<char*>(&data_size), 8) && data_size > 0)
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

GetppidCaller::GetppidCaller(long calls) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0)
    return;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(p[1]);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (::sched_setaffinity(0, sizeof(set), &set) != 0)
      ::_exit(2);
    char go;
    if (::read(p[0], &go, 1) != 1)
      ::_exit(3);
    for (long i = 0; i < calls; i++)
      ::syscall(SYS_getppid);
    ::_exit(0);
  }
  ::close(p[0]);
  if (pid_ < 0)
    ::close(p[1]);
  else
    gate_ = p[1];
}

GetppidCaller::~GetppidCaller() {
  if (gate_ >= 0)
    ::close(gate_);
  if (pid_ > 0 && !reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string GetppidCaller::filter() const {
  return "common_pid == " + std::to_string(pid_);
}

bool GetppidCaller::go() {
  return pid_ > 0 && ::write(gate_, "g", 1) == 1;
}

bool GetppidCaller::wait() {
  if (!reaped_)
    reaped_ = pid_ > 0 && ::waitpid(pid_, &status_, 0) == pid_;
  return reaped_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

bool GetppidCaller::done() {
  if (!reaped_)
    reaped_ = pid_ > 0 && ::waitpid(pid_, &status_, WNOHANG) == pid_;
  return reaped_;
}

void PrivateBrokerTest::SetUp() {
  std::string why;
  PP_SKIP_UNLESS(perf_allowed(&why), why);
  PP_SKIP_UNLESS(tracepoint_id("syscalls", "sys_enter_getppid") >= 0,
                 "no syscalls:sys_enter_getppid in tracefs");
  run_dir_ = tmp_.path("run");
}

void PrivateBrokerTest::TearDown() {
  if (run_dir_.empty())
    return;
  if (pid_t pid = broker_pid(); pid > 0 && sys::process_exists(pid))
    ::kill(pid, SIGCONT);
  EXPECT_TRUE(stop_broker(run_dir_)) << "the broker ignored SIGTERM";
}

CommandResult PrivateBrokerTest::pp(std::vector<std::string> args) const {
  args.push_back("--run-dir=" + run_dir_);
  return run_pp(args);
}

pid_t PrivateBrokerTest::broker_pid() const {
  return testing::broker_pid(run_dir_);
}

}  // namespace pp::testing

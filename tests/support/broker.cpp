#include "tests/support/broker.h"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "sys/process.h"
#include "sys/tree.h"

namespace pp::testing {

pid_t broker_pid(const std::string& run_dir) {
  auto text = sys::Tree(run_dir).read("broker.lock");
  return text.ok() ? pid_t(std::atol(text->c_str())) : 0;
}

bool stop_broker(const std::string& run_dir, int signal) {
  pid_t pid = broker_pid(run_dir);
  if (pid <= 0 || !sys::process_exists(pid))
    return true;
  ::kill(pid, signal);
  for (int i = 0; i < 500 && sys::process_exists(pid); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!sys::process_exists(pid))
    return true;
  ::kill(pid, SIGKILL);
  return false;
}

}  // namespace pp::testing

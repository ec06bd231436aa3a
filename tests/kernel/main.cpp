// The real-kernel test binary, and the workloads its tests run:
//
//   kernel_tests --probe            exit 0 when this machine lets this user open
//                                   perf events, else 1 and why (tests/kernel/run
//                                   uses it to refuse skips on a capable machine)
//   kernel_tests --getppid N        pin to CPU 0, print "pid P" on stderr, make
//                                   exactly N getppid(2) calls
//   kernel_tests --getppid-on C N   the same on CPU C
//   kernel_tests --busy MS          burn CPU for MS milliseconds in
//                                   pp_test_busy_loop(), a function perf report
//                                   must name
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <iostream>
#include <string>

#include "tests/kernel/kernel_env.h"

// Not static and not inlined, so the symbol table has it.
extern "C" uint64_t pp_test_busy_loop(uint64_t ms);
extern "C" __attribute__((noinline)) uint64_t pp_test_busy_loop(uint64_t ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end)
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

namespace {

int getppid_caller(long calls, int cpu = 0) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof(set), &set) != 0) {
    std::perror(("sched_setaffinity CPU " + std::to_string(cpu)).c_str());
    return 2;
  }
  std::cerr << "pid " << ::getpid() << std::endl;
  for (long i = 0; i < calls; i++)
    ::syscall(SYS_getppid);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
    std::string why;
    if (pp::testing::perf_allowed(&why))
      return 0;
    std::cerr << "perf_event_open refused: " << why << "\n";
    return 1;
  }
  if (argc == 3 && std::strcmp(argv[1], "--getppid") == 0)
    return getppid_caller(std::atol(argv[2]));
  if (argc == 4 && std::strcmp(argv[1], "--getppid-on") == 0)
    return getppid_caller(std::atol(argv[3]), std::atoi(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "--busy") == 0) {
    pp_test_busy_loop(std::strtoull(argv[2], nullptr, 10));
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

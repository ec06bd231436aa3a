// The real-kernel test binary. `kernel_tests --probe` answers whether this
// machine lets this user open perf events (exit 0) or not (exit 1, reason on
// stderr); tests/kernel/run uses it to refuse skips on a capable machine.
#include <cstring>
#include <gtest/gtest.h>
#include <iostream>

#include "tests/kernel/kernel_env.h"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
    std::string why;
    if (pp::testing::perf_allowed(&why))
      return 0;
    std::cerr << "perf_event_open refused: " << why << "\n";
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

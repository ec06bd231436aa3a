// Where the tests find the program, the sources and the fixtures: from the
// environment that `make test` sets (PP_BINARY, PP_SOURCE_DIR, PP_BUILD_DIR),
// falling back to the build tree's defaults when a binary is run by hand.
#pragma once

#include <string>

namespace pp::testing {

std::string binary_path();   // the perf-persistent under test
std::string source_dir();    // the repository root
std::string fixtures_dir();  // tests/fixtures: kernel ABI data (tracefs snapshots)
// The bytes of fixtures_dir()/`relative`; a missing or unreadable one fails
// the calling test, naming it, and gives "".
std::string read_fixture(const std::string& relative);
std::string build_dir();
std::string perf_program();  // the real perf: $PP_PERF, else "perf" from PATH

}  // namespace pp::testing

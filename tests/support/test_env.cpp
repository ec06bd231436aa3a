#include "tests/support/test_env.h"

#include <cstdlib>

namespace pp::testing {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

}  // namespace

std::string source_dir() {
  return env_or("PP_SOURCE_DIR", ".");
}
std::string build_dir() {
  return env_or("PP_BUILD_DIR", source_dir() + "/build");
}
std::string binary_path() {
  return env_or("PP_BINARY", build_dir() + "/perf-persistent");
}
std::string perf_program() {
  return env_or("PP_PERF", "perf");
}
std::string fixtures_dir() {
  return source_dir() + "/tests/fixtures";
}

}  // namespace pp::testing

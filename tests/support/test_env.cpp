#include "tests/support/test_env.h"

#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>

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
std::string read_fixture(const std::string& relative) {
  std::string path = fixtures_dir() + "/" + relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ADD_FAILURE() << "cannot read the fixture " << path;
    return "";
  }
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace pp::testing

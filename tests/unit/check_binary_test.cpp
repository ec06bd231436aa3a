// scripts/check-binary, which `make check-binary` runs on the program: the
// built program passes; a program that links test doubles (this test
// program) fails naming them; and a symbol defined in an archive given as
// test-only is caught whatever its name.
#include <unistd.h>

#include <climits>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

std::vector<std::string> test_only_archives() {
  std::vector<std::string> out;
  for (const char* name :
       {"libpp_sys_testing.a", "libpp_report_testing.a", "libpp_tests_support.a"})
    out.push_back(build_dir() + "/lib/" + name);
  return out;
}

CommandResult check_binary(const std::string& program, const std::vector<std::string>& archives) {
  std::vector<std::string> argv = {source_dir() + "/scripts/check-binary", program};
  argv.insert(argv.end(), archives.begin(), archives.end());
  return run_command(argv);
}

std::string this_program() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, size_t(n)) : "";
}

TEST(CheckBinary, TheProgramLinksNoTestDouble) {
  CommandResult r = check_binary(binary_path(), test_only_archives());
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
}

TEST(CheckBinary, AProgramThatLinksTestDoublesFailsNamingThem) {
  CommandResult r = check_binary(this_program(), test_only_archives());
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  for (const char* name : {"in a testing namespace", "pp::sys::testing::FakeKernel::",
                           "pp::report::testing::MemoryOutput::", "testing::Test::", "named fake",
                           "that a test-only archive defines", "pp::testing::run_command("})
    EXPECT_NE(r.err.find(name), std::string::npos) << name << "\n" << r.err;
}

TEST(CheckBinary, AnySymbolOfATestOnlyArchiveIsCaughtWhateverItsName) {
  // Given as test-only, base's own archive: its functions are in the program
  // under names no pattern would catch.
  CommandResult r = check_binary(binary_path(), {build_dir() + "/lib/libpp_base.a"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("that a test-only archive defines"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pp::parse_u64("), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("in a testing namespace"), std::string::npos) << r.err;
}

TEST(CheckBinary, AProgramWithoutSymbolsIsAnError) {
  CommandResult r = check_binary(source_dir() + "/VERSION", {});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot read the symbols of"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pp::testing

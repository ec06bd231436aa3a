// `make install`: the program goes in stripped, its debug info in a
// separate file under the debug directory that the program's
// .gnu_debuglink names, as the package's dh_strip does; INSTALL_STRIP=no
// (the package) installs it as built. The install recipe runs on the
// built program into a temporary DESTDIR (no man pages: MAN_PAGES empty).
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

CommandResult install(const std::string& destdir, const std::string& strip) {
  return run_command({"make", "-s", "-C", source_dir(), "install", "DESTDIR=" + destdir,
                      "BIN=" + binary_path(), "MAN_PAGES=", "PREFIX=/usr",
                      "EXEC_PATH=/usr/lib/perf-core", "INSTALL_STRIP=" + strip});
}

// The section headers readelf lists for `file`.
std::string sections(const std::string& file) {
  return run_command({"readelf", "-S", "-W", file}).out;
}

TEST(Install, TheProgramIsStrippedItsDebugInfoBeside) {
  TempDir dest;
  CommandResult r = install(dest.path(""), "yes");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  std::string program = dest.path("usr/lib/perf-core/perf-persistent");
  std::string debug = dest.path("usr/lib/debug/usr/lib/perf-core/perf-persistent.debug");
  std::string installed = sections(program);
  EXPECT_EQ(installed.find(".debug_info"), std::string::npos) << "not stripped";
  EXPECT_EQ(installed.find(".symtab"), std::string::npos) << "not stripped";
  EXPECT_NE(installed.find(".gnu_debuglink"), std::string::npos) << installed;
  EXPECT_NE(sections(debug).find(".debug_info"), std::string::npos) << "no debug info in " << debug;
  CommandResult version = run_command({program, "--version"});
  EXPECT_EQ(version.status, 0) << version.err;

  TempDir as_built;
  r = install(as_built.path(""), "no");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(sections(as_built.path("usr/lib/perf-core/perf-persistent")).find(".symtab"),
            std::string::npos);
}

}  // namespace
}  // namespace pp::testing

// scripts/check-layers, which `make layers` runs over the tree: on a small
// tree of its own, each kind of forbidden include fails the check with the
// file, the line and the edge; allowed ones pass.
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

// The graph as the Makefile declares it, in the form make layers pipes in.
const char* const kGraph =
    "base:\n"
    "sys: base\n"
    "report: base sys\n"
    "persistent: base sys\n"
    "tests/support: base sys\n"
    "cmd: base sys report persistent\n";

class LayersTest : public ::testing::Test {
 protected:
  LayersTest() {
    tree_.mkdir("scripts");
    run_command({"cp", source_dir() + "/scripts/check-layers", tree_.path("scripts/check-layers")});
    tree_.write("base/result.h", "#pragma once\n");
    tree_.write("sys/kernel.h", "#include \"base/result.h\"\n");
    tree_.write("sys/testing/fake_kernel.h", "#include \"sys/kernel.h\"\n");
    tree_.write("report/writer.cpp", "#include \"sys/kernel.h\"\n");
    tree_.write("persistent/backend.h", "#include \"sys/kernel.h\"\n");
    tree_.write("persistent/backend_test.cpp",
                "#include \"persistent/backend.h\"\n#include \"sys/testing/fake_kernel.h\"\n"
                "#include \"tests/support/temp_dir.h\"\n");
    tree_.write("tests/support/temp_dir.h", "#include \"base/result.h\"\n");
    tree_.write("cmd/main.cpp", "#include \"persistent/backend.h\"\n#include \"build_info.h\"\n");
  }

  CommandResult check(const std::string& graph = kGraph) {
    CommandOptions options;
    options.input = graph;
    return run_command({tree_.path("scripts/check-layers")}, options);
  }

  TempDir tree_;
};

TEST_F(LayersTest, AllowedIncludesPass) {
  CommandResult r = check();
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

TEST_F(LayersTest, AnIncludeAcrossAForbiddenEdgeFailsNamingFileLineAndEdge) {
  tree_.write("report/writer.cpp",
              "#include \"sys/kernel.h\"\n#include \"persistent/backend.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("report/writer.cpp:2: includes persistent/backend.h: report may not "
                       "depend on persistent"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, AProjectHeaderInAngleBracketsIsCheckedToo) {
  // The tree root is on the include path, so <persistent/backend.h> is the
  // module; <sys/mman.h> is the system's (the tree's sys/ has no mman.h).
  tree_.write("report/writer.cpp",
              "#include <sys/mman.h>\n#include <sys/kernel.h>\n#include <persistent/backend.h>\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("report/writer.cpp:3: includes persistent/backend.h: report may not "
                       "depend on persistent"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("writer.cpp:1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("writer.cpp:2"), std::string::npos) << r.out;
}

TEST_F(LayersTest, DotDotIsResolvedBeforeTheModuleIsDecided) {
  // The compiler opens persistent/backend.h: the edge is report -> persistent
  // however the path is spelled, and the spelling itself is refused.
  tree_.write("report/writer.cpp",
              "#include \"sys/kernel.h\"\n#include \"report/../persistent/backend.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("report/writer.cpp:2: includes report/../persistent/backend.h (persistent/"
                       "backend.h): report may not depend on persistent"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("report/writer.cpp:2: includes report/../persistent/backend.h, which is "
                       "persistent/backend.h: write the path from the tree root"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, AnyOtherSpellingThanFromTheTreeRootIsRefusedEvenWhenTheEdgeIsAllowed) {
  // Each of these opens an allowed file; only the spelling is wrong. The
  // quoted "../sys/kernel.h" and "kernel.h" are found beside the includer,
  // as the compiler finds them.
  tree_.write("report/writer.cpp",
              "#include \"../sys/kernel.h\"\n#include <./sys/kernel.h>\n"
              "#include \"sys//kernel.h\"\n");
  tree_.write("sys/ring.h", "#include \"kernel.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("report/writer.cpp:1: includes ../sys/kernel.h, which is sys/kernel.h"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("report/writer.cpp:2: includes ./sys/kernel.h, which is sys/kernel.h"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("report/writer.cpp:3: includes sys//kernel.h, which is sys/kernel.h"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sys/ring.h:1: includes kernel.h, which is sys/kernel.h"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("may not depend"), std::string::npos) << r.out;
}

TEST_F(LayersTest, AnAngleIncludeWithDotDotIsResolvedToo) {
  tree_.write("report/writer.cpp", "#include <report/../persistent/backend.h>\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("report/writer.cpp:1: includes report/../persistent/backend.h (persistent/"
                       "backend.h): report may not depend on persistent"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, APathOutOfTheTreeIsRefused) {
  tree_.write("sys/kernel.h", "#include \"../../etc/passwd.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("sys/kernel.h:1: includes ../../etc/passwd.h: a path out of the tree"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, LibraryCodeMayNotIncludeTestDoubles) {
  tree_.write("persistent/backend.h", "#include \"sys/testing/fake_kernel.h\"\n");
  tree_.write("cmd/main.cpp", "#include \"tests/support/temp_dir.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("persistent/backend.h:1: includes sys/testing/fake_kernel.h: persistent may "
                       "not depend on sys/testing (test-only code"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cmd/main.cpp:1: includes tests/support/temp_dir.h"), std::string::npos)
      << r.out;
}

TEST_F(LayersTest, AnExceptionAllowsOneFileAndSaysWhenItIsNoLongerNeeded) {
  tree_.write("report/writer.cpp", "#include \"persistent/backend.h\"\n");
  CommandResult r = check(std::string(kGraph) + "except report/writer.cpp:persistent\n");
  EXPECT_EQ(r.status, 0) << r.out;

  tree_.write("report/writer.cpp", "#include \"sys/kernel.h\"\n");
  r = check(std::string(kGraph) + "except report/writer.cpp:persistent\n");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the exception report/writer.cpp:persistent is not needed any more"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, AModuleMayDependOnlyOnModulesListedBeforeIt) {
  CommandResult r = check("base:\nsys: base report\nreport: base sys\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("DEPS_sys names report, which is not a module listed before sys"),
            std::string::npos)
      << r.out;
}

TEST_F(LayersTest, AnUnknownFolderFails) {
  tree_.write("sys/kernel.h", "#include \"nosuch/thing.h\"\n");
  CommandResult r = check();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("sys/kernel.h:1: includes nosuch/thing.h: no module nosuch"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace pp::testing

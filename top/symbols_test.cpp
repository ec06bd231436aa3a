// The symbolizer against fake proc roots (kallsyms, maps, copied and broken
// ELF files) and against this test process itself (its own functions and
// libc's), with the file reads it makes counted.
#include "top/symbols.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <ostream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace pp::top {

// Failures print the hit, not its bytes.
void PrintTo(const SymbolHit& hit, std::ostream* out);  // NOLINT(readability-identifier-naming)
void PrintTo(                                           // NOLINT(readability-identifier-naming)
    const SymbolHit& hit, std::ostream* out) {
  *out << "{" << hit.symbol << ", " << hit.dso << (hit.kernel ? ", kernel}" : "}");
}

// A function of this binary whose samples the real-process tests resolve: not
// inlined, so it has its own symbol; a loop, so it is longer than a byte.
namespace symbols_test_fixture {
int known_function(int n);
__attribute__((noinline)) int known_function(int n) {
  volatile int sum = 0;
  for (int i = 0; i < n; i++)
    sum = sum + i * 3;
  return sum;
}
}  // namespace symbols_test_fixture

namespace {

constexpr const char* kKnownFunction = "pp::top::symbols_test_fixture::known_function(int)";

uint64_t known_function_address() {
  return reinterpret_cast<uint64_t>(&symbols_test_fixture::known_function);
}

std::string exe_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

// ---- kernel ----

// Out of order on purpose, with a zero (hidden) address, aliases at one
// address, a data symbol bounding the text before it, and a module.
constexpr const char* kKallsyms =
    "ffffffff81000200 t helper_two\n"
    "0000000000000000 A fixed_percpu_data\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000100 T do_one\n"
    "ffffffff81000300 W weak_three\n"
    "ffffffff81000400 D some_data\n"
    "ffffffffc0001000 t ext4_fill_super\t[ext4]\n"
    "ffffffffc0001100 T ext4_mount\t[ext4]\n"
    "garbage line\n"
    "ffffffffc00\n";

TEST(SymbolizerKernel, NamesTheSymbolAtOrBelowTheAddress) {
  pp::testing::TempDir root;
  root.write("kallsyms", kKallsyms);
  Symbolizer symbols(root.path());
  auto at = [&](uint64_t ip) { return symbols.resolve(1, ip, true); };
  EXPECT_EQ(at(0xffffffff81000100), (SymbolHit{"do_one", "[kernel.kallsyms]", true}));
  EXPECT_EQ(at(0xffffffff81000150), (SymbolHit{"do_one", "[kernel.kallsyms]", true}));
  EXPECT_EQ(at(0xffffffff810000ff).symbol, "_stext");  // the longer of two aliases
  EXPECT_EQ(at(0xffffffff810001ff).symbol, "do_one");
  EXPECT_EQ(at(0xffffffff81000200).symbol, "helper_two");
  EXPECT_EQ(at(0xffffffff81000310).symbol, "weak_three");
  EXPECT_EQ(at(0xffffffff810003ff).symbol, "weak_three");
  // Before the first symbol, and in data after the last text symbol.
  EXPECT_EQ(at(0xffffffff80ffffff), (SymbolHit{"[unknown]", "[kernel.kallsyms]", true}));
  EXPECT_EQ(at(0xffffffff81000400).symbol, "[unknown]");
  EXPECT_EQ(at(0x1000).symbol, "[unknown]");
  // Module symbols name the module as their dso.
  EXPECT_EQ(at(0xffffffffc0001050), (SymbolHit{"ext4_fill_super", "[ext4]", true}));
  // Past the last symbol: that symbol while near, unknown when far.
  EXPECT_EQ(at(0xffffffffc0001100 + 0x800), (SymbolHit{"ext4_mount", "[ext4]", true}));
  EXPECT_EQ(at(0xffffffffc0001100 + (2 << 20)).symbol, "[unknown]");
  EXPECT_EQ(symbols.stats().kallsyms_reads, 1u);
  EXPECT_EQ(symbols.stats().lookups, 13u);
  EXPECT_EQ(symbols.stats().maps_reads, 0u);
}

TEST(SymbolizerKernel, ZeroedKallsymsResolvesNothing) {
  pp::testing::TempDir root;
  root.write("kallsyms",
             "0000000000000000 T _text\n"
             "0000000000000000 T do_one\n"
             "0000000000000000 t ext4_mount\t[ext4]\n");
  Symbolizer symbols(root.path());
  EXPECT_EQ(symbols.resolve(1, 0xffffffff81000100, true),
            (SymbolHit{"[unknown]", "[kernel.kallsyms]", true}));
  EXPECT_EQ(symbols.resolve(1, 0, true).symbol, "[unknown]");
  EXPECT_EQ(symbols.stats().kallsyms_reads, 1u);
}

TEST(SymbolizerKernel, MissingKallsymsIsReadOnce) {
  pp::testing::TempDir root;
  Symbolizer symbols(root.path());
  EXPECT_EQ(symbols.resolve(1, 0xffffffff81000100, true).symbol, "[unknown]");
  EXPECT_EQ(symbols.resolve(1, 0xffffffff81000100, true).symbol, "[unknown]");
  EXPECT_EQ(symbols.stats().kallsyms_reads, 1u);
  EXPECT_EQ(symbols.stats().lookups, 2u);
}

// ---- this process ----

TEST(SymbolizerProcess, NamesAFunctionOfThisBinaryDemangled) {
  Symbolizer symbols("/proc");
  uint64_t ip = known_function_address();
  SymbolHit start = symbols.resolve(getpid(), ip, false);
  EXPECT_EQ(start, (SymbolHit{kKnownFunction, exe_path(), false}));
  EXPECT_EQ(symbols.resolve(getpid(), ip + 4, false).symbol, kKnownFunction);
  EXPECT_EQ(symbols_test_fixture::known_function(3), 9);  // it is a real function
}

// A libc function names what the dynamic linker names it.
void expect_libc_function(Symbolizer* symbols, const char* name) {
  // libc's own definition, not a sanitizer's interceptor of the same name.
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  void* address = dlsym(libc, name);
  dlclose(libc);
  ASSERT_NE(address, nullptr) << name;
  Dl_info info{};
  ASSERT_NE(dladdr(address, &info), 0) << name;
  ASSERT_NE(info.dli_sname, nullptr) << name;
  SymbolHit hit = symbols->resolve(getpid(), reinterpret_cast<uint64_t>(address), false);
  EXPECT_TRUE(hit.dso.ends_with("/libc.so.6")) << hit.dso;
  EXPECT_EQ(hit.symbol, info.dli_sname) << name;
  EXPECT_FALSE(hit.kernel);
}

TEST(SymbolizerProcess, NamesLibcFunctionsAsDladdrDoes) {
  Symbolizer symbols("/proc");
  expect_libc_function(&symbols, "getppid");
  expect_libc_function(&symbols, "getpid");
  expect_libc_function(&symbols, "sched_yield");
  EXPECT_EQ(symbols.stats().maps_reads, 1u);
  EXPECT_EQ(symbols.stats().elf_reads, 1u);  // libc, once
}

TEST(SymbolizerProcess, ASecondLookupReadsNoFile) {
  Symbolizer symbols("/proc");
  uint64_t ip = known_function_address();
  SymbolHit first = symbols.resolve(getpid(), ip, false);
  SymbolHit second = symbols.resolve(getpid(), ip, false);
  EXPECT_EQ(first.symbol, kKnownFunction);
  EXPECT_EQ(first, second);
  EXPECT_EQ(symbols.stats().maps_reads, 1u);
  EXPECT_EQ(symbols.stats().elf_reads, 1u);
  EXPECT_EQ(symbols.stats().lookups, 2u);
}

TEST(SymbolizerProcess, TwoProcessesOfOneBinaryReadItOnceAndForgetRereadsMaps) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;)
      pause();
  }
  Symbolizer symbols("/proc");
  uint64_t ip = known_function_address();
  SymbolHit in_parent = symbols.resolve(getpid(), ip, false);
  SymbolHit in_child = symbols.resolve(child, ip, false);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(in_parent.symbol, kKnownFunction);
  EXPECT_EQ(in_child, in_parent);
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
  EXPECT_EQ(symbols.stats().elf_reads, 1u);

  symbols.forget(getpid());
  EXPECT_EQ(symbols.resolve(getpid(), ip, false).symbol, kKnownFunction);
  EXPECT_EQ(symbols.stats().maps_reads, 3u);
  EXPECT_EQ(symbols.stats().elf_reads, 1u);  // files stay cached
}

// ---- fake proc roots ----

// The lines of this process's maps that map `path`, renamed to `as` with
// the inode `inode`.
std::string maps_of(const std::string& path, const std::string& as, int inode) {
  std::istringstream in(read_file("/proc/self/maps"));
  std::string out, line;
  while (std::getline(in, line)) {
    if (!line.ends_with(" " + path))
      continue;
    std::istringstream fields(line);
    std::string range, perms, pgoff, dev, ino;
    fields >> range >> perms >> pgoff >> dev >> ino;
    std::ostringstream line_out;
    line_out << range << ' ' << perms << ' ' << pgoff << ' ' << dev << ' ' << inode << "    " << as
             << '\n';
    out += line_out.str();
  }
  return out;
}

TEST(SymbolizerFakeRoot, ReadsACopiedBinaryThroughTheProcessRoot) {
  pp::testing::TempDir root;
  // A copy of this binary, and a link to that copy named as another file
  // (another inode in its maps): one build id.
  root.mkdir("100/root/bin");
  root.mkdir("200/root/opt");
  std::filesystem::copy_file(exe_path(), root.path("100/root/bin/prog"));
  std::filesystem::create_symlink(root.path("100/root/bin/prog"),
                                  root.path("200/root/opt/prog-copy"));
  std::string maps100 = maps_of(exe_path(), "/bin/prog", 11);
  ASSERT_FALSE(maps100.empty());
  root.write("100/maps", maps100);
  root.write("200/maps", maps_of(exe_path(), "/opt/prog-copy", 22));
  Symbolizer symbols(root.path());
  uint64_t ip = known_function_address();
  EXPECT_EQ(symbols.resolve(100, ip, false), (SymbolHit{kKnownFunction, "/bin/prog", false}));
  // Another file with the same build id: its symbols are not read again.
  EXPECT_EQ(symbols.resolve(200, ip, false), (SymbolHit{kKnownFunction, "/opt/prog-copy", false}));
  EXPECT_EQ(symbols.stats().elf_reads, 1u);
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
}

TEST(SymbolizerFakeRoot, BrokenFilesAndOddMapsGiveUnknown) {
  pp::testing::TempDir root;
  std::string exe_start(100, '\0');
  std::ifstream(exe_path(), std::ios::binary).read(exe_start.data(), 100);
  ASSERT_EQ(exe_start.substr(0, 4),
            "\x7f"
            "ELF");
  root.write("7/root/bin/notelf", "#!/bin/sh\necho not an ELF file\n");
  root.write("7/root/bin/truncated", exe_start);
  root.write("7/root/bin/empty", "");
  root.write("7/maps",
             "garbage\n"
             "7f0000000000-\n"
             "7f0000000000-7f0000001000 r-xp\n"
             "zz00000000-7f0000001000 r-xp 00000000 08:01 1 /bin/notelf\n"
             "7f0000005000-7f0000004000 r-xp 00000000 08:01 1 /bin/notelf\n"
             "7f0000001000-7f0000002000 r-xp 00000000 08:01 1 /bin/notelf\n"
             "7f0000002000-7f0000003000 r-xp 00001000 08:01 2 /bin/truncated\n"
             "7f0000003000-7f0000004000 r-xp 00000000 08:01 3 /bin/empty\n"
             "7f0000004000-7f0000005000 r-xp 00000000 08:01 4 /bin/missing\n"
             "7f0000005000-7f0000006000 rw-p 00000000 00:00 0 \n"
             "7f0000006000-7f0000007000 r-xp 00000000 00:00 0                  [vdso]\n"
             "7f0000007000-7f0000008000 r-xp 00000000 08:01 5 /bin/with space (deleted)");
  Symbolizer symbols(root.path());
  auto at = [&](uint64_t ip) { return symbols.resolve(7, ip, false); };
  EXPECT_EQ(at(0x7f0000001010), (SymbolHit{"[unknown]", "/bin/notelf", false}));
  EXPECT_EQ(at(0x7f0000002010), (SymbolHit{"[unknown]", "/bin/truncated", false}));
  EXPECT_EQ(at(0x7f0000003010), (SymbolHit{"[unknown]", "/bin/empty", false}));
  EXPECT_EQ(at(0x7f0000004010), (SymbolHit{"[unknown]", "/bin/missing", false}));
  EXPECT_EQ(at(0x7f0000005010), (SymbolHit{"[unknown]", "[unknown]", false}));
  EXPECT_EQ(at(0x7f0000006010), (SymbolHit{"[unknown]", "[vdso]", false}));
  EXPECT_EQ(at(0x7f0000007010), (SymbolHit{"[unknown]", "/bin/with space (deleted)", false}));
  // Again: nothing is read twice.
  uint64_t elf_reads = symbols.stats().elf_reads;
  EXPECT_EQ(at(0x7f0000001010).symbol, "[unknown]");
  EXPECT_EQ(at(0x7f0000002010).symbol, "[unknown]");
  EXPECT_EQ(symbols.stats().elf_reads, elf_reads);
  EXPECT_EQ(symbols.stats().maps_reads, 1u);
}

TEST(SymbolizerFakeRoot, AnUnreadablePidIsAskedOnceForAWhile) {
  pp::testing::TempDir root;
  Symbolizer symbols(root.path());
  EXPECT_EQ(symbols.resolve(4242, 0x400000, false), (SymbolHit{"[unknown]", "[unknown]", false}));
  EXPECT_EQ(symbols.resolve(4242, 0x400010, false), (SymbolHit{"[unknown]", "[unknown]", false}));
  EXPECT_EQ(symbols.stats().maps_reads, 1u);
  // forget() drops the negative entry too.
  symbols.forget(4242);
  symbols.resolve(4242, 0x400000, false);
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
}

TEST(SymbolizerFakeRoot, AnAddressInNoMappingRereadsTheMapsOnce) {
  pp::testing::TempDir root;
  root.write("9/maps", "7f0000001000-7f0000002000 r--p 00000000 08:01 1 /lib/a.so\n");
  Symbolizer symbols(root.path());
  EXPECT_EQ(symbols.resolve(9, 0x7f0000001000, false).dso, "/lib/a.so");
  EXPECT_EQ(symbols.stats().maps_reads, 1u);
  // A new mapping appears (dlopen): the first miss finds it.
  root.write("9/maps",
             "7f0000001000-7f0000002000 r--p 00000000 08:01 1 /lib/a.so\n"
             "7f0000003000-7f0000004000 r--p 00000000 08:01 2 /lib/b.so\n");
  EXPECT_EQ(symbols.resolve(9, 0x7f0000003800, false).dso, "/lib/b.so");
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
  // An address mapped nowhere: not a file read per sample.
  EXPECT_EQ(symbols.resolve(9, 0x10, false).dso, "[unknown]");
  EXPECT_EQ(symbols.resolve(9, 0x20, false).dso, "[unknown]");
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
  EXPECT_EQ(symbols.resolve(9, 0x7f0000001000, false).dso, "/lib/a.so");
  EXPECT_EQ(symbols.stats().maps_reads, 2u);
  EXPECT_EQ(symbols.stats().lookups, 5u);
}

}  // namespace
}  // namespace pp::top

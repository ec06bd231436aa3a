// perf.data from report/'s writer, read by the real perf (6.1): samples the
// kernel wrote for real, in file mode and through a pipe, with losses, on a
// full disk, from a writer killed midway, a cpu-clock profile perf report
// must name, the MCE snapshot decoded by perf script; and report/'s reader
// on what perf record wrote.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "base/strings.h"
#include "report/perf_data_reader.h"
#include "report/perf_data_writer.h"
#include "sys/fd.h"
#include "tests/kernel/kernel_env.h"
#include "tests/kernel/report_capture.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

// A function the cpu-clock test spends its time in, by a name perf report
// must find (extern "C": no mangling; noinline: its own symbol).
extern "C" uint64_t pp_report_test_busy_loop(uint64_t iterations);
extern "C" __attribute__((noinline)) uint64_t pp_report_test_busy_loop(uint64_t iterations) {
  volatile uint64_t x = 1;
  for (uint64_t i = 0; i < iterations; i++)
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  return x;
}

namespace pp::testing {
namespace {

using report::Bytes;
using report::PerfDataReader;
using report::PerfDataRecord;
using report::PerfDataWriter;
using report::WriterConfig;

constexpr int kCalls = 2000;
constexpr size_t kRingPages = 64;  // 256 KiB a CPU: room for 2000 80-byte samples

struct Getppid {
  Bytes records;
  std::vector<uint64_t> ids;
  uint64_t tracepoint = 0;
};

// `calls` getppid system calls on CPU 0 with the tracepoint open on every
// CPU, filtered to this process so that nothing else lands in the rings.
Result<Getppid> capture_getppid(int calls) {
  Getppid out;
  out.tracepoint = uint64_t(tracepoint_id("syscalls", "sys_enter_getppid"));
  PP_ASSIGN_OR_RETURN(auto capture,
                      PerCpuCapture::open(tracepoint_attr(out.tracepoint), kRingPages,
                                          "common_pid == " + std::to_string(getpid())));
  PP_RETURN_IF_ERROR(run_on_cpu(0, [&] {
    for (int i = 0; i < calls; i++)
      syscall(SYS_getppid);
  }));
  PP_ASSIGN_OR_RETURN(out.records, capture.drain());
  out.ids = capture.ids();
  return out;
}

WriterConfig getppid_config(const Getppid& g) {
  WriterConfig config;
  config.events.push_back({tracepoint_attr(g.tracepoint), "syscalls:sys_enter_getppid", g.ids});
  config.cmdline = {"kernel_tests", "report"};
  config.tracefs_root = tracefs_root();
  return config;
}

// The real perf's line count of sys_enter_getppid samples, and how many of
// them name this process on CPU 0 ("kernel_tests  1234 [000] ...").
struct ScriptCounts {
  int lines = 0;
  int ours = 0;
};

ScriptCounts count_script(const std::string& out) {
  ScriptCounts counts;
  std::string pid = std::to_string(getpid());
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.find("syscalls:sys_enter_getppid:") == std::string::npos)
      continue;
    counts.lines++;
    std::istringstream fields(line);
    std::string comm, tid, cpu;
    fields >> comm >> tid >> cpu;
    if (tid == pid && cpu == "[000]")
      counts.ours++;
  }
  return counts;
}

// "SAMPLE events: 2000" from perf report's stats table (the first one, the
// aggregate); -1 when the line is not there.
long stat_count(const std::string& out, const std::string& type) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::string_view t = trim(line);
    std::string key = type + " events:";
    if (!starts_with(t, key))
      continue;
    return std::strtol(std::string(t.substr(key.size())).c_str(), nullptr, 10);
  }
  return -1;
}

std::string context(const CommandResult& r) {
  return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out.substr(0, 3000) +
         "\nstderr:\n" + r.err.substr(0, 3000);
}

#define PP_SKIP_UNLESS_PERF_AND_GETPPID()                                                \
  do {                                                                                   \
    std::string why;                                                                     \
    PP_SKIP_UNLESS(perf_allowed(&why), why);                                             \
    PP_SKIP_UNLESS(tracepoint_id("syscalls", "sys_enter_getppid") >= 0,                  \
                   "no syscalls:sys_enter_getppid tracepoint (CONFIG_FTRACE_SYSCALLS)"); \
  } while (0)

TEST(ReportPerfData, GetppidFileReadByPerfScriptAndReport) {
  PP_SKIP_UNLESS_PERF_AND_GETPPID();
  auto g = capture_getppid(kCalls);
  ASSERT_TRUE(g.ok()) << g.error().message();
  TempDir dir;
  std::string path = dir.path("perf.data");
  auto writer = PerfDataWriter::create_file(path, getppid_config(*g));
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE((*writer)->append(g->records).ok());
  ASSERT_TRUE((*writer)->finish().ok());
  EXPECT_EQ((*writer)->stats().samples, uint64_t(kCalls));

  CommandResult script = run_command({"perf", "script", "-i", path});
  ASSERT_EQ(script.status, 0) << context(script);
  ScriptCounts counts = count_script(script.out);
  EXPECT_EQ(counts.lines, kCalls) << context(script);
  EXPECT_EQ(counts.ours, kCalls) << context(script);
  // The synthesised COMM names the process.
  EXPECT_NE(script.out.find("kernel_tests"), std::string::npos) << context(script);

  CommandResult stats = run_command({"perf", "report", "--stats", "-i", path});
  ASSERT_EQ(stats.status, 0) << context(stats);
  EXPECT_EQ(stat_count(stats.out, "SAMPLE"), kCalls) << context(stats);
  EXPECT_EQ(stat_count(stats.out, "LOST"), -1) << "no loss: " << context(stats);
  EXPECT_EQ(stats.err.find("lost"), std::string::npos) << context(stats);

  // perf's own view of the header: our features, no complaint.
  CommandResult header = run_command({"perf", "report", "--header-only", "-i", path});
  ASSERT_EQ(header.status, 0) << context(header);
  EXPECT_NE(header.out.find("# event : name = syscalls:sys_enter_getppid"), std::string::npos)
      << context(header);
  EXPECT_NE(header.out.find("# cmdline : kernel_tests report"), std::string::npos)
      << context(header);
  EXPECT_NE(header.out.find("# nrcpus online"), std::string::npos) << context(header);
  EXPECT_EQ(header.err.find("WARNING"), std::string::npos) << context(header);
}

// Runs `perf ARGS -i -` reading from a pipe that `feed` writes into, the
// output to a file (no deadlock whatever the sizes).
CommandResult perf_from_pipe(const std::vector<std::string>& args,
                             const std::function<void(int fd)>& feed) {
  CommandResult result;
  TempDir dir;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0)
    return result;
  std::string out_path = dir.path("out"), err_path = dir.path("err");
  pid_t pid = fork();
  if (pid == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(p[0], 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>("perf"));
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(const_cast<char*>("-i"));
    argv.push_back(const_cast<char*>("-"));
    argv.push_back(nullptr);
    execvp("perf", argv.data());
    _exit(127);
  }
  close(p[0]);
  std::signal(SIGPIPE, SIG_IGN);
  feed(p[1]);
  close(p[1]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream out(out_path), err(err_path);
  std::stringstream o, e;
  o << out.rdbuf();
  e << err.rdbuf();
  result.out = o.str();
  result.err = e.str();
  return result;
}

TEST(ReportPerfData, GetppidThroughAPipe) {
  PP_SKIP_UNLESS_PERF_AND_GETPPID();
  auto g = capture_getppid(kCalls);
  ASSERT_TRUE(g.ok()) << g.error().message();
  // Small buffer: the stream goes out in many writes while perf reads it.
  WriterConfig config = getppid_config(*g);
  config.buffer_size = 64 << 10;
  auto write_stream = [&](int fd) {
    auto writer = PerfDataWriter::create_pipe(fd, config, "the pipe to perf");
    ASSERT_TRUE(writer.ok()) << writer.error().message();
    EXPECT_TRUE((*writer)->pipe_mode());
    ASSERT_TRUE((*writer)->append(g->records).ok());
    ASSERT_TRUE((*writer)->finish().ok());
    EXPECT_GT((*writer)->stats().write_calls, 2u);
  };

  CommandResult script = perf_from_pipe({"script"}, write_stream);
  ASSERT_EQ(script.status, 0) << context(script);
  ScriptCounts counts = count_script(script.out);
  EXPECT_EQ(counts.lines, kCalls) << context(script);
  EXPECT_EQ(counts.ours, kCalls) << context(script);

  // perf 6.1's report --stats stops at the tracing data of a pipe (its own
  // pipes too: "unexpected end of event stream"); report -D reads it all
  // and ends with the same stats table.
  CommandResult dump = perf_from_pipe({"report", "-D"}, write_stream);
  ASSERT_EQ(dump.status, 0) << context(dump);
  EXPECT_EQ(stat_count(dump.out, "SAMPLE"), kCalls) << context(dump);
  EXPECT_EQ(stat_count(dump.out, "LOST"), -1) << context(dump);
}

TEST(ReportPerfData, ReportedLossesShowInPerfReport) {
  PP_SKIP_UNLESS_PERF_AND_GETPPID();
  auto g = capture_getppid(100);
  ASSERT_TRUE(g.ok()) << g.error().message();
  TempDir dir;
  std::string path = dir.path("perf.data");
  auto writer = PerfDataWriter::create_file(path, getppid_config(*g));
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE((*writer)->append(g->records).ok());
  ASSERT_TRUE((*writer)->append_lost({.id = g->ids.back(), .lost = 4321, .cpu = 1}).ok());
  ASSERT_TRUE((*writer)->finish().ok());
  EXPECT_EQ((*writer)->stats().lost, 4321u);

  CommandResult stats = run_command({"perf", "report", "--stats", "-i", path});
  ASSERT_EQ(stats.status, 0) << context(stats);
  EXPECT_EQ(stat_count(stats.out, "SAMPLE"), 100) << context(stats);
  EXPECT_EQ(stat_count(stats.out, "LOST"), 1) << context(stats);

  CommandResult dump = run_command({"perf", "report", "-D", "-i", path});
  ASSERT_EQ(dump.status, 0) << context(dump);
  EXPECT_NE(dump.out.find("PERF_RECORD_LOST: id:" + std::to_string(g->ids.back()) + ": lost:4321"),
            std::string::npos)
      << context(dump);
}

// A private mount namespace with a small tmpfs, undone when it goes (and
// gone with the process should the test die).
class SmallTmpfs {
 public:
  SmallTmpfs(const std::string& dir, size_t bytes) : dir_(dir) {
    saved_ns_ = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (saved_ns_ < 0 || unshare(CLONE_NEWNS) != 0) {
      error_ = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
      return;
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      error_ = std::string("making / private: ") + std::strerror(errno);
      return;
    }
    std::string options = "size=" + std::to_string(bytes);
    if (mount("pp-test-tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      error_ = std::string("mounting tmpfs: ") + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_)
      umount2(dir_.c_str(), MNT_DETACH);
    if (saved_ns_ >= 0) {
      setns(saved_ns_, CLONE_NEWNS);
      close(saved_ns_);
    }
  }
  const std::string& error() const { return error_; }

 private:
  std::string dir_;
  int saved_ns_ = -1;
  bool mounted_ = false;
  std::string error_;
};

TEST(ReportPerfData, FullDiskLeavesAFilePerfReads) {
  PP_SKIP_UNLESS_PERF_AND_GETPPID();
  auto g = capture_getppid(kCalls);
  ASSERT_TRUE(g.ok()) << g.error().message();
  TempDir dir;
  dir.mkdir("small");
  std::string path = dir.path("small/perf.data");
  constexpr size_t kDisk = 1 << 20;
  {
    SmallTmpfs tmpfs(dir.path("small"), kDisk);
    ASSERT_EQ(tmpfs.error(), "");
    WriterConfig config = getppid_config(*g);
    config.buffer_size = 256 << 10;
    auto writer = PerfDataWriter::create_file(path, config);
    ASSERT_TRUE(writer.ok()) << writer.error().message();
    Status full = ok_status();
    int batches = 0;
    while (full.ok() && batches < 100) {
      full = (*writer)->append(g->records);
      batches++;
    }
    ASSERT_FALSE(full.ok()) << "1 MiB never filled";
    EXPECT_EQ(full.error().code(), ENOSPC);
    EXPECT_NE(full.error().message().find("no space left"), std::string::npos)
        << full.error().message();
    Status finished = (*writer)->finish();
    ASSERT_FALSE(finished.ok());
    EXPECT_EQ(finished.error().code(), ENOSPC);
    const report::WriterStats& stats = (*writer)->stats();
    EXPECT_GT(stats.samples, uint64_t(kCalls));
    EXPECT_GT(stats.dropped_samples, 0u);
    EXPECT_EQ(stats.samples + stats.dropped_samples, uint64_t(batches) * kCalls);
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(uint64_t(st.st_size), stats.file_bytes);
    EXPECT_LE(uint64_t(st.st_size), kDisk);

    // perf reads the file on the full disk: every sample the writer kept.
    CommandResult script = run_command({"perf", "script", "-i", path});
    ASSERT_EQ(script.status, 0) << context(script);
    ScriptCounts counts = count_script(script.out);
    EXPECT_EQ(uint64_t(counts.lines), stats.samples) << context(script);
    EXPECT_EQ(counts.ours, counts.lines);
    CommandResult report = run_command({"perf", "report", "--stats", "-i", path});
    ASSERT_EQ(report.status, 0) << context(report);
    EXPECT_EQ(stat_count(report.out, "SAMPLE"), long(stats.samples)) << context(report);
  }
}

TEST(ReportPerfData, CpuClockProfileNamesTheBusyFunction) {
  std::string why;
  PP_SKIP_UNLESS(perf_allowed(&why), why);
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.attr.sample_period = 250000;  // 4 kHz
  attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;
  attr.attr.sample_id_all = 1;
  auto capture = PerCpuCapture::open(attr, 256);
  ASSERT_TRUE(capture.ok()) << capture.error().message();
  uint64_t sink = 0;
  ASSERT_TRUE(run_on_cpu(0, [&] {
                struct timespec start, now;
                clock_gettime(CLOCK_MONOTONIC, &start);
                do {
                  sink += pp_report_test_busy_loop(1000000);
                  clock_gettime(CLOCK_MONOTONIC, &now);
                } while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec <
                         300000000L);
              }).ok());
  auto records = capture->drain();
  ASSERT_TRUE(records.ok()) << records.error().message();
  EXPECT_NE(sink, 0u);

  TempDir dir;
  std::string path = dir.path("perf.data");
  WriterConfig config;
  config.events.push_back({attr, "cpu-clock", capture->ids()});
  config.cmdline = {"kernel_tests"};
  auto writer = PerfDataWriter::create_file(path, config);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE((*writer)->append(*records).ok());
  ASSERT_TRUE((*writer)->finish().ok());
  EXPECT_GT((*writer)->stats().samples, 500u);

  // This process's samples, by symbol: the busy function comes first.
  CommandResult report = run_command({"perf", "report", "-i", path, "--stdio", "--comms",
                                      "kernel_tests", "--sort", "dso,sym", "--percent-limit", "5"});
  ASSERT_EQ(report.status, 0) << context(report);
  std::string first;
  std::istringstream in(report.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') {
      first = line;
      break;
    }
  EXPECT_NE(first.find("pp_report_test_busy_loop"), std::string::npos) << context(report);
  EXPECT_NE(first.find("kernel_tests"), std::string::npos) << "the dso: " << context(report);
  EXPECT_EQ(report.err.find("restricted"), std::string::npos) << context(report);

  // The kernel's build-id went in with the kernel map.
  CommandResult kernel = run_command({"perf", "buildid-list", "--kernel"});
  ASSERT_EQ(kernel.status, 0) << context(kernel);
  CommandResult ids = run_command({"perf", "buildid-list", "-i", path});
  ASSERT_EQ(ids.status, 0) << context(ids);
  EXPECT_NE(ids.out.find(std::string(trim(kernel.out)) + " [kernel.kallsyms]"), std::string::npos)
      << context(ids);
}

TEST(ReportPerfData, MceRecordFromTheSnapshotDecodesInPerfScript) {
  // The Debian 6.1 mce:mce_record format and a hand-built 116-byte raw
  // sample in its layout: perf script must print the decoded fields.
  WriterConfig config;
  sys::EventAttr attr = tracepoint_attr(113);
  config.events.push_back({attr, "mce:mce_record", {501, 502}});
  config.tracefs_root = fixtures_dir() + "/tracefs-debian-6.1";
  config.side_band = report::SideBand::kNever;
  Bytes raw(116, 0);
  auto put = [&](size_t offset, uint64_t value, size_t size) {
    std::memcpy(raw.data() + offset, &value, size);
  };
  put(0, 113, 2);                     // common_type
  put(4, 77, 4);                      // common_pid
  put(16, 0x5, 8);                    // mcgstatus
  put(24, 0x9400000000000000ULL, 8);  // status: VAL|EN|ADDRV
  put(32, 0x5678000, 8);              // addr
  put(88, 1, 4);                      // cpu
  put(96, 2, 4);                      // apicid
  put(105, 2, 1);                     // bank
  Bytes sample;
  report::ByteWriter w(&sample);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(PERF_RECORD_MISC_KERNEL);
  w.u16(uint16_t(8 + 6 * 8 + 4 + 116));
  w.u64(502);  // identifier: CPU 1's instance
  w.u64(0);
  w.u32(77);
  w.u32(77);
  w.u64(1000000000);
  w.u32(1);
  w.u32(0);
  w.u64(1);
  w.u32(116);
  w.bytes(raw);

  TempDir dir;
  std::string path = dir.path("mce.data");
  auto writer = PerfDataWriter::create_file(path, config);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE((*writer)->append(sample).ok());
  ASSERT_TRUE((*writer)->finish().ok());

  CommandResult script = run_command({"perf", "script", "-i", path});
  ASSERT_EQ(script.status, 0) << context(script);
  EXPECT_NE(script.out.find("mce:mce_record:"), std::string::npos) << context(script);
  EXPECT_NE(script.out.find("CPU: 1, MCGc/s: 0/5, MC2: 9400000000000000"), std::string::npos)
      << context(script);
  EXPECT_NE(script.out.find("ADDR/MISC/SYND: 0000000005678000/"), std::string::npos)
      << context(script);
  EXPECT_NE(script.out.find("APIC: 2"), std::string::npos) << context(script);
  EXPECT_NE(script.out.find("[001]"), std::string::npos) << context(script);
}

TEST(ReportPerfData, AWriterKilledMidwayLeavesWhatItFlushed) {
  // A child writes 300 samples and flushes, buffers 200 more, and is killed
  // with SIGKILL: perf reads the file and finds exactly the 300.
  const uint64_t tracepoint = 113;
  WriterConfig config;
  config.events.push_back({tracepoint_attr(tracepoint), "mce:mce_record", {7}});
  config.tracefs_root = fixtures_dir() + "/tracefs-debian-6.1";
  config.side_band = report::SideBand::kNever;
  auto samples = [](int n) {
    Bytes out;
    report::ByteWriter w(&out);
    for (int i = 0; i < n; i++) {
      w.u32(PERF_RECORD_SAMPLE);
      w.u16(PERF_RECORD_MISC_KERNEL);
      w.u16(uint16_t(8 + 6 * 8 + 4 + 116));
      w.u64(7);
      w.u64(0);
      w.u32(99);
      w.u32(99);
      w.u64(1000 + uint64_t(i));
      w.u32(0);
      w.u32(0);
      w.u64(1);
      w.u32(116);
      w.u16(113);
      w.zeros(114);
    }
    return out;
  };
  TempDir dir;
  std::string path = dir.path("perf.data");
  int ready[2];
  ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto writer = PerfDataWriter::create_file(path, config);
    if (!writer.ok() || !(*writer)->append(samples(300)).ok() || !(*writer)->flush().ok() ||
        !(*writer)->append(samples(200)).ok())
      _exit(1);
    char c = 'r';
    (void)!write(ready[1], &c, 1);
    for (;;)
      pause();
  }
  close(ready[1]);
  char c = 0;
  ssize_t got = read(ready[0], &c, 1);
  close(ready[0]);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(got, 1) << "the writer child failed before it was killed";
  ASSERT_TRUE(WIFSIGNALED(status));

  CommandResult script = run_command({"perf", "script", "-i", path});
  ASSERT_EQ(script.status, 0) << context(script);
  int lines = 0;
  std::istringstream in(script.out);
  for (std::string line; std::getline(in, line);)
    lines += line.find("mce:mce_record:") != std::string::npos;
  EXPECT_EQ(lines, 300) << context(script);
  CommandResult stats = run_command({"perf", "report", "--stats", "-i", path});
  ASSERT_EQ(stats.status, 0) << context(stats);
  EXPECT_EQ(stat_count(stats.out, "SAMPLE"), 300) << context(stats);
}

TEST(ReportPerfData, ReaderReadsWhatPerfRecordWrote) {
  PP_SKIP_UNLESS_PERF_AND_GETPPID();
  TempDir dir;
  std::string path = dir.path("perf.data");
  CommandResult rec =
      run_command({"perf", "record", "-q", "-e", "syscalls:sys_enter_getppid", "-o", path, "--",
                   "perf", "bench", "syscall", "basic", "--loop", "500"});
  ASSERT_EQ(rec.status, 0) << context(rec);
  auto data = PerfDataReader::read_file(path);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_FALSE(data->pipe_mode());
  ASSERT_EQ(data->events().size(), 1u);
  EXPECT_EQ(data->events()[0].name, "syscalls:sys_enter_getppid");
  EXPECT_FALSE(data->events()[0].ids.empty());
  auto tracing = data->tracing_data();
  ASSERT_TRUE(tracing.ok()) << tracing.error().message();
  EXPECT_EQ(tracing->event_names(), std::vector<std::string>{"syscalls:sys_enter_getppid"});
  auto host = data->string_feature(report::kFeatureOsRelease);
  ASSERT_TRUE(host.ok());
  std::map<uint32_t, int> per_pid;
  ASSERT_TRUE(data->for_each_record([&](const PerfDataRecord& r) -> Status {
                    if (r.type != PERF_RECORD_SAMPLE)
                      return ok_status();
                    PP_ASSIGN_OR_RETURN(report::Sample s, data->sample(r));
                    per_pid[s.pid]++;
                    return ok_status();
                  })
                  .ok());
  ASSERT_EQ(per_pid.size(), 1u);
  EXPECT_EQ(per_pid.begin()->second, 500);
}

}  // namespace
}  // namespace pp::testing

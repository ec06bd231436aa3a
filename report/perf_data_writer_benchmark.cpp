// How fast the perf.data writer alone is, beside what perf record spends on
// the same samples. Run by bench/perf_data_writer.bench (which builds it);
// prints figures and ratios, asserts nothing.
//
//   perf_data_writer_benchmark [--samples N] [--dir DIR] [--no-perf]
//
// The writer gets N syscalls:sys_enter_getppid samples as the kernel lays
// them out (80 bytes: IDENTIFIER IP TID TIME CPU PERIOD RAW), handed over
// in 64 KiB batches as a ring reader would, into DIR/writer.data. Then, for
// comparison, `perf record -e syscalls:sys_enter_getppid -a` records
// `perf bench syscall basic --loop N` (N getppid calls) into DIR/perf.data;
// its own CPU time and peak RSS are measured apart from the workload's.
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "report/perf_data_reader.h"
#include "report/perf_data_writer.h"
#include "sys/tree.h"

namespace {

using pp::report::Bytes;
using pp::report::ByteWriter;

double seconds(const timeval& tv) {
  return double(tv.tv_sec) + double(tv.tv_usec) / 1e6;
}

double now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

struct Usage {
  double cpu = 0;    // user + sys seconds
  long max_rss = 0;  // KiB
};

Usage self_usage() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return {seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_maxrss};
}

// One 64 KiB batch of getppid samples, times increasing from `time`.
Bytes batch(uint64_t* time, size_t count) {
  Bytes out;
  out.reserve(count * 80);
  ByteWriter w(&out);
  for (size_t i = 0; i < count; i++) {
    w.u32(PERF_RECORD_SAMPLE);
    w.u16(PERF_RECORD_MISC_KERNEL);
    w.u16(80);
    w.u64(1000);                   // identifier
    w.u64(0xffffffff81000000ULL);  // ip
    w.u32(4242);
    w.u32(4242);
    w.u64((*time)++);
    w.u32(0);
    w.u32(0);
    w.u64(1);
    w.u32(20);  // raw: the 8 common bytes, __syscall_nr, and padding to 8
    w.u16(0);
    w.zeros(18);
  }
  return out;
}

// Returns 0 and the writer's CPU seconds per million samples, or non-zero.
int bench_writer(const std::string& path, uint64_t samples, uint64_t tracepoint,
                 double* cpu_per_million) {
  pp::report::WriterConfig config;
  pp::sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = pp::sys::kAttrSizeVer7;
  attr.attr.config = tracepoint;
  attr.attr.sample_period = 1;
  attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW | PERF_SAMPLE_IDENTIFIER;
  attr.attr.sample_id_all = 1;
  config.events.push_back({attr, "syscalls:sys_enter_getppid", {1000, 1001}});
  config.side_band = pp::report::SideBand::kNever;

  // The batches are made before the clock starts, so the writer alone is
  // timed; a pool of 2 MiB is handed over again and again, so the peak RSS
  // is the writer's own (its buffer) plus that pool.
  uint64_t time = 1;
  const size_t per_batch = (64 << 10) / 80;
  std::vector<Bytes> pool;
  for (int i = 0; i < 32; i++)
    pool.push_back(batch(&time, per_batch));

  Usage before = self_usage();
  double start = now();
  auto writer = pp::report::PerfDataWriter::create_file(path, config);
  if (!writer.ok()) {
    std::fprintf(stderr, "writer: %s\n", writer.error().message().c_str());
    return 1;
  }
  for (uint64_t done = 0, i = 0; done < samples; done += per_batch, i++) {
    const Bytes& b = pool[i % pool.size()];
    size_t n = size_t(std::min<uint64_t>(per_batch, samples - done));
    if (auto s = (*writer)->append({b.data(), n * 80}); !s.ok()) {
      std::fprintf(stderr, "writer: %s\n", s.error().message().c_str());
      return 1;
    }
  }
  if (auto s = (*writer)->finish(); !s.ok()) {
    std::fprintf(stderr, "writer: %s\n", s.error().message().c_str());
    return 1;
  }
  double wall = now() - start;
  Usage after = self_usage();
  const auto& stats = (*writer)->stats();
  double cpu = after.cpu - before.cpu;
  std::printf("writer: %llu samples, %.1f MB in %.3f s wall, %.3f s CPU, %llu write calls\n",
              static_cast<unsigned long long>(stats.samples), double(stats.file_bytes) / 1e6, wall,
              cpu, static_cast<unsigned long long>(stats.write_calls));
  std::printf("writer: %.2f M records/s, %.0f MB/s (wall); %.3f CPU s per million samples\n",
              double(stats.samples) / wall / 1e6, double(stats.file_bytes) / wall / 1e6,
              cpu / (double(stats.samples) / 1e6));
  std::printf("writer: %.2f M records, %.0f MB per CPU second\n", double(stats.samples) / cpu / 1e6,
              double(stats.file_bytes) / cpu / 1e6);
  std::printf("writer: peak RSS %ld KiB (with the bench's 2 MiB of input batches)\n",
              after.max_rss);
  *cpu_per_million = cpu / (double(stats.samples) / 1e6);
  return 0;
}

pid_t spawn(const std::vector<std::string>& args, bool quiet) {
  std::fflush(stdout);  // or the child's freopen writes our buffer again
  pid_t pid = fork();
  if (pid == 0) {
    if (quiet) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
    }
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int bench_perf(const std::string& path, uint64_t samples, double writer_cpu_per_million) {
  pid_t record =
      spawn({"perf", "record", "-q", "-e", "syscalls:sys_enter_getppid", "-a", "-o", path}, true);
  usleep(1500000);  // perf record's start-up: synthesis of every process
  pid_t load =
      spawn({"perf", "bench", "syscall", "basic", "--loop", std::to_string(samples)}, true);
  int status = 0;
  waitpid(load, &status, 0);
  usleep(200000);
  kill(record, SIGINT);
  rusage ru;
  if (wait4(record, &status, 0, &ru) < 0) {
    std::perror("wait4 perf record");
    return 1;
  }
  double cpu = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  auto data = pp::report::PerfDataReader::read_file(path);
  uint64_t written = 0, lost = 0;
  if (data.ok()) {
    (void)data->for_each_record([&](const pp::report::PerfDataRecord& r) {
      if (r.type == PERF_RECORD_SAMPLE)
        written++;
      if (r.type == PERF_RECORD_LOST)
        lost += *reinterpret_cast<const uint64_t*>(r.bytes.data() + 16);
      return pp::ok_status();
    });
  } else {
    std::fprintf(stderr, "reading perf's file: %s\n", data.error().message().c_str());
  }
  double per_million = cpu / (double(written ? written : 1) / 1e6);
  std::printf("perf record -a: %llu samples written, %llu lost, %.3f s CPU, peak RSS %ld KiB\n",
              static_cast<unsigned long long>(written), static_cast<unsigned long long>(lost), cpu,
              ru.ru_maxrss);
  std::printf("perf record -a: %.3f CPU s per million samples (start-up included)\n", per_million);
  std::printf("ratio: writer CPU / perf record CPU per sample = %.3f\n",
              writer_cpu_per_million / per_million);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t samples = 2000000;
  std::string dir = "/tmp";
  bool with_perf = true;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--samples" && i + 1 < argc)
      samples = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--dir" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "--no-perf")
      with_perf = false;
    else {
      std::fprintf(stderr, "usage: %s [--samples N] [--dir DIR] [--no-perf]\n", argv[0]);
      return 1;
    }
  }
  pp::sys::Tree tracefs(pp::sys::default_tracefs_root());
  auto id = tracefs.read("events/syscalls/sys_enter_getppid/id");
  if (!id.ok()) {
    std::fprintf(stderr, "%s\n", id.error().message().c_str());
    return 1;
  }
  uint64_t tracepoint = std::strtoull(id->c_str(), nullptr, 10);

  double writer_per_million = 0;
  if (int rc = bench_writer(dir + "/writer.data", samples, tracepoint, &writer_per_million))
    return rc;
  if (!with_perf)
    return 0;
  return bench_perf(dir + "/perf.data", samples, writer_per_million);
}

// The recorder's hot loop without the perf.data writer, for
// bench/ring_reader.bench: syscalls:sys_enter_getppid on every online CPU,
// each buffer mapped read-only (overwrite mode) and drained by a RingReader
// into an output file, until SIGINT or SIGTERM. Prints what it wrote and
// lost:
//
//   samples 2000000 lost_records 0 lost_bytes 0 bytes 144000000
//
//   ring_drain [--forward] [--pages N] [-o FILE]
//   ring_drain --load N       makes N getppid calls on CPU 0 (the workload)
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/cpu_list.h"
#include "sys/kernel.h"
#include "sys/ring_reader.h"
#include "sys/tree.h"

namespace {

volatile std::sig_atomic_t stop = 0;

void on_signal(int) {
  stop = 1;
}

int load(long calls) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(0, &set);
  sched_setaffinity(0, sizeof(set), &set);
  for (long i = 0; i < calls; ++i)
    syscall(SYS_getppid);
  return 0;
}

// Buffered output: records are copied in, written out in 1 MiB chunks.
class Output {
 public:
  explicit Output(int fd) : fd_(fd), buffer_(1 << 20) {}
  ~Output() { flush(); }
  void append(std::span<const uint8_t> bytes) {
    if (used_ + bytes.size() > buffer_.size())
      flush();
    std::memcpy(buffer_.data() + used_, bytes.data(), bytes.size());
    used_ += bytes.size();
    total_ += bytes.size();
  }
  void flush() {
    size_t at = 0;
    while (at < used_) {
      ssize_t n = ::write(fd_, buffer_.data() + at, used_ - at);
      if (n <= 0)
        break;
      at += size_t(n);
    }
    used_ = 0;
  }
  uint64_t total() const { return total_; }

 private:
  int fd_;
  std::vector<uint8_t> buffer_;
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  using namespace pp;
  bool backward = true;
  size_t pages = 128;  // 512 KiB, perf record's default
  std::string output = "/dev/null";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--load" && i + 1 < argc)
      return load(std::atol(argv[++i]));
    if (arg == "--forward")
      backward = false;
    else if (arg == "--pages" && i + 1 < argc)
      pages = size_t(std::atol(argv[++i]));
    else if (arg == "-o" && i + 1 < argc)
      output = argv[++i];
    else {
      std::fprintf(stderr, "usage: ring_drain [--forward] [--pages N] [-o FILE] | --load N\n");
      return 1;
    }
  }
  auto id_text =
      sys::Tree(sys::default_tracefs_root()).read("events/syscalls/sys_enter_getppid/id");
  auto online = sys::Tree(sys::kDefaultSysfsRoot).read("devices/system/cpu/online");
  if (!id_text.ok() || !online.ok()) {
    std::fprintf(stderr, "ring_drain: no tracefs or sysfs\n");
    return 1;
  }
  auto cpus = parse_cpu_list(*online);
  if (!cpus.ok())
    return 1;

  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = std::strtoull(id_text->c_str(), nullptr, 10);
  attr.attr.sample_period = 1;
  // What perf record asks for a tracepoint with -a.
  attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;
  attr.attr.sample_id_all = 1;
  attr.attr.watermark = 1;
  attr.attr.wakeup_watermark = uint32_t(pages * sys::page_size() / 4);
  attr.attr.write_backward = backward;

  sys::Kernel& kernel = sys::real_kernel();
  std::vector<sys::Fd> fds;
  std::vector<sys::Mapping> maps;
  std::vector<sys::RingReader> readers;
  std::vector<pollfd> polls;
  for (int cpu : *cpus) {
    auto fd = kernel.perf_event_open(attr, -1, cpu, -1, 0);
    if (!fd.ok()) {
      std::fprintf(stderr, "ring_drain: CPU %d: %s\n", cpu, fd.error().message().c_str());
      return 2;
    }
    auto map = kernel.mmap(fd->get(), (1 + pages) * sys::page_size(), PROT_READ);
    if (!map.ok()) {
      std::fprintf(stderr, "ring_drain: CPU %d: %s\n", cpu, map.error().message().c_str());
      return 2;
    }
    auto reader = sys::RingReader::create(
        {map->data(), map->size()},
        {.layout = backward ? sys::RingLayout::kBackward : sys::RingLayout::kForward,
         .start = sys::RingStart::kNow,
         .attr = attr});
    if (!reader.ok())
      return 2;
    polls.push_back({fd->get(), POLLIN, 0});
    fds.push_back(std::move(fd).value());
    maps.push_back(std::move(map).value());
    readers.push_back(std::move(reader).value());
  }
  int out_fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) {
    std::perror(output.c_str());
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  uint64_t samples = 0, lost_records = 0, lost_bytes = 0;
  {
    Output out(out_fd);
    auto drain = [&] {
      for (sys::RingReader& reader : readers) {
        const sys::RingBatch& batch = reader.read();
        lost_records += batch.lost.records;
        lost_bytes += batch.lost.bytes;
        for (std::span<const uint8_t> record : batch)
          out.append(record);
      }
    };
    while (!stop) {
      auto ready = kernel.poll(polls, 1000);
      if (!ready.ok() && ready.error().code() != EINTR)
        break;
      drain();
    }
    drain();
    for (const sys::RingReader& reader : readers)
      samples += reader.stats().samples;
    out.flush();
    std::printf(
        "samples %llu lost_records %llu lost_bytes %llu bytes %llu\n",
        static_cast<unsigned long long>(samples), static_cast<unsigned long long>(lost_records),
        static_cast<unsigned long long>(lost_bytes), static_cast<unsigned long long>(out.total()));
  }
  ::close(out_fd);
  return 0;
}

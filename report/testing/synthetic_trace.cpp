#include "report/testing/synthetic_trace.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

#include "base/strings.h"
#include "report/perf_data_writer.h"
#include "report/testing/memory_output.h"
#include "report/trace_decoder.h"
#include "sys/perf_abi_sample.h"
#include "sys/tree.h"

namespace pp::report::testing {
namespace {

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
                                 PERF_SAMPLE_RAW;
constexpr uint64_t kStartTime = 18970883561123ULL;

// splitmix64: the same sequence on every host and library (the standard
// distributions are not).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [0, n).
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  bool one_in(uint64_t n) { return below(n) == 0; }

 private:
  uint64_t state_;
};

struct Thread {
  uint32_t pid, tid;
  const char* first_name;   // nullptr: no COMM (shown as :TID)
  const char* second_name;  // a rename half way (exec), or nullptr
  uint32_t forked_from;     // a FORK from this tid at the start (0: none)
};

// Names with what a name may hold: spaces, slashes, a quote, a backslash,
// UTF-8, a byte that is not UTF-8, a control byte.
constexpr Thread kThreads[] = {
    {0, 0, nullptr, nullptr, 0},  // the idle task: "swapper"
    {1, 1, "systemd", nullptr, 0},
    {101, 101, "bash", "perf", 0},
    {101, 102, "bash", nullptr, 0},
    {230, 230, "kworker/0:1H", nullptr, 0},
    {231, 231, "migration/1", nullptr, 0},
    {4000, 4000, "sched-pipe", nullptr, 0},
    {4000, 4001, nullptr, nullptr, 4000},  // inherits "sched-pipe" from its FORK
    {5123, 5123, "name \"q\" \\ x", nullptr, 0},
    {5124, 5124, "caf\xc3\xa9 \xff\x01", "renamed", 0},
    {77777, 77777, nullptr, nullptr, 0},  // never named: ":77777"
    {4194303, 4194303, "long-name-of-16", nullptr, 0},
};

// A byte of a char[] or __data_loc string.
char string_byte(Random& random) {
  static constexpr std::string_view kCommon = "abcdefghijklmnopqrstuvwxyz0123456789/:-_. ";
  switch (random.below(40)) {
    case 0:
      return '"';
    case 1:
      return '\\';
    case 2:
      return '\x01';
    case 3:
      return '\xff';
    case 4:
      return '\t';
    default:
      return kCommon[random.below(kCommon.size())];
  }
}

// `size` bytes of text, NUL-terminated unless `full`.
void fill_string(Random& random, uint8_t* at, size_t size, bool full) {
  size_t length = full ? size : size_t(random.below(size));
  for (size_t i = 0; i < length; i++)
    at[i] = uint8_t(string_byte(random));
  // Two bytes of UTF-8 now and then.
  if (length >= 2 && random.one_in(6)) {
    at[0] = 0xc3;
    at[1] = 0xa9;
  }
}

uint64_t integer(Random& random, uint32_t size) {
  uint64_t mask = size >= 8 ? ~0ULL : (1ULL << (size * 8)) - 1;
  switch (random.below(8)) {
    case 0:
      return 0;
    case 1:
      return mask;  // all ones: -1 when signed
    case 2:
      return (1ULL << (size * 8 - 1)) & mask;  // the sign bit alone
    case 3:
    case 4:
      return random.next() & mask;
    default:
      return random.below(300) & mask;
  }
}

void put(Bytes& b, size_t offset, uint64_t value, uint32_t size) {
  std::memcpy(b.data() + offset, &value, std::min<size_t>(size, 8));
}

// A payload of `event` from its format, common_pid `pid`.
Bytes payload(Random& random, const TraceEvent& event, int32_t pid) {
  Bytes b(event.min_size, 0);
  put(b, 0, uint64_t(event.id), 2);
  b[2] = uint8_t(random.below(16));  // common_flags
  b[3] = uint8_t(random.below(3));   // common_preempt_count
  put(b, 4, uint64_t(uint32_t(pid)), 4);
  for (const TraceField& f : event.fields) {
    uint8_t* at = b.data() + f.offset;
    switch (f.kind) {
      case FieldKind::kUnsigned:
      case FieldKind::kSigned:
        put(b, f.offset, integer(random, f.size), f.size);
        break;
      case FieldKind::kPointer:
        put(b, f.offset, random.one_in(5) ? 0 : (0xffff888000000000ULL | random.below(1ULL << 36)),
            f.size);
        break;
      case FieldKind::kString:
        fill_string(random, at, f.size, random.one_in(8));
        break;
      case FieldKind::kArray:
        for (uint32_t i = 0; i < f.size; i++)
          at[i] = uint8_t(random.next());
        break;
      case FieldKind::kDynString:
      case FieldKind::kDynArray: {
        size_t length = size_t(random.below(24));
        size_t offset = b.size();
        b.resize(offset + length + 1, 0);
        if (f.kind == FieldKind::kDynString)
          fill_string(random, b.data() + offset, length, true);
        else
          for (size_t i = 0; i < length; i++)
            b[offset + i] = uint8_t(random.next());
        uint32_t size = uint32_t(f.kind == FieldKind::kDynString ? length + 1 : length);
        uint32_t loc = (size << 16) | uint32_t(offset);
        if (f.relative)
          loc = (size << 16) | uint32_t(offset - (f.offset + f.size));
        put(b, f.offset, loc, 4);
        break;
      }
    }
  }
  return b;
}

void append_comm(uint32_t pid, uint32_t tid, std::string_view name, uint64_t time, Bytes& out) {
  Bytes body;
  ByteWriter w(&body);
  w.u32(pid);
  w.u32(tid);
  w.text(name);
  w.zeros(align_up(name.size() + 1, 8) - name.size());
  sys::SampleId id;
  id.pid = pid;
  id.tid = tid;
  id.time = time;
  sys::encode_sample_id(kSampleType, id, body);
  perf_event_header h{PERF_RECORD_COMM, 0, uint16_t(sizeof(perf_event_header) + body.size())};
  const auto* hb = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), hb, hb + sizeof(h));
  out.insert(out.end(), body.begin(), body.end());
}

void append_fork(const Thread& child, const Thread& parent, uint64_t time, Bytes& out) {
  Bytes body;
  ByteWriter w(&body);
  w.u32(child.pid);
  w.u32(parent.pid);
  w.u32(child.tid);
  w.u32(parent.tid);
  w.u64(time);
  sys::SampleId id;
  id.pid = child.pid;
  id.tid = child.tid;
  id.time = time;
  sys::encode_sample_id(kSampleType, id, body);
  perf_event_header h{PERF_RECORD_FORK, 0, uint16_t(sizeof(perf_event_header) + body.size())};
  const auto* hb = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), hb, hb + sizeof(h));
  out.insert(out.end(), body.begin(), body.end());
}

Result<uint64_t> read_id(const sys::Tree& tracefs, const Tracepoint& tp) {
  PP_ASSIGN_OR_RETURN(std::string text,
                      tracefs.read("events/" + tp.system + "/" + tp.name + "/id", 64));
  std::string_view digits = trim(text);
  uint64_t id = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc() || end != digits.data() + digits.size())
    return errorf(EINVAL, "events/%s/%s/id is not a number", tp.system.c_str(), tp.name.c_str());
  return id;
}

struct Pending {
  uint64_t time;
  Bytes record;
};

}  // namespace

Bytes synthetic_payload(uint64_t seed, const TraceEvent& event, int32_t pid) {
  Random random(seed);
  return payload(random, event, pid);
}

std::vector<Tracepoint> fixture_6_18_tracepoints() {
  return {{"sched", "sched_switch", 0},
          {"syscalls", "sys_enter_getppid", 0},
          {"sched", "sched_wakeup", 0},
          {"sched", "sched_process_exec", 0},
          {"sched", "sched_process_fork", 0},
          {"syscalls", "sys_exit_getppid", 0},
          {"syscalls", "sys_enter_openat", 0},
          {"irq", "irq_handler_entry", 0},
          {"irq", "softirq_entry", 0},
          {"timer", "hrtimer_start", 0},
          {"block", "block_rq_issue", 0},
          {"kmem", "kmalloc", 0},
          {"workqueue", "workqueue_execute_start", 0},
          {"power", "cpu_idle", 0},
          {"signal", "signal_generate", 0},
          {"net", "netif_receive_skb", 0},
          {"writeback", "writeback_dirty_folio", 0}};
}

Result<Bytes> synthetic_trace(const SyntheticTraceOptions& options) {
  sys::Tree tracefs(options.tracefs_root);
  std::vector<Tracepoint> tracepoints = options.tracepoints;
  for (Tracepoint& tp : tracepoints) {
    PP_ASSIGN_OR_RETURN(tp.id, read_id(tracefs, tp));
  }
  PP_ASSIGN_OR_RETURN(Bytes built, build_tracing_data(tracefs, tracepoints, 4096));
  PP_ASSIGN_OR_RETURN(TracingData data, parse_tracing_data(built));
  PP_ASSIGN_OR_RETURN(auto decoder, TraceDecoder::create(data, /*plugins=*/false));

  WriterConfig config;
  std::vector<const TraceEvent*> events;
  for (size_t i = 0; i < tracepoints.size(); i++) {
    const TraceEvent* event = decoder->event(tracepoints[i].id);
    if (!event)
      return errorf(EINVAL, "libtraceevent cannot parse the format of %s:%s",
                    tracepoints[i].system.c_str(), tracepoints[i].name.c_str());
    events.push_back(event);
    EventDesc desc;
    desc.attr.attr.type = PERF_TYPE_TRACEPOINT;
    desc.attr.attr.size = sizeof(perf_event_attr);
    desc.attr.attr.config = tracepoints[i].id;
    desc.attr.attr.sample_period = 1;
    desc.attr.attr.sample_type = kSampleType;
    desc.attr.attr.sample_id_all = 1;
    if (options.clock) {
      desc.attr.attr.use_clockid = 1;
      desc.attr.attr.clockid = options.clock->clockid;
    }
    desc.name = tracepoints[i].system + ":" + tracepoints[i].name;
    for (uint32_t cpu = 0; cpu < options.cpus; cpu++)
      desc.ids.push_back((i + 1) * 1000 + cpu);
    config.events.push_back(std::move(desc));
  }
  config.cmdline = {"perf", "record", "-a"};
  HostInfo host;
  host.hostname = "synthetic";
  host.os_release = "6.18.0";
  host.version = "synthetic";
  host.arch = "x86_64";
  host.nr_cpus_available = options.cpus;
  host.nr_cpus_online = options.cpus;
  config.host = host;
  config.tracefs_root = options.tracefs_root;
  config.side_band = SideBand::kNever;
  config.page_size = 4096;
  if (options.clock)
    config.clock = ClockData{1, *options.clock};

  Random random(options.seed);
  // Each CPU's samples in its own time order.
  std::vector<std::vector<Pending>> per_cpu(options.cpus);
  std::vector<uint64_t> now(options.cpus, kStartTime);
  for (size_t n = 0; n < options.samples; n++) {
    uint32_t cpu = uint32_t(random.below(options.cpus));
    uint64_t& time = now[cpu];
    if (random.one_in(10)) {
      // The same time as another CPU's last sample, when not earlier.
      uint64_t other = now[random.below(options.cpus)];
      time = std::max(time, other);
    } else if (!random.one_in(20)) {
      time += 1 + random.below(20000);
    }
    const Thread& thread = kThreads[random.below(std::size(kThreads))];
    // sched_switch and getppid, the two a mixed trace holds most of (the
    // first two events asked for; the one, when there is one).
    size_t e = random.below(3) == 0 ? random.below(events.size())
                                    : random.below(std::min<uint64_t>(2, events.size()));
    Bytes raw = payload(random, *events[e], int32_t(thread.tid));
    std::vector<uint8_t> padded = sys::pad_raw(raw);
    sys::Sample s;
    s.identifier = config.events[e].ids[cpu];
    s.ip = 0xffffffff81000000ULL + random.below(1 << 20);
    s.pid = thread.pid;
    s.tid = thread.tid;
    s.time = time;
    s.cpu = cpu;
    s.period = 1;
    s.raw = padded;
    Pending p{time, {}};
    sys::encode_sample(config.events[e].attr.attr, s, PERF_RECORD_MISC_KERNEL, p.record);
    per_cpu[cpu].push_back(std::move(p));
  }
  uint64_t middle = kStartTime + (*std::max_element(now.begin(), now.end()) - kStartTime) / 2;

  auto output = std::make_unique<MemoryOutput>();
  MemoryOutput* memory = output.get();
  PP_ASSIGN_OR_RETURN(auto writer, PerfDataWriter::create(std::move(output), std::move(config)));
  Bytes side;
  for (const Thread& t : kThreads) {
    if (t.first_name)
      append_comm(t.pid, t.tid, t.first_name, 0, side);
    if (t.forked_from)
      for (const Thread& parent : kThreads)
        if (parent.tid == t.forked_from)
          append_fork(t, parent, kStartTime, side);
  }
  PP_RETURN_IF_ERROR(writer->append(side));
  // Drained as rings are: a few records of each CPU in turn, a round after
  // each pass; the renames land in the round that reaches half way.
  std::vector<size_t> next(options.cpus, 0);
  bool renamed = false;
  for (bool more = true; more;) {
    more = false;
    for (uint32_t cpu = 0; cpu < options.cpus; cpu++) {
      size_t take = 1 + size_t(random.below(8));
      Bytes chunk;
      for (size_t i = 0; i < take && next[cpu] < per_cpu[cpu].size(); i++) {
        const Pending& p = per_cpu[cpu][next[cpu]++];
        chunk.insert(chunk.end(), p.record.begin(), p.record.end());
        if (!renamed && p.time >= middle) {
          renamed = true;
          for (const Thread& t : kThreads)
            if (t.second_name)
              append_comm(t.pid, t.tid, t.second_name, middle, chunk);
        }
      }
      if (!chunk.empty())
        PP_RETURN_IF_ERROR(writer->append(chunk));
      more = more || next[cpu] < per_cpu[cpu].size();
    }
    PP_RETURN_IF_ERROR(writer->finished_round());
  }
  PP_RETURN_IF_ERROR(writer->finish());
  return memory->bytes();
}

}  // namespace pp::report::testing

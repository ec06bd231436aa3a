// Fake sysfs and tracefs trees for PMU and event-parser tests, laid out in a
// TempDir as the kernel lays out the real ones:
//
//   <root>/sys/bus/event_source/devices/<pmu>/{type,format/*,events/*,cpumask}
//   <root>/tracing/events/<system>/<event>/id
//   <root>/run/devices/persistent/...            (a broker's run directory)
//
//   TempDir dir;
//   FakeSysfs fake(dir);
//   fake.pmu("krava", 40).format("krava01", "config:0-1,62-63");
//   fake.tracepoint("sched", "sched_switch", 316);
//   auto model = pmu::Model::load(fake.roots());
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pmu/model.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {

class FakeSysfs {
 public:
  explicit FakeSysfs(const TempDir& dir);

  // One PMU directory; the methods write its files and return *this.
  class Pmu {
   public:
    Pmu(const TempDir& dir, std::string base) : dir_(dir), base_(std::move(base)) {}
    Pmu& type(std::string_view contents);  // the raw type file ("6\n" by default)
    Pmu& format(std::string_view name, std::string_view contents);
    Pmu& alias(std::string_view name, std::string_view contents);
    Pmu& file(std::string_view relative, std::string_view contents);
    Pmu& cpumask(std::string_view cpus);

   private:
    const TempDir& dir_;
    std::string base_;
  };

  // Under <root>/sys/bus/event_source/devices/<name>, with type `type`.
  Pmu pmu(std::string_view name, uint32_t type);
  // Under <root>/run/devices/persistent, the broker's layout.
  Pmu broker_pmu(uint32_t type);
  // <root>/tracing/events/<system>/<event>/id
  void tracepoint(std::string_view system, std::string_view event, uint64_t id);

  // The three roots, for pmu::Model::load().
  pmu::Roots roots() const;

  // The PMUs perf 6.1 has on a machine without a hardware PMU (software 1,
  // tracepoint 2, breakpoint 5, msr 9 with event and tsc), and the krava PMU
  // of perf's own PMU test (type 40), with its nine formats.
  void standard_pmus();

 private:
  const TempDir& dir_;
};

}  // namespace pp::testing

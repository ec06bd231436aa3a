#include "tests/support/fake_sysfs.h"

namespace pp::testing {

namespace {
constexpr std::string_view kDevices = "sys/bus/event_source/devices/";
}

FakeSysfs::FakeSysfs(const TempDir& dir) : dir_(dir) {
  dir_.mkdir("sys/bus/event_source/devices");
  dir_.mkdir("tracing/events");
}

FakeSysfs::Pmu& FakeSysfs::Pmu::type(std::string_view contents) {
  return file("type", contents);
}

FakeSysfs::Pmu& FakeSysfs::Pmu::format(std::string_view name, std::string_view contents) {
  return file("format/" + std::string(name), std::string(contents) + "\n");
}

FakeSysfs::Pmu& FakeSysfs::Pmu::alias(std::string_view name, std::string_view contents) {
  return file("events/" + std::string(name), std::string(contents) + "\n");
}

FakeSysfs::Pmu& FakeSysfs::Pmu::file(std::string_view relative, std::string_view contents) {
  dir_.write(base_ + "/" + std::string(relative), contents);
  return *this;
}

FakeSysfs::Pmu& FakeSysfs::Pmu::cpumask(std::string_view cpus) {
  return file("cpumask", std::string(cpus) + "\n");
}

FakeSysfs::Pmu FakeSysfs::pmu(std::string_view name, uint32_t type) {
  Pmu p(dir_, std::string(kDevices) + std::string(name));
  p.type(std::to_string(type) + "\n");
  return p;
}

FakeSysfs::Pmu FakeSysfs::broker_pmu(uint32_t type) {
  Pmu p(dir_, "run/devices/persistent");
  p.type(std::to_string(type) + "\n");
  return p;
}

void FakeSysfs::tracepoint(std::string_view system, std::string_view event, uint64_t id) {
  dir_.write("tracing/events/" + std::string(system) + "/" + std::string(event) + "/id",
             std::to_string(id) + "\n");
}

pmu::Roots FakeSysfs::roots() const {
  pmu::Roots roots;
  roots.sysfs = dir_.path("sys");
  roots.tracefs = dir_.path("tracing");
  roots.broker_run_dir = dir_.path("run");
  return roots;
}

void FakeSysfs::standard_pmus() {
  pmu("software", 1);
  pmu("tracepoint", 2);
  pmu("breakpoint", 5);
  pmu("msr", 9).format("event", "config:0-63").alias("tsc", "event=0x00");
  pmu("krava", 40)
      .format("krava01", "config:0-1,62-63")
      .format("krava02", "config:10-17")
      .format("krava03", "config:5")
      .format("krava11", "config1:0,2,4,6,8,20-28")
      .format("krava12", "config1:63")
      .format("krava13", "config1:45-47")
      .format("krava21", "config2:0-3,10-13,20-23,30-33,40-43,50-53,60-63")
      .format("krava22", "config2:8,18,48,58")
      .format("krava23", "config2:28-29,38");
}

}  // namespace pp::testing

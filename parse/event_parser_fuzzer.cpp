// libFuzzer target: any bytes as an event list, parsed against an in-memory
// model (pmu::Model::in_memory) with PMUs of every kind the parser meets:
// formats for config..config3 and attrN (good, overlapping, out of range,
// malformed), aliases (good, dashed, parameterised, broken), uncore PMUs, the
// persistent PMU, and tracepoints. The parser must never crash, hang or leak;
// a failure must come back in perf's caret form, and a success must hold
// events whose group leaders and attr sizes make sense.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "parse/parse_events.h"
#include "pmu/model.h"

namespace {

pp::pmu::Model make_model() {
  using pp::pmu::memory_pmu;
  std::vector<pp::pmu::PmuEntry> pmus = {
      memory_pmu("software", 1, {}, {}),
      memory_pmu("tracepoint", 2, {}, {}),
      memory_pmu("msr", 9, {{"event", "config:0-63"}}, {{"tsc", "event=0x00"}}),
      memory_pmu("krava", 40,
                 {{"krava01", "config:0-1,62-63"},
                  {"krava02", "config:10-17"},
                  {"krava03", "config:5"},
                  {"krava11", "config1:0,2,4,6,8,20-28"},
                  {"krava12", "config1:63"},
                  {"krava13", "config1:45-47"},
                  {"krava21", "config2:0-3,10-13,20-23,30-33,40-43,50-53,60-63"},
                  {"krava22", "config2:8,18,48,58"},
                  {"krava23", "config2:28-29,38"}},
                 {}),
      memory_pmu("cpu", 4,
                 {{"event", "config:0-7"},
                  {"umask", "config:8-15"},
                  {"edge", "config:18"},
                  {"ldlat", "config1:0-15"},
                  {"frontend", "config1:0-23"},
                  {"c3", "config3:0-7"}},
                 {{"mem-loads", "event=0xcd,umask=0x1,ldlat=3"},
                  {"cycles-t", "event=0x3c,edge"},
                  {"param", "event=0x7,umask=?"},
                  {"withp", "event=0x5,period=1000,name=p"},
                  {"broken", "event=1,,x"},
                  {"unknown", "nope=2"}}),
      memory_pmu("weird", 44,
                 {{"w0", "attr0:0-3"},
                  {"w5", "attr5:23"},
                  {"f8", "attr8:0-7"},
                  {"a16", "attr16:8-15"},
                  {"w17", "attr17:1"},
                  {"bad", "garbage"}},
                 {{"ua", "w5=1,f8=3"}}),
      memory_pmu("uncore_cbox_0", 42, {{"event", "config:0-7"}}, {{"clockticks", "event=0xff"}}),
      memory_pmu("uncore_cbox_1", 43, {{"event", "config:0-7"}}, {{"clockticks", "event=0x1ff"}}),
      memory_pmu("persistent", 23, {{"persistent", "attr5:23"}},
                 {{"mce_record", "persistent,config=106"}, {"ctxsw", "persistent,config=2"}}),
  };
  pmus.push_back(pp::pmu::PmuEntry{"broken_pmu", std::nullopt, pp::Error(EINVAL, "no type")});
  std::vector<pp::pmu::Tracepoint> tracepoints = {
      {"sched", "sched_switch", 316},         {"sched", "sched_waking", 317},
      {"sched", "sched_wakeup", 318},         {"mce", "mce_record", 113},
      {"syscalls", "sys_enter_getppid", 555}, {"ras", "mc_event", 1227},
  };
  return pp::pmu::Model::in_memory(std::move(pmus), std::move(tracepoints));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const pp::pmu::Model model = make_model();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto result = pp::parse::parse_events(text, model);
  if (!result.ok()) {
    constexpr std::string_view kPrefix = "event syntax error: '";
    const std::string& message = result.error().message();
    if (message.compare(0, kPrefix.size(), kPrefix) != 0 ||
        message.find("\\___ ") == std::string::npos || result.error().code() == 0)
      std::abort();
    return 0;
  }
  const std::vector<pp::parse::EventSpec>& events = *result;
  if (events.empty())
    std::abort();
  for (size_t i = 0; i < events.size(); i++) {
    const pp::parse::EventSpec& e = events[i];
    if (e.leader < 0 || size_t(e.leader) > i || events[size_t(e.leader)].leader != e.leader)
      std::abort();
    if (e.attr.attr.size != 128 && e.attr.attr.size != 136)
      std::abort();
    if (e.attr.attr.precise_ip > 3)
      std::abort();
  }
  return 0;
}

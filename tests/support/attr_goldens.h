// What perf 6.1 printed for a few events (`perf stat -vv`, `perf record -vv`)
// and the attrs it printed them from: goldens for the attr block renderer
// (sys/perf_abi_attr_test.cpp) and the attr JSON (report/attr_printer_test.cpp).
#pragma once

#include <linux/perf_event.h>

#include <string_view>

#include "sys/perf_attr.h"

namespace pp::testing {

// What `perf stat -vv -e cpu-clock:u true` (perf 6.1.187) printed here.
inline constexpr std::string_view kPerfStatCpuClockU =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  sample_type                      IDENTIFIER\n"
    "  read_format                      TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  exclude_kernel                   1\n"
    "  exclude_hv                       1\n"
    "  enable_on_exec                   1\n"
    "  exclude_guest                    1\n"
    "------------------------------------------------------------\n";

// `perf stat -vv -e mem:0x1000/4:rw true`.
inline constexpr std::string_view kPerfStatBreakpoint =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             5\n"
    "  size                             128\n"
    "  sample_type                      IDENTIFIER\n"
    "  read_format                      TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  enable_on_exec                   1\n"
    "  exclude_guest                    1\n"
    "  bp_type                          3\n"
    "  { bp_addr, config1 }             0x1000\n"
    "  { bp_len, config2 }              0x4\n"
    "------------------------------------------------------------\n";

// `perf record -vv -e cpu-clock/period=100/ -k mono --call-graph dwarf,4096
// -d --phys-data -W --data-page-size --code-page-size --sample-cpu
// --intr-regs=AX,BX --switch-events --namespaces --all-cgroups true`.
inline constexpr std::string_view kPerfRecordMany =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  { sample_period, sample_freq }   100\n"
    "  sample_type                      "
    "IP|TID|TIME|ADDR|CALLCHAIN|CPU|REGS_USER|STACK_USER|REGS_INTR|DATA_SRC|PHYS_ADDR|CGROUP|"
    "DATA_PAGE_SIZE|CODE_PAGE_SIZE|WEIGHT_STRUCT\n"
    "  read_format                      ID|LOST\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  mmap                             1\n"
    "  comm                             1\n"
    "  enable_on_exec                   1\n"
    "  task                             1\n"
    "  mmap_data                        1\n"
    "  sample_id_all                    1\n"
    "  exclude_guest                    1\n"
    "  exclude_callchain_user           1\n"
    "  mmap2                            1\n"
    "  comm_exec                        1\n"
    "  use_clockid                      1\n"
    "  context_switch                   1\n"
    "  namespaces                       1\n"
    "  ksymbol                          1\n"
    "  bpf_event                        1\n"
    "  cgroup                           1\n"
    "  sample_regs_user                 0xff0fff\n"
    "  sample_stack_user                4096\n"
    "  clockid                          1\n"
    "  sample_regs_intr                 0x3\n"
    "------------------------------------------------------------\n";

// perf record's tracking event: a name longer than the 32-column pad.
inline constexpr std::string_view kPerfRecordDummy =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  config                           0x9\n"
    "  watermark                        1\n"
    "  sample_id_all                    1\n"
    "  bpf_event                        1\n"
    "  { wakeup_events, wakeup_watermark } 1\n"
    "------------------------------------------------------------\n";

// `perf record -vv -e cpu-clock:upppG -j any_call,any_ret,u,k,save_type,priv,cond
// -c 12345 --sample-identifier -T -P --overwrite true`.
inline constexpr std::string_view kPerfRecordBranches =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  { sample_period, sample_freq }   12345\n"
    "  sample_type                      IP|TID|TIME|PERIOD|BRANCH_STACK|IDENTIFIER\n"
    "  read_format                      ID|LOST\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  exclude_kernel                   1\n"
    "  exclude_hv                       1\n"
    "  mmap                             1\n"
    "  comm                             1\n"
    "  enable_on_exec                   1\n"
    "  task                             1\n"
    "  precise_ip                       3\n"
    "  sample_id_all                    1\n"
    "  exclude_host                     1\n"
    "  mmap2                            1\n"
    "  comm_exec                        1\n"
    "  write_backward                   1\n"
    "  ksymbol                          1\n"
    "  bpf_event                        1\n"
    "  branch_sample_type               USER|KERNEL|ANY_CALL|ANY_RETURN|COND|TYPE_SAVE|PRIV_SAVE\n"
    "------------------------------------------------------------\n";

inline sys::EventAttr cpu_clock_u() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  a.attr.sample_type = PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                       PERF_FORMAT_ID | PERF_FORMAT_GROUP;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.exclude_kernel = 1;
  a.attr.exclude_hv = 1;
  a.attr.enable_on_exec = 1;
  a.attr.exclude_guest = 1;
  return a;
}

inline sys::EventAttr breakpoint() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_BREAKPOINT;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_type = PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.enable_on_exec = 1;
  a.attr.exclude_guest = 1;
  a.attr.bp_type = 3;
  a.attr.bp_addr = 0x1000;
  a.attr.bp_len = 4;
  return a;
}

inline sys::EventAttr record_many() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_period = 100;
  a.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_DATA_SRC |
                       PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |
                       PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_WEIGHT_STRUCT;
  a.attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.mmap = 1;
  a.attr.comm = 1;
  a.attr.enable_on_exec = 1;
  a.attr.task = 1;
  a.attr.mmap_data = 1;
  a.attr.sample_id_all = 1;
  a.attr.exclude_guest = 1;
  a.attr.exclude_callchain_user = 1;
  a.attr.mmap2 = 1;
  a.attr.comm_exec = 1;
  a.attr.use_clockid = 1;
  a.attr.context_switch = 1;
  a.attr.namespaces = 1;
  a.attr.ksymbol = 1;
  a.attr.bpf_event = 1;
  a.attr.cgroup = 1;
  a.attr.sample_regs_user = 0xff0fff;
  a.attr.sample_stack_user = 4096;
  a.attr.clockid = 1;
  a.attr.sample_regs_intr = 0x3;
  return a;
}

inline sys::EventAttr record_dummy() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.config = PERF_COUNT_SW_DUMMY;
  a.attr.watermark = 1;
  a.attr.sample_id_all = 1;
  a.attr.bpf_event = 1;
  a.attr.wakeup_watermark = 1;
  return a;
}

inline sys::EventAttr record_branches() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_period = 12345;
  a.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
                       PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.exclude_kernel = 1;
  a.attr.exclude_hv = 1;
  a.attr.mmap = 1;
  a.attr.comm = 1;
  a.attr.enable_on_exec = 1;
  a.attr.task = 1;
  a.attr.precise_ip = 3;
  a.attr.sample_id_all = 1;
  a.attr.exclude_host = 1;
  a.attr.mmap2 = 1;
  a.attr.comm_exec = 1;
  a.attr.write_backward = 1;
  a.attr.ksymbol = 1;
  a.attr.bpf_event = 1;
  a.attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_KERNEL |
                              PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_ANY_RETURN |
                              PERF_SAMPLE_BRANCH_COND | PERF_SAMPLE_BRANCH_TYPE_SAVE |
                              PERF_SAMPLE_BRANCH_PRIV_SAVE;
  return a;
}

}  // namespace pp::testing

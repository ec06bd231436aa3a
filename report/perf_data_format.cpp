#include "report/perf_data_format.h"

namespace pp::report {

const char* feature_name(int feature) {
  static constexpr const char* kNames[] = {
      "RESERVED",        "TRACING_DATA", "BUILD_ID",     "HOSTNAME",     "OSRELEASE",
      "VERSION",         "ARCH",         "NRCPUS",       "CPUDESC",      "CPUID",
      "TOTAL_MEM",       "CMDLINE",      "EVENT_DESC",   "CPU_TOPOLOGY", "NUMA_TOPOLOGY",
      "BRANCH_STACK",    "PMU_MAPPINGS", "GROUP_DESC",   "AUXTRACE",     "STAT",
      "CACHE",           "SAMPLE_TIME",  "MEM_TOPOLOGY", "CLOCKID",      "DIR_FORMAT",
      "BPF_PROG_INFO",   "BPF_BTF",      "COMPRESSED",   "CPU_PMU_CAPS", "CLOCK_DATA",
      "HYBRID_TOPOLOGY", "PMU_CAPS",
  };
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == kFeatureLast);
  if (feature < 0 || feature >= kFeatureLast)
    return "";
  return kNames[feature];
}

const char* record_type_name(uint32_t type) {
  switch (type) {
    case PERF_RECORD_MMAP:
      return "MMAP";
    case PERF_RECORD_LOST:
      return "LOST";
    case PERF_RECORD_COMM:
      return "COMM";
    case PERF_RECORD_EXIT:
      return "EXIT";
    case PERF_RECORD_THROTTLE:
      return "THROTTLE";
    case PERF_RECORD_UNTHROTTLE:
      return "UNTHROTTLE";
    case PERF_RECORD_FORK:
      return "FORK";
    case PERF_RECORD_READ:
      return "READ";
    case PERF_RECORD_SAMPLE:
      return "SAMPLE";
    case PERF_RECORD_MMAP2:
      return "MMAP2";
    case PERF_RECORD_AUX:
      return "AUX";
    case PERF_RECORD_ITRACE_START:
      return "ITRACE_START";
    case PERF_RECORD_LOST_SAMPLES:
      return "LOST_SAMPLES";
    case PERF_RECORD_SWITCH:
      return "SWITCH";
    case PERF_RECORD_SWITCH_CPU_WIDE:
      return "SWITCH_CPU_WIDE";
    case PERF_RECORD_NAMESPACES:
      return "NAMESPACES";
    case PERF_RECORD_KSYMBOL:
      return "KSYMBOL";
    case PERF_RECORD_BPF_EVENT:
      return "BPF_EVENT";
    case PERF_RECORD_CGROUP:
      return "CGROUP";
    case PERF_RECORD_TEXT_POKE:
      return "TEXT_POKE";
    case PERF_RECORD_AUX_OUTPUT_HW_ID:
      return "AUX_OUTPUT_HW_ID";
    case kRecordHeaderAttr:
      return "ATTR";
    case kRecordHeaderEventType:
      return "EVENT_TYPE";
    case kRecordHeaderTracingData:
      return "TRACING_DATA";
    case kRecordHeaderBuildId:
      return "BUILD_ID";
    case kRecordFinishedRound:
      return "FINISHED_ROUND";
    case kRecordIdIndex:
      return "ID_INDEX";
    case kRecordAuxtraceInfo:
      return "AUXTRACE_INFO";
    case kRecordAuxtrace:
      return "AUXTRACE";
    case kRecordAuxtraceError:
      return "AUXTRACE_ERROR";
    case kRecordThreadMap:
      return "THREAD_MAP";
    case kRecordCpuMap:
      return "CPU_MAP";
    case kRecordStatConfig:
      return "STAT_CONFIG";
    case kRecordStat:
      return "STAT";
    case kRecordStatRound:
      return "STAT_ROUND";
    case kRecordEventUpdate:
      return "EVENT_UPDATE";
    case kRecordTimeConv:
      return "TIME_CONV";
    case kRecordHeaderFeature:
      return "FEATURE";
    case kRecordCompressed:
      return "COMPRESSED";
    case kRecordFinishedInit:
      return "FINISHED_INIT";
    default:
      return "";
  }
}

}  // namespace pp::report

// perf 6.1's event vocabulary: the words the lexer knows (parse-events.l's
// literals) and what resolution makes of them (parse-events.c's tables). One
// list each, so that a word the lexer accepts is a word resolution knows.
#pragma once

#include <linux/perf_event.h>

#include <array>
#include <cstdint>
#include <string_view>

#include "parse/lexer.h"

namespace pp::parse {

struct SymbolicEvent {
  std::string_view text;
  Tok kind;      // kValueSymHw, kValueSymSw or kValueSymTool
  uint64_t num;  // the config: PERF_COUNT_HW_*, PERF_COUNT_SW_*
};

// perf 6.1's symbolic events, in the lexer's order.
inline constexpr SymbolicEvent kSymbolicEvents[] = {
    {"cpu-cycles", Tok::kValueSymHw, PERF_COUNT_HW_CPU_CYCLES},
    {"cycles", Tok::kValueSymHw, PERF_COUNT_HW_CPU_CYCLES},
    {"stalled-cycles-frontend", Tok::kValueSymHw, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"idle-cycles-frontend", Tok::kValueSymHw, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", Tok::kValueSymHw, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"idle-cycles-backend", Tok::kValueSymHw, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
    {"instructions", Tok::kValueSymHw, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", Tok::kValueSymHw, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", Tok::kValueSymHw, PERF_COUNT_HW_CACHE_MISSES},
    {"branch-instructions", Tok::kValueSymHw, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branches", Tok::kValueSymHw, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", Tok::kValueSymHw, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", Tok::kValueSymHw, PERF_COUNT_HW_BUS_CYCLES},
    {"ref-cycles", Tok::kValueSymHw, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"cpu-clock", Tok::kValueSymSw, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", Tok::kValueSymSw, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", Tok::kValueSymSw, PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", Tok::kValueSymSw, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", Tok::kValueSymSw, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", Tok::kValueSymSw, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", Tok::kValueSymSw, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", Tok::kValueSymSw, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", Tok::kValueSymSw, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", Tok::kValueSymSw, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"alignment-faults", Tok::kValueSymSw, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", Tok::kValueSymSw, PERF_COUNT_SW_EMULATION_FAULTS},
    {"dummy", Tok::kValueSymSw, PERF_COUNT_SW_DUMMY},
    {"duration_time", Tok::kValueSymTool, 0},
    {"bpf-output", Tok::kValueSymSw, PERF_COUNT_SW_BPF_OUTPUT},
    {"cgroup-switches", Tok::kValueSymSw, 11 /* PERF_COUNT_SW_CGROUP_SWITCHES, 5.13+ */},
};

// Events perf must not mistake for cycles, loads or stores.
inline constexpr std::string_view kKernelPmuLiterals[] = {"cycles-ct", "cycles-t", "mem-loads",
                                                          "mem-loads-aux", "mem-stores"};
inline constexpr std::string_view kKernelPmuPrefixes[] = {"topdown-", "tx-capacity-",
                                                          "el-capacity-"};

// The legacy cache family (perf's evsel__hw_cache*): the names of each cache,
// operation and result, their index the config field. The lexer takes any of
// them as a word; resolution takes the first whose name is a prefix.
inline constexpr std::array<std::array<std::string_view, 5>, 7> kCacheTypeNames = {{
    {"L1-dcache", "l1-d", "l1d", "L1-data", ""},
    {"L1-icache", "l1-i", "l1i", "L1-instruction", ""},
    {"LLC", "L2", "", "", ""},
    {"dTLB", "d-tlb", "Data-TLB", "", ""},
    {"iTLB", "i-tlb", "Instruction-TLB", "", ""},
    {"branch", "branches", "bpu", "btb", "bpc"},
    {"node", "", "", "", ""},
}};
inline constexpr std::array<std::array<std::string_view, 4>, 3> kCacheOpNames = {{
    {"load", "loads", "read", ""},
    {"store", "stores", "write", ""},
    {"prefetch", "prefetches", "speculative-read", "speculative-load"},
}};
inline constexpr std::array<std::array<std::string_view, 4>, 2> kCacheResultNames = {{
    {"refs", "Reference", "ops", "access"},
    {"misses", "miss", "", ""},
}};
// Which operations each cache type has (perf's evsel__hw_cache_stat).
inline constexpr unsigned kCacheRead = 1 << PERF_COUNT_HW_CACHE_OP_READ;
inline constexpr unsigned kCacheWrite = 1 << PERF_COUNT_HW_CACHE_OP_WRITE;
inline constexpr unsigned kCachePrefetch = 1 << PERF_COUNT_HW_CACHE_OP_PREFETCH;
inline constexpr std::array<unsigned, 7> kCacheValidOps = {
    kCacheRead | kCacheWrite | kCachePrefetch,
    kCacheRead | kCachePrefetch,
    kCacheRead | kCacheWrite | kCachePrefetch,
    kCacheRead | kCacheWrite | kCachePrefetch,
    kCacheRead,
    kCacheRead,
    kCacheRead | kCacheWrite | kCachePrefetch};

struct TermKeyword {
  std::string_view text;
  TermType type;
};

inline constexpr TermKeyword kTermKeywords[] = {
    {"config", TermType::kConfig},
    {"config1", TermType::kConfig1},
    {"config2", TermType::kConfig2},
    {"config3", TermType::kConfig3},
    {"name", TermType::kName},
    {"period", TermType::kPeriod},
    {"freq", TermType::kFreq},
    {"branch_type", TermType::kBranchType},
    {"time", TermType::kTime},
    {"call-graph", TermType::kCallGraph},
    {"stack-size", TermType::kStackSize},
    {"max-stack", TermType::kMaxStack},
    {"nr", TermType::kMaxEvents},
    {"inherit", TermType::kInherit},
    {"no-inherit", TermType::kNoInherit},
    {"overwrite", TermType::kOverwrite},
    {"no-overwrite", TermType::kNoOverwrite},
    {"percore", TermType::kPercore},
    {"aux-output", TermType::kAuxOutput},
    {"aux-sample-size", TermType::kAuxSampleSize},
    {"metric-id", TermType::kMetricId},
};

}  // namespace pp::parse

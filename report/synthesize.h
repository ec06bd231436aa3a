// Side-band records synthesised from /proc, as perf record writes them at
// start, so that samples of instruction pointers (cpu-clock, hardware
// events) resolve to threads, binaries and functions in `perf report`:
//
//   PERF_RECORD_COMM   per thread:  /proc/<pid>/task/<tid>/comm  "bash\n"
//   PERF_RECORD_MMAP2  per executable mapping of a process, from
//                      /proc/<pid>/maps:
//     55d0c8a00000-55d0c8a28000 r-xp 00028000 fe:00 1835   /usr/bin/bash
//     (an anonymous executable mapping is named "//anon")
//   PERF_RECORD_MMAP   the kernel: "[kernel.kallsyms]_text" from _text to
//                      _etext, pgoff = _text, from /proc/kallsyms:
//     ffffffff81000000 T _text
//
// Every record carries the sample_id trailer of `sample_type` when
// `sample_id_all` (zeros: perf treats id 0 as "synthesised").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "base/result.h"
#include "report/bytes.h"
#include "sys/tree.h"

namespace pp::report {

// The sample_id trailer synthesised records need: the sample_type of the
// recording's events, and whether they set sample_id_all.
struct TrailerLayout {
  uint64_t sample_type = 0;
  bool sample_id_all = false;
};

struct SynthesisCounts {
  size_t processes = 0;
  size_t comm = 0;
  size_t mmap = 0;
  bool kernel_map = false;
};

// Appends one COMM record.
void synthesize_comm(uint32_t pid, uint32_t tid, std::string_view comm,
                     const TrailerLayout& trailer, Bytes* out);

// One line of /proc/<pid>/maps.
struct MapsLine {
  uint64_t start = 0, end = 0, pgoff = 0;
  uint32_t major = 0, minor = 0;
  uint64_t inode = 0;
  uint32_t prot = 0;   // PROT_READ | PROT_WRITE | PROT_EXEC
  uint32_t flags = 0;  // MAP_PRIVATE or MAP_SHARED
  std::string path;    // "" for anonymous memory
};

// Parses "start-end perms offset major:minor inode [path]". EINVAL on
// anything else.
Result<MapsLine> parse_maps_line(std::string_view line);

// Appends one MMAP2 record for `map` of process `pid`.
void synthesize_mmap2(uint32_t pid, const MapsLine& map, const TrailerLayout& trailer, Bytes* out);

// Which mappings become MMAP2 records.
enum class MapsMode {
  kNone,        // COMM records only
  kExecutable,  // what perf record writes by default
  kAll,         // data mappings too (perf record -d)
};

// COMM records for every thread of process `pid` and MMAP2 records for its
// mappings. A process that is gone (ENOENT, ESRCH) adds nothing and is not
// an error; one whose maps this user may not read gets its COMM records.
Status synthesize_process(const sys::Tree& proc, pid_t pid, const TrailerLayout& trailer,
                          MapsMode maps, Bytes* out, SynthesisCounts* counts);

// The same for every process under the proc root.
Result<SynthesisCounts> synthesize_processes(const sys::Tree& proc, const TrailerLayout& trailer,
                                             MapsMode maps, Bytes* out);

// Appends the kernel's MMAP record from <proc>/kallsyms. Returns false (and
// appends nothing) when kallsyms hides addresses (kptr_restrict) or lacks
// _text/_stext.
Result<bool> synthesize_kernel_mmap(const sys::Tree& proc, const TrailerLayout& trailer,
                                    Bytes* out);

// The running kernel's GNU build-id, from <sysfs>/kernel/notes (ELF notes,
// each: u32 namesz, u32 descsz, u32 type, the name and the desc each padded
// to 4 bytes; the build-id is type 3, name "GNU"). Empty when there is none.
Result<Bytes> kernel_build_id(const sys::Tree& sysfs);

// One entry of the HEADER_BUILD_ID table (perf's
// perf_record_header_build_id): header {type, misc | BUILD_ID_SIZE, size},
// s32 pid, 20 bytes of id, u8 id size, 3 bytes of padding, the file name
// padded to 64 bytes. `type` is 0 in a file's feature section and
// PERF_RECORD_HEADER_BUILD_ID (67) as a pipe record.
void build_id_entry(uint32_t type, uint16_t misc, int32_t pid, std::span<const uint8_t> id,
                    std::string_view filename, Bytes* out);

}  // namespace pp::report

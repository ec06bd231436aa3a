// The perf.data format: the numbers and fixed layouts that the real perf
// (tools/perf/util/header.h, session.c, event.h; perf 6.1) reads. Facts of
// the format only; the writer and reader build on them.
//
// File mode ("PERFILE2", version 2):
//
//   0     struct FileHeader (104 bytes): magic, size, attr_size,
//         attrs{offset,size}, data{offset,size}, event_types{0,0},
//         feature bitmap (256 bits)
//   104   each event's sample ids (u64 each)
//   ...   attrs: per event the perf_event_attr (attr.size bytes) and a
//         FileSection{offset,size} pointing at its ids; attr_size in the
//         header is attr.size + 16 and the same for every event
//   data  the records, back to back
//   data.offset + data.size:
//         one FileSection per feature bit set, in bit order, then the
//         feature sections they point at
//
// Pipe mode: a 16-byte header {magic, 16}, then records only: one
// HEADER_ATTR per event, HEADER_FEATURE records, HEADER_TRACING_DATA
// (followed by the tracing data itself, outside the record's size), then
// the data, with FINISHED_ROUND records between flushes.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

namespace pp::report {

// "PERFILE2" read as a little-endian u64; the byte-swapped value marks a
// file from a host of the other byte order.
inline constexpr uint64_t kPerfMagic = 0x32454c4946524550ULL;
inline constexpr uint64_t kPerfMagicSwapped = 0x50455246494c4532ULL;

inline constexpr size_t kFeatureBits = 256;

struct FileSection {
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct FileHeader {
  uint64_t magic = kPerfMagic;
  uint64_t size = 0;       // sizeof(FileHeader)
  uint64_t attr_size = 0;  // attr.size + sizeof(FileSection)
  FileSection attrs;
  FileSection data;
  FileSection event_types;  // unused: zeros
  uint64_t features[kFeatureBits / 64] = {};
};
static_assert(sizeof(FileHeader) == 104);

struct PipeHeader {
  uint64_t magic = kPerfMagic;
  uint64_t size = sizeof(PipeHeader);
};
static_assert(sizeof(PipeHeader) == 16);

// Feature bits (perf's HEADER_*). kFeatureLast is perf 6.1's
// HEADER_LAST_FEATURE, which pipe mode also sends as the feature id of the
// HEADER_FEATURE record that ends the features.
enum Feature : int {
  kFeatureReserved = 0,
  kFeatureTracingData = 1,
  kFeatureBuildId = 2,
  kFeatureHostname = 3,
  kFeatureOsRelease = 4,
  kFeatureVersion = 5,
  kFeatureArch = 6,
  kFeatureNrCpus = 7,
  kFeatureCpuDesc = 8,
  kFeatureCpuId = 9,
  kFeatureTotalMem = 10,
  kFeatureCmdline = 11,
  kFeatureEventDesc = 12,
  kFeatureCpuTopology = 13,
  kFeatureNumaTopology = 14,
  kFeatureBranchStack = 15,
  kFeaturePmuMappings = 16,
  kFeatureGroupDesc = 17,
  kFeatureAuxtrace = 18,
  kFeatureStat = 19,
  kFeatureCache = 20,
  kFeatureSampleTime = 21,
  kFeatureMemTopology = 22,
  kFeatureClockId = 23,
  kFeatureDirFormat = 24,
  kFeatureBpfProgInfo = 25,
  kFeatureBpfBtf = 26,
  kFeatureCompressed = 27,
  kFeatureCpuPmuCaps = 28,
  kFeatureClockData = 29,
  kFeatureHybridTopology = 30,
  kFeaturePmuCaps = 31,
  kFeatureLast = 32,
};

// perf's name for a feature bit ("TRACING_DATA"), or "" when unknown.
const char* feature_name(int feature);

// Record types perf itself defines (PERF_RECORD_USER_TYPE_START and up);
// the kernel's own types (PERF_RECORD_SAMPLE, PERF_RECORD_LOST, ...) come
// from <linux/perf_event.h>.
enum UserRecordType : uint32_t {
  kRecordHeaderAttr = 64,
  kRecordHeaderEventType = 65,
  kRecordHeaderTracingData = 66,
  kRecordHeaderBuildId = 67,
  kRecordFinishedRound = 68,
  kRecordIdIndex = 69,
  kRecordAuxtraceInfo = 70,
  kRecordAuxtrace = 71,
  kRecordAuxtraceError = 72,
  kRecordThreadMap = 73,
  kRecordCpuMap = 74,
  kRecordStatConfig = 75,
  kRecordStat = 76,
  kRecordStatRound = 77,
  kRecordEventUpdate = 78,
  kRecordTimeConv = 79,
  kRecordHeaderFeature = 80,
  kRecordCompressed = 81,
  kRecordFinishedInit = 82,
};

// The name perf prints for a record type ("SAMPLE", "FINISHED_ROUND"), or ""
// when unknown.
const char* record_type_name(uint32_t type);

// HEADER_TRACING_DATA's record in pipe mode: the header, the size of the
// tracing data that follows the record (padded to 8 bytes), and 4 bytes of
// padding (perf writes 16 bytes).
inline constexpr uint16_t kTracingDataRecordSize = 16;

// perf's own misc bit on a build-id entry: the id's size is in the entry.
inline constexpr uint16_t kMiscBuildIdSize = 1 << 15;

// The pid perf files the host kernel's build-id under (HOST_KERNEL_ID).
inline constexpr int32_t kHostKernelPid = -1;

// Smallest perf_event_attr perf reads (PERF_ATTR_SIZE_VER0).
inline constexpr uint32_t kAttrSizeVer0 = 64;

// The synthetic record headers are u16-sized.
inline constexpr size_t kMaxRecordSize = 0xffff;

}  // namespace pp::report

// libFuzzer target: any bytes through the perf.data reader and everything
// that decodes what it accepts (features, tracing data, samples, sample_id
// trailers, decoded by sys/perf_abi_sample.h). The reader must refuse malformed input, never crash
// or read outside it. Seeds: tests/fuzz/corpus/perf_data_reader_fuzzer/ (files and pipe streams
// from PerfDataWriter and from perf record).
#include <cstddef>
#include <cstdint>

#include "report/features.h"
#include "report/perf_data_reader.h"
#include "sys/perf_abi_sample.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp;
  using namespace pp::report;
  auto parsed = PerfDataReader::parse(Bytes(data, data + size), "fuzz");
  if (!parsed.ok())
    return 0;
  const PerfDataReader& file = *parsed;
  (void)file.tracing_data();
  for (int feature : file.features()) {
    auto section = *file.feature(feature);
    switch (feature) {
      case kFeatureNrCpus:
        (void)decode_nr_cpus(section);
        break;
      case kFeatureCmdline:
        (void)decode_cmdline(section);
        break;
      case kFeatureEventDesc:
        (void)decode_event_desc(section);
        break;
      case kFeatureSampleTime:
        (void)decode_sample_time(section);
        break;
      case kFeatureTotalMem:
        (void)decode_u64_feature(section, "HEADER_TOTAL_MEM");
        break;
      default:
        (void)decode_string_feature(section);
    }
  }
  const perf_event_attr& first = file.events().front().attr.attr;
  (void)file.for_each_record([&](const PerfDataRecord& record) -> Status {
    if (record.type == PERF_RECORD_SAMPLE)
      (void)file.sample(record);
    else if (first.sample_id_all && record.type < kRecordHeaderAttr)
      (void)sys::decode_sample_id(first.sample_type, record.bytes);
    return ok_status();
  });
  return 0;
}

// libFuzzer target: any input through the RAS tracepoints' decoders
// (mce/ras_events.h) and their printers, and through the ERST record reader
// (mce/erst.h). The input's first byte picks the
// tracepoint; the rest is read two ways: as the JSON "fields" object of a
// stored record, and, byte for byte, as every field a decoder reads (its
// numbers, strings and arrays). A decoder must never crash or read outside
// what a field holds. Seeds: tests/fuzz/corpus/ras_events_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/json.h"
#include "mce/erst.h"
#include "mce/ras_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp;
  using namespace pp::mce;
  if (size == 0)
    return 0;
  // The whole input as an ERST record (mce/erst.h), decoded when it reads.
  if (auto m = parse_erst_mce(std::span(data, size), "fuzz"); m.ok()) {
    std::string out;
    print_mce_text(decode_mce(m->regs), out);
  }
  const auto& tracepoints = ras_tracepoints();
  std::string_view tp = tracepoints[data[0] % tracepoints.size()];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  auto run = [&](const RasFields& fields) {
    if (auto d = decode_ras_event(tp, fields)) {
      std::string out;
      print_ras_text(*d, out);
      (void)dump_json(ras_json(*d));
    }
  };
  if (auto parsed = parse_json(rest, "fuzz input"); parsed.ok())
    run(ras_fields_from_json(nlohmann::ordered_json::parse(dump_json(*parsed), nullptr, false)));
  // The bytes as every field: numbers from the first eight, the whole as
  // text and as elements.
  uint64_t number = 0;
  std::memcpy(&number, rest.data(), std::min(rest.size(), sizeof(number)));
  RasValue v;
  v.number = number;
  v.text = std::string(rest);
  v.elements = std::vector<uint64_t>(rest.begin(), rest.end());
  RasFields fields;
  for (const char* name : {"dev_name",   "status",      "severity",      "tlp_header_valid",
                           "tlp_header", "pfn",         "type",          "result",
                           "mpidr",      "midr",        "running_state", "psci_state",
                           "affinity",   "pei_len",     "pei_buf",       "ctx_len",
                           "ctx_buf",    "oem_len",     "oem_buf",       "sev",
                           "cpu",        "sec_type",    "fru_id",        "fru_text",
                           "len",        "buf",         "err_seq",       "etype",
                           "pa",         "pa_mask_lsb", "data",          "memdev",
                           "host",       "serial",      "log",           "first_error",
                           "dpa",        "hpa",         "dpa_length"})
    fields[name] = v;
  run(fields);
  return 0;
}

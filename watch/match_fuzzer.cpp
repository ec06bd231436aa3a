// libFuzzer target: any text through watch's match-expression parser, and
// every expression it accepts evaluated against a machine check's record and
// a sched_switch record. A bad expression must come back as a usage error
// in the caret form (the caret inside the text, or just past its end), never
// crash, recurse without bound or read outside its input. Seeds:
// tests/fuzz/corpus/match_fuzzer/ (expressions of the documented grammar,
// and broken ones).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "watch/match.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

const nlohmann::ordered_json& records() {
  static const nlohmann::ordered_json kRecords = nlohmann::ordered_json::array({
      {{"origin", "live"},
       {"event", "mce_record"},
       {"tracepoint", "mce:mce_record"},
       {"cpu", 1},
       {"fields", {{"bank", 7}, {"status", 13690942867206766928ull}}},
       {"mce",
        {{"status", "0xbe00000000000150"},
         {"addr", "0x12345000"},
         {"bank", 7},
         {"status_bits", {"VAL", "UC", "PCC"}},
         {"severity", "fatal"},
         {"kernel_severity", "panic"},
         {"simple", true}}}},
      {{"origin", "kmsg"},
       {"tracepoint", "sched:sched_switch"},
       {"cpu", 3},
       {"pid", -1},
       {"fields", {{"prev_comm", "kworker/0:1"}, {"ratio", 0.5}, {"nothing", nullptr}}}},
  });
  return kRecords;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::watch;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto match = Match::parse(text);
  if (!match.ok()) {
    const std::string& message = match.error().message();
    size_t caret = message.rfind('\n');
    // Every located error ends in a caret line within (or just past) the text.
    if (caret != std::string::npos && message.size() - caret - 1 > text.size() + 3)
      std::abort();
    return 0;
  }
  for (const auto& record : records())
    (void)match->matches(record);
  (void)match->fields();
  return 0;
}

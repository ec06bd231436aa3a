// libFuzzer target: any text through the filter language's parser, with the
// keys watch declares (every name, severities ranked) and with the closed
// set top declares for the events it shows; every expression either
// accepts is evaluated against a machine check's record and a
// sched_switch's. A bad expression must come back as a usage error in the
// caret form (the caret inside the text, or just past its end), never
// crash, recurse without bound or read outside its input. Seeds:
// tests/fuzz/corpus/expression_fuzzer/ (expressions of the documented
// grammar, and broken ones).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "filter/expression.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using pp::filter::Keys;
using pp::filter::Value;
using Fields = std::map<std::string, Value, std::less<>>;

class MapRecord final : public pp::filter::Record {
 public:
  explicit MapRecord(const Fields& fields) : fields_(fields) {}
  std::optional<Value> field(std::string_view key) const override {
    auto found = fields_.find(key);
    if (found == fields_.end())
      return std::nullopt;
    return found->second;
  }

 private:
  const Fields& fields_;
};

const Fields& mce_record() {
  static const Fields kFields = {
      {"tracepoint", Value::of_text("mce:mce_record")},
      {"cpu", Value::of_unsigned(1)},
      {"bank", Value::of_unsigned(7)},
      {"status", Value::of_text("0xbe00000000000150")},
      {"addr", Value::of_text("0x12345000")},
      {"status_bits",
       Value::of_list({Value::of_text("VAL"), Value::of_text("UC"), Value::of_text("PCC")})},
      {"severity", Value::of_text("fatal")},
      {"kernel_severity", Value::of_text("panic")},
      {"error_class", Value::of_text("memory-as-cache")},
      {"class", Value::of_text("memory-as-cache")},
      {"simple", Value::of_text("true")},
      {"ratio", Value::of_text("0.5")},
  };
  return kFields;
}

const Fields& switch_record() {
  static const Fields kFields = {
      {"tracepoint", Value::of_text("sched:sched_switch")},
      {"cpu", Value::of_unsigned(3)},
      {"pid", Value::of_signed(-1)},
      {"prev_comm", Value::of_text("kworker/0:1")},
      {"next_pid", Value::of_signed(-1)},
      {"ip", Value::of_text("0xffffffff81000000")},
      {"sym", Value::of_text("_raw_spin_lock")},
      {"empty", Value::of_list({})},
  };
  return kFields;
}

const Keys& open_keys() {
  static const Keys kKeys = Keys::open("severity, bank, cpu, a tracepoint field...")
                                .add("severity", &pp::filter::mce_severity_scale())
                                .add("kernel_severity", &pp::filter::kernel_severity_scale());
  return kKeys;
}

const Keys& closed_keys() {
  static const Keys kKeys = [] {
    Keys keys;
    for (const char* k : {"pid", "tid", "cpu", "comm", "sym", "dso", "ip", "bank", "error_class",
                          "class", "prev_comm", "next_pid", "status"})
      keys.add(k);
    keys.add("severity", &pp::filter::mce_severity_scale());
    return keys;
  }();
  return kKeys;
}

void run(std::string_view text, const Keys& keys) {
  auto e = pp::filter::Expression::parse(text, keys, "--filter");
  if (!e.ok()) {
    const std::string& message = e.error().message();
    size_t caret = message.rfind('\n');
    // Every located error ends in a caret line within (or just past) the text.
    if (caret != std::string::npos && message.size() - caret - 1 > text.size() + 3)
      std::abort();
    return;
  }
  for (const Fields* fields : {&mce_record(), &switch_record()})
    (void)e->matches(MapRecord(*fields));
  (void)e->keys();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  run(text, open_keys());
  run(text, closed_keys());
  return 0;
}

// perf_pmu__config(): terms through format files into a perf_event_attr.
#include "pmu/config.h"

#include <cstdio>

namespace pp::pmu {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string word_name(unsigned word) {
  switch (word) {
    case kConfigWord:
      return "config";
    case kConfig1Word:
      return "config1";
    case kConfig2Word:
      return "config2";
    case kConfig3Word:
      return "config3";
    default:
      return "attr" + std::to_string(word);
  }
}

ConfigError failure(size_t col, int code, std::string message, std::string help = {}) {
  return ConfigError{col, code, std::move(message), std::move(help), nullptr};
}

}  // namespace

std::string alias_note(const FormatTerm& t) {
  if (!t.alias)
    return {};
  return " (from event alias '" + t.alias->name + "', " + t.alias->path + ": '" + t.alias->terms +
         "')";
}

std::optional<ConfigError> apply_formats(const Pmu& pmu, const std::vector<FormatTerm>& terms,
                                         sys::EventAttr* attr, bool* config3_used) {
  struct Written {
    unsigned word;
    uint64_t bits;
    const FormatFile* file;
    const FormatTerm* term;
  };
  std::vector<Written> written;
  std::vector<bool> used(terms.size());  // consumed as the value of a "?" parameter
  for (size_t i = 0; i < terms.size(); i++) {
    const FormatTerm& t = terms[i];
    if (used[i])
      continue;
    const FormatFile* file = pmu.find_format(t.name);
    if (!file) {
      ConfigError e;
      e.col = t.col;
      e.no_format = &t;
      return e;
    }
    // The words of an error, built only when there is one.
    auto where = [&] { return "term '" + t.name + "' of PMU '" + pmu.name + "'" + alias_note(t); };
    if (file->problem)
      return failure(t.col, file->problem->code(), where() + " cannot be used",
                     file->problem->message());
    const Format& format = file->format;
    auto spelled = [&] {
      return "format file " + file->path + " says '" + format_string(format) + "'";
    };
    if (format.word == 0)
      return failure(t.col, EINVAL, where() + " writes word 0 of perf_event_attr",
                     spelled() + ", but word 0 (type and size) is for perf-persistent to set");
    if (format.word >= sys::kAttrWords)
      return failure(t.col, EINVAL, where() + " writes past the end of perf_event_attr",
                     spelled() + ", but perf_event_attr has " + std::to_string(sys::kAttrWords) +
                         " u64 words (0-" + std::to_string(sys::kAttrWords - 1) +
                         ", 136 bytes): word " + std::to_string(format.word) + " does not exist");

    uint64_t value = 0;
    if (t.is_num) {
      value = t.num;  // a bare term is 1, whatever its width, as in perf 6.1
    } else if (t.str == "?") {
      // A parameter: its value is another term of the same name.
      const FormatTerm* param = nullptr;
      for (size_t j = 0; j < terms.size(); j++)
        if (terms[j].is_num && terms[j].name == t.name) {
          used[j] = true;
          param = &terms[j];
          break;
        }
      if (!param)
        return failure(
            t.col, EINVAL, "required parameter '" + t.name + "' not specified" + alias_note(t),
            "give it a value: " + pmu.name + "/" + (t.alias ? t.alias->name : std::string("...")) +
                "," + t.name + "=VALUE/");
      value = param->num;
    } else {
      return failure(t.val_col, EINVAL, where() + " takes a number, not '" + t.str + "'",
                     spelled());
    }
    uint64_t max = format_max_value(format.bits);
    if (value > max)
      return failure(t.val_col, EINVAL,
                     "value " + hex(value) + " too big for format, maximum is " +
                         std::to_string(max) + " (" + hex(max) + "): " + where(),
                     spelled());
    for (const Written& w : written) {
      if (w.file == file || w.word != format.word || !(w.bits & format.bits))
        continue;
      return failure(t.col, EINVAL,
                     "formats '" + w.file->name + "' and '" + file->name + "' of PMU '" + pmu.name +
                         "' both write bits " + format_bits_string(w.bits & format.bits) + " of " +
                         word_name(format.word),
                     "'" + w.term->name + "' and '" + t.name +
                         "' cannot go together in one event: " + w.file->path + " says '" +
                         format_string(w.file->format) + "', " + file->path + " says '" +
                         format_string(format) + "'");
    }
    written.push_back({format.word, format.bits, file, &t});
    format_scatter(format.bits, value, &attr->words[format.word]);
    if (format.word == kConfig3Word)
      *config3_used = true;
  }
  return std::nullopt;
}

}  // namespace pp::pmu

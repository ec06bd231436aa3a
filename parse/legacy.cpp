// The legacy events: the symbolic hardware and software events (cycles,
// cpu-clock: perf's value_sym) and the hardware cache family
// (L1-dcache-load-misses: parse_events_add_cache()).
#include <linux/perf_event.h>
#include <strings.h>

#include <array>

#include "parse/names.h"
#include "parse/resolver.h"

namespace pp::parse {
namespace {

// The first entry of `table` with an alias that is a case-insensitive prefix
// of `word` (perf's parse_aliases), or -1.
template <size_t N, size_t M>
int cache_index(std::string_view word,
                const std::array<std::array<std::string_view, M>, N>& table) {
  for (size_t i = 0; i < N; i++)
    for (std::string_view alias : table[i])
      if (!alias.empty() && word.size() >= alias.size() &&
          strncasecmp(word.data(), alias.data(), alias.size()) == 0)
        return int(i);
  return -1;
}

}  // namespace

// value_sym ['/' event_config '/']: PERF_TYPE_HARDWARE or SOFTWARE.
Status Resolver::add_symbol(const EventDef& def) {
  uint32_t type = def.hardware ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
  return add_numeric(type, def.name.num, def.terms, "event '" + def.name.text + "'");
}

// cache ['-' op_result ['-' op_result]]: PERF_TYPE_HW_CACHE with
// config = type | op << 8 | result << 16.
Status Resolver::add_cache(const EventDef& def) {
  const Word& type_word = def.name;
  int type = cache_index(type_word.text, kCacheTypeNames);
  if (type < 0)
    return fail(type_word.col, EINVAL, "unknown cache '" + type_word.text + "'");
  std::string name = type_word.text;
  int op = -1, result = -1;
  for (const Word& part : def.parts) {
    name += "-" + part.text;
    int as_op = cache_index(part.text, kCacheOpNames);
    int as_result = cache_index(part.text, kCacheResultNames);
    if (as_op >= 0) {
      if (op >= 0)
        return fail(part.col, EINVAL, "a second cache operation '" + part.text + "'",
                    "a cache event has one operation and one result, e.g. " + type_word.text +
                        "-load-misses");
      if (!(kCacheValidOps[size_t(type)] & (1u << as_op))) {
        std::string valid;
        for (unsigned o = 0; o < 3; o++)
          if (kCacheValidOps[size_t(type)] & (1u << o))
            valid += (valid.empty() ? "" : ", ") + std::string(kCacheOpNames[o][0]);
        return fail(part.col, EINVAL,
                    "'" + type_word.text + "' has no '" + part.text + "' operation",
                    "its operations are: " + valid);
      }
      op = as_op;
    } else if (as_result >= 0) {
      if (result >= 0)
        return fail(part.col, EINVAL, "a second cache result '" + part.text + "'",
                    "a cache event has one operation and one result, e.g. " + type_word.text +
                        "-load-misses");
      result = as_result;
    }
  }
  if (op < 0)
    op = PERF_COUNT_HW_CACHE_OP_READ;
  if (result < 0)
    result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
  uint64_t config = uint64_t(type) | uint64_t(op) << 8 | uint64_t(result) << 16;
  size_t first = out_.size();
  PP_RETURN_IF_ERROR(
      add_numeric(PERF_TYPE_HW_CACHE, config, def.terms, "cache event '" + name + "'"));
  if (out_[first].spec.name.empty())
    out_[first].spec.name = name;
  return ok_status();
}

}  // namespace pp::parse

// Raw and numeric events: r1a8 (PERF_TYPE_RAW) and TYPE:CONFIG (4:0x1a8),
// perf's parse_events_add_numeric() on what the user wrote.
#include <linux/perf_event.h>

#include <limits>

#include "parse/resolver.h"

namespace pp::parse {

// PE_RAW opt_event_config
Status Resolver::add_raw(const EventDef& def) {
  return add_numeric(PERF_TYPE_RAW, def.name.num, def.terms, "raw event '" + def.name.text + "'");
}

// PE_VALUE ':' PE_VALUE opt_event_config
Status Resolver::add_type_config(const EventDef& def) {
  const Word& type = def.name;
  const Word& config = def.second;
  if (type.num > std::numeric_limits<uint32_t>::max())
    return fail(type.col, EINVAL,
                "type " + type.text + " does not fit in 32 bits (perf_event_attr.type)");
  return add_numeric(uint32_t(type.num), config.num, def.terms,
                     "event '" + type.text + ":" + config.text + "'");
}

}  // namespace pp::parse

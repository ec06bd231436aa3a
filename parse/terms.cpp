// The static terms: what they write into an attr (Resolver::apply_static_term,
// perf's config_term_common), what perf keeps of them (collect_config_terms,
// get_config_terms) and what it applies at open (apply_config_terms,
// evsel__apply_config_terms).
#include "parse/terms.h"

#include <linux/perf_event.h>
#include <strings.h>

#include <limits>

#include "parse/resolver.h"

namespace pp::parse {
namespace {

// branch_type=... (perf's branch_modes).
struct BranchMode {
  std::string_view name;
  uint64_t mode;
};
constexpr BranchMode kBranchModes[] = {
    {"u", PERF_SAMPLE_BRANCH_USER},
    {"k", PERF_SAMPLE_BRANCH_KERNEL},
    {"hv", PERF_SAMPLE_BRANCH_HV},
    {"any", PERF_SAMPLE_BRANCH_ANY},
    {"any_call", PERF_SAMPLE_BRANCH_ANY_CALL},
    {"any_ret", PERF_SAMPLE_BRANCH_ANY_RETURN},
    {"ind_call", PERF_SAMPLE_BRANCH_IND_CALL},
    {"abort_tx", PERF_SAMPLE_BRANCH_ABORT_TX},
    {"in_tx", PERF_SAMPLE_BRANCH_IN_TX},
    {"no_tx", PERF_SAMPLE_BRANCH_NO_TX},
    {"cond", PERF_SAMPLE_BRANCH_COND},
    {"ind_jmp", PERF_SAMPLE_BRANCH_IND_JUMP},
    {"call", PERF_SAMPLE_BRANCH_CALL},
    {"save_type", PERF_SAMPLE_BRANCH_TYPE_SAVE},
    {"stack", PERF_SAMPLE_BRANCH_CALL_STACK},
    {"priv", uint64_t(1) << 18 /* PERF_SAMPLE_BRANCH_PRIV_SAVE, 6.1 */},
};
constexpr uint64_t kBranchPrivilegeOnly =
    PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_KERNEL | PERF_SAMPLE_BRANCH_HV;

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

uint64_t branch_mode(std::string_view name) {
  uint64_t mode = 0;
  for (const BranchMode& m : kBranchModes)
    if (iequals(m.name, name))
      mode = m.mode;
  if (mode && (mode & ~kBranchPrivilegeOnly) == 0)
    mode |= PERF_SAMPLE_BRANCH_ANY;
  return mode;
}

std::string branch_mode_names() {
  std::string names;
  for (const BranchMode& m : kBranchModes)
    names += std::string(m.name) + ",";
  return names;
}

// config_term_common(): a static term applied to a legacy event's attr, or
// checked for its type when it only matters later.
Status Resolver::apply_static_term(const Term& t, sys::EventAttr* attr, bool* config3_used,
                                   std::string_view what) {
  auto need_num = [&]() -> Status {
    if (!t.is_num)
      return fail(t.val_col, EINVAL, "'" + t.label() + "' takes a number, not " + t.value_text());
    return ok_status();
  };
  auto need_str = [&]() -> Status {
    if (t.is_num)
      return fail(t.val_col, EINVAL,
                  "'" + t.label() + "' takes a name, not the number " + std::to_string(t.num));
    return ok_status();
  };
  auto need_bool = [&]() -> Status {
    PP_RETURN_IF_ERROR(need_num());
    if (t.num > 1)
      return fail(t.val_col, EINVAL,
                  "'" + t.label() + "' takes 0 or 1, not " + std::to_string(t.num));
    return ok_status();
  };
  switch (t.type) {
    case TermType::kConfig:
      PP_RETURN_IF_ERROR(need_num());
      attr->attr.config = t.num;
      return ok_status();
    case TermType::kConfig1:
      PP_RETURN_IF_ERROR(need_num());
      attr->attr.config1 = t.num;
      return ok_status();
    case TermType::kConfig2:
      PP_RETURN_IF_ERROR(need_num());
      attr->attr.config2 = t.num;
      return ok_status();
    case TermType::kConfig3:
      PP_RETURN_IF_ERROR(need_num());
      attr->config3() = t.num;
      *config3_used = true;
      return ok_status();
    case TermType::kPeriod:
    case TermType::kFreq:
    case TermType::kStackSize:
    case TermType::kInherit:
    case TermType::kNoInherit:
    case TermType::kOverwrite:
    case TermType::kNoOverwrite:
    case TermType::kMaxStack:
    case TermType::kMaxEvents:
    case TermType::kAuxOutput:
      return need_num();
    case TermType::kTime:
    case TermType::kPercore:
      return need_bool();
    case TermType::kAuxSampleSize:
      PP_RETURN_IF_ERROR(need_num());
      if (t.num > std::numeric_limits<uint32_t>::max())
        return fail(
            t.val_col, EINVAL,
            "'aux-sample-size' is too big: " + std::to_string(t.num) + " does not fit in 32 bits");
      return ok_status();
    case TermType::kName:
    case TermType::kMetricId:
      return need_str();
    case TermType::kCallGraph:
      PP_RETURN_IF_ERROR(need_str());
      if (t.str != "fp" && t.str != "dwarf" && t.str != "lbr" && t.str != "no")
        return fail(t.val_col, EINVAL, "unknown call-graph mode '" + t.str + "'",
                    "call-graph takes fp, dwarf, lbr or no (the stack size is stack-size=N)");
      return ok_status();
    case TermType::kBranchType: {
      PP_RETURN_IF_ERROR(need_str());
      if (t.str == "no")
        return ok_status();
      uint64_t mode = branch_mode(t.str);
      if (!mode)
        return fail(t.val_col, EINVAL, "invalid branch sample type '" + t.str + "'",
                    "branch_type takes one of " + branch_mode_names() + "no");
      attr->attr.branch_sample_type |= mode;
      return ok_status();
    }
    case TermType::kUser:
    case TermType::kDrvCfg:
      break;
  }
  return fail(t.col, EINVAL, "unknown term '" + t.label() + "' for " + std::string(what),
              "valid terms: " + std::string(kStaticTerms));
}

ConfigTerms collect_config_terms(const std::vector<Term>& terms) {
  ConfigTerms c;
  for (const Term& t : terms) {
    switch (t.type) {
      case TermType::kPeriod:
        c.period = t.num;
        c.period_weak = t.weak;
        c.freq.reset();  // the later of period and freq wins, as in the attr
        break;
      case TermType::kFreq:
        c.freq = t.num;
        c.freq_weak = t.weak;
        c.period.reset();
        break;
      case TermType::kTime:
        c.time = t.num != 0;
        break;
      case TermType::kCallGraph:
        c.call_graph = t.str;
        break;
      case TermType::kBranchType:
        c.branch_type = t.str;
        break;
      case TermType::kStackSize:
        c.stack_size = t.num;
        break;
      case TermType::kInherit:
        c.inherit = t.num != 0;
        break;
      case TermType::kNoInherit:
        c.inherit = t.num == 0;
        break;
      case TermType::kMaxStack:
        c.max_stack = t.num;
        break;
      case TermType::kMaxEvents:
        c.max_events = t.num;
        break;
      case TermType::kOverwrite:
        c.overwrite = t.num != 0;
        break;
      case TermType::kNoOverwrite:
        c.overwrite = t.num == 0;
        break;
      case TermType::kDrvCfg:
        c.driver_config.push_back(t.str);
        break;
      case TermType::kPercore:
        c.percore = t.num != 0;
        break;
      case TermType::kAuxOutput:
        c.aux_output = t.num != 0;
        break;
      case TermType::kAuxSampleSize:
        c.aux_sample_size = t.num;
        break;
      case TermType::kMetricId:
        if (c.metric_id.empty())
          c.metric_id = t.str;
        break;
      default:
        break;
    }
  }
  return c;
}

std::string first_name_term(const std::vector<Term>& terms) {
  for (const Term& t : terms)
    if (t.type == TermType::kName)
      return t.str;
  return {};
}

void apply_config_terms(const ConfigTerms& terms, sys::EventAttr* attr) {
  perf_event_attr& a = attr->attr;
  if (terms.period) {
    a.sample_period = *terms.period;
    a.freq = 0;
    a.sample_type &= ~uint64_t(PERF_SAMPLE_PERIOD);
  }
  if (terms.freq) {
    a.sample_freq = *terms.freq;
    a.freq = 1;
    a.sample_type |= PERF_SAMPLE_PERIOD;
  }
  if (terms.time) {
    if (*terms.time)
      a.sample_type |= PERF_SAMPLE_TIME;
    else
      a.sample_type &= ~uint64_t(PERF_SAMPLE_TIME);
  }
  if (terms.branch_type) {
    if (*terms.branch_type != "no") {
      a.sample_type |= PERF_SAMPLE_BRANCH_STACK;
      a.branch_sample_type |= branch_mode(*terms.branch_type);
    } else {
      a.sample_type &= ~uint64_t(PERF_SAMPLE_BRANCH_STACK);
    }
  }
  if (terms.inherit)
    a.inherit = *terms.inherit ? 1 : 0;
  if (terms.overwrite)
    a.write_backward = *terms.overwrite ? 1 : 0;
  if (terms.aux_output)
    a.aux_output = *terms.aux_output ? 1 : 0;
}

}  // namespace pp::parse

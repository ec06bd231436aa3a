// PMU events: pmu/terms/ (perf's parse_events_add_pmu()), the PMUs a name
// with a numeric suffix stands for (uncore_cbox/.../), and aliases from a
// PMU's events/ directory (tsc, msr/tsc/, persistent/ctxsw/), on every PMU
// that has them. The terms go through the PMU's formats in pmu/config.h.
#include <algorithm>

#include "base/strings.h"
#include "parse/glob.h"
#include "parse/grammar.h"
#include "parse/resolver.h"
#include "parse/terms.h"
#include "pmu/config.h"

namespace pp::parse {
namespace {

// perf_pmu__match(): "<name>*" with only a numeric suffix after <name>;
// uncore_ is optional in front.
bool pmu_name_matches(std::string_view pmu_name, std::string_view name) {
  if (starts_with(pmu_name, "uncore_") && !starts_with(name, "uncore_"))
    pmu_name.remove_prefix(7);
  if (!glob_match(pmu_name, std::string(name) + "*"))
    return false;
  if (pmu_name.substr(0, name.size()) != name)
    return false;
  std::string_view rest = pmu_name.substr(name.size());
  if (rest.empty())
    return true;
  if (rest[0] == '_')
    rest.remove_prefix(1);
  if (rest.empty())
    return false;
  return std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// An alias standing for a term (perf's pmu_find_alias()).
const pmu::Alias* alias_for_term(const pmu::Pmu& pmu, const Term& t) {
  if (t.type != TermType::kUser)
    return nullptr;
  if (t.is_num) {
    if (t.num != 1 || pmu.find_format(t.config))
      return nullptr;
    return pmu.find_alias(t.config);
  }
  if (!iequals(t.config, "event"))
    return nullptr;
  return pmu.find_alias(t.str);
}

std::string valid_terms(const pmu::Pmu& pmu) {
  std::string out = "valid terms: ";
  for (const pmu::FormatFile& f : pmu.formats)
    out += f.name + ",";
  return out + std::string(kStaticTerms);
}

}  // namespace

// PE_NAME opt_pmu_config: the PMU of that name, else every PMU the name
// stands for with a numeric suffix.
Status Resolver::add_pmu_event(const EventDef& def) {
  const Word& name = def.name;
  const std::vector<Term>& terms = def.terms;
  size_t mark = errors_.size();
  const pmu::PmuEntry* entry = model_.find_pmu(name.text);
  if (entry) {
    if (add_pmu(*entry, terms, name.col).ok())
      return ok_status();
  }
  // perf then tries every PMU whose name is this one with a numeric suffix:
  // uncore_cbox/.../ stands for uncore_cbox_0, uncore_cbox_1, ...
  size_t matched = 0, added = 0;
  size_t wildcard_mark = errors_.size();
  for (const pmu::PmuEntry& e : model_.pmus()) {
    if (&e == entry || !e.pmu || !pmu_name_matches(e.name, name.text))
      continue;
    matched++;
    if (add_pmu(e, terms, name.col).ok())
      added++;
  }
  if (added) {
    errors_.resize(mark);
    return ok_status();
  }
  if (entry) {
    errors_.resize(wildcard_mark);  // the named PMU's own errors say it best
    return Error(errors_.empty() ? EINVAL : errors_.back().code, "PMU event failed");
  }
  if (matched)
    return Error(errors_.back().code, "PMU event failed");
  if (name.text == pmu::kPersistentPmu)
    return fail(name.col, ENOENT, "no persistent events on this machine",
                "the kernel has no 'persistent' PMU (" + model_.sysfs_root() + "/" +
                    pmu::kDevicesDir + "/persistent) and no broker publishes one (" +
                    model_.broker_run_dir() +
                    "/devices/persistent); create an event with 'perf persistent create -e "
                    "EVENT --name NAME', see 'perf persistent list'",
                ErrorKind::kNotFound);
  std::vector<std::string> names;
  for (const pmu::PmuEntry& e : model_.pmus())
    names.push_back(e.name);
  std::string help = "the PMUs here are: " + join(names, ", ");
  if (std::string near = nearest_word(name.text, names); !near.empty())
    help = "did you mean '" + near + "'? " + help;
  return fail(name.col, ENOENT, "unknown PMU '" + name.text + "' (missing kernel support?)", help);
}

// PE_KERNEL_PMU_EVENT [opt_pmu_config]: the alias on every PMU that has it.
Status Resolver::add_alias_everywhere(const EventDef& def) {
  const std::string& alias = def.name.text;
  size_t col = def.name.col;
  size_t mark = errors_.size();
  size_t added = 0, tried = 0;
  for (const pmu::PmuEntry& e : model_.pmus()) {
    if (!e.pmu || !e.pmu->find_alias(alias))
      continue;
    tried++;
    std::vector<Term> terms;
    Term t;
    t.config = alias;
    t.num = 1;
    t.col = t.val_col = col;
    terms.push_back(t);
    terms.insert(terms.end(), def.terms.begin(), def.terms.end());
    if (add_pmu(e, terms, col).ok())
      added++;
  }
  if (added) {
    errors_.resize(mark);
    return ok_status();
  }
  if (tried)
    return Error(errors_.back().code, "alias failed");
  return fail(col, ENOENT, "no PMU here has an event called '" + alias + "'",
              "'perf list' shows the events of this machine's PMUs");
}

// parse_events_add_pmu(): one event on one PMU.
Status Resolver::add_pmu(const pmu::PmuEntry& entry, const std::vector<Term>& terms, size_t col) {
  if (!entry.pmu)
    return fail(col, entry.problem ? entry.problem->code() : EINVAL,
                "PMU '" + entry.name + "' cannot be used",
                entry.problem ? entry.problem->message() : std::string());
  const pmu::Pmu& pmu = *entry.pmu;

  // persistent/period/ is the term period, not an event called period: a
  // bare term there, with no event named, would quietly mean event 0.
  if (pmu.name == pmu::kPersistentPmu &&
      std::none_of(terms.begin(), terms.end(),
                   [&](const Term& t) { return alias_for_term(pmu, t) != nullptr; })) {
    for (const Term& t : terms)
      if (t.no_value && t.type != TermType::kUser)
        return fail(t.col, EINVAL,
                    "'" + t.label() + "' is a term of the event syntax, not a persistent event",
                    "name the event by its name or id: persistent/NAME/ or persistent/ID/; see "
                    "'perf persistent list'");
  }

  // perf_pmu__check_alias(): aliases become their terms, in place.
  std::vector<Term> expanded;
  std::vector<const pmu::Alias*> from_alias;  // beside expanded: the alias a term came from
  const pmu::Alias* info_alias = nullptr;
  std::string unit;
  double scale = 1.0;
  bool per_pkg = false, snapshot = false;
  for (const Term& t : terms) {
    const pmu::Alias* alias = alias_for_term(pmu, t);
    if (!alias) {
      expanded.push_back(t);
      from_alias.push_back(nullptr);
      continue;
    }
    if (alias->problem)
      return fail(t.col, alias->problem->code(),
                  "event alias '" + alias->name + "' of PMU '" + pmu.name + "' cannot be used",
                  alias->problem->message());
    // The terms of the alias file, parsed as perf does (the term lexer and
    // grammar), located at the user's term for messages.
    auto more = parse_term_list(alias->terms, &model_);
    if (!more.ok())
      return fail(t.col, EINVAL,
                  "event alias '" + alias->name + "' of PMU '" + pmu.name + "' is malformed",
                  "the alias file " + alias->path + " holds '" + alias->terms +
                      "': " + more.error().message());
    if (info_alias)  // perf's check_info_data(): the scale is always set
      return fail(t.col, EINVAL,
                  "'" + info_alias->name + "' and '" + alias->name +
                      "' are both event aliases; an event can use only one alias",
                  "give each alias as its own event: " + pmu.name + "/" + info_alias->name + "/," +
                      pmu.name + "/" + alias->name + "/");
    info_alias = alias;
    unit = alias->unit;
    scale = alias->scale;
    per_pkg = alias->per_pkg;
    snapshot = alias->snapshot;
    for (Term& m : *more) {
      m.weak = true;
      m.col = m.val_col = t.col;
      expanded.push_back(std::move(m));
      from_alias.push_back(alias);
    }
  }

  sys::EventAttr attr;
  bool config3 = false;
  attr.attr.type = pmu.type;
  // config_term_pmu(): the static terms first.
  for (const Term& t : expanded)
    if (t.type != TermType::kUser && t.type != TermType::kDrvCfg)
      PP_RETURN_IF_ERROR(apply_static_term(t, &attr, &config3, "PMU '" + pmu.name + "'"));

  // perf_pmu__config(): the format terms.
  std::vector<pmu::FormatTerm> format_terms;
  for (size_t i = 0; i < expanded.size(); i++) {
    const Term& t = expanded[i];
    if (t.type == TermType::kUser)
      format_terms.push_back(
          {t.config, t.is_num, t.num, t.str, t.no_value, t.col, t.val_col, from_alias[i]});
  }
  if (auto error = pmu::apply_formats(pmu, format_terms, &attr, &config3)) {
    if (const pmu::FormatTerm* t = error->no_format) {
      if (pmu.name == pmu::kPersistentPmu && t->no_value && !t->alias)
        return no_persistent_event(pmu, t->name, t->col);
      if (t->alias)
        return fail(t->col, EINVAL,
                    "event alias '" + t->alias->name + "' uses term '" + t->name +
                        "', which PMU '" + pmu.name + "' has no format file for",
                    "the alias file " + t->alias->path + " holds '" + t->alias->terms + "'; " +
                        valid_terms(pmu));
      return fail(t->col, EINVAL, "unknown term '" + t->name + "' for PMU '" + pmu.name + "'",
                  valid_terms(pmu));
    }
    return fail(error->col, error->code, std::move(error->message), std::move(error->help));
  }

  Evsel& e = new_evsel(pmu.name);
  attr.attr.exclude_guest = 1;  // event_attr_init() comes after the formats
  e.spec.attr = attr;
  e.config3_used = config3;
  e.spec.cpus = pmu.cpus;
  e.spec.uncore = pmu.is_uncore;
  e.spec.unit = unit;
  e.spec.scale = scale;
  e.spec.per_pkg = per_pkg;
  e.spec.snapshot = snapshot;
  finish_evsel(e, expanded);
  return ok_status();
}

Error Resolver::no_persistent_event(const pmu::Pmu& pmu, const std::string& name, size_t col) {
  std::vector<std::string> names;
  for (const pmu::Alias& a : pmu.aliases)
    if (a.name.find_first_not_of("0123456789") != std::string::npos)  // not an id's entry
      names.push_back(a.name);
  std::string help = names.empty() ? "there are no persistent events"
                                   : "the persistent events are: " + join(names, ", ");
  if (std::string near = nearest_word(name, names); !near.empty())
    help = "did you mean '" + near + "'? " + help;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
    return fail(col, ENOENT, "no persistent event with id " + name,
                help + " (" + pmu.path + "/events); see 'perf persistent list'",
                ErrorKind::kNotFound);
  return fail(col, ENOENT, "no persistent event '" + name + "'",
              help + " (" + pmu.path +
                  "/events); see 'perf persistent list', or create it "
                  "with 'perf persistent create -e EVENT --name " +
                  name + "'",
              ErrorKind::kNotFound);
}

}  // namespace pp::parse

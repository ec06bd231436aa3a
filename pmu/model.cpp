#include "pmu/model.h"

#include <strings.h>

#include <algorithm>
#include <charconv>
#include <limits>

#include "base/cpu_list.h"
#include "base/strings.h"

namespace pp::pmu {
namespace {

// Alias files are a line of terms; anything larger is not an alias file.
constexpr size_t kSmallFileLimit = size_t(64) * 1024;

std::string join_path(std::string_view dir, std::string_view name) {
  std::string out(dir);
  out += '/';
  out += name;
  return out;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// perf skips <alias>.unit, .scale, .per-pkg and .snapshot when it reads
// aliases (only when something precedes the suffix).
bool is_alias_info_file(std::string_view name) {
  for (std::string_view suffix : {".unit", ".scale", ".per-pkg", ".snapshot"})
    if (name.size() > suffix.size() && ends_with(name, suffix))
      return true;
  return false;
}

// A hidden name: sysfs has none; the broker's published registry is
// written through hidden temporaries (sys/atomic_file.h), which a listing
// may see for an instant and which are no format or alias.
bool is_hidden(std::string_view name) {
  return !name.empty() && name.front() == '.';
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return out;
}

Result<uint32_t> read_type(const sys::Tree& tree, const std::string& file) {
  auto text = tree.read(file);
  if (!text.ok())
    return Error(text.error().code(), text.error().message() +
                                          "; a PMU directory must have a type file holding "
                                          "its perf_event_attr type");
  std::string_view value = trim(*text);
  if (value.empty())
    return errorf(EINVAL, "%s is empty; it must hold the PMU's perf_event_attr type",
                  tree.path(file).c_str());
  auto number = parse_u64(value, "PMU type");
  if (!number.ok() || *number > std::numeric_limits<uint32_t>::max())
    return errorf(EINVAL, "%s holds '%.*s', which is not a PMU type (a number below 2^32)",
                  tree.path(file).c_str(), int(value.size()), value.data());
  return uint32_t(*number);
}

Result<std::vector<int>> read_cpus(const sys::Tree& tree, const std::string& file) {
  PP_ASSIGN_OR_RETURN(std::string text, tree.read(file));
  auto cpus = parse_cpu_list(text);
  if (!cpus.ok())
    return Error(cpus.error().code(), tree.path(file) + ": " + cpus.error().message());
  return std::move(cpus).value();
}

FormatFile load_format(const sys::Tree& tree, const std::string& dir, const std::string& name) {
  FormatFile file{name, tree.path(join_path(dir, name)), Format{}, std::nullopt};
  auto text = tree.read(join_path(dir, name), kSmallFileLimit);
  if (!text.ok()) {
    file.problem = text.error();
    return file;
  }
  auto format = parse_format(*text);
  if (!format.ok())
    file.problem =
        Error(format.error().code(), "format file " + file.path + ": " + format.error().message());
  else
    file.format = *format;
  return file;
}

Alias load_alias(const sys::Tree& tree, const std::string& dir, const std::string& name) {
  Alias alias;
  alias.name = name;
  alias.path = tree.path(join_path(dir, name));
  auto text = tree.read(join_path(dir, name), kSmallFileLimit);
  if (!text.ok()) {
    alias.problem = text.error();
    return alias;
  }
  alias.terms = std::string(trim(*text));
  if (alias.terms.empty())
    alias.problem = errorf(EINVAL,
                           "event alias file %s is empty; it must hold terms such as "
                           "'event=0x3c,umask=0x00'",
                           alias.path.c_str());

  std::string unit_file = join_path(dir, name + ".unit");
  if (tree.exists(unit_file)) {
    auto unit = tree.read(unit_file, kSmallFileLimit);
    if (!unit.ok())
      alias.problem = unit.error();
    else
      alias.unit = std::string(trim(*unit));
    alias.has_unit = true;
  }
  std::string scale_file = join_path(dir, name + ".scale");
  if (tree.exists(scale_file)) {
    alias.has_scale = true;
    auto scale = tree.read(scale_file, kSmallFileLimit);
    if (!scale.ok()) {
      alias.problem = scale.error();
    } else {
      std::string_view value = trim(*scale);
      double parsed = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        alias.problem = errorf(EINVAL,
                               "%s holds '%.*s', which is not a number (a scale such as "
                               "'2.3283064365386962890625e-10')",
                               tree.path(scale_file).c_str(), int(value.size()), value.data());
      else
        alias.scale = parsed;
    }
  }
  alias.per_pkg = tree.exists(join_path(dir, name + ".per-pkg"));
  alias.snapshot = tree.exists(join_path(dir, name + ".snapshot"));
  return alias;
}

}  // namespace

const FormatFile* Pmu::find_format(std::string_view term) const {
  for (const FormatFile& f : formats)
    if (f.name == term)
      return &f;
  return nullptr;
}

const Alias* Pmu::find_alias(std::string_view alias_name) const {
  for (const Alias& a : aliases)
    if (a.name.size() == alias_name.size() &&
        strncasecmp(a.name.data(), alias_name.data(), alias_name.size()) == 0)
      return &a;
  return nullptr;
}

PmuEntry load_pmu(const sys::Tree& tree, std::string_view dir_view, std::string_view name) {
  std::string dir(dir_view);
  PmuEntry entry{std::string(name), std::nullopt, std::nullopt};
  auto type = read_type(tree, join_path(dir, "type"));
  if (!type.ok()) {
    entry.problem = type.error();
    return entry;
  }
  Pmu pmu;
  pmu.name = std::string(name);
  pmu.type = *type;
  pmu.path = tree.path(dir);

  for (const char* file : {"cpumask", "cpus"}) {
    std::string path = join_path(dir, file);
    if (!tree.exists(path))
      continue;
    auto cpus = read_cpus(tree, path);
    if (!cpus.ok()) {
      entry.problem = cpus.error();
      return entry;
    }
    pmu.cpus = std::move(cpus).value();
    pmu.is_uncore = std::string_view(file) == "cpumask";
    break;
  }

  std::string format_dir = join_path(dir, "format");
  if (tree.is_directory(format_dir)) {
    auto names = tree.list(format_dir);
    if (!names.ok()) {
      entry.problem = names.error();
      return entry;
    }
    for (const std::string& f : *names)
      if (!is_hidden(f))
        pmu.formats.push_back(load_format(tree, format_dir, f));
  }

  std::string events_dir = join_path(dir, "events");
  if (tree.is_directory(events_dir)) {
    auto names = tree.list(events_dir);
    if (!names.ok()) {
      entry.problem = names.error();
      return entry;
    }
    for (const std::string& a : *names)
      if (!is_alias_info_file(a) && !is_hidden(a))
        pmu.aliases.push_back(load_alias(tree, events_dir, a));
  }
  entry.pmu = std::move(pmu);
  return entry;
}

Result<Model> Model::load(const Roots& roots) {
  Model model;
  model.sysfs_root_ = roots.sysfs;
  model.broker_run_dir_ = roots.broker_run_dir;
  sys::Tree sysfs(roots.sysfs);
  if (!sysfs.is_directory(""))
    return errorf(ENOENT,
                  "sysfs root '%s' is not a directory; give the directory sysfs is "
                  "mounted on (normally /sys)",
                  roots.sysfs.c_str());
  if (sysfs.is_directory(kDevicesDir)) {
    PP_ASSIGN_OR_RETURN(std::vector<std::string> names, sysfs.list_unsorted(kDevicesDir));
    for (const std::string& name : names)
      model.pmus_.push_back(load_pmu(sysfs, join_path(kDevicesDir, name), name));
  }
  if (!model.find_pmu(kPersistentPmu) && !roots.broker_run_dir.empty()) {
    sys::Tree broker(roots.broker_run_dir);
    std::string dir = std::string("devices/") + kPersistentPmu;
    if (broker.is_directory(dir)) {
      PmuEntry entry = load_pmu(broker, dir, kPersistentPmu);
      if (entry.pmu)
        entry.pmu->from_broker = true;
      model.pmus_.push_back(std::move(entry));
    }
  }

  if (roots.tracefs.empty()) {
    model.tracefs_root_ = sys::default_tracefs_root();
  } else {
    model.tracefs_root_ = roots.tracefs;
    if (!sys::Tree(roots.tracefs).is_directory(""))
      return errorf(ENOENT,
                    "tracefs root '%s' is not a directory; give the directory tracefs is "
                    "mounted on (normally /sys/kernel/tracing)",
                    roots.tracefs.c_str());
  }
  model.tracefs_.emplace(model.tracefs_root_);
  model.index_aliases();
  return model;
}

Model Model::in_memory(std::vector<PmuEntry> pmus, std::vector<Tracepoint> tracepoints) {
  Model model;
  model.pmus_ = std::move(pmus);
  model.tracepoints_ = std::move(tracepoints);
  model.tracefs_root_ = "(in-memory tracefs)";
  model.sysfs_root_ = "(in-memory sysfs)";
  model.index_aliases();
  return model;
}

void Model::index_aliases() {
  auto add = [this](std::string_view key, AliasSymbol kind) {
    auto [it, inserted] = symbols_.emplace(lower(key), kind);
    // A word that is a whole alias somewhere is seen as one (perf's table
    // holds both; which one its binary search finds is unspecified).
    if (!inserted && kind == AliasSymbol::kEvent)
      it->second = kind;
  };
  for (const PmuEntry& entry : pmus_) {
    if (!entry.pmu)
      continue;
    for (const Alias& alias : entry.pmu->aliases) {
      size_t dash = alias.name.find('-');
      if (dash == std::string::npos) {
        add(alias.name, AliasSymbol::kEvent);
      } else {
        add(std::string_view(alias.name).substr(0, dash), AliasSymbol::kPrefix);
        add(std::string_view(alias.name).substr(dash + 1), AliasSymbol::kSuffix);
      }
    }
  }
}

const PmuEntry* Model::find_pmu(std::string_view name) const {
  for (const PmuEntry& entry : pmus_)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

const Pmu* Model::find_pmu_by_type(uint32_t type) const {
  for (const PmuEntry& entry : pmus_)
    if (entry.pmu && entry.pmu->type == type)
      return &*entry.pmu;
  return nullptr;
}

AliasSymbol Model::alias_symbol(std::string_view word) const {
  // perf: "cpu" could prefix cpu-cycles or cpu// events, never an alias.
  if (word == "cpu" || symbols_.empty())
    return AliasSymbol::kNone;
  auto it = symbols_.find(lower(word));
  return it == symbols_.end() ? AliasSymbol::kNone : it->second;
}

namespace {

// Tracepoint names come from the event lexer and cannot hold '/', but the
// model is an API: never let a name walk out of tracefs.
bool safe_component(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

}  // namespace

std::string Model::tracefs_events_path(std::string_view relative) const {
  return tracefs_root_ + "/events/" + std::string(relative);
}

Result<uint64_t> Model::tracepoint_id(std::string_view system, std::string_view event) const {
  std::string relative = std::string(system) + "/" + std::string(event);
  if (!safe_component(system) || !safe_component(event))
    return errorf(ENOENT, "%s does not exist", tracefs_events_path(relative).c_str());
  if (!tracefs_) {
    for (const Tracepoint& tp : tracepoints_)
      if (tp.system == system && tp.event == event)
        return tp.id;
    return errorf(ENOENT, "%s does not exist", tracefs_events_path(relative).c_str());
  }
  std::string file = "events/" + relative + "/id";
  auto text = tracefs_->read(file, kSmallFileLimit);
  if (!text.ok()) {
    if (text.error().code() == ENOENT)
      return errorf(
          ENOENT, "%s does not exist",
          tracefs_->path(tracefs_->exists("events/" + relative) ? file : "events/" + relative)
              .c_str());
    return text.error();
  }
  std::string_view value = trim(*text);
  auto id = parse_u64(value, "tracepoint id");
  if (!id.ok())
    return errorf(EINVAL, "%s holds '%.*s', which is not a tracepoint id",
                  tracefs_->path(file).c_str(), int(value.size()), value.data());
  return *id;
}

Result<std::vector<std::string>> Model::tracepoint_systems() const {
  std::vector<std::string> out;
  if (!tracefs_) {
    for (const Tracepoint& tp : tracepoints_)
      if (std::find(out.begin(), out.end(), tp.system) == out.end())
        out.push_back(tp.system);
    return out;
  }
  PP_ASSIGN_OR_RETURN(std::vector<std::string> names, tracefs_->list_unsorted("events"));
  for (std::string& name : names)
    if (name != "enable" && name != "header_event" && name != "header_page")
      out.push_back(std::move(name));
  return out;
}

Result<std::vector<std::string>> Model::tracepoint_events(std::string_view system) const {
  std::vector<std::string> out;
  if (!safe_component(system))
    return errorf(ENOENT, "%s does not exist", tracefs_events_path(system).c_str());
  if (!tracefs_) {
    bool found = false;
    for (const Tracepoint& tp : tracepoints_) {
      if (tp.system != system)
        continue;
      found = true;
      out.push_back(tp.event);
    }
    if (!found)
      return errorf(ENOENT, "%s does not exist", tracefs_events_path(system).c_str());
    return out;
  }
  PP_ASSIGN_OR_RETURN(std::vector<std::string> names,
                      tracefs_->list_unsorted("events/" + std::string(system)));
  for (std::string& name : names)
    if (name != "enable" && name != "filter")
      out.push_back(std::move(name));
  return out;
}

PmuEntry memory_pmu(std::string name, uint32_t type, const std::vector<NamedText>& formats,
                    const std::vector<NamedText>& aliases) {
  Pmu pmu;
  pmu.name = name;
  pmu.type = type;
  pmu.path = "(in-memory)/" + name;
  for (const auto& [format_name, text] : formats) {
    FormatFile file{format_name, pmu.path + "/format/" + format_name, Format{}, std::nullopt};
    auto format = parse_format(text);
    if (format.ok())
      file.format = *format;
    else
      file.problem = Error(format.error().code(),
                           "format file " + file.path + ": " + format.error().message());
    pmu.formats.push_back(std::move(file));
  }
  for (const auto& [alias_name, terms] : aliases) {
    Alias alias;
    alias.name = alias_name;
    alias.terms = terms;
    alias.path = pmu.path + "/events/" + alias_name;
    pmu.aliases.push_back(std::move(alias));
  }
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  std::sort(pmu.formats.begin(), pmu.formats.end(), by_name);
  std::sort(pmu.aliases.begin(), pmu.aliases.end(), by_name);
  return PmuEntry{std::move(name), std::move(pmu), std::nullopt};
}

}  // namespace pp::pmu

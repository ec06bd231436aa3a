#include "persistent/previous_boot.h"

#include <algorithm>
#include <cerrno>

#include "base/json.h"
#include "base/strings.h"
#include "sys/tree.h"

namespace pp::persistent {

Result<std::vector<KeptBoot>> list_kept_boots(const std::string& dir) {
  sys::Tree tree(dir);
  std::vector<KeptBoot> out;
  if (!tree.is_directory(""))
    return out;
  PP_ASSIGN_OR_RETURN(std::vector<std::string> names, tree.list(""));
  for (const std::string& name : names) {
    if (name.starts_with("."))
      continue;  // a copy being written
    auto text = tree.read(name + "/" + kKeptFile, 64 << 10);
    if (!text.ok())
      continue;
    auto boot = parse_kept_boot(*text, tree.path(name + "/" + kKeptFile));
    if (!boot.ok())
      continue;
    boot->path = tree.path(name);
    out.push_back(std::move(*boot));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const KeptBoot& a, const KeptBoot& b) { return a.kept_at < b.kept_at; });
  return out;
}

const KeptBoot* kept_by_boot(const std::vector<KeptBoot>& copies, std::string_view boot_id,
                             std::string_view instance) {
  if (boot_id.empty())
    return nullptr;
  auto it = std::find_if(copies.begin(), copies.end(), [&](const KeptBoot& k) {
    return k.boot_id == boot_id && k.instance == instance;
  });
  return it == copies.end() ? nullptr : &*it;
}

std::string kept_boot_json(const KeptBoot& boot) {
  ordered_json doc{{"version", 1},
                   {"instance", boot.instance},
                   {"boot_id", boot.boot_id},
                   {"kept_at", boot.kept_at},
                   {"kernel", boot.kernel},
                   {"cpus", boot.cpus},
                   {"bytes", boot.bytes}};
  return dump_json(doc, 2) + "\n";
}

Result<KeptBoot> parse_kept_boot(std::string_view text, const std::string& path) {
  PP_ASSIGN_OR_RETURN(json doc, parse_json(text, path));
  if (!doc.is_object())
    return Error(EINVAL, path + " is no JSON object");
  JsonFields f(doc, path);
  PP_ASSIGN_OR_RETURN(uint64_t version, f.u64("version"));
  if (version != 1)
    return Error(EINVAL, path + " is of version " + std::to_string(version) +
                             "; this program reads version 1");
  KeptBoot boot;
  PP_ASSIGN_OR_RETURN(boot.instance, f.str("instance"));
  if (boot.instance.empty() || boot.instance.find('/') != std::string::npos ||
      boot.instance == "." || boot.instance == "..")
    return Error(EINVAL, path + ": 'instance' is no instance name");
  PP_ASSIGN_OR_RETURN(boot.boot_id, f.str_or("boot_id", ""));
  PP_ASSIGN_OR_RETURN(boot.kept_at, f.i64_or("kept_at", 0));
  PP_ASSIGN_OR_RETURN(boot.kernel, f.str_or("kernel", ""));
  PP_ASSIGN_OR_RETURN(uint64_t cpus, f.u64_or("cpus", 0));
  boot.cpus = uint32_t(std::min<uint64_t>(cpus, UINT32_MAX));
  PP_ASSIGN_OR_RETURN(boot.bytes, f.u64_or("bytes", 0));
  return boot;
}

std::string kept_dir_name(int64_t kept_at, std::string_view boot_id) {
  return std::to_string(kept_at) + "-" + std::string(boot_id);
}

void MarkerClock::add(uint64_t time, ClockMarker marker) {
  auto at = std::upper_bound(markers_.begin(), markers_.end(), time,
                             [](uint64_t t, const auto& m) { return t < m.first; });
  markers_.insert(at, {time, std::move(marker)});
}

std::optional<uint64_t> MarkerClock::wall_ns(uint64_t time) const {
  auto after = std::upper_bound(markers_.begin(), markers_.end(), time,
                                [](uint64_t t, const auto& m) { return t < m.first; });
  if (after == markers_.begin())
    return std::nullopt;
  const auto& [at, marker] = *std::prev(after);
  return marker.realtime_ns + (time - at);
}

std::string clock_marker_text(const ClockMarker& m) {
  return std::string(kMarkerTag) + " clock=" + m.clock +
         " realtime_ns=" + std::to_string(m.realtime_ns) + " boot_id=" + m.boot_id;
}

std::optional<ClockMarker> parse_clock_marker(std::string_view text) {
  size_t at = text.find(kMarkerTag);
  if (at == std::string_view::npos)
    return std::nullopt;
  text = text.substr(at + std::string_view(kMarkerTag).size());
  text = text.substr(0, text.find_first_of(std::string_view("\n\0", 2)));
  ClockMarker m;
  bool have_time = false;
  for (std::string_view word : split(text, ' ')) {
    size_t eq = word.find('=');
    if (eq == std::string_view::npos)
      continue;
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "clock") {
      m.clock = std::string(value);
    } else if (key == "boot_id") {
      m.boot_id = std::string(value);
    } else if (key == "realtime_ns") {
      auto ns = parse_u64(value, "realtime_ns");
      if (!ns.ok())
        return std::nullopt;
      m.realtime_ns = *ns;
      have_time = true;
    }
  }
  if (!have_time)
    return std::nullopt;
  return m;
}

}  // namespace pp::persistent

#include "persistent/run_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "base/strings.h"
#include "persistent/event_json.h"
#include "persistent/names.h"
#include "persistent/tracking.h"
#include "sys/atomic_file.h"
#include "sys/tree.h"

namespace pp::persistent {

RunDir::RunDir(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

namespace {

// sys::path_info() of the run directory, its error saying so.
Result<sys::PathInfo> run_dir_info(const std::string& root) {
  auto info = sys::path_info(root);
  if (!info.ok())
    return error_from_errno(info.error().code(), "cannot use the run directory " + root);
  return info;
}

}  // namespace

Status RunDir::prepare() const {
  auto info = run_dir_info(root_);
  if (!info.ok()) {
    if (info.error().code() != ENOENT)
      return info.error();
    PP_RETURN_IF_ERROR(sys::make_directories(root_, 0700));
    PP_RETURN_IF_ERROR(sys::set_mode(root_, 0700));
    PP_ASSIGN_OR_RETURN(info, run_dir_info(root_));
  }
  // Ours, a real directory, and only readable or searchable by others (a
  // plain `mkdir`, 0755): nobody else could have put anything in it, so it
  // is tightened to 0700 rather than refused. Writable by others, it is
  // refused: what they put there stays.
  if (info->is_directory && info->uid == ::geteuid() && (info->mode & 077) != 0 &&
      (info->mode & 022) == 0) {
    if (Status tightened = sys::set_mode(root_, 0700); !tightened.ok())
      return error_from_errno(tightened.error().code(),
                              "cannot set the mode of the run directory " + root_ +
                                  " to 0700 (run 'chmod 0700 " + root_ + "')");
    PP_ASSIGN_OR_RETURN(info, run_dir_info(root_));
  }
  PP_RETURN_IF_ERROR(check_run_dir(root_, *info, ::geteuid()));
  // Whoever may write a directory above it may rename this one away and put
  // one of theirs, with a registry and socket of theirs, in its place.
  return check_run_dir_parents(root_, ::geteuid(), ParentsCheckedBy::kBroker);
}

namespace {

// The directories above `path`, from / down: "/", "/a", "/a/b" for
// "/a/b/c"; none for a relative path.
std::vector<std::string> parents_of(const std::string& path) {
  std::vector<std::string> parents;
  if (path.empty() || path[0] != '/')
    return parents;
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/')
    trimmed.pop_back();
  for (size_t slash = 0; slash != std::string::npos && slash < trimmed.size();
       slash = trimmed.find('/', slash + 1)) {
    std::string parent = slash == 0 ? "/" : trimmed.substr(0, slash);
    if (parents.empty() || parents.back() != parent)
      parents.push_back(parent);
  }
  return parents;
}

Status check_parent(const std::string& run_dir, const std::string& parent, uid_t self,
                    ParentsCheckedBy by) {
  const char* refused = by == ParentsCheckedBy::kClient ? "so it is not asked"
                                                        : "so the broker keeps nothing under it";
  auto info = sys::path_info(parent);
  if (!info.ok())
    return ok_status();  // the connect will say what is missing
  if (info->uid != 0 && info->uid != self)
    return errorf(EPERM,
                  "%s, above the run directory %s, belongs to uid %u, neither root nor uid %u "
                  "that runs this command; its owner could put a run directory and socket of "
                  "theirs in place of the broker's, %s: give a run directory "
                  "under directories of root's or your own with --run-dir",
                  parent.c_str(), run_dir.c_str(), unsigned(info->uid), unsigned(self), refused);
  bool sticky_root = (info->mode & S_ISVTX) && info->uid == 0;
  if (!info->is_link && (info->mode & 022) != 0 && !sticky_root)
    return errorf(EPERM,
                  "%s, above the run directory %s, has mode %04o: another user could put a run "
                  "directory and socket of theirs in place of the broker's, %s: "
                  "'chmod go-w %s', or give another run directory with --run-dir",
                  parent.c_str(), run_dir.c_str(), unsigned(info->mode), refused, parent.c_str());
  return ok_status();
}

}  // namespace

Status check_run_dir_parents(const std::string& path, uid_t self, ParentsCheckedBy by) {
  for (const std::string& parent : parents_of(path))
    PP_RETURN_IF_ERROR(check_parent(path, parent, self, by));
  if (auto resolved = sys::real_path(path); resolved.ok() && *resolved != path)
    for (const std::string& parent : parents_of(*resolved))
      PP_RETURN_IF_ERROR(check_parent(path, parent, self, by));
  return ok_status();
}

Status check_run_dir(const std::string& path, const sys::PathInfo& info, uid_t owner) {
  if (info.is_link)
    return errorf(EPERM,
                  "the run directory %s is a symbolic link; the broker keeps its socket and "
                  "state only in a real directory (whoever controls a link chooses where they "
                  "go): use the directory it points to with --run-dir, or remove the link",
                  path.c_str());
  if (!info.is_directory)
    return errorf(ENOTDIR,
                  "the run directory %s is not a directory; remove it or choose another with "
                  "--run-dir",
                  path.c_str());
  if (info.uid != owner)
    return errorf(EPERM,
                  "the run directory %s belongs to uid %u, not to uid %u that runs the broker; "
                  "another user could replace its socket or read its events: 'chown %u %s', "
                  "or choose another with --run-dir",
                  path.c_str(), unsigned(info.uid), unsigned(owner), unsigned(owner), path.c_str());
  if ((info.mode & 077) != 0)
    return errorf(EPERM,
                  "the run directory %s has mode %04o; it must be 0700, since any access for "
                  "group or others lets them reach system-wide events and counts: 'chmod 0700 "
                  "%s', or choose another with --run-dir",
                  path.c_str(), unsigned(info.mode), path.c_str());
  return ok_status();
}

Status RunDir::remove_temporaries() const {
  for (const std::string& dir : {root_, pmu(), pmu() + "/format"}) {
    sys::Tree tree(dir);
    auto names = tree.list("");
    if (!names.ok()) {
      if (names.error().code() == ENOENT)
        continue;
      return names.error();
    }
    for (const std::string& name : *names)
      if (sys::is_temporary_name(name))
        PP_RETURN_IF_ERROR(sys::remove_file_durably(tree.path(name), sys::Durability::kNoSync));
  }
  return ok_status();
}

Status RunDir::publish_pmu() const {
  PP_RETURN_IF_ERROR(sys::make_directories(pmu() + "/format", 0755));
  PP_RETURN_IF_ERROR(sys::make_directories(pmu() + "/events", 0755));
  PP_RETURN_IF_ERROR(
      sys::write_file_atomically(pmu() + "/type", std::to_string(kBrokerPmuType) + "\n", 0644));
  PP_RETURN_IF_ERROR(sys::write_file_atomically(pmu() + "/format/persistent", "attr5:23\n", 0644));
  return unpublish_all();
}

Status RunDir::publish_event(std::string_view name, uint64_t id) const {
  // The name becomes a file name: never a path.
  if (!is_safe_file_name(name))
    return Error(EINVAL, "refusing to publish the invalid name '" + std::string(name) + "'");
  std::string line = "persistent,config=" + std::to_string(id) + "\n";
  PP_RETURN_IF_ERROR(sys::write_file_atomically(pmu() + "/events/" + std::string(name), line, 0644,
                                                sys::Durability::kNoSync));
  // persistent/<id>/ too: an id always works, whatever the event is named.
  std::string by_id = std::to_string(id);
  if (by_id == name)
    return ok_status();
  return sys::write_file_atomically(pmu() + "/events/" + by_id, line, 0644,
                                    sys::Durability::kNoSync);
}

Status RunDir::unpublish_event(std::string_view name) const {
  // The id's entry goes with the name's: the name's file says which id.
  sys::Tree events(pmu() + "/events");
  if (is_safe_file_name(name)) {
    if (auto line = events.read(std::string(name), 256); line.ok()) {
      std::string_view text = trim(*line);
      constexpr std::string_view kPrefix = "persistent,config=";
      if (starts_with(text, kPrefix)) {
        std::string_view id = text.substr(kPrefix.size());
        if (is_id_reference(id) && id != name)
          PP_RETURN_IF_ERROR(
              sys::remove_file_durably(events.path(std::string(id)), sys::Durability::kNoSync));
      }
    }
  }
  return sys::remove_file_durably(pmu() + "/events/" + std::string(name), sys::Durability::kNoSync);
}

Status RunDir::unpublish_all() const {
  sys::Tree events(pmu() + "/events");
  auto names = events.list("");
  if (!names.ok())
    return names.error().code() == ENOENT ? ok_status() : Status(names.error());
  for (const std::string& name : *names)
    PP_RETURN_IF_ERROR(sys::remove_file_durably(events.path(name), sys::Durability::kNoSync));
  return ok_status();
}

std::string encode_state(const RegistryState& state) {
  json j = {{"version", kStateVersion}, {"next_id", state.next_id}, {"events", json::array()}};
  for (const EventInfo& e : state.events) {
    EventInfo saved = e;
    saved.counts.reset();
    saved.readers.reset();
    j["events"].push_back(event_to_json(saved));
  }
  return dump_json(j, 1) + "\n";
}

Result<RegistryState> decode_state(std::string_view text, std::string_view path) {
  std::string what(path);
  PP_ASSIGN_OR_RETURN(json doc, parse_json(text, what));
  JsonFields f(doc, what);
  PP_ASSIGN_OR_RETURN(int64_t version, f.i64("version"));
  if (version != kStateVersion)
    return errorf(EINVAL, "%s has state version %lld; this broker reads version %d", what.c_str(),
                  (long long)version, kStateVersion);
  RegistryState state;
  PP_ASSIGN_OR_RETURN(state.next_id, f.u64("next_id"));
  if (state.next_id == 0)
    return errorf(EINVAL, "%s has next_id 0; ids start at 1", what.c_str());
  PP_ASSIGN_OR_RETURN(const json* events, f.array("events"));
  std::set<uint64_t> ids;
  std::set<std::string> names;
  for (const json& item : *events) {
    PP_ASSIGN_OR_RETURN(EventInfo e, event_from_json(item, what));
    if (!ids.insert(e.id).second)
      return errorf(EINVAL, "%s has id %llu twice", what.c_str(), (unsigned long long)e.id);
    if (!names.insert(e.name).second)
      return errorf(EINVAL, "%s has the name '%s' twice", what.c_str(), e.name.c_str());
    if (e.is_context) {  // persistent/tracking.h: ids of their own, names in brackets
      if (e.id < kFirstContextId || e.name != context_name(e.attr))
        return errorf(EINVAL, "%s: context stream %llu '%s' has an id below %llu or a name not %s",
                      what.c_str(), (unsigned long long)e.id, e.name.c_str(),
                      (unsigned long long)kFirstContextId, context_name(e.attr).c_str());
      state.events.push_back(std::move(e));
      continue;
    }
    if (e.id == 0 || e.id >= state.next_id)
      return errorf(EINVAL, "%s: event id %llu is not below next_id %llu", what.c_str(),
                    (unsigned long long)e.id, (unsigned long long)state.next_id);
    if (!is_safe_file_name(e.name) || (is_id_reference(e.name) && e.name != std::to_string(e.id)))
      return errorf(EINVAL, "%s: event %llu has an invalid name", what.c_str(),
                    (unsigned long long)e.id);
    state.events.push_back(std::move(e));
  }
  return state;
}

Result<RegistryState> load_state(const RunDir& dir) {
  sys::Tree root(dir.root());
  auto text = root.read("state.json", 64 << 20);
  if (!text.ok()) {
    if (text.error().code() == ENOENT)
      return RegistryState{};
    return text.error();
  }
  return decode_state(*text, dir.state());
}

Status save_state(const RunDir& dir, const RegistryState& state) {
  return sys::write_file_atomically(dir.state(), encode_state(state), 0600);
}

}  // namespace pp::persistent

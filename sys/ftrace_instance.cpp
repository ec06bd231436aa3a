#include "sys/ftrace_instance.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/strings.h"
#include "sys/fd.h"

namespace pp::sys {

Result<FtraceInstance> FtraceInstance::open(const Tree& tracefs, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return usage_error("'" + name + "' is no ftrace instance name (one directory name under " +
                       tracefs.path("instances") + ")");
  std::string relative = "instances/" + name;
  if (!tracefs.is_directory(relative)) {
    std::string have;
    if (auto names = tracefs.list("instances"); names.ok())
      have = names->empty() ? "there is none" : "there are: " + join(*names, ", ");
    return not_found_error("no ftrace instance '" + name + "' (no " + tracefs.path(relative) +
                           "); " + have);
  }
  return FtraceInstance(name, Tree(tracefs.path(relative)));
}

Result<std::string> FtraceInstance::header_page() const {
  return tree_.read("events/header_page");
}

Result<std::string> FtraceInstance::header_event() const {
  return tree_.read("events/header_event");
}

Result<std::vector<InstanceEvent>> FtraceInstance::enabled_events() const {
  PP_ASSIGN_OR_RETURN(std::string set_event, tree_.read("set_event"));
  std::vector<InstanceEvent> events;
  for (std::string_view line : split(set_event, '\n')) {
    line = trim(line);
    if (line.empty() || line[0] == '#')
      continue;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return Error(EINVAL, "unexpected line '" + std::string(line) + "' in " +
                               tree_.path("set_event") + " (want SYSTEM:EVENT)");
    InstanceEvent e;
    e.system = std::string(line.substr(0, colon));
    e.name = std::string(line.substr(colon + 1));
    std::string dir = "events/" + e.system + "/" + e.name;
    PP_ASSIGN_OR_RETURN(std::string id, tree_.read(dir + "/id"));
    PP_ASSIGN_OR_RETURN(e.id, parse_u64(trim(id), "event id in " + tree_.path(dir + "/id")));
    PP_ASSIGN_OR_RETURN(e.format, tree_.read(dir + "/format"));
    events.push_back(std::move(e));
  }
  return events;
}

Result<std::string> FtraceInstance::trace_clock() const {
  // "[local] global counter uptime perf mono mono_raw boot tai x86-tsc"
  PP_ASSIGN_OR_RETURN(std::string text, tree_.read("trace_clock"));
  size_t open = text.find('['), close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open)
    return Error(EINVAL, "no [selected] clock in " + tree_.path("trace_clock"));
  return text.substr(open + 1, close - open - 1);
}

std::optional<std::string> FtraceInstance::last_boot_info() const {
  auto text = tree_.read("last_boot_info");
  if (!text.ok())
    return std::nullopt;
  return *text;
}

CpuStats parse_cpu_stats(std::string_view text) {
  CpuStats stats;
  for (std::string_view line : split(text, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string_view key = trim(line.substr(0, colon));
    auto value = parse_u64(trim(line.substr(colon + 1)), key);
    if (!value.ok())
      continue;
    if (key == "entries")
      stats.entries = *value;
    else if (key == "overrun")
      stats.overrun = *value;
    else if (key == "commit overrun")
      stats.commit_overrun = *value;
    else if (key == "dropped events")
      stats.dropped_events = *value;
  }
  return stats;
}

Result<CpuStats> FtraceInstance::cpu_stats(uint32_t cpu) const {
  PP_ASSIGN_OR_RETURN(std::string text,
                      tree_.read("per_cpu/cpu" + std::to_string(cpu) + "/stats", 4096));
  return parse_cpu_stats(text);
}

Result<std::vector<uint32_t>> FtraceInstance::cpus() const {
  PP_ASSIGN_OR_RETURN(std::vector<std::string> names, tree_.list("per_cpu"));
  std::vector<uint32_t> cpus;
  for (const std::string& n : names) {
    if (!starts_with(n, "cpu"))
      continue;
    auto cpu = parse_u64(std::string_view(n).substr(3), "CPU");
    if (cpu.ok() && *cpu < UINT32_MAX)
      cpus.push_back(uint32_t(*cpu));
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

Result<std::vector<uint8_t>> FtraceInstance::read_pages(uint32_t cpu, uint32_t page_size,
                                                        size_t limit) const {
  std::string path = tree_.path("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open " + path);
  std::vector<uint8_t> pages;
  while (page_size && pages.size() + page_size <= limit) {
    size_t at = pages.size();
    pages.resize(at + page_size);
    ssize_t n = ::read(fd.get(), pages.data() + at, page_size);
    if (n < 0 && errno == EINTR) {
      pages.resize(at);
      continue;
    }
    if (n <= 0) {
      int err = errno;
      pages.resize(at);
      if (n == 0 || err == EAGAIN)
        break;
      return error_from_errno(err, "cannot read " + path);
    }
    if (size_t(n) != page_size)
      return Error(EIO, "reading " + path + " gave " + std::to_string(n) +
                            " bytes, not a page of " + std::to_string(page_size) +
                            "; did another reader take part of a page? One reader per instance");
  }
  return pages;
}

namespace {

// One write(2) of `text` to an existing file of the instance (tracefs files
// are written whole, never created).
Status write_whole(const std::string& path, std::string_view text, int flags) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags));
  if (!fd)
    return error_from_errno(errno, "cannot open " + path + " for writing");
  ssize_t n;
  do {
    n = ::write(fd.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0)
    return error_from_errno(errno, "cannot write '" + std::string(trim(text)) + "' to " + path);
  if (size_t(n) != text.size())
    return Error(EIO, "a short write to " + path);
  return ok_status();
}

}  // namespace

std::vector<std::string> FtraceInstance::system_events(const std::string& system) const {
  std::vector<std::string> out;
  if (system.empty() || system.find('/') != std::string::npos || system[0] == '.')
    return out;
  std::string dir = "events/" + system + "/";
  auto names = tree_.list(dir);
  if (!names.ok())
    return out;
  for (const std::string& n : *names)
    if (tree_.is_directory(dir + n))
      out.push_back(n);
  return out;
}

Status FtraceInstance::enable_event(const std::string& system, const std::string& name) const {
  return write_whole(tree_.path("set_event"), system + ":" + name + "\n", O_APPEND);
}

Status FtraceInstance::set_tracing_on(bool on) const {
  return write_whole(tree_.path("tracing_on"), on ? "1\n" : "0\n", O_TRUNC);
}

Status FtraceInstance::write_marker(std::string_view text) const {
  return write_whole(tree_.path("trace_marker"), text, O_APPEND);
}

Result<FtraceInstance> FtraceInstance::make(const Tree& tracefs, const std::string& name,
                                            mode_t mode) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return usage_error("'" + name + "' is no ftrace instance name (one directory name under " +
                       tracefs.path("instances") + ")");
  std::string path = tracefs.path("instances/" + name);
  if (::mkdir(path.c_str(), 0700) != 0) {
    int err = errno;
    if (err == EEXIST)
      return Error(ErrorKind::kNameTaken, EEXIST, "ftrace instance " + path + " exists already");
    return error_from_errno(err, "cannot make ftrace instance " + path);
  }
  if (::chmod(path.c_str(), mode) != 0) {
    int err = errno;
    (void)::rmdir(path.c_str());
    return error_from_errno(err, "cannot restrict ftrace instance " + path + " to its owner");
  }
  return FtraceInstance(name, Tree(path));
}

Status FtraceInstance::remove(const Tree& tracefs, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return usage_error("'" + name + "' is no ftrace instance name");
  std::string path = tracefs.path("instances/" + name);
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT)
    return error_from_errno(errno, "cannot remove ftrace instance " + path);
  return ok_status();
}

Result<mode_t> FtraceInstance::mode() const {
  PP_ASSIGN_OR_RETURN(PathInfo info, path_info(tree_.root()));
  return info.mode;
}

Status FtraceInstance::set_mode(mode_t mode) const {
  if (::chmod(tree_.root().c_str(), mode) != 0)
    return error_from_errno(errno, "cannot change the mode of " + tree_.root());
  return ok_status();
}

Result<std::string> FtraceInstance::read_setting(std::string_view file) const {
  PP_ASSIGN_OR_RETURN(std::string text, tree_.read(file, 1 << 16));
  return std::string(trim(text));
}

Status FtraceInstance::write_setting(std::string_view file, std::string_view value) const {
  std::string path = tree_.path(file);
  Fd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno,
                            "cannot open " + path + " to write '" + std::string(value) + "'");
  std::string line = std::string(value) + "\n";
  ssize_t n;
  do {
    n = ::write(fd.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0)
    return error_from_errno(errno, "cannot write '" + std::string(value) + "' to " + path);
  if (size_t(n) != line.size())
    return Error(EIO, "writing '" + std::string(value) + "' to " + path + " stopped after " +
                          std::to_string(n) + " bytes");
  return ok_status();
}

Result<Fd> FtraceInstance::open_pipe_raw(uint32_t cpu) const {
  std::string path = tree_.path("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open " + path);
  return fd;
}

Result<size_t> FtraceInstance::read_page(int fd, std::span<uint8_t> page, const std::string& what) {
  for (;;) {
    ssize_t n = ::read(fd, page.data(), page.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return 0;
    if (n < 0)
      return error_from_errno(errno, "cannot read " + what);
    if (n != 0 && size_t(n) != page.size())
      return Error(EIO, "reading " + what + " gave " + std::to_string(n) +
                            " bytes, not a page of " + std::to_string(page.size()) +
                            "; did another reader take part of a page? One reader per instance");
    return size_t(n);
  }
}

}  // namespace pp::sys

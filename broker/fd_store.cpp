#include "broker/fd_store.h"

#include <algorithm>
#include <charconv>

namespace pp::broker {
namespace {

constexpr std::string_view kEventPrefix = "pp-event-";
constexpr std::string_view kCpuPart = "-cpu-";

template <typename T>
std::optional<T> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 20 || (text.size() > 1 && text[0] == '0'))
    return std::nullopt;
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

}  // namespace

std::string event_fd_name(uint64_t id, int cpu) {
  return std::string(kEventPrefix) + std::to_string(id) + std::string(kCpuPart) +
         std::to_string(cpu);
}

std::optional<EventFdName> parse_event_fd_name(std::string_view name) {
  if (name.substr(0, kEventPrefix.size()) != kEventPrefix)
    return std::nullopt;
  name.remove_prefix(kEventPrefix.size());
  size_t at = name.find(kCpuPart);
  if (at == std::string_view::npos)
    return std::nullopt;
  auto id = parse_decimal<uint64_t>(name.substr(0, at));
  auto cpu = parse_decimal<int>(name.substr(at + kCpuPart.size()));
  if (!id || !cpu || *id == 0 || *cpu < 0)
    return std::nullopt;
  return EventFdName{*id, *cpu};
}

void InheritedFds::add(std::vector<sys::NamedFd> fds, bool from_store) {
  for (sys::NamedFd& f : fds) {
    if (fds_.count(f.name) &&
        std::find(duplicated_.begin(), duplicated_.end(), f.name) == duplicated_.end())
      duplicated_.push_back(f.name);
    fds_.emplace(f.name, Entry{std::move(f.fd), from_store});
  }
}

sys::Fd InheritedFds::take(const std::string& name, const std::function<bool(int fd)>& fits,
                           bool* from_store) {
  auto [begin, end] = fds_.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    if (fits && !fits(it->second.fd.get()))
      continue;
    if (from_store)
      *from_store = it->second.from_store;
    sys::Fd fd = std::move(it->second.fd);
    fds_.erase(it);
    return fd;
  }
  return sys::Fd();
}

std::vector<InheritedFds::Leftover> InheritedFds::take_rest() {
  std::vector<Leftover> rest;
  for (auto& [name, entry] : fds_)
    rest.push_back({name, std::move(entry.fd), entry.from_store});
  fds_.clear();
  return rest;
}

}  // namespace pp::broker

#include "filter/keys.h"

#include <span>

#include "mce/decode.h"

namespace pp::filter {

int Scale::rank(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); i++)
    if (names_[i] == name)
      return int(i);
  return -1;
}

std::string Scale::names_text() const {
  std::string out;
  for (std::string_view name : names_) {
    out += out.empty() ? "" : ", ";
    out += name;
  }
  return out;
}

const Scale& mce_severity_scale() {
  static const Scale scale = [] {
    std::span<const std::string_view> names = mce::mce_severities_by_rank();
    return Scale({names.begin(), names.end()});
  }();
  return scale;
}

const Scale& kernel_severity_scale() {
  static const Scale scale = [] {
    std::vector<std::string_view> names;
    for (int i = 0; i <= int(mce::KernelSeverity::kPanic); i++)
      names.push_back(mce::kernel_severity_name(mce::KernelSeverity(i)));
    return Scale(std::move(names));
  }();
  return scale;
}

Keys Keys::open(std::string hint) {
  Keys keys;
  keys.open_ = true;
  keys.hint_ = std::move(hint);
  return keys;
}

Keys& Keys::add(std::string name, const Scale* scale) {
  for (Key& k : keys_) {
    if (k.name == name) {
      if (scale)
        k.scale = scale;
      return *this;
    }
  }
  keys_.push_back(Key{std::move(name), scale});
  return *this;
}

const Keys::Key* Keys::find(std::string_view name) const {
  for (const Key& k : keys_)
    if (k.name == name)
      return &k;
  return nullptr;
}

bool Keys::has(std::string_view name) const {
  return open_ || find(name) != nullptr;
}

const Scale* Keys::scale(std::string_view name) const {
  const Key* k = find(name);
  return k ? k->scale : nullptr;
}

std::vector<std::string> Keys::names() const {
  std::vector<std::string> out;
  out.reserve(keys_.size());
  for (const Key& k : keys_)
    out.push_back(k.name);
  return out;
}

std::string Keys::describe() const {
  if (open_)
    return hint_;
  std::string out;
  for (const Key& k : keys_)
    out += (out.empty() ? "" : ", ") + k.name;
  return out.empty() ? "none" : out;
}

}  // namespace pp::filter

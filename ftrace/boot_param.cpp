#include "ftrace/boot_param.h"

namespace pp::ftrace {
namespace {

// The command line's words, as the kernel splits them (next_arg() in
// lib/cmdline.c: spaces separate, double quotes group and are dropped).
std::vector<std::string> words(std::string_view cmdline) {
  std::vector<std::string> out;
  std::string word;
  bool quoted = false, in_word = false;
  for (char c : cmdline) {
    if (c == '"') {
      quoted = !quoted;
      in_word = true;
      continue;
    }
    if (!quoted && (c == ' ' || c == '\t' || c == '\n')) {
      if (in_word)
        out.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    word += c;
    in_word = true;
  }
  if (in_word)
    out.push_back(std::move(word));
  return out;
}

}  // namespace

std::vector<BootInstance> boot_instances(std::string_view cmdline) {
  constexpr std::string_view kKey = "trace_instance=";
  std::vector<BootInstance> out;
  for (const std::string& word : words(cmdline)) {
    if (word == "--")
      break;
    if (!word.starts_with(kKey))
      continue;
    std::string_view spec = std::string_view(word).substr(kKey.size());
    spec = spec.substr(0, spec.find(','));
    BootInstance inst;
    size_t at = spec.find('@');
    if (at != std::string_view::npos) {
      inst.memory = std::string(spec.substr(at + 1));
      spec = spec.substr(0, at);
    }
    size_t caret = spec.find('^');
    inst.name = std::string(spec.substr(0, caret));
    while (caret != std::string_view::npos) {
      spec = spec.substr(caret + 1);
      caret = spec.find('^');
      inst.flags.emplace_back(spec.substr(0, caret));
    }
    if (!inst.name.empty())
      out.push_back(std::move(inst));
  }
  return out;
}

std::vector<std::string> boot_mapped_names(std::string_view cmdline) {
  std::vector<std::string> names;
  for (BootInstance& b : boot_instances(cmdline))
    if (b.boot_mapped())
      names.push_back(std::move(b.name));
  return names;
}

bool holds_previous_boot(std::string_view last_boot_info) {
  return last_boot_info.find("# Current") == std::string_view::npos;
}

}  // namespace pp::ftrace

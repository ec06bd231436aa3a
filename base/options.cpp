#include "base/options.h"

#include "base/strings.h"

namespace pp {

OptionParser::OptionParser(std::vector<std::string> usage, Positionals positionals)
    : usage_(std::move(usage)), positionals_(positionals) {}

OptionParser& OptionParser::add(Spec spec) {
  (spec.kind == Kind::kRefused ? refused_ : infos_).push_back(spec.info);
  specs_.push_back(std::move(spec));
  return *this;
}

OptionParser& OptionParser::flag(char s, std::string l, bool* out, std::string help) {
  return add({{s, std::move(l), "", std::move(help)}, Kind::kFlag, out});
}

OptionParser& OptionParser::counter(char s, std::string l, int* out, std::string help) {
  return add({{s, std::move(l), "", std::move(help)}, Kind::kCounter, out});
}

OptionParser& OptionParser::value(char s, std::string l, std::string arg, std::string* out,
                                  std::string help) {
  return add({{s, std::move(l), std::move(arg), std::move(help)}, Kind::kValue, out});
}

OptionParser& OptionParser::values(char s, std::string l, std::string arg,
                                   std::vector<std::string>* out, std::string help) {
  return add({{s, std::move(l), std::move(arg), std::move(help)}, Kind::kValues, out});
}

OptionParser& OptionParser::number(char s, std::string l, std::string arg, uint64_t* out,
                                   uint64_t min, uint64_t max, std::string help) {
  return add({{s, std::move(l), std::move(arg), std::move(help)}, Kind::kNumber, out, min, max});
}

OptionParser& OptionParser::optional_value(std::string l, std::string arg, std::string* out,
                                           bool* given, std::string help) {
  Spec spec{{0, std::move(l), std::move(arg), std::move(help)}, Kind::kOptional, out};
  spec.given = given;
  return add(std::move(spec));
}

OptionParser& OptionParser::refuse(char s, std::string l, std::string reason) {
  return add({{s, std::move(l), "", std::move(reason)}, Kind::kRefused, nullptr});
}

Error OptionParser::refused_option(const Spec& spec, std::string_view spelled) const {
  return errorf(ErrorKind::kUsage, EINVAL, "option '%.*s' does not apply here: %s",
                int(spelled.size()), spelled.data(), spec.info.help.c_str());
}

const OptionParser::Spec* OptionParser::find_long(std::string_view name) const {
  for (const Spec& spec : specs_)
    if (!name.empty() && spec.info.long_name == name)
      return &spec;
  return nullptr;
}

const OptionParser::Spec* OptionParser::find_short(char name) const {
  for (const Spec& spec : specs_)
    if (name && spec.info.short_name == name)
      return &spec;
  return nullptr;
}

Error OptionParser::unknown_option(std::string_view spelled) const {
  std::vector<std::string> names = {"--help"};
  for (const Spec& spec : specs_)
    if (spec.kind != Kind::kRefused && !spec.info.long_name.empty())
      names.push_back("--" + spec.info.long_name);
  std::string message = "unknown option '" + std::string(spelled) + "'";
  std::string near = nearest_word(spelled, names);
  if (!near.empty())
    message += "; did you mean '" + near + "'?";
  return usage_error(message);
}

Status OptionParser::apply(const Spec& spec, std::string_view value) const {
  switch (spec.kind) {
    case Kind::kFlag:
    case Kind::kCounter:
    case Kind::kRefused:
      break;  // handled by the caller: flags take no value, refusals are refused
    case Kind::kOptional:
      *static_cast<std::string*>(spec.out) = std::string(value);
      *spec.given = true;
      break;
    case Kind::kValue:
      *static_cast<std::string*>(spec.out) = std::string(value);
      break;
    case Kind::kValues:
      static_cast<std::vector<std::string>*>(spec.out)->emplace_back(value);
      break;
    case Kind::kNumber: {
      auto n = parse_u64(value, "value");
      if (!n.ok() || *n < spec.min || *n > spec.max)
        return errorf(ErrorKind::kUsage, EINVAL,
                      "option '--%s' wants a number from %llu to %llu, not '%.*s'",
                      spec.info.long_name.c_str(), (unsigned long long)spec.min,
                      (unsigned long long)spec.max, int(value.size()), value.data());
      *static_cast<uint64_t*>(spec.out) = *n;
      break;
    }
  }
  return ok_status();
}

void OptionParser::salvage(int argc, const char* const* argv, std::string_view long_name) const {
  const Spec* spec = find_long(long_name);
  if (!spec || (spec->kind != Kind::kFlag && spec->kind != Kind::kOptional))
    return;
  std::string long_form = "--" + std::string(long_name);
  std::string short_form =
      spec->info.short_name ? std::string("-") + spec->info.short_name : std::string();
  for (int i = 1; i < argc; i++) {
    std::string_view arg = argv[i];
    if (arg == "--")
      return;
    if (arg == long_form || (!short_form.empty() && arg == short_form)) {
      if (spec->kind == Kind::kFlag)
        *static_cast<bool*>(spec->out) = true;
      else
        *spec->given = true;
    } else if (spec->kind == Kind::kOptional && starts_with(arg, long_form + "=")) {
      (void)apply(*spec, arg.substr(long_form.size() + 1));
    }
  }
}

Result<OptionParser::Parsed> OptionParser::parse(int argc, const char* const* argv) const {
  Parsed parsed;
  bool options_done = false;
  for (int i = 1; i < argc; i++) {
    std::string_view arg = argv[i];
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (positionals_ == Positionals::kNone)
        return errorf(ErrorKind::kUsage, EINVAL, "unexpected argument '%s'", argv[i]);
      parsed.args.emplace_back(arg);
      if (positionals_ == Positionals::kStopAtFirst)
        options_done = true;
      continue;
    }
    if (arg == "--") {
      options_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      parsed.help = true;
      continue;
    }
    if (arg[1] == '-') {
      std::string_view name = arg.substr(2);
      std::string_view inline_value;
      bool has_value = false;
      if (size_t eq = name.find('='); eq != std::string_view::npos) {
        inline_value = name.substr(eq + 1);
        name = name.substr(0, eq);
        has_value = true;
      }
      const Spec* spec = find_long(name);
      bool negated = false;
      if (!spec && starts_with(name, "no-")) {
        spec = find_long(name.substr(3));
        if (spec && spec->kind != Kind::kFlag)
          return errorf(ErrorKind::kUsage, EINVAL, "option '--%s' cannot be negated",
                        spec->info.long_name.c_str());
        negated = spec != nullptr;
      }
      if (!spec)
        return unknown_option(std::string("--") + std::string(name));
      if (spec->kind == Kind::kRefused)
        return refused_option(*spec, std::string("--") + std::string(name));
      if (spec->kind == Kind::kOptional) {
        if (has_value)
          PP_RETURN_IF_ERROR(apply(*spec, inline_value));
        else
          *spec->given = true;
        continue;
      }
      if (spec->kind == Kind::kFlag || spec->kind == Kind::kCounter) {
        if (has_value)
          return errorf(ErrorKind::kUsage, EINVAL, "option '--%.*s' takes no value",
                        int(name.size()), name.data());
        if (spec->kind == Kind::kFlag)
          *static_cast<bool*>(spec->out) = !negated;
        else
          ++*static_cast<int*>(spec->out);
        continue;
      }
      if (!has_value) {
        if (i + 1 >= argc)
          return errorf(ErrorKind::kUsage, EINVAL, "option '--%s' requires a value (%s)",
                        spec->info.long_name.c_str(), spec->info.arg_name.c_str());
        inline_value = argv[++i];
      }
      PP_RETURN_IF_ERROR(apply(*spec, inline_value));
      continue;
    }
    // One or more short options: -qv, -e EVENT, -eEVENT.
    for (size_t k = 1; k < arg.size(); k++) {
      const Spec* spec = find_short(arg[k]);
      if (!spec)
        return unknown_option(std::string("-") + arg[k]);
      if (spec->kind == Kind::kRefused)
        return refused_option(*spec, std::string("-") + arg[k]);
      if (spec->kind == Kind::kFlag) {
        *static_cast<bool*>(spec->out) = true;
        continue;
      }
      if (spec->kind == Kind::kCounter) {
        ++*static_cast<int*>(spec->out);
        continue;
      }
      std::string_view value = arg.substr(k + 1);
      if (value.empty()) {
        if (i + 1 >= argc)
          return errorf(ErrorKind::kUsage, EINVAL, "option '-%c' requires a value (%s)", arg[k],
                        spec->info.arg_name.c_str());
        value = argv[++i];
      }
      PP_RETURN_IF_ERROR(apply(*spec, value));
      break;
    }
  }
  return parsed;
}

std::string OptionParser::usage() const {
  constexpr size_t kHelpColumn = 30;
  std::string out;
  for (size_t i = 0; i < usage_.size(); i++)
    out += (i == 0 ? " Usage: " : "    or: ") + usage_[i] + "\n";
  if (!specs_.empty())
    out += "\n";
  for (const Spec& spec : specs_) {
    if (spec.kind == Kind::kRefused)
      continue;
    std::string line = "    ";
    if (spec.info.short_name) {
      line += '-';
      line += spec.info.short_name;
      line += spec.info.long_name.empty() ? "" : ", ";
    } else {
      line += "    ";
    }
    if (!spec.info.long_name.empty())
      line += "--" + spec.info.long_name;
    if (spec.kind == Kind::kOptional)
      line += "[=<" + spec.info.arg_name + ">]";
    else if (!spec.info.arg_name.empty())
      line += " <" + spec.info.arg_name + ">";
    if (line.size() + 2 > kHelpColumn)
      line += "\n" + std::string(kHelpColumn, ' ');
    else
      line += std::string(kHelpColumn - line.size(), ' ');
    out += line + spec.info.help + "\n";
  }
  return out;
}

}  // namespace pp

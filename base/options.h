// A perf-style command-line option parser, declared as a table.
//
// Accepted spellings, as perf's parse-options accepts them:
//   -e EVENT   -eEVENT   --event EVENT   --event=EVENT
//   -qv        (grouped short flags)
//   --no-json  (negation of a flag)
//   --         (end of options; everything after is positional)
// Long options must be spelled in full: scripts must stay stable when an
// option is added, so there is no prefix matching.
//
//   OptionParser opts({"perf persistent list [<options>]"});
//   opts.flag('j', "json", &json, "print JSON");
//   PP_ASSIGN_OR_RETURN(auto parsed, opts.parse(argc, argv));
//   if (parsed.help) { std::cout << opts.usage(); return 0; }
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp {

class OptionParser {
 public:
  // How positional (non-option) arguments are handled.
  enum class Positionals {
    kNone,         // any positional is a usage error
    kInterleaved,  // options and positionals may mix (kill 3 --json 4)
    kStopAtFirst,  // the first positional and everything after it are a
                   // command to run (record ... sleep 10); its options are
                   // its own
  };

  struct Parsed {
    bool help = false;              // -h or --help was given
    std::vector<std::string> args;  // positionals, in order
  };

  // One entry of the option table, for --help and for the test that checks
  // help, man pages and the table agree.
  struct Info {
    char short_name;  // 0 when the option has no short form
    std::string long_name;
    std::string arg_name;  // empty for flags
    std::string help;
  };

  // `usage` holds the synopsis lines printed after "Usage:", e.g.
  // "perf persistent kill [<options>] ID|NAME...".
  explicit OptionParser(std::vector<std::string> usage,
                        Positionals positionals = Positionals::kNone);

  // A boolean flag; `--no-<long>` sets it false.
  OptionParser& flag(char short_name, std::string long_name, bool* out, std::string help);
  // A flag counted each time it appears (-v -v, -vv).
  OptionParser& counter(char short_name, std::string long_name, int* out, std::string help);
  // An option with a value; given twice, the last one wins.
  OptionParser& value(char short_name, std::string long_name, std::string arg_name,
                      std::string* out, std::string help);
  // An option with a value that may be repeated (-e a -e b).
  OptionParser& values(char short_name, std::string long_name, std::string arg_name,
                       std::vector<std::string>* out, std::string help);
  // An option whose value is optional, as perf's --switch-output[=mode]:
  // `--long` sets *given and leaves *out as it is, `--long=VALUE` sets both
  // (a value only after '='; the next argument is never taken).
  OptionParser& optional_value(std::string long_name, std::string arg_name, std::string* out,
                               bool* given, std::string help);
  // An option perf's command has that makes no sense here: recognised (so
  // the user learns why, not "unknown option"), refused with `reason`, and
  // left out of --help. Its value, if any, is not looked at.
  OptionParser& refuse(char short_name, std::string long_name, std::string reason);
  // An unsigned number (decimal or 0x hex), checked against [min, max].
  OptionParser& number(char short_name, std::string long_name, std::string arg_name, uint64_t* out,
                       uint64_t min, uint64_t max, std::string help);

  // Parses argv[1..argc-1] (argv[0] is the verb itself). Errors are usage
  // errors (EINVAL) with a message naming the option and what to do.
  Result<Parsed> parse(int argc, const char* const* argv) const;

  // After parse() failed, looks again for one option that parse() may not
  // have reached (--json, so that a usage error after it still comes out as
  // JSON): a flag, or an optional value, given as --NAME, --NAME=VALUE or
  // its short letter, up to "--".
  void salvage(int argc, const char* const* argv, std::string_view long_name) const;

  // " Usage: <synopsis>\n\n    -j, --json   print JSON\n..." in perf's layout.
  std::string usage() const;

  const std::vector<Info>& options() const { return infos_; }
  // The refused options: arg_name is empty, help is the reason.
  const std::vector<Info>& refused() const { return refused_; }

 private:
  enum class Kind { kFlag, kCounter, kValue, kValues, kNumber, kOptional, kRefused };
  struct Spec {
    Info info;
    Kind kind;
    void* out;
    uint64_t min = 0, max = 0;
    bool* given = nullptr;  // kOptional
  };

  OptionParser& add(Spec spec);
  const Spec* find_long(std::string_view name) const;
  const Spec* find_short(char name) const;
  Status apply(const Spec& spec, std::string_view value) const;
  Error unknown_option(std::string_view spelled) const;
  Error refused_option(const Spec& spec, std::string_view spelled) const;

  std::vector<std::string> usage_;
  Positionals positionals_;
  std::vector<Spec> specs_;
  std::vector<Info> infos_;
  std::vector<Info> refused_;
};

}  // namespace pp

#include <iostream>

#include "base/options.h"
#include "build_info.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"

namespace pp::cmd {

int cmd_version(int argc, const char** argv) {
  OptionParser opts({"perf persistent version"});
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    return report_usage_error("version", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  std::cout << "perf-persistent version " << PP_VERSION << " (" << PP_REVISION << ")\n"
            << "  built with:  " << PP_COMPILER << "\n"
            << "  libraries:   " << PP_LIBRARIES << "\n"
            << "  features:    " << PP_FEATURES << "\n";
  return kExitOk;
}

}  // namespace pp::cmd

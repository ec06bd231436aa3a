#include <exception>
#include <iostream>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"

int main(int argc, char** argv) {
  // Libraries return Errors; an exception reaching here is a bug, and it
  // ends the program with the internal status, never with abort()'s 134.
  try {
    return pp::cmd::run_main(argc, const_cast<const char**>(argv));
  } catch (const std::exception& e) {
    std::cerr << "perf persistent: internal error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "perf persistent: internal error: an unknown exception\n";
  }
  return pp::cmd::kExitInternal;
}

#include "cmd/commands.h"

int main(int argc, char** argv) {
  return pp::cmd::run_main(argc, const_cast<const char**>(argv));
}

#include "tests/support/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace pp::testing {

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "pp-test-XXXXXX").string();
  if (!mkdtemp(templ.data()))
    throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::path(std::string_view relative) const {
  return path_ + "/" + std::string(relative);
}

void TempDir::mkdir(std::string_view relative) const {
  std::filesystem::create_directories(path(relative));
}

void TempDir::write(std::string_view relative, std::string_view content) const {
  std::filesystem::path file = path(relative);
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << content;
}

}  // namespace pp::testing

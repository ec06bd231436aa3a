// decode --log over real pastes from public bug reports and forums
// (tests/fixtures/kernel-logs/, each file's source in its README): every
// error each holds is found with the bank, status and address read by hand
// from the paste, and a paste that holds no error decode can read is an
// error (JSON under --json) with a non-zero exit, never an empty success.
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "mce/kernel_log.h"
#include "tests/support/run_command.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

struct Want {
  std::optional<uint32_t> bank;     // nullopt: an EDAC line alone
  uint64_t status = 0;              // machine checks only
  std::optional<uint64_t> address;  // ADDR, AMD's Error Addr, or EDAC's page/offset
  bool edac = false;                // an EDAC line joined (or alone)
};

struct Paste {
  const char* file;
  std::vector<Want> errors;
  int exit_status;  // of decode --log --json
};

// Expected values copied by hand from each paste.
const Paste kPastes[] = {
    {"mcelog-70-journald-nuc-j5005.log", {{4, 0xa600000000020408, 0xfef4c9e0}}, 0},
    {"radiasoft-devops-134-sbridge-edac.log", {{11, 0x8c00004f000800c2, 0xee30a0000, true}}, 0},
    {"home-assistant-os-2989-nuc6i3.log",
     {{6, 0xcc59dec000041152, 0x1422ff800},
      {6, 0xcc400b0000041136, 0x1422b1900},
      {6, 0xcc400b4000041152, 0x1422b1900},
      {6, 0xcc5bf2c000041136, 0x276cab000}},
     0},
    {"cldn-tiki-sbridge-linux3.log",
     {{9, 0x8c00004e000800c1, 0x1fb6d78000, true}, {5, 0x8c00004000010091, 0x1db6d78e40, true}},
     0},
    {"openstreetmap-operations-300-edac-only.log",
     {{std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true},
      {std::nullopt, 0, std::nullopt, true}},
     0},
    {"edac-utils-10-dmesg-T-sbridge.log", {{5, 0x8c00004000010092, 0x849923380, true}}, 0},
    {"ovro-lwa-117-dmesg-H-skx.log", {{8, 0xfc00010001010092, 0xb757589dc0}}, 0},
    {"ucr-cs100-404-syslogd-amd-fam10h.log",
     {{4, 0xdc5c410004080a13, 0x1891a88210}, {4, 0xdc5c410004080a13, std::nullopt}},
     0},
    {"centosfaq-syslogd-amd-fam15h.log", {{2, 0x98444000010c0176, std::nullopt}}, 0},
    {"newbetuts-502269-syslogd-amd-mc4.log", {{4, 0xdc10410040080a13, std::nullopt}}, 0},
    {"notebook-ryzen-5950x-panic.log", {{1, 0xbc800800060c0859, 0x103ec1fa40}}, 0},
    {"serverdevworker-6966c0587-bare-linux3.log", {{5, 0x8c00004000010090, 0x4a0d75900}}, 0},
    {"openvz-wiki-linux24-bankless.log", {{4, 0xb604a00100000813, 0x7e4f2f68}}, 0},
    // The registers were cut out by the reporter: a malformed line, exit 1.
    {"bazzite-5546-registers-elided.log", {}, 1},
    {"oracle-linux-166-status-value-cut.log", {}, 1},
    // Nothing decode reads: exit 4, a JSON error.
    {"matrixone-20374-apei-ghes-only.log", {}, 4},
    {"serverdevworker-926365abc-amd-nb-words-only.log", {}, 4},
    {"winddoing-mcelog-output-only.log", {}, 4},
    {"mce-inject-2-edac-debug-boot.log", {}, 4},
    {"ovirt-node-88-edac-amd64-boot.log", {}, 4},
};

std::string path_of(const char* file) {
  return fixtures_dir() + "/kernel-logs/" + file;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(KernelLogCorpus, EveryPasteIsListedAndHasItsSource) {
  std::string readme = read(fixtures_dir() + "/kernel-logs/README.md");
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(fixtures_dir() + "/kernel-logs")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".log")
      continue;
    files++;
    EXPECT_NE(readme.find(name), std::string::npos) << name << " has no source in the README";
    bool tested = false;
    for (const Paste& p : kPastes)
      tested = tested || name == p.file;
    EXPECT_TRUE(tested) << name << " has no expectation here";
  }
  EXPECT_GE(files, 20u);
}

TEST(KernelLogCorpus, EveryErrorOfEveryPasteIsFound) {
  for (const Paste& p : kPastes) {
    SCOPED_TRACE(p.file);
    mce::MceLog log = mce::parse_mce_log(read(path_of(p.file)));
    ASSERT_EQ(log.entries.size(), p.errors.size());
    for (size_t i = 0; i < p.errors.size(); i++) {
      const Want& w = p.errors[i];
      const mce::MceLogEntry& e = log.entries[i];
      SCOPED_TRACE("error " + std::to_string(i));
      EXPECT_EQ(e.has_mce, w.bank.has_value());
      EXPECT_EQ(e.edac.has_value(), w.edac);
      if (w.bank) {
        EXPECT_EQ(e.regs.bank, w.bank);
        EXPECT_EQ(e.regs.status, w.status);
        EXPECT_EQ(e.regs.addr, w.address);
        if (e.edac && w.address) {
          EXPECT_EQ(e.edac->location.page, *w.address >> 12);
        }
      } else {
        EXPECT_EQ(e.edac->location.address, w.address);
      }
    }
  }
}

TEST(KernelLogCorpus, NoPasteIsAnEmptyJsonSuccess) {
  for (const Paste& p : kPastes) {
    SCOPED_TRACE(p.file);
    CommandResult r = run_pp({"decode", "--log", "--json", path_of(p.file)});
    EXPECT_EQ(r.status, p.exit_status) << r.err;
    ASSERT_FALSE(r.out.empty());
    std::istringstream in(r.out);
    size_t errors = 0, decoded = 0;
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("error"))
        errors++;
      else
        decoded++;
    }
    EXPECT_EQ(decoded, p.errors.size());
    EXPECT_EQ(errors > 0, p.exit_status != 0);
  }
}

}  // namespace
}  // namespace pp::testing

#include "sys/page_offline.h"

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class PageOfflineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir((dir_.path() + "/sys").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/sys/devices").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/sys/devices/system").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/sys/devices/system/memory").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/proc").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/proc/sys").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_.path() + "/proc/sys/vm").c_str(), 0755), 0);
    // Page frames 0..3; frame 2 poisoned (bit 19), frame 3 other flags.
    std::string flags(size_t{4} * 8, '\0');
    uint64_t poisoned = uint64_t{1} << kKpfHwpoison, other = ~poisoned;
    flags.replace(size_t{2} * 8, 8, reinterpret_cast<const char*>(&poisoned), 8);
    flags.replace(size_t{3} * 8, 8, reinterpret_cast<const char*>(&other), 8);
    write_file(dir_.path() + "/proc/kpageflags", flags);
    kernel_ = real_page_offline(dir_.path() + "/sys", dir_.path() + "/proc");
  }
  pp::testing::TempDir dir_;
  std::unique_ptr<PageOfflineKernel> kernel_;
};

TEST_F(PageOfflineTest, ReadsHwpoisonFromKpageflags) {
  EXPECT_FALSE(*kernel_->hwpoisoned(0));
  EXPECT_TRUE(*kernel_->hwpoisoned(2));
  // Every flag but HWPOISON: not poisoned.
  EXPECT_FALSE(*kernel_->hwpoisoned(3));
  auto past = kernel_->hwpoisoned(4);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code(), EINVAL);
  EXPECT_NE(past.error().message().find("kpageflags"), std::string::npos);
}

TEST_F(PageOfflineTest, SoftOfflineSysctl) {
  auto absent = kernel_->soft_offline_enabled();
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  write_file(dir_.path() + "/proc/sys/vm/enable_soft_offline", "0\n");
  EXPECT_EQ(*kernel_->soft_offline_enabled(), std::optional<bool>(false));
  write_file(dir_.path() + "/proc/sys/vm/enable_soft_offline", "1\n");
  EXPECT_EQ(*kernel_->soft_offline_enabled(), std::optional<bool>(true));
  write_file(dir_.path() + "/proc/sys/vm/enable_soft_offline", "yes\n");
  EXPECT_FALSE(kernel_->soft_offline_enabled().ok());
}

TEST_F(PageOfflineTest, WritesTheAddressToTheKindsFile) {
  std::string soft = dir_.path() + "/sys/devices/system/memory/soft_offline_page";
  std::string hard = dir_.path() + "/sys/devices/system/memory/hard_offline_page";
  write_file(soft, "");
  write_file(hard, "");
  ASSERT_TRUE(kernel_->offline(0x1234000, PageOfflineKind::kSoft).ok());
  EXPECT_EQ(read_file(soft), "0x1234000\n");
  ASSERT_TRUE(kernel_->offline(0x5678000, PageOfflineKind::kHard).ok());
  EXPECT_EQ(read_file(hard), "0x5678000\n");
}

TEST_F(PageOfflineTest, AMissingFileIsRefusedWithItsErrno) {
  auto status = kernel_->offline(0x1000, PageOfflineKind::kSoft);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ENOENT);
  EXPECT_NE(status.error().message().find("soft_offline_page"), std::string::npos);
}

}  // namespace
}  // namespace pp::sys

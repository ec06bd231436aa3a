// record over the kernel backend, on the fake kernel: the seed's boot event
// mce_record (06/12), found in sysfs with no record of ours, read from its
// forward-written buffer (05/12) and written into a perf.data that carries
// Debian 6.1's mce_record format, so the real perf decodes the machine
// checks.
#include <linux/perf_event.h>

#include <cstring>
#include <gtest/gtest.h>
#include <sstream>

#include "persistent/kernel_backend.h"
#include "record/recorder.h"
#include "report/perf_data_reader.h"
#include "sys/testing/fake_kernel.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::record {
namespace {

constexpr uint64_t kMceRecordId = 113;  // fixtures: events/mce/mce_record/id

// An mce_record payload as Debian 6.1 lays it out (the fixture's format):
// common fields, then the machine check's registers.
std::vector<uint8_t> mce_payload(uint8_t bank, uint64_t status, uint32_t cpu) {
  std::vector<uint8_t> raw(107, 0);
  auto put = [&](size_t offset, const void* value, size_t size) {
    std::memcpy(raw.data() + offset, value, size);
  };
  uint16_t type = kMceRecordId;
  put(0, &type, 2);
  put(24, &status, 8);  // status
  put(88, &cpu, 4);     // cpu
  put(105, &bank, 1);   // bank
  return raw;
}

class RecorderFakeKernel : public ::testing::Test {
 protected:
  RecorderFakeKernel() {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    sysfs_.write("devices/system/cpu/present", "0-1\n");
    kernel_ = std::make_unique<sys::testing::FakeKernel>(
        sys::testing::FakeKernelOptions{.cpus = 2, .sysfs_root = sysfs_.path()});
    request_.roots.sysfs = sysfs_.path();
    request_.roots.tracefs = tracefs();
    request_.roots.broker_run_dir = run_.path("run");
    request_.backend.sysfs_root = sysfs_.path();
    request_.backend.tracefs_root = tracefs();
    request_.backend.run_dir = run_.path("run");
    request_.backend.kernel = kernel_.get();
    request_.output = out_.path("mce.data");
    request_.snapshot = true;
    request_.follow = false;
  }

  static std::string tracefs() { return ::pp::testing::fixtures_dir() + "/tracefs-debian-6.1"; }

  ::pp::testing::TempDir sysfs_, run_, out_;
  std::unique_ptr<sys::testing::FakeKernel> kernel_;
  RecordRequest request_;
};

TEST_F(RecorderFakeKernel, TheBootMceEventIsRecordedWithItsFormat) {
  auto id = kernel_->add_boot_event("mce_record", persistent::boot_tracepoint_attr(kMceRecordId));
  ASSERT_TRUE(id.ok()) << id.error().message();
  // Two machine checks before anyone looked: bank 4 on CPU 1, bank 7 on CPU 0.
  sys::testing::FakeEventMatch mce{PERF_TYPE_TRACEPOINT, kMceRecordId};
  ASSERT_EQ(kernel_->emit(1, mce, {.raw = mce_payload(4, 0x9c00000000010135ull, 1)}), 1u);
  ASSERT_EQ(kernel_->emit(0, mce, {.raw = mce_payload(7, 0xbd80000000100134ull, 0)}), 1u);

  request_.events = {"persistent/mce_record/"};
  std::ostringstream notes;
  auto result = record(request_, notes);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->samples, 2u) << notes.str();
  EXPECT_EQ(result->overwritten, 0u);
  EXPECT_EQ(result->buffers, 2);

  auto file = report::PerfDataReader::read_file(request_.output);
  ASSERT_TRUE(file.ok()) << file.error().message();
  ASSERT_EQ(file->events().size(), 1u);
  const report::EventDesc& event = file->events()[0];
  EXPECT_EQ(event.name, "mce:mce_record") << "named after the tracepoint, not 'persistent/...'";
  EXPECT_EQ(event.attr.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(event.attr.attr.config, kMceRecordId);
  EXPECT_EQ(event.attr.attr.sample_type, uint64_t(PERF_SAMPLE_RAW)) << "05/12's attr, as opened";

  auto tracing = file->tracing_data();
  ASSERT_TRUE(tracing.ok()) << tracing.error().message();
  bool has_mce_format = false;
  for (const auto& system : tracing->systems)
    if (system.name == "mce")
      for (const std::string& format : system.formats)
        has_mce_format |= format.find("name: mce_record") != std::string::npos;
  EXPECT_TRUE(has_mce_format) << "perf decodes the raw data with the format from the file";

  std::vector<uint8_t> banks;
  Status walked = file->for_each_record([&](const report::PerfDataRecord& r) -> Status {
    if (r.type != PERF_RECORD_SAMPLE)
      return ok_status();
    PP_ASSIGN_OR_RETURN(report::Sample s, file->sample(r));
    if (s.raw.size() < 107)
      return Error(EINVAL, "short raw payload");
    banks.push_back(s.raw[105]);
    return ok_status();
  });
  ASSERT_TRUE(walked.ok()) << walked.error().message();
  std::sort(banks.begin(), banks.end());
  EXPECT_EQ(banks, (std::vector<uint8_t>{4, 7}));

  // The real perf decodes the machine checks with the format in the file.
  ::pp::testing::CommandResult script =
      ::pp::testing::run_command({"perf", "script", "-i", request_.output});
  ASSERT_EQ(script.status, 0) << "perf script (linux-perf; ./scripts/setup installs it): "
                              << script.err;
  EXPECT_NE(script.out.find("mce:mce_record: CPU: 1, MCGc/s: 0/0, MC4: 9c00000000010135"),
            std::string::npos)
      << script.out;
  EXPECT_NE(script.out.find("mce:mce_record: CPU: 0, MCGc/s: 0/0, MC7: bd80000000100134"),
            std::string::npos)
      << script.out;
}

// Without a tracepoint of that name, record refuses with the reason rather
// than writing samples nothing can decode.
TEST_F(RecorderFakeKernel, ABootEventOfUnknownFormatIsRefusedClearly) {
  ASSERT_TRUE(
      kernel_->add_boot_event("mystery", persistent::boot_tracepoint_attr(kMceRecordId)).ok());
  request_.events = {"persistent/mystery/"};
  std::ostringstream notes;
  auto result = record(request_, notes);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message().find("mystery"), std::string::npos)
      << result.error().message();
}

}  // namespace
}  // namespace pp::record

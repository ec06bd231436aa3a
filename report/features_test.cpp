// Feature sections against bytes computed by hand from perf's layout, the
// byte helpers they use, and the host facts collected from fake trees.
#include "report/features.h"

#include <gtest/gtest.h>

#include "report/bytes.h"
#include "report/perf_data_format.h"
#include "tests/support/temp_dir.h"

namespace pp::report {
namespace {

// Little-endian helpers for writing expected bytes by hand.
void le32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void le64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void text(Bytes& b, std::string_view s, size_t padded_to) {
  b.insert(b.end(), s.begin(), s.end());
  b.insert(b.end(), padded_to - s.size(), 0);
}

TEST(ByteWriter, PerfStringIsPaddedTo64WithItsNul) {
  Bytes out;
  ByteWriter(&out).perf_string("vm");
  Bytes expected = {0x40, 0, 0, 0, 'v', 'm'};
  expected.resize(4 + 64, 0);
  EXPECT_EQ(out, expected);
  EXPECT_EQ(perf_string_size("vm"), 68u);
}

TEST(ByteWriter, PerfStringOf63CharactersFitsOneBlockAnd64NeedTwo) {
  Bytes a, b;
  ByteWriter(&a).perf_string(std::string(63, 'x'));
  ByteWriter(&b).perf_string(std::string(64, 'x'));
  EXPECT_EQ(a.size(), 4u + 64);
  EXPECT_EQ(a[0], 64);
  EXPECT_EQ(a.back(), 0);
  EXPECT_EQ(b.size(), 4u + 128);
  EXPECT_EQ(b[0], 128);
}

TEST(ByteReader, ShortInputIsAnErrorNamingTheInput) {
  Bytes data = {1, 2, 3};
  ByteReader in(data, "HEADER_NRCPUS");
  auto v = in.u32();
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), EINVAL);
  EXPECT_NE(v.error().message().find("HEADER_NRCPUS is truncated"), std::string::npos)
      << v.error().message();
  EXPECT_EQ(in.offset(), 0u);
}

TEST(ByteReader, PerfStringLengthPastTheEndIsAnError) {
  Bytes data;
  le32(data, 1000);
  data.resize(4 + 10, 'a');
  ByteReader in(data, "HEADER_HOSTNAME");
  EXPECT_FALSE(in.perf_string().ok());
}

TEST(ByteReader, CStringWithoutNulIsAnError) {
  Bytes data = {'a', 'b'};
  ByteReader in(data, "tracing data");
  EXPECT_FALSE(in.c_string().ok());
}

TEST(Features, StringFeature) {
  Bytes expected;
  le32(expected, 64);
  text(expected, "6.18.44-fc-v1045", 64);
  EXPECT_EQ(encode_string_feature("6.18.44-fc-v1045"), expected);
  auto back = decode_string_feature(expected);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, "6.18.44-fc-v1045");
}

TEST(Features, NrCpusIsAvailableThenOnline) {
  Bytes expected;
  le32(expected, 4);
  le32(expected, 2);
  EXPECT_EQ(encode_nr_cpus(4, 2), expected);
  auto back = decode_nr_cpus(expected);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->first, 4u);
  EXPECT_EQ(back->second, 2u);
}

TEST(Features, TotalMemIsOneU64OfKilobytes) {
  Bytes expected;
  le64(expected, 24683584);
  EXPECT_EQ(encode_total_mem(24683584), expected);
}

TEST(Features, CmdlineIsACountThenStrings) {
  std::vector<std::string> argv = {"perf-persistent", "record", "-e", "persistent/mce/"};
  Bytes expected;
  le32(expected, 4);
  for (const std::string& arg : argv) {
    le32(expected, 64);
    text(expected, arg, 64);
  }
  EXPECT_EQ(encode_cmdline(argv), expected);
  auto back = decode_cmdline(expected);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, argv);
}

TEST(Features, EventDescHoldsAttrIdsAndName) {
  EventDesc e;
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.size = 128;
  e.attr.attr.config = 305;
  e.name = "syscalls:sys_enter_getppid";
  e.ids = {157, 158};
  Bytes expected;
  le32(expected, 1);    // events
  le32(expected, 128);  // attr size
  le32(expected, PERF_TYPE_TRACEPOINT);
  le32(expected, 128);
  le64(expected, 305);
  expected.resize(expected.size() + 128 - 16, 0);
  le32(expected, 2);  // ids
  le32(expected, 64);
  text(expected, "syscalls:sys_enter_getppid", 64);
  le64(expected, 157);
  le64(expected, 158);
  Bytes got = encode_event_desc({&e, 1}, 128);
  EXPECT_EQ(got, expected);

  auto back = decode_event_desc(got);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].name, e.name);
  EXPECT_EQ((*back)[0].ids, e.ids);
  EXPECT_EQ((*back)[0].attr.attr.config, 305u);
}

TEST(Features, EventDescWithMoreIdsThanBytesIsRejected) {
  Bytes bad;
  le32(bad, 1);
  le32(bad, 64);
  bad.resize(bad.size() + 64, 0);
  le32(bad, 1000000);  // ids, but none follow
  le32(bad, 64);
  text(bad, "x", 64);
  EXPECT_FALSE(decode_event_desc(bad).ok());
}

TEST(Features, PmuMappingsAreTypeThenName) {
  std::vector<std::pair<uint32_t, std::string>> pmus = {{1, "software"}, {2, "tracepoint"}};
  Bytes expected;
  le32(expected, 2);
  le32(expected, 1);
  le32(expected, 64);
  text(expected, "software", 64);
  le32(expected, 2);
  le32(expected, 64);
  text(expected, "tracepoint", 64);
  EXPECT_EQ(encode_pmu_mappings(pmus), expected);
}

TEST(Features, SampleTimeClockIdAndClockData) {
  Bytes time;
  le64(time, 100);
  le64(time, 200);
  EXPECT_EQ(encode_sample_time(100, 200), time);
  auto back = decode_sample_time(time);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->first, 100u);
  EXPECT_EQ(back->second, 200u);

  Bytes clockid;
  le64(clockid, 1);
  EXPECT_EQ(encode_clockid(1), clockid);

  Bytes data;
  le32(data, 1);  // version
  le32(data, 1);  // CLOCK_MONOTONIC
  le64(data, 1700000000000000000ULL);
  le64(data, 12345);
  sys::ClockPair pair{.clockid = 1, .wall_ns = 1700000000000000000ULL, .clock_ns = 12345};
  EXPECT_EQ(encode_clock_data(pair), data);
  auto clock = decode_clock_data(data);
  ASSERT_TRUE(clock.ok()) << clock.error().message();
  EXPECT_EQ(clock->clockid, 1);
  EXPECT_EQ(clock->wall_ns, pair.wall_ns);
  EXPECT_EQ(clock->clock_ns, pair.clock_ns);
  EXPECT_FALSE(decode_clock_data(std::span(data).first(23)).ok());
  data[0] = 2;  // a version this reader does not know
  EXPECT_FALSE(decode_clock_data(data).ok());
}

TEST(Features, HostFeaturesLeaveOutWhatIsUnknown) {
  HostInfo host;
  host.hostname = "vm";
  host.os_release = "6.1.0";
  host.arch = "x86_64";
  host.nr_cpus_available = 2;
  host.nr_cpus_online = 2;
  EventDesc e;
  e.attr.attr.size = 128;
  FeatureMap map = host_features(host, {&e, 1}, 128);
  EXPECT_TRUE(map.count(kFeatureHostname));
  EXPECT_TRUE(map.count(kFeatureOsRelease));
  EXPECT_TRUE(map.count(kFeatureArch));
  EXPECT_TRUE(map.count(kFeatureNrCpus));
  EXPECT_TRUE(map.count(kFeatureEventDesc));
  EXPECT_FALSE(map.count(kFeatureCpuDesc));
  EXPECT_FALSE(map.count(kFeatureCpuId));
  EXPECT_FALSE(map.count(kFeatureTotalMem));
  EXPECT_FALSE(map.count(kFeatureCmdline));
  EXPECT_FALSE(map.count(kFeatureVersion));
  EXPECT_FALSE(map.count(kFeaturePmuMappings));
}

TEST(HostInfo, CollectedFromFakeProcAndSysfs) {
  testing::TempDir proc, sysfs;
  proc.write("sys/kernel/hostname", "box\n");
  proc.write("sys/kernel/osrelease", "6.1.0-57-amd64\n");
  proc.write("sys/kernel/arch", "x86_64\n");
  proc.write("cpuinfo",
             "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
             "model name\t: Intel(R)  Xeon(R)   Gold\nstepping\t: 4\n\nprocessor\t: 1\n");
  proc.write("meminfo", "MemTotal:       16384000 kB\nMemFree:  1 kB\n");
  sysfs.write("devices/system/cpu/present", "0-7\n");
  sysfs.write("devices/system/cpu/online", "0-3,6\n");
  sysfs.write("bus/event_source/devices/tracepoint/type", "2\n");
  sysfs.write("bus/event_source/devices/software/type", "1\n");
  auto info = collect_host_info(sys::Tree(proc.path()), sys::Tree(sysfs.path()));
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->hostname, "box");
  EXPECT_EQ(info->os_release, "6.1.0-57-amd64");
  EXPECT_EQ(info->arch, "x86_64");
  EXPECT_EQ(info->cpu_desc, "Intel(R) Xeon(R) Gold");
  EXPECT_EQ(info->cpuid, "GenuineIntel,6,85,4");
  EXPECT_EQ(info->total_mem_kb, 16384000u);
  EXPECT_EQ(info->nr_cpus_available, 8u);
  EXPECT_EQ(info->nr_cpus_online, 5u);
  ASSERT_EQ(info->pmu_types.size(), 2u);
  EXPECT_EQ(info->pmu_types[0], (std::pair<uint32_t, std::string>{1, "software"}));
  EXPECT_EQ(info->pmu_types[1], (std::pair<uint32_t, std::string>{2, "tracepoint"}));
  EXPECT_EQ(info->version, writer_version());
}

TEST(HostInfo, MissingHostnameIsAnErrorNamingTheFile) {
  testing::TempDir proc, sysfs;
  sysfs.write("devices/system/cpu/present", "0\n");
  sysfs.write("devices/system/cpu/online", "0\n");
  auto info = collect_host_info(sys::Tree(proc.path()), sys::Tree(sysfs.path()));
  ASSERT_FALSE(info.ok());
  EXPECT_NE(info.error().message().find("sys/kernel/hostname"), std::string::npos)
      << info.error().message();
}

}  // namespace
}  // namespace pp::report

// Side-band records synthesised from fake /proc trees, against bytes
// computed by hand from the kernel's record layouts.
#include "report/synthesize.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::report {
namespace {

void le16(Bytes& b, uint16_t v) {
  b.push_back(uint8_t(v));
  b.push_back(uint8_t(v >> 8));
}
void le32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void le64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void name(Bytes& b, std::string_view s, size_t padded_to) {
  b.insert(b.end(), s.begin(), s.end());
  b.insert(b.end(), padded_to - s.size(), 0);
}

const TrailerLayout kNoTrailer{};
const TrailerLayout kTrailer{PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER, true};

TEST(Synthesize, CommRecord) {
  Bytes out;
  synthesize_comm(100, 101, "bash", kNoTrailer, &out);
  Bytes expected;
  le32(expected, PERF_RECORD_COMM);
  le16(expected, 0);
  le16(expected, 24);
  le32(expected, 100);
  le32(expected, 101);
  name(expected, "bash", 8);
  EXPECT_EQ(out, expected);
}

TEST(Synthesize, CommRecordCarriesAZeroTrailer) {
  Bytes out;
  synthesize_comm(1, 1, "init1234", kTrailer, &out);
  // header 8, pid/tid 8, "init1234\0" padded to 16, trailer 24.
  ASSERT_EQ(out.size(), 56u);
  EXPECT_EQ(out[6], 56);
  for (size_t i = 32; i < 56; i++)
    EXPECT_EQ(out[i], 0) << i;
}

TEST(Synthesize, MapsLines) {
  auto exe =
      parse_maps_line("55d0c8a00000-55d0c8a28000 r-xp 00028000 fe:01 1835   /usr/bin/my bash");
  ASSERT_TRUE(exe.ok()) << exe.error().message();
  EXPECT_EQ(exe->start, 0x55d0c8a00000u);
  EXPECT_EQ(exe->end, 0x55d0c8a28000u);
  EXPECT_EQ(exe->pgoff, 0x28000u);
  EXPECT_EQ(exe->major, 0xfeu);
  EXPECT_EQ(exe->minor, 1u);
  EXPECT_EQ(exe->inode, 1835u);
  EXPECT_EQ(exe->prot, unsigned(PROT_READ | PROT_EXEC));
  EXPECT_EQ(exe->flags, unsigned(MAP_PRIVATE));
  EXPECT_EQ(exe->path, "/usr/bin/my bash");

  auto anon = parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:00 0 ");
  ASSERT_TRUE(anon.ok());
  EXPECT_EQ(anon->path, "");
  EXPECT_EQ(anon->flags, unsigned(MAP_SHARED));
  EXPECT_EQ(anon->prot, unsigned(PROT_READ | PROT_WRITE));

  EXPECT_FALSE(parse_maps_line("garbage").ok());
  EXPECT_FALSE(parse_maps_line("2000-1000 r-xp 0 fe:01 1 /x").ok());
  EXPECT_FALSE(parse_maps_line("1000-2000 r-xp 0 fe01 1 /x").ok());
}

TEST(Synthesize, Mmap2Record) {
  auto map = parse_maps_line("400000-401000 r-xp 00001000 08:02 77 /bin/x");
  ASSERT_TRUE(map.ok());
  Bytes out;
  synthesize_mmap2(55, *map, kNoTrailer, &out);
  Bytes expected;
  le32(expected, PERF_RECORD_MMAP2);
  le16(expected, PERF_RECORD_MISC_USER);
  le16(expected, 80);
  le32(expected, 55);  // pid
  le32(expected, 55);  // tid
  le64(expected, 0x400000);
  le64(expected, 0x1000);  // len
  le64(expected, 0x1000);  // pgoff
  le32(expected, 8);       // maj
  le32(expected, 2);       // min
  le64(expected, 77);      // ino
  le64(expected, 0);       // ino_generation
  le32(expected, PROT_READ | PROT_EXEC);
  le32(expected, MAP_PRIVATE);
  name(expected, "/bin/x", 8);
  EXPECT_EQ(out, expected);
}

TEST(Synthesize, AnonymousExecutableMapIsNamedAnon) {
  auto map = parse_maps_line("7f0000000000-7f0000001000 r-xp 00000000 00:00 0");
  ASSERT_TRUE(map.ok());
  Bytes out;
  synthesize_mmap2(1, *map, kNoTrailer, &out);
  std::string tail(out.begin() + 72, out.end());
  EXPECT_EQ(tail, std::string("//anon\0\0", 8));
}

TEST(Synthesize, KernelMmapFromKallsyms) {
  testing::TempDir proc;
  proc.write("kallsyms",
             "ffffffff81000000 T startup_64\nffffffff81000000 T _stext\n"
             "ffffffff81000000 T _text\nffffffff82276988 T _etext\n"
             "ffffffffc0000000 t foo\t[mod]\n");
  Bytes out;
  auto done = synthesize_kernel_mmap(sys::Tree(proc.path()), kNoTrailer, &out);
  ASSERT_TRUE(done.ok()) << done.error().message();
  EXPECT_TRUE(*done);
  Bytes expected;
  le32(expected, PERF_RECORD_MMAP);
  le16(expected, PERF_RECORD_MISC_KERNEL);
  le16(expected, 64);
  le32(expected, 0xffffffff);  // pid -1
  le32(expected, 0);
  le64(expected, 0xffffffff81000000ULL);
  le64(expected, 0x1276988);
  le64(expected, 0xffffffff81000000ULL);
  name(expected, "[kernel.kallsyms]_text", 24);
  EXPECT_EQ(out, expected);
}

TEST(Synthesize, RestrictedKallsymsAddsNoKernelMap) {
  testing::TempDir proc;
  proc.write("kallsyms", "0000000000000000 T _text\n0000000000000000 T _etext\n");
  Bytes out;
  auto done = synthesize_kernel_mmap(sys::Tree(proc.path()), kNoTrailer, &out);
  ASSERT_TRUE(done.ok());
  EXPECT_FALSE(*done);
  EXPECT_TRUE(out.empty());
}

TEST(Synthesize, ProcessesFromAFakeProc) {
  testing::TempDir proc;
  proc.write("1/task/1/comm", "init\n");
  proc.write("1/maps",
             "400000-401000 r-xp 00000000 08:02 77 /sbin/init\n"
             "601000-602000 rw-p 00001000 08:02 77 /sbin/init\n");
  proc.write("20/task/20/comm", "app\n");
  proc.write("20/task/21/comm", "worker\n");
  proc.write("20/maps", "");
  proc.write("self/task/1/comm", "not a pid\n");
  proc.write("meminfo", "");
  Bytes out;
  auto counts = synthesize_processes(sys::Tree(proc.path()), kTrailer, MapsMode::kExecutable, &out);
  ASSERT_TRUE(counts.ok()) << counts.error().message();
  EXPECT_EQ(counts->processes, 2u);
  EXPECT_EQ(counts->comm, 3u);
  EXPECT_EQ(counts->mmap, 1u);  // the data mapping is left out

  // Walk the records: types in order, each carrying the 24-byte trailer.
  std::vector<uint32_t> types;
  for (size_t pos = 0; pos < out.size();) {
    perf_event_header h;
    std::memcpy(&h, out.data() + pos, sizeof(h));
    ASSERT_GE(h.size, 8 + 24);
    types.push_back(h.type);
    pos += h.size;
  }
  EXPECT_EQ(types, (std::vector<uint32_t>{PERF_RECORD_COMM, PERF_RECORD_MMAP2, PERF_RECORD_COMM,
                                          PERF_RECORD_COMM}));

  Bytes all;
  auto with_data = synthesize_processes(sys::Tree(proc.path()), kNoTrailer, MapsMode::kAll, &all);
  ASSERT_TRUE(with_data.ok());
  EXPECT_EQ(with_data->mmap, 2u);
  Bytes none;
  auto comm_only = synthesize_processes(sys::Tree(proc.path()), kNoTrailer, MapsMode::kNone, &none);
  ASSERT_TRUE(comm_only.ok());
  EXPECT_EQ(comm_only->mmap, 0u);
  EXPECT_EQ(comm_only->comm, 3u);
}

TEST(Synthesize, AProcessThatIsGoneIsSkipped) {
  testing::TempDir proc;
  proc.mkdir("99");  // no task/, no maps: exited while we looked
  Bytes out;
  SynthesisCounts counts;
  EXPECT_TRUE(synthesize_process(sys::Tree(proc.path()), 99, kNoTrailer, MapsMode::kExecutable,
                                 &out, &counts)
                  .ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(counts.processes, 0u);
}

// /sys/kernel/notes as a kernel lays it out: a Xen note, then the GNU build-id.
std::string kernel_notes(const Bytes& id) {
  Bytes notes;
  le32(notes, 4);  // "Xen\0"
  le32(notes, 4);
  le32(notes, 18);
  name(notes, "Xen", 4);
  le32(notes, 0x1234);
  le32(notes, 4);  // "GNU\0"
  le32(notes, uint32_t(id.size()));
  le32(notes, 3);  // NT_GNU_BUILD_ID
  name(notes, "GNU", 4);
  notes.insert(notes.end(), id.begin(), id.end());
  notes.resize(align_up(notes.size(), 4), 0);
  return std::string(notes.begin(), notes.end());
}

TEST(Synthesize, KernelBuildIdFromNotes) {
  Bytes id;
  for (uint8_t i = 0; i < 20; i++)
    id.push_back(uint8_t(0xa0 + i));
  testing::TempDir sysfs;
  sysfs.write("kernel/notes", kernel_notes(id));
  auto found = kernel_build_id(sys::Tree(sysfs.path()));
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(*found, id);

  testing::TempDir none;
  none.write("kernel/notes", kernel_notes({}).substr(0, 20));  // the Xen note only
  auto missing = kernel_build_id(sys::Tree(none.path()));
  ASSERT_TRUE(missing.ok()) << missing.error().message();
  EXPECT_TRUE(missing->empty());

  testing::TempDir cut;
  cut.write("kernel/notes", kernel_notes(id).substr(0, 40));  // inside the id
  EXPECT_FALSE(kernel_build_id(sys::Tree(cut.path())).ok());
}

TEST(Synthesize, BuildIdEntryAsPerf61WritesIt) {
  Bytes id(20, 0x11);
  Bytes out;
  build_id_entry(0, PERF_RECORD_MISC_KERNEL, -1, id, "[kernel.kallsyms]", &out);
  Bytes expected;
  le32(expected, 0);                                    // type: 0 in a file's table
  le16(expected, PERF_RECORD_MISC_KERNEL | (1 << 15));  // BUILD_ID_SIZE
  le16(expected, 8 + 4 + 20 + 4 + 64);                  // header, pid, id, size+pad, name
  le32(expected, 0xffffffff);                           // pid -1: the host kernel
  expected.insert(expected.end(), id.begin(), id.end());
  expected.push_back(20);
  expected.insert(expected.end(), 3, 0);
  name(expected, "[kernel.kallsyms]", 64);
  EXPECT_EQ(out, expected);
}

TEST(Synthesize, MalformedMapsIsAnErrorNamingTheFile) {
  testing::TempDir proc;
  proc.write("5/task/5/comm", "x\n");
  proc.write("5/maps", "not a maps line\n");
  Bytes out;
  SynthesisCounts counts;
  Status s = synthesize_process(sys::Tree(proc.path()), 5, kNoTrailer, MapsMode::kExecutable, &out,
                                &counts);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("5/maps"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace pp::report

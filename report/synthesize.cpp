#include "report/synthesize.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/strings.h"
#include "report/perf_data_format.h"
#include "sys/perf_abi_sample.h"

namespace pp::report {
namespace {

constexpr const char* kKernelMmapName = "[kernel.kallsyms]";

// The fixed fields after the header: MMAP has pid, tid, start, len, pgoff;
// MMAP2 adds maj, min, ino, ino_generation, prot, flags.
constexpr size_t kMmapFixed = 4 + 4 + 8 + 8 + 8;
constexpr size_t kMmap2Fixed = kMmapFixed + 4 + 4 + 8 + 8 + 4 + 4;

// A build-id entry: pid, 20 bytes of id, its size, 3 of padding.
constexpr size_t kBuildIdMax = 20;
constexpr size_t kBuildIdFixed = 4 + kBuildIdMax + 1 + 3;

size_t trailer_size(const TrailerLayout& trailer) {
  return trailer.sample_id_all ? sys::sample_id_size(trailer.sample_type) : 0;
}

// Appends to `out`, the vector the record's ByteWriter writes.
void write_trailer(const TrailerLayout& trailer, Bytes* out) {
  if (trailer.sample_id_all)
    sys::encode_sample_id(trailer.sample_type, sys::SampleId{}, *out);
}

// A name padded with NULs to a multiple of 8 (at least one NUL).
void padded_name(std::string_view name, ByteWriter& w) {
  w.text(name);
  w.zeros(align_up(name.size() + 1, 8) - name.size());
}

void header(uint32_t type, uint16_t misc, size_t size, ByteWriter& w) {
  w.u32(type);
  w.u16(misc);
  w.u16(uint16_t(size));
}

// A pid or tid directory name: decimal digits that fit a pid_t.
bool is_number(std::string_view s) {
  if (s.empty() || s.size() > 9)
    return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

bool process_gone(const Error& e) {
  return e.code() == ENOENT || e.code() == ESRCH;
}

Result<uint64_t> parse_hex(std::string_view text, std::string_view what) {
  return parse_u64("0x" + std::string(text), what);
}

// Splits off the next space-separated field.
std::string_view next_field(std::string_view& rest) {
  size_t b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(b);
  size_t e = rest.find(' ');
  std::string_view field = rest.substr(0, e);
  rest = e == std::string_view::npos ? std::string_view() : rest.substr(e);
  return field;
}

}  // namespace

void synthesize_comm(uint32_t pid, uint32_t tid, std::string_view comm,
                     const TrailerLayout& trailer, Bytes* out) {
  size_t size =
      sizeof(perf_event_header) + 8 + align_up(comm.size() + 1, 8) + trailer_size(trailer);
  ByteWriter w(out);
  header(PERF_RECORD_COMM, 0, size, w);
  w.u32(pid);
  w.u32(tid);
  padded_name(comm, w);
  write_trailer(trailer, out);
}

Result<MapsLine> parse_maps_line(std::string_view line) {
  MapsLine map;
  std::string_view rest = line;
  std::string_view range = next_field(rest);
  std::string_view perms = next_field(rest);
  std::string_view offset = next_field(rest);
  std::string_view device = next_field(rest);
  std::string_view inode = next_field(rest);
  size_t dash = range.find('-');
  size_t colon = device.find(':');
  if (dash == std::string_view::npos || perms.size() != 4 || colon == std::string_view::npos ||
      inode.empty())
    return errorf(EINVAL, "maps line '%.*s' is not 'start-end perms offset dev inode [path]'",
                  int(line.size()), line.data());
  PP_ASSIGN_OR_RETURN(map.start, parse_hex(range.substr(0, dash), "map start"));
  PP_ASSIGN_OR_RETURN(map.end, parse_hex(range.substr(dash + 1), "map end"));
  PP_ASSIGN_OR_RETURN(map.pgoff, parse_hex(offset, "map offset"));
  PP_ASSIGN_OR_RETURN(uint64_t major, parse_hex(device.substr(0, colon), "device major"));
  PP_ASSIGN_OR_RETURN(uint64_t minor, parse_hex(device.substr(colon + 1), "device minor"));
  PP_ASSIGN_OR_RETURN(map.inode, parse_u64(inode, "inode"));
  if (map.end < map.start)
    return errorf(EINVAL, "maps line '%.*s' ends before it starts", int(line.size()), line.data());
  map.major = uint32_t(major);
  map.minor = uint32_t(minor);
  if (perms[0] == 'r')
    map.prot |= PROT_READ;
  if (perms[1] == 'w')
    map.prot |= PROT_WRITE;
  if (perms[2] == 'x')
    map.prot |= PROT_EXEC;
  map.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
  // The path is the rest after the spaces; it may itself contain spaces.
  size_t b = rest.find_first_not_of(' ');
  if (b != std::string_view::npos)
    map.path = std::string(rest.substr(b));
  return map;
}

void synthesize_mmap2(uint32_t pid, const MapsLine& map, const TrailerLayout& trailer, Bytes* out) {
  std::string_view name = map.path.empty() ? std::string_view("//anon") : map.path;
  size_t size = sizeof(perf_event_header) + kMmap2Fixed + align_up(name.size() + 1, 8) +
                trailer_size(trailer);
  uint16_t misc = PERF_RECORD_MISC_USER;
  if (!(map.prot & PROT_EXEC))
    misc |= PERF_RECORD_MISC_MMAP_DATA;
  ByteWriter w(out);
  header(PERF_RECORD_MMAP2, misc, size, w);
  w.u32(pid);
  w.u32(pid);
  w.u64(map.start);
  w.u64(map.end - map.start);
  w.u64(map.pgoff);
  w.u32(map.major);
  w.u32(map.minor);
  w.u64(map.inode);
  w.u64(0);  // ino_generation: not in /proc/<pid>/maps
  w.u32(map.prot);
  w.u32(map.flags);
  padded_name(name, w);
  write_trailer(trailer, out);
}

Status synthesize_process(const sys::Tree& proc, pid_t pid, const TrailerLayout& trailer,
                          MapsMode maps_mode, Bytes* out, SynthesisCounts* counts) {
  const std::string dir = std::to_string(pid);
  auto tids = proc.list(dir + "/task");
  if (!tids.ok())
    return process_gone(tids.error()) ? ok_status() : Status(std::move(tids).error());
  Bytes records;
  size_t comms = 0, mmaps = 0;
  for (const std::string& tid : *tids) {
    if (!is_number(tid))
      continue;
    std::string comm_path = dir + "/task/";
    comm_path += tid;
    comm_path += "/comm";
    auto comm = proc.read(comm_path, 4096);
    if (!comm.ok()) {
      if (process_gone(comm.error()))
        continue;
      return std::move(comm).error();
    }
    std::string_view name = *comm;
    if (!name.empty() && name.back() == '\n')
      name.remove_suffix(1);
    synthesize_comm(uint32_t(pid), uint32_t(parse_u64(tid, "tid").value_or(0)), name, trailer,
                    &records);
    comms++;
  }
  auto maps = maps_mode == MapsMode::kNone ? Result<std::string>(std::string())
                                           : proc.read(dir + "/maps", 64 << 20);
  if (!maps.ok()) {
    // Another user's process when not privileged: its threads are still
    // named, its binaries are not, as with perf record.
    int code = maps.error().code();
    if (!process_gone(maps.error()) && code != EACCES && code != EPERM)
      return std::move(maps).error();
  } else {
    for (std::string_view line : split(*maps, '\n')) {
      if (line.empty())
        continue;
      auto map = parse_maps_line(line);
      if (!map.ok())
        return std::move(map).error().with_context(proc.path(dir + "/maps"));
      if (!(map->prot & PROT_EXEC) && maps_mode != MapsMode::kAll)
        continue;
      synthesize_mmap2(uint32_t(pid), *map, trailer, &records);
      mmaps++;
    }
  }
  if (comms == 0)
    return ok_status();  // gone while we looked
  out->insert(out->end(), records.begin(), records.end());
  counts->processes++;
  counts->comm += comms;
  counts->mmap += mmaps;
  return ok_status();
}

Result<SynthesisCounts> synthesize_processes(const sys::Tree& proc, const TrailerLayout& trailer,
                                             MapsMode maps, Bytes* out) {
  PP_ASSIGN_OR_RETURN(auto entries, proc.list(""));
  SynthesisCounts counts;
  for (const std::string& entry : entries) {
    if (!is_number(entry))
      continue;
    pid_t pid = pid_t(parse_u64(entry, "pid").value_or(0));
    PP_RETURN_IF_ERROR(synthesize_process(proc, pid, trailer, maps, out, &counts));
  }
  return counts;
}

Result<bool> synthesize_kernel_mmap(const sys::Tree& proc, const TrailerLayout& trailer,
                                    Bytes* out) {
  PP_ASSIGN_OR_RETURN(std::string kallsyms, proc.read("kallsyms", 256 << 20));
  uint64_t text = 0, stext = 0, etext = 0;
  for (std::string_view line : split(kallsyms, '\n')) {
    std::string_view rest = line;
    std::string_view address = next_field(rest);
    std::string_view type = next_field(rest);
    std::string_view name = next_field(rest);
    if (type.size() != 1 || (type[0] != 'T' && type[0] != 't'))
      continue;
    uint64_t* slot = name == "_text"    ? &text
                     : name == "_stext" ? &stext
                     : name == "_etext" ? &etext
                                        : nullptr;
    if (!slot)
      continue;
    if (auto value = parse_hex(address, "kallsyms address"); value.ok())
      *slot = *value;
  }
  const char* ref_name = text ? "_text" : "_stext";
  uint64_t start = text ? text : stext;
  if (start == 0)
    return false;  // kptr_restrict hides addresses, or no kernel text symbol
  uint64_t end = etext > start ? etext : ~0ULL;
  std::string name = std::string(kKernelMmapName) + ref_name;
  size_t size =
      sizeof(perf_event_header) + kMmapFixed + align_up(name.size() + 1, 8) + trailer_size(trailer);
  ByteWriter w(out);
  header(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, size, w);
  w.u32(~0u);  // pid -1: the kernel
  w.u32(0);
  w.u64(start);
  w.u64(end - start);
  w.u64(start);  // pgoff: the reference symbol's address, for relocation
  padded_name(name, w);
  write_trailer(trailer, out);
  return true;
}

Result<Bytes> kernel_build_id(const sys::Tree& sysfs) {
  constexpr uint32_t kNoteGnuBuildId = 3;
  PP_ASSIGN_OR_RETURN(std::string notes, sysfs.read("kernel/notes", 1 << 16));
  Bytes bytes(notes.begin(), notes.end());
  ByteReader in(bytes, sysfs.path("kernel/notes"));
  while (in.remaining() >= 12) {
    PP_ASSIGN_OR_RETURN(uint32_t name_size, in.u32());
    PP_ASSIGN_OR_RETURN(uint32_t desc_size, in.u32());
    PP_ASSIGN_OR_RETURN(uint32_t type, in.u32());
    PP_ASSIGN_OR_RETURN(auto name, in.bytes(align_up(name_size, 4)));
    PP_ASSIGN_OR_RETURN(auto desc, in.bytes(align_up(desc_size, 4)));
    if (type == kNoteGnuBuildId && name_size == 4 && std::memcmp(name.data(), "GNU", 4) == 0 &&
        desc_size > 0 && desc_size <= kBuildIdMax)
      return Bytes(desc.begin(), desc.begin() + desc_size);
  }
  return Bytes();
}

void build_id_entry(uint32_t type, uint16_t misc, int32_t pid, std::span<const uint8_t> id,
                    std::string_view filename, Bytes* out) {
  size_t name_size = align_up(filename.size() + 1, kNameAlign);
  ByteWriter w(out);
  header(type, uint16_t(misc | kMiscBuildIdSize),
         sizeof(perf_event_header) + kBuildIdFixed + name_size, w);
  w.u32(uint32_t(pid));
  size_t n = std::min(id.size(), kBuildIdMax);
  w.bytes(id.first(n));
  w.zeros(kBuildIdMax - n);
  w.u8(uint8_t(n));
  w.zeros(3);
  w.text(filename);
  w.zeros(name_size - filename.size());
}

}  // namespace pp::report

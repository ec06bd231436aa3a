#include "report/tracing_data.h"

#include <algorithm>
#include <cerrno>

#include "base/strings.h"

namespace pp::report {
namespace {

constexpr uint8_t kMagic[] = {0x17, 0x08, 0x44};
constexpr std::string_view kTag = "tracing";
constexpr std::string_view kVersion = "0.6";

// Format files are small; a snapshot or a live tree with a huge one is not
// a tracefs.
constexpr size_t kFormatLimit = 1 << 20;
// printk_formats grows with the kernel's trace_printk sites.
constexpr size_t kPrintkLimit = 16 << 20;

bool host_big_endian() {
  const uint16_t probe = 1;
  uint8_t first;
  std::memcpy(&first, &probe, 1);
  return first == 0;
}

// A file that snapshots may lack: empty when absent.
Result<std::string> read_optional(const sys::Tree& tree, std::string_view relative, size_t limit) {
  if (!tree.exists(relative))
    return std::string();
  return tree.read(relative, limit);
}

std::string tracepoint_dir(const Tracepoint& tp) {
  return "events/" + tp.system + "/" + tp.name;
}

Result<std::string> read_format(const sys::Tree& tracefs, const Tracepoint& tp) {
  std::string relative = tracepoint_dir(tp) + "/format";
  PP_ASSIGN_OR_RETURN(std::string format, tracefs.read(relative, kFormatLimit));
  auto id = format_id(format);
  if (!id.ok())
    return std::move(id).error().with_context(tracefs.path(relative));
  if (*id != tp.id)
    return errorf(EINVAL,
                  "%s has ID %llu, but the event was opened with config %llu; was the tracefs "
                  "root taken from another kernel?",
                  tracefs.path(relative).c_str(), static_cast<unsigned long long>(*id),
                  static_cast<unsigned long long>(tp.id));
  return format;
}

Result<uint64_t> read_id_file(const sys::Tree& tracefs, std::string_view relative) {
  PP_ASSIGN_OR_RETURN(std::string text, tracefs.read(relative, 64));
  return parse_u64(trim(text), "tracepoint id");
}

}  // namespace

Result<uint64_t> format_id(std::string_view format) {
  for (std::string_view line : split(format, '\n')) {
    if (starts_with(line, "ID:"))
      return parse_u64(trim(line.substr(3)), "format ID");
  }
  return errorf(EINVAL, "format file has no 'ID:' line");
}

Result<Tracepoint> find_tracepoint(const sys::Tree& tracefs, uint64_t id, std::string_view hint) {
  size_t colon = hint.find(':');
  if (colon != std::string_view::npos) {
    Tracepoint tp{std::string(hint.substr(0, colon)), std::string(hint.substr(colon + 1)), id};
    if (tp.system.find('/') == std::string::npos && tp.name.find('/') == std::string::npos &&
        !tp.system.empty() && !tp.name.empty()) {
      auto found = read_id_file(tracefs, tracepoint_dir(tp) + "/id");
      if (found.ok() && *found == id)
        return tp;
    }
  }
  auto systems = tracefs.list("events");
  if (!systems.ok())
    return std::move(systems).error().with_context("looking for tracepoint id " +
                                                   std::to_string(id));
  for (const std::string& system : *systems) {
    if (!tracefs.is_directory("events/" + system))
      continue;
    auto names = tracefs.list("events/" + system);
    if (!names.ok())
      continue;
    for (const std::string& name : *names) {
      std::string id_path = "events/" + system;
      id_path += "/";
      id_path += name;
      id_path += "/id";
      auto found = read_id_file(tracefs, id_path);
      if (found.ok() && *found == id)
        return Tracepoint{system, name, id};
    }
  }
  return errorf(ENOENT,
                "no tracepoint with id %llu under %s/events; is this the tracefs of the kernel "
                "that recorded it?",
                static_cast<unsigned long long>(id), tracefs.root().c_str());
}

Result<Bytes> build_tracing_data(const sys::Tree& tracefs, std::span<const Tracepoint> tracepoints,
                                 uint32_t page_size) {
  // Group by system, systems in order of first appearance; ftrace's own
  // events go to their own list, as perf reads them.
  std::vector<Tracepoint> ftrace;
  std::vector<std::pair<std::string, std::vector<Tracepoint>>> systems;
  std::vector<Tracepoint> seen;
  for (const Tracepoint& tp : tracepoints) {
    if (std::find(seen.begin(), seen.end(), tp) != seen.end())
      continue;
    seen.push_back(tp);
    if (tp.system == "ftrace") {
      ftrace.push_back(tp);
      continue;
    }
    auto it = std::find_if(systems.begin(), systems.end(),
                           [&](const auto& s) { return s.first == tp.system; });
    if (it == systems.end())
      systems.emplace_back(tp.system, std::vector<Tracepoint>{tp});
    else
      it->second.push_back(tp);
  }

  Bytes out;
  ByteWriter w(&out);
  w.bytes(kMagic);
  w.text(kTag);
  w.c_string(kVersion);
  w.u8(host_big_endian() ? 1 : 0);
  w.u8(uint8_t(sizeof(long)));
  w.u32(page_size);

  for (std::string_view name : {"header_page", "header_event"}) {
    std::string relative = "events/" + std::string(name);
    auto content = tracefs.read(relative, kFormatLimit);
    if (!content.ok())
      return std::move(content).error().with_context("building perf's tracing data");
    w.c_string(name);
    w.u64(content->size());
    w.text(*content);
  }

  w.u32(uint32_t(ftrace.size()));
  for (const Tracepoint& tp : ftrace) {
    PP_ASSIGN_OR_RETURN(std::string format, read_format(tracefs, tp));
    w.u64(format.size());
    w.text(format);
  }

  w.u32(uint32_t(systems.size()));
  for (const auto& [system, events] : systems) {
    w.c_string(system);
    w.u32(uint32_t(events.size()));
    for (const Tracepoint& tp : events) {
      PP_ASSIGN_OR_RETURN(std::string format, read_format(tracefs, tp));
      w.u64(format.size());
      w.text(format);
    }
  }

  // kallsyms: empty. perf resolves kernel symbols from its own sources and
  // skips this payload; an empty one is what perf itself writes.
  w.u32(0);

  PP_ASSIGN_OR_RETURN(std::string printk, read_optional(tracefs, "printk_formats", kPrintkLimit));
  w.u32(uint32_t(printk.size()));
  w.text(printk);

  PP_ASSIGN_OR_RETURN(std::string cmdlines, read_optional(tracefs, "saved_cmdlines", kPrintkLimit));
  w.u64(cmdlines.size());
  w.text(cmdlines);
  return out;
}

std::vector<std::string> TracingData::event_names() const {
  std::vector<std::string> names;
  auto add = [&](const std::string& system, const std::string& format) {
    for (std::string_view line : split(format, '\n')) {
      if (starts_with(line, "name:")) {
        names.push_back(system + ":" + std::string(trim(line.substr(5))));
        return;
      }
    }
  };
  for (const std::string& format : ftrace_formats)
    add("ftrace", format);
  for (const System& system : systems)
    for (const std::string& format : system.formats)
      add(system.name, format);
  return names;
}

namespace {

Result<std::string> read_sized(ByteReader& in, uint64_t size) {
  PP_ASSIGN_OR_RETURN(auto bytes, in.bytes(size));
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

Result<std::string> read_header_file(ByteReader& in, std::string_view name) {
  PP_ASSIGN_OR_RETURN(std::string tag, in.c_string());
  if (tag != name)
    return errorf(EINVAL, "tracing data: expected '%.*s' at offset %zu, found '%s'",
                  int(name.size()), name.data(), in.offset(), tag.c_str());
  PP_ASSIGN_OR_RETURN(uint64_t size, in.u64());
  return read_sized(in, size);
}

}  // namespace

Result<TracingData> parse_tracing_data(std::span<const uint8_t> data) {
  ByteReader in(data, "tracing data");
  TracingData out;
  PP_ASSIGN_OR_RETURN(auto magic, in.bytes(sizeof(kMagic) + kTag.size()));
  if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0 ||
      std::memcmp(magic.data() + sizeof(kMagic), kTag.data(), kTag.size()) != 0)
    return errorf(EINVAL, "tracing data does not start with perf's magic (17 08 44 'tracing')");
  PP_ASSIGN_OR_RETURN(out.version, in.c_string());
  PP_ASSIGN_OR_RETURN(uint8_t endian, in.u8());
  if (endian > 1)
    return errorf(EINVAL, "tracing data: endianness byte is %u, not 0 or 1", endian);
  out.big_endian = endian == 1;
  if (out.big_endian != host_big_endian())
    return errorf(EINVAL, "tracing data is from a host of the other byte order");
  PP_ASSIGN_OR_RETURN(out.long_size, in.u8());
  PP_ASSIGN_OR_RETURN(out.page_size, in.u32());
  if (out.page_size == 0)
    return errorf(EINVAL, "tracing data: page size is 0");
  PP_ASSIGN_OR_RETURN(out.header_page, read_header_file(in, "header_page"));
  PP_ASSIGN_OR_RETURN(out.header_event, read_header_file(in, "header_event"));

  PP_ASSIGN_OR_RETURN(uint32_t nr_ftrace, in.u32());
  for (uint32_t i = 0; i < nr_ftrace; i++) {
    PP_ASSIGN_OR_RETURN(uint64_t size, in.u64());
    PP_ASSIGN_OR_RETURN(std::string format, read_sized(in, size));
    out.ftrace_formats.push_back(std::move(format));
  }
  PP_ASSIGN_OR_RETURN(uint32_t nr_systems, in.u32());
  for (uint32_t i = 0; i < nr_systems; i++) {
    TracingData::System system;
    PP_ASSIGN_OR_RETURN(system.name, in.c_string());
    PP_ASSIGN_OR_RETURN(uint32_t nr_events, in.u32());
    for (uint32_t j = 0; j < nr_events; j++) {
      PP_ASSIGN_OR_RETURN(uint64_t size, in.u64());
      PP_ASSIGN_OR_RETURN(std::string format, read_sized(in, size));
      system.formats.push_back(std::move(format));
    }
    out.systems.push_back(std::move(system));
  }
  PP_ASSIGN_OR_RETURN(uint32_t kallsyms_size, in.u32());
  PP_ASSIGN_OR_RETURN(out.kallsyms, read_sized(in, kallsyms_size));
  PP_ASSIGN_OR_RETURN(uint32_t printk_size, in.u32());
  PP_ASSIGN_OR_RETURN(out.printk_formats, read_sized(in, printk_size));
  // perf compares the version as a number: 0.6 and later carry cmdlines.
  if (std::strtod(out.version.c_str(), nullptr) >= 0.6) {
    PP_ASSIGN_OR_RETURN(uint64_t cmdlines_size, in.u64());
    PP_ASSIGN_OR_RETURN(out.saved_cmdlines, read_sized(in, cmdlines_size));
  }
  out.size = in.offset();
  return out;
}

}  // namespace pp::report

#include "watch/harvest.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "base/strings.h"
#include "mce/bits.h"
#include "mce/erst.h"
#include "mce/kernel_log.h"
#include "sys/fd.h"
#include "sys/input.h"
#include "sys/tree.h"

namespace pp::watch {
namespace {

constexpr size_t kMaxKmsgBytes = size_t(64) << 20;
// /dev/kmsg refuses (EINVAL) a read too small for its next record; the
// kernel's longest is CONSOLE_EXT_LOG_MAX, 8 KiB.
constexpr size_t kKmsgReadSize = size_t(64) << 10;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// One kernel-log text fed to the parser, and for each of its lines, what to
// call it in a note ("record 512", "line 3"), the kmsg sequence number and
// the line as read.
struct LogText {
  std::string text;
  std::vector<std::optional<uint64_t>> seqs;  // by 0-based line; kmsg only
  std::vector<std::string> raws;              // by 0-based line
  size_t records = 0;                         // kmsg records read, kept or not
};

// What the kernel's machine-check code begins each of its lines with: its
// pr_fmt "mce: " (arch/x86/kernel/cpu/mce/core.c) and HW_ERR
// "[Hardware Error]: " (include/linux/printk.h).
constexpr std::string_view kKernelMcePrefix = "mce: [Hardware Error]: ";

// A record's priority is facility << 3 | level. Facility 0 (LOG_KERN) is the
// kernel's alone: a write to /dev/kmsg without a facility gets LOG_USER, and
// one that asks for 0 keeps LOG_USER (devkmsg_write(), kernel/printk/printk.c).
bool kernel_facility(uint64_t pri) {
  return (pri >> 3) == 0;
}

// Whether one line of a pstore dump, "<pri>[ seconds] text" as
// kmsg_dump_get_buffer() writes it with syslog prefixes, is a kernel-facility
// record that the machine-check code printed. A record that held a newline
// (a user-chosen name inside a kernel message) continues on a line of its own
// without the "<pri>": not the kernel's.
bool kernel_mce_pstore_line(std::string_view line) {
  if (line.size() < 3 || line.front() != '<')
    return false;
  size_t close = line.find('>');
  if (close == std::string_view::npos || close == 1 || close > 4)
    return false;
  auto pri = parse_u64(line.substr(1, close - 1), "the priority");
  if (!pri.ok() || !kernel_facility(*pri))
    return false;
  std::string_view text = line.substr(close + 1);
  if (!text.empty() && text.front() == '[') {  // printk.time
    size_t end = text.find("] ");
    if (end == std::string_view::npos)
      return false;
    text.remove_prefix(end + 2);
  }
  return starts_with(text, kKernelMcePrefix);
}

// The lines of a pstore dump the machine-check code wrote, the others blank
// (so that line numbers stay the file's), and each line as read.
LogText pstore_text(std::string_view bytes, size_t& foreign) {
  LogText log;
  for (std::string_view line : split(bytes, '\n')) {
    bool ours = kernel_mce_pstore_line(line);
    if (!ours && line.find("[Hardware Error]") != std::string_view::npos)
      foreign++;
    log.text += ours ? line : std::string_view();
    log.text += '\n';
    log.seqs.emplace_back();
    log.raws.emplace_back(ours ? line : std::string_view());
  }
  return log;
}

// The kernel escapes a record's unprintable bytes (and '\') as \xNN.
std::string unescape_kmsg(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' && hex_digit(s[i + 2]) >= 0 &&
        hex_digit(s[i + 3]) >= 0) {
      char c = char(hex_digit(s[i + 2]) * 16 + hex_digit(s[i + 3]));
      out += c == '\n' ? ' ' : c;  // one record stays one line
      i += 3;
      continue;
    }
    out += s[i];
  }
  return out;
}

// Whether `text` is what __print_mce() (arch/x86/kernel/cpu/mce/core.c)
// continues its "TSC" line with, pr_cont-ed: "ADDR <hex> ", "MISC <hex> ",
// "SYND <hex> ", "IPID <hex> ", in pairs and nothing else.
bool register_fragment(std::string_view text) {
  size_t words = 0;
  bool name_next = true;
  while (!text.empty()) {
    size_t start = text.find_first_not_of(" \t");
    if (start == std::string_view::npos)
      break;
    text.remove_prefix(start);
    size_t end = std::min(text.find_first_of(" \t"), text.size());
    std::string_view word = text.substr(0, end);
    text.remove_prefix(end);
    if (name_next) {
      if (word != "ADDR" && word != "MISC" && word != "SYND" && word != "IPID")
        return false;
    } else if (word.find_first_not_of("0123456789abcdefABCDEF") != std::string_view::npos) {
      return false;
    }
    name_next = !name_next;
    words++;
  }
  return words > 0 && name_next;
}

// /dev/kmsg's records, one text line each:
//   "pri,seq,ts_us,flags[,caller,...];text" then " KEY=value" lines.
// Only kernel-facility records the machine-check code printed are kept
// (kKernelMcePrefix); `foreign` counts the others that mention a hardware
// error (a spoof, or another driver's decoding).
//
// A fragment ('c') joins the record before it when that one was kept. The
// registers __print_mce() adds to its "TSC" line also join it when other
// CPUs' records came in between (seen under QEMU with Debian's 6.1: the
// next boot's relog of kept banks, "TSC 0 ", two other records, then
// "4,365,...,c;ADDR 1234000 MISC 86 "): a kernel-facility fragment of
// register names and hex values only, stamped within a second of that
// line, which has not had its registers yet. Without them the relog would
// lose ADDR and MISC, and with them its key.
LogText kmsg_text(std::string_view bytes, std::vector<std::string>& notes, size_t& foreign) {
  LogText log;
  size_t malformed = 0;
  bool last_kept = false;
  // Whether the last kept record is a "TSC" line still waiting for its
  // registers, and its timestamp (us).
  bool tsc_waiting = false;
  uint64_t tsc_line_us = 0;
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view line = bytes.substr(0, nl);
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
    if (line.empty() || line.front() == ' ')
      continue;  // a continuation (dictionary) line
    size_t semi = line.find(';');
    if (semi == std::string_view::npos) {
      malformed++;
      continue;
    }
    std::string_view prefix = line.substr(0, semi);
    std::string text = unescape_kmsg(line.substr(semi + 1));
    // prefix fields: pri, seq, ts_us, flags, then optional ones.
    std::vector<std::string_view> parts = split(prefix, ',');
    if (parts.size() < 4) {
      malformed++;
      continue;
    }
    std::optional<uint64_t> seq;
    if (auto v = parse_u64(parts[1], "seq"); v.ok())
      seq = *v;
    auto pri = parse_u64(parts[0], "pri");
    auto ts_us = parse_u64(parts[2], "ts");
    // 'c': a fragment the kernel could not merge into the record before it.
    if (parts[3] == "c") {
      bool registers = !last_kept && tsc_waiting && pri.ok() && kernel_facility(*pri) &&
                       ts_us.ok() && *ts_us + 1000000 >= tsc_line_us &&
                       *ts_us <= tsc_line_us + 1000000 && register_fragment(text);
      if ((last_kept || registers) && !log.seqs.empty()) {
        log.text.pop_back();  // the '\n'
        log.text += text;
        log.text += '\n';
        log.raws.back() += '\n';
        log.raws.back() += line;
        if (register_fragment(text))
          tsc_waiting = false;
      }
      continue;
    }
    log.records++;
    last_kept = pri.ok() && kernel_facility(*pri) && starts_with(text, kKernelMcePrefix);
    if (!last_kept) {
      if (text.find("[Hardware Error]") != std::string::npos)
        foreign++;
      continue;
    }
    tsc_waiting =
        ts_us.ok() && starts_with(std::string_view(text).substr(kKernelMcePrefix.size()), "TSC ");
    tsc_line_us = ts_us.ok() ? *ts_us : 0;
    log.text += text;
    log.text += '\n';
    log.seqs.push_back(seq);
    log.raws.emplace_back(line);
  }
  if (malformed)
    notes.push_back("kmsg: " + std::to_string(malformed) +
                    " line(s) not in /dev/kmsg's \"pri,seq,ts,flags;text\" form were skipped");
  return log;
}

// A parsed entry as the sinks take it.
WatchRecord make_record(const mce::MceLogEntry& entry, Origin origin) {
  WatchRecord r;
  r.origin = origin;
  r.tracepoint = "mce:mce_record";
  const mce::MceRegisters& regs = entry.regs;
  if (regs.cpu)
    r.cpu = int32_t(*regs.cpu);
  if (regs.walltime && *regs.walltime < UINT64_MAX / 1000000000ull)
    r.wall_ns = *regs.walltime * 1000000000ull;
  r.mce = mce::decode_mce_log_entry(entry);
  r.key = mce_key(regs);
  if (!entry.kernel_message.empty())
    r.fields["kernel_message"] = entry.kernel_message;
  return r;
}

// parse_mce_log()'s entries of `log` as records, each beside its header's
// 1-based line and with that line as read ("raw_line"); its problems become
// notes, `where(line)` naming the place ("pstore: dmesg-ramoops-0",
// "kmsg: /dev/kmsg record 512").
std::vector<std::pair<size_t, WatchRecord>> log_records(
    const LogText& log, Origin origin, const std::function<std::string(size_t)>& where,
    std::vector<std::string>& notes) {
  mce::MceLog parsed = mce::parse_mce_log(log.text);
  for (const mce::MceLogProblem& p : parsed.problems)
    notes.push_back(where(p.line) + ": " + p.message);
  std::vector<std::pair<size_t, WatchRecord>> records;
  for (const mce::MceLogEntry& entry : parsed.entries) {
    WatchRecord r = make_record(entry, origin);
    if (entry.line >= 1 && entry.line <= log.raws.size())
      r.fields["raw_line"] = log.raws[entry.line - 1];
    records.emplace_back(entry.line, std::move(r));
  }
  return records;
}

void note_foreign(size_t foreign, const std::string& place, std::vector<std::string>& notes) {
  if (foreign)
    notes.push_back(place + ": " + std::to_string(foreign) +
                    " line(s) mention a hardware error but are not the kernel's machine-check "
                    "code's (not facility 0, or not \"" +
                    std::string(kKernelMcePrefix) + "\" at the start): ignored");
}

// Absent and zero are the same for addr and misc: the log omits a zero one.
bool same_error(const mce::MceRegisters& a, const mce::MceRegisters& b) {
  return a.cpu == b.cpu && a.bank == b.bank && a.status == b.status &&
         a.addr.value_or(0) == b.addr.value_or(0) && a.misc.value_or(0) == b.misc.value_or(0);
}

// How to go without a source that refuses: the command line's option, and
// the service's key (an empty --kmsg or --pstore means "not given").
constexpr const char* kSkipKmsg =
    "skip the kernel log with --no-kmsg (the service: harvest = no in "
    "/etc/perf-persistent-watch.conf)";
constexpr const char* kSkipPstore =
    "skip pstore with --no-pstore (the service: harvest = no in "
    "/etc/perf-persistent-watch.conf)";

// "harvest: <what>: <strerror>; <advice>", a refusal.
Error refusal(int err, const std::string& what, std::string_view advice) {
  return Error(err, "harvest: " + what + ": " + std::strerror(err) + "; " + std::string(advice));
}

bool absent(int err) {
  return err == ENOENT || err == ENOTDIR;
}

// Every byte /dev/kmsg (or a file standing in for it) still holds.
Result<std::string> read_kmsg(const std::string& path, std::vector<std::string>& notes,
                              bool& present) {
  present = false;
  sys::Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    int err = errno;
    if (absent(err)) {
      notes.push_back("kmsg: no " + path + "; this boot's kernel log was not read");
      return std::string();
    }
    return refusal(err, "cannot open the kernel log " + path,
                   std::string(err == EACCES || err == EPERM
                                   ? "run as root or with CAP_SYSLOG (kernel.dmesg_restrict), or "
                                   : "") +
                       kSkipKmsg);
  }
  present = true;
  // The oldest record the kernel still holds (SEEK_DATA would start after
  // the last `dmesg -C`, hiding machine checks from before it). A pipe
  // cannot seek and needs not.
  (void)::lseek(fd.get(), 0, SEEK_SET);
  std::string bytes;
  std::vector<char> buf(kKmsgReadSize);
  size_t overwritten = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      int err = errno;
      if (err == EINTR)
        continue;
      if (err == EAGAIN)
        break;  // read all there is
      if (err == EPIPE) {
        overwritten++;  // the next read gives the oldest record left
        continue;
      }
      return refusal(err, "cannot read the kernel log " + path, kSkipKmsg);
    }
    if (n == 0)
      break;  // a regular file's end
    if (bytes.size() + size_t(n) > kMaxKmsgBytes) {
      notes.push_back("kmsg: " + path + " holds more than 64 MiB; read only its first 64 MiB");
      break;
    }
    bytes.append(buf.data(), size_t(n));
  }
  if (overwritten)
    notes.push_back("kmsg: the kernel overwrote records of " + path +
                    " while they were read; the machine checks among them are lost");
  return bytes;
}

}  // namespace

std::string mce_key(const mce::MceRegisters& regs) {
  std::string key = "mce";
  if (regs.cpu)
    key += ":cpu=" + std::to_string(*regs.cpu);
  if (regs.bank)
    key += ":bank=" + std::to_string(*regs.bank);
  if (regs.status)
    key += ":status=" + hex(*regs.status);
  if (regs.addr && *regs.addr)
    key += ":addr=" + hex(*regs.addr);
  if (regs.misc && *regs.misc)
    key += ":misc=" + hex(*regs.misc);
  if (regs.walltime && *regs.walltime)
    key += ":time=" + std::to_string(*regs.walltime);
  return key;
}

std::vector<WatchRecord> records_from_log(std::string_view text, Origin origin,
                                          const std::string& source,
                                          std::vector<std::string>& notes) {
  std::string place = (origin == Origin::kPstore ? "pstore: " : "kmsg: ") + source;
  LogText log;
  if (origin == Origin::kPstore) {
    size_t foreign = 0;
    log = pstore_text(text, foreign);
    note_foreign(foreign, place, notes);
  } else {
    log.text = std::string(text);
  }
  std::vector<WatchRecord> records;
  for (auto& [line, r] : log_records(
           log, origin, [&](size_t) { return place; }, notes)) {
    if (origin == Origin::kPstore)
      r.fields["pstore_file"] = source;
    records.push_back(std::move(r));
  }
  return records;
}

const WatchRecord* relogged_error(const std::vector<WatchRecord>& records,
                                  const mce::MceRegisters& regs) {
  if (regs.mcgstatus.value_or(0) & mce::bits::kMcip)
    return nullptr;  // the #MC handler's own: a new error
  for (const WatchRecord& r : records)
    if (from_previous_boot(r.origin) && r.mce && same_error(regs, r.mce->regs))
      return &r;
  return nullptr;
}

namespace {

// An mce-erst-* file (mce/erst.h) as a record: origin erst, the registers
// the kernel saved as it panicked, its own grade of the error.
std::optional<WatchRecord> erst_record(const std::string& path, const std::string& shown,
                                       std::vector<std::string>& notes) {
  Result<std::string> bytes = sys::read_input(path, "the ERST record");
  if (!bytes) {
    notes.push_back("pstore: " + bytes.error().message() + "; skipped");
    return std::nullopt;
  }
  auto parsed = mce::parse_erst_mce(
      std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()), path);
  if (!parsed.ok()) {
    notes.push_back("pstore: " + parsed.error().message());
    return std::nullopt;
  }
  WatchRecord r;
  r.origin = Origin::kErst;
  r.tracepoint = "mce:mce_record";
  const mce::MceRegisters& regs = parsed->regs;
  if (regs.cpu)
    r.cpu = int32_t(*regs.cpu);
  if (regs.walltime && *regs.walltime && *regs.walltime < UINT64_MAX / 1000000000ull)
    r.wall_ns = *regs.walltime * 1000000000ull;
  r.mce = mce::decode_mce(regs, mce::CpuVendor::kUnknown, mce::MceOrigin::kKernelLog);
  r.key = mce_key(regs);
  r.fields["pstore_file"] = shown;
  if (parsed->kernel_severity)
    r.fields["kernel_severity"] = std::string(mce::kernel_severity_name(*parsed->kernel_severity));
  else
    r.fields["kernel_severity"] = "unknown (" + std::to_string(parsed->raw_severity) + ")";
  if (parsed->extra_bytes)
    notes.push_back("pstore: " + path + " has " + std::to_string(parsed->extra_bytes) +
                    " bytes past the 6.1 struct mce (a newer kernel's fields): not read");
  notes.push_back("pstore: read " + path + ": 1 machine check (the kernel's record in ERST)");
  return r;
}

std::string path_in(const std::string& dir, const std::string& name) {
  std::string path = dir;
  path += '/';
  path += name;
  return path;
}

// Every dmesg-* and mce-* file of a pstore directory (or of one of
// systemd-pstore's archive directories), mce-* first: a record from ERST
// holds the registers whole, so it is the one kept when the panic text
// gives the same error. `shown` prefixes the file names in the records.
void read_pstore_dir(const std::string& dir, const std::string& shown,
                     const std::vector<std::string>& listed, Harvest& h) {
  std::vector<std::string> dmesg, mce;
  bool has_parts = false;
  for (const std::string& name : listed) {
    if (starts_with(name, "mce-"))
      mce.push_back(name);
    else if (starts_with(name, "dmesg-"))
      dmesg.push_back(name), has_parts = true;
  }
  // systemd-pstore joins the dmesg parts of a record into dmesg.txt: read
  // it where the parts are gone.
  if (!has_parts && std::find(listed.begin(), listed.end(), "dmesg.txt") != listed.end())
    dmesg.push_back("dmesg.txt");
  for (const std::string& name : mce)
    if (auto r = erst_record(path_in(dir, name), shown + name, h.notes))
      h.records.push_back(std::move(*r));
  for (const std::string& name : dmesg) {
    const std::string path = path_in(dir, name);
    if (name.size() > 6 && name.substr(name.size() - 6) == ".enc.z") {
      h.notes.push_back("pstore: " + path +
                        " is compressed and the kernel could not decompress it; skipped "
                        "(read it with the tool of its compressor)");
      continue;
    }
    Result<std::string> text = sys::read_input(path, "the log");
    if (!text) {
      h.notes.push_back("pstore: " + text.error().message() + "; skipped");
      continue;
    }
    std::vector<WatchRecord> found =
        records_from_log(*text, Origin::kPstore, shown + name, h.notes);
    h.notes.push_back("pstore: read " + path + ": " + std::to_string(found.size()) +
                      " machine check(s)");
    for (WatchRecord& r : found)
      h.records.push_back(std::move(r));
  }
}

// systemd-pstore's Storage= (pstore.conf(5): external, the default, keeps
// the files under /var/lib/systemd/pstore; journal and none keep none):
// the last setting of the main file and its drop-ins, in order.
std::string pstore_storage(const std::vector<std::string>& conf_files) {
  std::string storage = "external";
  for (const std::string& path : conf_files) {
    Result<std::string> text = sys::read_input(path, "pstore.conf");
    if (!text)
      continue;
    bool in_section = false;
    for (std::string_view line : split(*text, '\n')) {
      line = trim(line);
      if (line.empty() || line[0] == '#' || line[0] == ';')
        continue;
      if (line[0] == '[') {
        in_section = line == "[PStore]";
        continue;
      }
      if (in_section && starts_with(line, "Storage")) {
        size_t eq = line.find('=');
        if (eq != std::string_view::npos && trim(line.substr(0, eq)) == "Storage")
          storage = std::string(trim(line.substr(eq + 1)));
      }
    }
  }
  return storage;
}

// The archive systemd-pstore made of earlier boots' pstore files: its own
// files and those of its record directories (one level: <id>/dmesg.txt...).
void read_systemd_archive(const HarvestOptions& options, Harvest& h) {
  std::vector<std::string> conf = {options.systemd_pstore_conf};
  if (auto dropins = sys::Tree(options.systemd_pstore_conf + ".d").list(""); dropins.ok())
    for (const std::string& name : *dropins)
      if (name.size() > 5 && name.substr(name.size() - 5) == ".conf")
        conf.push_back(options.systemd_pstore_conf + ".d/" + name);
  std::string storage = pstore_storage(conf);
  if (storage != "external") {
    h.notes.push_back("systemd-pstore: Storage=" + storage + " in " + options.systemd_pstore_conf +
                      ": it keeps no files; a previous boot's records it took from pstore are in "
                      "the journal only (journalctl -t systemd-pstore)");
    return;
  }
  sys::Tree archive(options.systemd_pstore);
  auto top = archive.list("");
  if (!top.ok()) {
    h.notes.push_back("systemd-pstore: no archive at " + options.systemd_pstore +
                      " (systemd-pstore never moved a record there)");
    return;
  }
  read_pstore_dir(options.systemd_pstore, "systemd-pstore/", *top, h);
  for (const std::string& name : *top) {
    if (!archive.is_directory(name))
      continue;
    auto inner = archive.list(name);
    if (inner.ok())
      read_pstore_dir(path_in(options.systemd_pstore, name), "systemd-pstore/" + name + '/', *inner,
                      h);
  }
}

// Which of several records of one error is kept: the one whose registers
// are the most whole. ERST's struct mce and a previous boot's mce_record
// hold every register; the kernel log's text (pstore's, then this boot's)
// only those it prints (no MCG_CAP, IPID, SYND, PPIN).
int completeness_rank(Origin origin) {
  switch (origin) {
    case Origin::kErst:
      return 0;
    case Origin::kPreviousBoot:
      return 1;
    case Origin::kPstore:
      return 2;
    case Origin::kKmsg:
      return 3;
    case Origin::kLive:
      return 4;
  }
  return 5;
}

// Records that share a key are one error seen in several places (ERST, a
// previous boot's trace buffer, the panic text in pstore or in
// systemd-pstore's archive, the next boot's relog): one is kept, at the
// place of the first, the most whole of them (completeness_rank), with
// every origin that saw it in its fields' "origins", its own first, then
// the others in the order seen.
void merge_by_key(Harvest& h) {
  std::vector<WatchRecord> kept;
  std::vector<std::vector<std::string>> seen;
  std::map<std::string, size_t> at;
  for (WatchRecord& r : h.records) {
    auto [it, fresh] = at.emplace(r.key, kept.size());
    std::string origin(origin_name(r.origin));
    if (fresh) {
      seen.push_back({origin});
      kept.push_back(std::move(r));
      continue;
    }
    std::vector<std::string>& origins = seen[it->second];
    if (std::find(origins.begin(), origins.end(), origin) == origins.end())
      origins.push_back(origin);
    if (completeness_rank(r.origin) < completeness_rank(kept[it->second].origin))
      kept[it->second] = std::move(r);
  }
  for (size_t i = 0; i < kept.size(); i++) {
    std::string own(origin_name(kept[i].origin));
    nlohmann::ordered_json origins = nlohmann::ordered_json::array({own});
    for (const std::string& o : seen[i])
      if (o != own)
        origins.push_back(o);
    kept[i].fields["origins"] = std::move(origins);
  }
  h.records = std::move(kept);
}

}  // namespace

Result<Harvest> harvest(const HarvestOptions& options) {
  Harvest h;

  // A previous boot's logs, kept by pstore.
  if (!options.pstore.empty()) {
    auto listed = sys::Tree(options.pstore).list("");
    if (!listed.ok()) {
      int err = listed.error().code();
      if (!absent(err))
        return refusal(err, "cannot list pstore's directory " + options.pstore,
                       std::string("run as root, or ") + kSkipPstore);
      h.notes.push_back("pstore: no " + options.pstore +
                        "; no previous boot's log was read (mount -t pstore pstore " +
                        options.pstore + ")");
    } else {
      bool any = std::any_of(listed->begin(), listed->end(), [](const std::string& n) {
        return starts_with(n, "dmesg-") || starts_with(n, "mce-");
      });
      if (!any)
        h.notes.push_back("pstore: no dmesg-* or mce-* file in " + options.pstore +
                          " (no previous boot's log kept, systemd-pstore moved them, or pstore "
                          "not mounted there)");
      read_pstore_dir(options.pstore, "", *listed, h);
    }
  }
  if (!options.systemd_pstore.empty())
    read_systemd_archive(options, h);
  // A previous boot's trace buffer: after pstore's and ERST's records (whose
  // registers the kernel saved as it panicked), before this boot's relog.
  if (!options.kept_dir.empty())
    for (WatchRecord& r : previous_boot_records(options.kept_dir, h.notes))
      h.records.push_back(std::move(r));

  // This boot's log.
  if (!options.kmsg.empty()) {
    bool present = false;
    PP_ASSIGN_OR_RETURN(std::string bytes, read_kmsg(options.kmsg, h.notes, present));
    if (present) {
      size_t foreign = 0;
      LogText log = kmsg_text(bytes, h.notes, foreign);
      note_foreign(foreign, "kmsg: " + options.kmsg, h.notes);
      auto seq_of = [&](size_t line) -> std::optional<uint64_t> {
        return line >= 1 && line <= log.seqs.size() ? log.seqs[line - 1] : std::nullopt;
      };
      auto where = [&](size_t line) {
        std::optional<uint64_t> seq = seq_of(line);
        return "kmsg: " + options.kmsg + (seq ? " record " + std::to_string(*seq) : std::string());
      };
      size_t count = 0;
      for (auto& [line, r] : log_records(log, Origin::kKmsg, where, h.notes)) {
        if (std::optional<uint64_t> seq = seq_of(line))
          r.fields["kmsg_seq"] = *seq;
        // Banks that survived the reset, logged again by this boot's kernel.
        const mce::MceRegisters& regs = r.mce->regs;
        if (const WatchRecord* kept = relogged_error(h.records, regs)) {
          h.notes.push_back(where(line) + ": CPU " + std::to_string(regs.cpu.value_or(0)) +
                            " bank " + std::to_string(regs.bank.value_or(0)) + " status 0x" +
                            hex(regs.status.value_or(0)) +
                            " is the machine check a previous boot left (" +
                            std::string(origin_name(kept->origin)) +
                            "), logged again from the banks that survived the reset; stored "
                            "once, as " +
                            kept->key);
          r.key = kept->key;
        }
        h.records.push_back(std::move(r));
        count++;
      }
      h.notes.push_back("kmsg: read " + options.kmsg + ": " + std::to_string(log.records) +
                        " record(s), " + std::to_string(count) + " machine check(s)");
    }
  }
  merge_by_key(h);
  return h;
}

}  // namespace pp::watch

#include "mce/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "base/wall_time.h"
#include "mce/severity.h"

namespace pp::mce {
namespace {

constexpr std::string_view kMarker = "[Hardware Error]: ";

// A cursor over one line's text after the marker: literals, numbers, words.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : s_(text) {}

  bool literal(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit)
      return false;
    s_.remove_prefix(lit.size());
    return true;
  }
  void skip_spaces() {
    while (!s_.empty() && (s_.front() == ' ' || s_.front() == '\t' || s_.front() == '\r'))
      s_.remove_prefix(1);
  }
  bool at_end() {
    skip_spaces();
    return s_.empty();
  }
  // The next run of non-space characters.
  std::string_view word() {
    skip_spaces();
    size_t n = 0;
    while (n < s_.size() && s_[n] != ' ' && s_[n] != '\t' && s_[n] != '\r')
      n++;
    std::string_view w = s_.substr(0, n);
    s_.remove_prefix(n);
    return w;
  }
  std::optional<uint64_t> decimal(uint64_t max) {
    size_t n = 0;
    uint64_t v = 0;
    while (n < s_.size() && s_[n] >= '0' && s_[n] <= '9') {
      uint64_t digit = uint64_t(s_[n] - '0');
      if (v > (max - digit) / 10)
        return std::nullopt;
      v = v * 10 + digit;
      n++;
    }
    if (n == 0)
      return std::nullopt;
    s_.remove_prefix(n);
    return v;
  }
  std::optional<uint64_t> hex(uint64_t max) {
    size_t n = 0;
    uint64_t v = 0;
    while (n < s_.size() && hex_digit(s_[n]) >= 0) {
      if (v > (max >> 4))
        return std::nullopt;
      v = (v << 4) | uint64_t(hex_digit(s_[n]));
      n++;
    }
    if (n == 0 || v > max)
      return std::nullopt;
    s_.remove_prefix(n);
    return v;
  }
  std::string_view rest() const { return s_; }

 private:
  std::string_view s_;
};

std::optional<uint64_t> hex_word(std::string_view w, uint64_t max = UINT64_MAX) {
  Cursor c(w);
  auto v = c.hex(max);
  if (!v || !c.rest().empty())
    return std::nullopt;
  return v;
}
std::optional<uint64_t> decimal_word(std::string_view w, uint64_t max) {
  Cursor c(w);
  auto v = c.decimal(max);
  if (!v || !c.rest().empty())
    return std::nullopt;
  return v;
}

std::string quoted(std::string_view text) {
  constexpr size_t kMax = 80;
  std::string out = "'" + std::string(text.substr(0, kMax)) + (text.size() > kMax ? "...'" : "'");
  return out;
}

// One physical line as a paste gives it, reduced to what the kernel printed.
enum class LineKind {
  kOther,       // no marker: an old kernel's bare line, or nothing of ours
  kHardware,    // "[Hardware Error]: " (core and AMD decoder)
  kEdacCore,    // "EDAC MC<n>: " (the EDAC core's error lines)
  kEdacDriver,  // "EDAC <driver> MC<n>: " (sb_edac's copy of the registers)
};

struct Line {
  LineKind kind = LineKind::kOther;
  std::string_view text;  // after the marker (kEdacCore: from "EDAC ")
};

// CR, leading quote marks and blanks of a mail ("> > ").
std::string_view unquote(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  for (;;) {
    size_t n = s.find_first_not_of(" \t");
    s.remove_prefix(n == std::string_view::npos ? s.size() : n);
    if (s.empty() || s.front() != '>')
      return s;
    s.remove_prefix(1);
  }
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

Line classify(std::string_view s) {
  if (size_t at = s.find(kMarker); at != std::string_view::npos)
    return {LineKind::kHardware, s.substr(at + kMarker.size())};
  if (size_t at = s.find("EDAC "); at != std::string_view::npos) {
    std::string_view rest = s.substr(at + 5);
    if (rest.size() > 2 && rest.substr(0, 2) == "MC" && is_digit(rest[2]))
      return {LineKind::kEdacCore, s.substr(at)};
    size_t sp = rest.find(' ');
    if (sp != std::string_view::npos && sp < 24) {
      std::string_view mc = rest.substr(sp + 1);
      size_t colon = mc.find(": ");
      if (mc.size() > 2 && mc.substr(0, 2) == "MC" && is_digit(mc[2]) &&
          colon != std::string_view::npos)
        return {LineKind::kEdacDriver, mc.substr(colon + 2)};
    }
  }
  // A bare line: after a syslog or journald "kernel: ", a dmesg "[ 1.2] ",
  // "mce: " or "sbridge: ".
  if (size_t at = s.find("kernel: "); at != std::string_view::npos)
    s.remove_prefix(at + 8);
  for (;;) {
    s = s.substr(std::min(s.size(), s.find_first_not_of(' ')));
    if (!s.empty() && s.front() == '[') {
      size_t close = s.find(']');
      if (close == std::string_view::npos)
        break;
      s.remove_prefix(close + 1);
    } else if (s.substr(0, 5) == "mce: ") {
      s.remove_prefix(5);
    } else if (s.substr(0, 9) == "sbridge: ") {
      s.remove_prefix(9);
    } else {
      break;
    }
  }
  return {LineKind::kOther, s};
}

// A line that can only be the wrapped rest of the line before it: text with
// no marker, no log prefix and no timestamp of its own.
bool continuation(std::string_view s) {
  if (s.empty() || s.front() == '[')
    return false;
  for (std::string_view m : {"kernel:", "[Hardware", "EDAC ", "mce:"})
    if (s.find(m) != std::string_view::npos)
      return false;
  return true;
}

// "CPU 3: Machine Check" at the start of a bare line.
bool bare_header(std::string_view s) {
  Cursor c(s);
  return c.literal("CPU ") && c.decimal(UINT32_MAX) && c.literal(": Machine Check");
}

// The kernel's X86_VENDOR_* numbers mce_record and PROCESSOR carry.
constexpr uint8_t kX86VendorAmd = 2;
constexpr uint8_t kX86VendorHygon = 9;

// Family, model and stepping (as AMD's decoder prints them, hex) back into
// the CPUID leaf 1 EAX signature: family above 0xf is 0xf plus the extended
// family in bits 27:20, the model's high nibble is the extended model in
// bits 19:16 (AMD APM vol. 3, CPUID Fn0000_0001_EAX).
uint32_t cpuid_signature(uint32_t family, uint32_t model, uint32_t stepping) {
  uint32_t base = family >= 0xf ? 0xf : family;
  uint32_t ext = family >= 0xf ? family - 0xf : 0;
  return ((ext & 0xff) << 20) | (((model >> 4) & 0xf) << 16) | (base << 8) | ((model & 0xf) << 4) |
         (stepping & 0xf);
}

class LogParser {
 public:
  MceLog run(std::string_view text) {
    std::vector<std::string_view> lines;
    while (!text.empty()) {
      size_t nl = text.find('\n');
      lines.push_back(text.substr(0, nl));
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    }
    for (size_t i = 0; i < lines.size(); i++) {
      std::string_view raw = unquote(lines[i]);
      std::string joined;
      // "mce: [Hardware" + "Error]: CPU 0: ...": the marker itself wrapped.
      if (raw.find(kMarker) == std::string_view::npos && i + 1 < lines.size() &&
          (raw.ends_with("[Hardware") || raw.ends_with("[Hardware Error]:"))) {
        std::string_view next = unquote(lines[i + 1]);
        if (next.starts_with("Error]:") || continuation(next)) {
          joined = std::string(raw) + " " + std::string(next);
          raw = joined;
          i++;
        }
      }
      size_t number = i + 1 - (joined.empty() ? 0 : 1);
      Line line = classify(raw);
      if (line.kind != LineKind::kOther || bare_header(line.text))
        log_.hardware_lines++;
      std::optional<std::string> bad = parse_line(number, line);
      // A line that did not parse may have been wrapped: join the next
      // line(s) while they can only be its rest, and try again.
      std::string longer(raw);
      for (size_t more = 1; bad && more <= 3 && i + more < lines.size(); more++) {
        std::string_view next = unquote(lines[i + more]);
        if (!continuation(next))
          break;
        longer += " ";
        longer += next;
        Line again = classify(longer);
        if (!parse_line(number, again)) {
          bad.reset();
          i += more;
        }
      }
      if (bad)
        problem(number, std::move(*bad));
    }
    finish();
    return std::move(log_);
  }

 private:
  void problem(size_t line, std::string what) {
    log_.problems.push_back({line, "line " + std::to_string(line) + ": " + std::move(what)});
  }

  // The entry being read goes to the log, or into an earlier entry that is
  // the same error (AMD's decoder and the core both print it).
  void finish() {
    if (!has_current_)
      return;
    has_current_ = false;
    Origin origin = amd_current_ ? kAmdDecoder : kCore;
    amd_current_ = false;
    MceLogEntry e = std::move(current_);
    current_ = MceLogEntry{};
    size_t look = std::min<size_t>(log_.entries.size(), 4);
    for (size_t k = log_.entries.size(); k > log_.entries.size() - look; k--) {
      MceLogEntry& old = log_.entries[k - 1];
      if (!old.has_mce || old.regs.cpu != e.regs.cpu || old.regs.bank != e.regs.bank ||
          old.regs.status != e.regs.status || origin_[k - 1] == origin || origin_[k - 1] == kBoth)
        continue;
      origin_[k - 1] = kBoth;
      old.regs = fill_absent(old.regs, e.regs);
      for (std::string& words : e.kernel_decode)
        old.kernel_decode.push_back(std::move(words));
      if (old.kernel_message.empty())
        old.kernel_message = std::move(e.kernel_message);
      old.found_at_boot = old.found_at_boot || e.found_at_boot;
      return;
    }
    log_.entries.push_back(std::move(e));
    origin_.push_back(origin);
  }

  void start(size_t line) {
    finish();
    has_current_ = true;
    current_.line = line;
  }

  // The error a continuation line adds to, or a problem when there is none.
  MceRegisters* continued(std::string_view text, std::optional<std::string>& bad) {
    if (has_current_)
      return &current_.regs;
    if (!skipping_)
      bad = quoted(text) +
            " continues a machine check, but no 'CPU N: Machine Check' line came before it; is "
            "the log cut?";
    return nullptr;
  }

  // Parses one line; a message when it is malformed (the caller may join
  // the next line and try again before reporting it).
  std::optional<std::string> parse_line(size_t line, const Line& l) {
    std::string_view text = l.text;
    switch (l.kind) {
      case LineKind::kEdacCore:
        return edac_line(line, text);
      case LineKind::kOther:
        // A bare line counts only as a header, or right after a bare header.
        if (bare_header(text)) {
          bare_ = true;
          return header(line, text);
        }
        if (bankless_ && text.starts_with("Bank ") && line <= last_bare_ + 8)
          return bank_line(line, text);
        if (!has_current_ || !bare_ || line > last_bare_ + 3)
          return std::nullopt;
        if (!(text.starts_with("TSC ") || text.starts_with("ADDR ") || text.starts_with("MISC ") ||
              text.starts_with("PROCESSOR ") || text.starts_with("RIP")))
          return std::nullopt;
        last_bare_ = line;
        break;
      case LineKind::kEdacDriver:
        if (bare_header(text)) {
          bare_ = false;
          return header(line, text);
        }
        if (!has_current_)
          return std::nullopt;  // "HANDLING MCE MEMORY ERROR" and the like
        break;
      case LineKind::kHardware:
        if (text.starts_with("CPU ") && text.find(": Machine Check") != std::string_view::npos) {
          bare_ = false;
          return header(line, text);
        }
        if (auto amd = amd_line(line, text))
          return amd->empty() ? std::nullopt : amd;
        break;
    }
    if (text.starts_with("RIP"))
      return rip(text);
    if (text.starts_with("TSC ") || text.starts_with("ADDR ") || text.starts_with("MISC "))
      return tsc(text);
    if (text.starts_with("PROCESSOR "))
      return processor(text);
    Cursor m(text);
    if (m.literal("Machine check: ")) {
      std::string message(trim(m.rest()));
      if (has_current_)
        current_.kernel_message = std::move(message);
      else if (!log_.entries.empty() && log_.entries.back().kernel_message.empty())
        log_.entries.back().kernel_message = std::move(message);
    }
    // Other [Hardware Error] lines (APEI's, "Run the above through ...") are not ours.
    return std::nullopt;
  }

  // "CPU 0: Machine Check Exception: 5 Bank 1: be00000000000150"
  std::optional<std::string> header(size_t line, std::string_view text) {
    finish();
    skipping_ = true;  // until this header parses
    Cursor c(text);
    c.literal("CPU ");
    auto cpu = c.decimal(UINT32_MAX);
    bool ok = cpu && c.literal(": Machine Check");
    bool exception = ok && (c.literal(" Exception") || c.literal(" Event"));
    ok = ok && c.literal(": ");
    auto mcg = ok ? c.hex(UINT64_MAX) : std::nullopt;
    ok = mcg && c.literal(" Bank ");
    auto bank = ok ? c.decimal(UINT32_MAX) : std::nullopt;
    ok = bank && c.literal(": ");
    auto status = ok ? c.hex(UINT64_MAX) : std::nullopt;
    bankless_ = false;
    if (mcg && !bank && c.at_end()) {
      // Linux 2.4/2.6 i386: "CPU 0: Machine Check Exception: 0000000000000004",
      // then one "Bank 4: b604a00100000813 at 000000007e4f2f68" line per bank.
      skipping_ = false;
      bankless_ = true;
      bankless_cpu_ = uint32_t(*cpu);
      bankless_mcg_ = *mcg;
      last_bare_ = line;
      return std::nullopt;
    }
    if (!status || !c.at_end())
      return "malformed machine-check line " + quoted(text) +
             "; expected 'CPU <n>: Machine Check[ Exception]: <mcgstatus hex> Bank <n>: <status "
             "hex>' (this error is skipped)";
    skipping_ = false;
    start(line);
    last_bare_ = line;
    current_.regs.cpu = uint32_t(*cpu);
    current_.regs.mcgstatus = *mcg;
    current_.regs.bank = uint32_t(*bank);
    current_.regs.status = *status;
    // Polled (no "Exception"), MCG_STATUS.MCIP (bit 2) clear, yet UC (61)
    // and PCC (57): SDM vol. 3B, IA32_MCi_STATUS: no CPU continues after
    // such an error, so the kernel found it in the bank at boot.
    constexpr uint64_t kUc = 1ull << 61, kPcc = 1ull << 57, kMcip = 1ull << 2;
    current_.found_at_boot =
        !exception && (*mcg & kMcip) == 0 && (*status & kUc) && (*status & kPcc);
    return std::nullopt;
  }

  // "Bank 4: b604a00100000813 at 000000007e4f2f68" after a bank-less header.
  std::optional<std::string> bank_line(size_t line, std::string_view text) {
    Cursor c(text);
    c.literal("Bank ");
    auto bank = c.decimal(UINT32_MAX);
    bool ok = bank && c.literal(": ");
    auto status = ok ? c.hex(UINT64_MAX) : std::nullopt;
    std::optional<uint64_t> addr;
    if (status && c.literal(" at "))
      addr = c.hex(UINT64_MAX);
    if (!status || !c.at_end())
      return "malformed bank line " + quoted(text) +
             "; expected 'Bank <n>: <status hex>[ at <address hex>]'";
    start(line);
    last_bare_ = line;
    current_.regs.cpu = bankless_cpu_;
    current_.regs.mcgstatus = bankless_mcg_;
    current_.regs.bank = uint32_t(*bank);
    current_.regs.status = *status;
    if (addr)
      current_.regs.addr = addr;
    return std::nullopt;
  }

  // AMD's decoder: "CPU:0 (17:71:0) MC22_STATUS[...]: 0x...", its class
  // line before, its address, IPID and syndrome lines and its words after.
  // nullopt: not an AMD line; "" : taken; else a problem.
  std::optional<std::string> amd_line(size_t line, std::string_view text) {
    Cursor c(text);
    bool cpu_form = c.literal("CPU:");
    std::optional<uint64_t> cpu, family, model, stepping;
    if (cpu_form) {
      cpu = c.decimal(UINT32_MAX);
      bool ok = cpu && c.literal(" (");
      family = ok ? c.hex(0xff) : std::nullopt;
      ok = family && c.literal(":");
      model = ok ? c.hex(0xff) : std::nullopt;
      ok = model && c.literal(":");
      stepping = ok ? c.hex(0xf) : std::nullopt;
      ok = stepping && c.literal(") ");
      if (!ok)
        return "malformed AMD machine-check line " + quoted(text) +
               "; expected 'CPU:<n> (<family>:<model>:<stepping>) MC<bank>_STATUS[...]: "
               "0x<status>'";
    }
    if (cpu_form || (c.literal("MC") && text.find("_STATUS[") != std::string_view::npos)) {
      if (cpu_form && !c.literal("MC"))
        return "malformed AMD machine-check line " + quoted(text) + "; expected MC<bank>_STATUS";
      auto bank = c.decimal(UINT32_MAX);
      bool ok = bank && c.literal("_STATUS[");
      std::string_view rest = c.rest();
      size_t close = rest.find("]: ");
      std::optional<uint64_t> status;
      if (ok && close != std::string_view::npos) {
        Cursor v(rest.substr(close + 3));
        v.literal("0x");
        status = v.hex(UINT64_MAX);
        if (status && !v.at_end())
          status.reset();
      }
      if (!status)
        return "malformed AMD machine-check line " + quoted(text) +
               "; expected 'CPU:<n> (<family>:<model>:<stepping>) MC<bank>_STATUS[...]: "
               "0x<status>'";
      skipping_ = false;
      start(line);
      amd_current_ = true;
      bare_ = false;
      if (cpu)
        current_.regs.cpu = uint32_t(*cpu);
      current_.regs.bank = uint32_t(*bank);
      current_.regs.status = *status;
      if (family) {
        current_.regs.cpuvendor = *family == 0x18 ? kX86VendorHygon : kX86VendorAmd;
        current_.regs.cpuid =
            cpuid_signature(uint32_t(*family), uint32_t(*model), uint32_t(*stepping));
      }
      if (!amd_class_.empty())
        current_.kernel_decode.push_back(std::move(amd_class_));
      amd_class_.clear();
      return "";
    }
    // The class line AMD's decoder prints before the CPU line (Linux 3.x:
    // after "Error Status: ").
    if (text.starts_with("Error Status: "))
      text.remove_prefix(14);
    for (std::string_view cls :
         {"Corrected error, no action required.", "Deferred error, no action required.",
          "Uncorrected, software restartable error.", "Uncorrected, software containable error.",
          "System Fatal error."}) {
      if (text.starts_with(cls)) {
        finish();
        amd_class_ = std::string(cls);
        return "";
      }
    }
    if (!amd_current_)
      return std::nullopt;
    // "Error Addr: 0x...", "MC4 Error Address: 0x...", "IPID: 0x..., Syndrome: 0x...".
    bool registers = false;
    for (std::string_view part : split(text, ',')) {
      part = trim(part);
      size_t colon = part.find(": 0x");
      if (colon == std::string_view::npos)
        continue;
      std::string_view key = part.substr(0, colon);
      auto value = hex_word(part.substr(colon + 4));
      if (!value)
        continue;
      if (key.ends_with("Error Addr") || key.ends_with("Error Address") ||
          (key.starts_with("MC") && key.ends_with("_ADDR"))) {
        current_.regs.addr = value;
        registers = true;
      } else if (key == "IPID") {
        current_.regs.ipid = value;
        registers = true;
      } else if (key == "Syndrome") {
        current_.regs.synd = value;
        registers = true;
      } else if (key == "PPIN") {
        current_.regs.ppin = value;
        registers = true;
      }
    }
    if (!registers && !text.starts_with("Machine check: ") && !text.starts_with("Run the above"))
      current_.kernel_decode.emplace_back(trim(text));
    if (text.starts_with("Machine check: "))
      return std::nullopt;
    return "";
  }

  // "EDAC MC0: 1 CE memory read error on ..." alone, or with the machine
  // check at the same page printed just before it.
  std::optional<std::string> edac_line(size_t line, std::string_view text) {
    std::optional<EdacError> e = parse_edac_log_line(text);
    if (!e)
      return std::nullopt;  // a message of the EDAC core that is no error
    if (text.find(" (") != std::string_view::npos && text.find(')') == std::string_view::npos)
      return "EDAC line " + quoted(text) +
             " ends before its ')' (location, page and grain); is it cut? (skipped)";
    finish();
    if (e->location.page) {
      size_t look = std::min<size_t>(log_.entries.size(), 4);
      for (size_t k = log_.entries.size(); k > log_.entries.size() - look; k--) {
        MceLogEntry& old = log_.entries[k - 1];
        if (old.has_mce && !old.edac && old.regs.addr &&
            (*old.regs.addr >> 12) == *e->location.page) {
          old.edac = std::move(*e);
          return std::nullopt;
        }
      }
    }
    MceLogEntry entry;
    entry.has_mce = false;
    entry.line = line;
    entry.edac = std::move(*e);
    log_.entries.push_back(std::move(entry));
    origin_.push_back(kEdac);
    return std::nullopt;
  }

  // "RIP !INEXACT! 10:<ffffffff9c8592eb> {native_safe_halt+0xb/0x10}"
  std::optional<std::string> rip(std::string_view text) {
    std::optional<std::string> bad;
    MceRegisters* r = continued(text, bad);
    if (!r)
      return bad;
    Cursor c(text);
    c.literal("RIP");
    c.literal(" !INEXACT!");
    bool ok = c.literal(" ");
    auto cs = ok ? c.hex(0xFF) : std::nullopt;
    ok = cs && c.literal(":<");
    auto ip = ok ? c.hex(UINT64_MAX) : std::nullopt;
    if (!ip || !c.literal(">"))
      return "malformed RIP line " + quoted(text) +
             "; expected 'RIP[ !INEXACT!] <cs hex>:<<ip hex>>'";
    r->cs = uint8_t(*cs);
    r->ip = *ip;
    return std::nullopt;
  }

  // "TSC 5663dac3e ADDR 1234000 MISC 86" (then PPIN, SYND, IPID when set;
  // Linux 3.x: then "PROCESSOR ..." on the same line; sb_edac: "ADDR ..." alone)
  std::optional<std::string> tsc(std::string_view text) {
    std::optional<std::string> bad;
    MceRegisters* r = continued(text, bad);
    if (!r)
      return bad;
    Cursor c(text);
    MceRegisters got;
    std::string_view processor_part;
    while (!c.at_end()) {
      std::string_view before = c.rest();
      std::string_view key = c.word();
      if (key == "PROCESSOR") {
        processor_part = before;
        break;
      }
      std::string_view value = c.word();
      auto v = hex_word(value);
      if (!v)
        return "malformed TSC line " + quoted(text) + ": " + std::string(key) +
               " needs a hex value, got " + quoted(value);
      if (key == "TSC")
        got.tsc = v;
      else if (key == "ADDR")
        got.addr = v;
      else if (key == "MISC")
        got.misc = v;
      else if (key == "PPIN")
        got.ppin = v;
      else if (key == "SYND")
        got.synd = v;
      else if (key == "IPID")
        got.ipid = v;
      // Keys a newer kernel may add are skipped with their value.
    }
    if (!processor_part.empty())
      if (auto p = processor(processor_part))
        return p;
    for (auto [to, from] : {std::pair{&r->tsc, &got.tsc},
                            {&r->addr, &got.addr},
                            {&r->misc, &got.misc},
                            {&r->ppin, &got.ppin},
                            {&r->synd, &got.synd},
                            {&r->ipid, &got.ipid}})
      if (*from)
        *to = *from;
    return std::nullopt;
  }

  // "PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 microcode 1"
  std::optional<std::string> processor(std::string_view text) {
    std::optional<std::string> bad;
    MceRegisters* r = continued(text, bad);
    if (!r)
      return bad;
    Cursor c(text);
    c.literal("PROCESSOR ");
    auto vendor = c.decimal(0xFF);
    bool ok = vendor && c.literal(":");
    auto cpuid = ok ? c.hex(UINT32_MAX) : std::nullopt;
    if (!cpuid)
      return "malformed PROCESSOR line " + quoted(text) +
             "; expected 'PROCESSOR <vendor>:<cpuid hex> TIME <seconds> SOCKET <n> APIC <hex> "
             "microcode <hex>'";
    MceRegisters got;
    got.cpuvendor = uint8_t(*vendor);
    got.cpuid = uint32_t(*cpuid);
    while (!c.at_end()) {
      std::string_view key = c.word();
      std::string_view value = c.word();
      std::optional<uint64_t> v;
      if (key == "TIME")
        v = got.walltime = decimal_word(value, UINT64_MAX);
      else if (key == "SOCKET")
        v = decimal_word(value, UINT32_MAX);
      else if (key == "APIC" || key == "microcode")
        v = hex_word(value, UINT32_MAX);
      else
        continue;  // a key a newer kernel may add
      if (v && key == "SOCKET")
        got.socketid = uint32_t(*v);
      else if (v && key == "APIC")
        got.apicid = uint32_t(*v);
      else if (v && key == "microcode")
        got.microcode = uint32_t(*v);
      if (!v)
        return "malformed PROCESSOR line " + quoted(text) + ": bad " + std::string(key) +
               " value " + quoted(value);
    }
    r->cpuvendor = got.cpuvendor;
    r->cpuid = got.cpuid;
    if (got.walltime)
      r->walltime = got.walltime;
    if (got.socketid)
      r->socketid = got.socketid;
    if (got.apicid)
      r->apicid = got.apicid;
    if (got.microcode)
      r->microcode = got.microcode;
    return std::nullopt;
  }

  // Who printed each entry of log_: the core, AMD's decoder, both (an
  // error both printed is merged once), or the EDAC core.
  enum Origin : uint8_t { kCore, kAmdDecoder, kBoth, kEdac };
  std::vector<Origin> origin_;  // parallel to log_.entries
  MceLog log_;
  MceLogEntry current_;  // the error being read, when has_current_
  bool has_current_ = false;
  bool skipping_ = false;     // the last header was malformed: drop its continuation lines
  bool amd_current_ = false;  // the current error came from AMD's decoder
  bool bare_ = false;         // the current error's header had no marker
  bool bankless_ = false;     // a bank-less (Linux 2.4) header came last
  uint32_t bankless_cpu_ = 0;
  uint64_t bankless_mcg_ = 0;
  size_t last_bare_ = 0;   // the line of the current error's last bare line
  std::string amd_class_;  // AMD's class line, for the CPU line after it
};

}  // namespace

MceLog parse_mce_log(std::string_view text) {
  return LogParser().run(text);
}

Error no_errors_in_log(const MceLog& log, std::string_view path) {
  std::string where = path == "-" ? std::string("standard input") : std::string(path);
  std::string what =
      "no hardware error that decode can read in " + where +
      " (looked for the kernel's machine-check lines 'mce: [Hardware Error]: CPU N: Machine "
      "Check ...', AMD's 'CPU:N (f:m:s) MCn_STATUS[...]' and EDAC's 'EDAC MCn: N CE|UE ...')";
  if (log.hardware_lines > 0)
    what += "; " + std::to_string(log.hardware_lines) +
            " line(s) name a hardware error in another form (APEI/GHES records, summaries); "
            "decode the registers with 'perf persistent decode STATUS --bank N'";
  else
    what += "; is it the whole log (journalctl -k, dmesg, /var/log/kern.log)?";
  return Error(ErrorKind::kNotFound, ENOENT, what);
}

MceRegisters fill_absent(MceRegisters regs, const MceRegisters& fallback) {
  auto fill = [](auto& to, const auto& from) {
    if (!to && from)
      to = from;
  };
  fill(regs.status, fallback.status);
  fill(regs.mcgstatus, fallback.mcgstatus);
  fill(regs.mcgcap, fallback.mcgcap);
  fill(regs.addr, fallback.addr);
  fill(regs.misc, fallback.misc);
  fill(regs.synd, fallback.synd);
  fill(regs.ipid, fallback.ipid);
  fill(regs.ip, fallback.ip);
  fill(regs.tsc, fallback.tsc);
  fill(regs.walltime, fallback.walltime);
  fill(regs.ppin, fallback.ppin);
  fill(regs.cpu, fallback.cpu);
  fill(regs.cpuid, fallback.cpuid);
  fill(regs.apicid, fallback.apicid);
  fill(regs.socketid, fallback.socketid);
  fill(regs.bank, fallback.bank);
  fill(regs.microcode, fallback.microcode);
  fill(regs.cs, fallback.cs);
  fill(regs.cpuvendor, fallback.cpuvendor);
  return regs;
}

namespace {

// TIME of the PROCESSOR line (seconds since the epoch) as a date, or "".
std::string log_time(const MceLogEntry& entry) {
  constexpr uint64_t kMaxSeconds = UINT64_MAX / 1000000000ull;
  if (!entry.has_mce || !entry.regs.walltime || *entry.regs.walltime == 0 ||
      *entry.regs.walltime > kMaxSeconds)
    return "";
  std::string t = format_wall_time(*entry.regs.walltime * 1000000000ull);
  // Whole seconds: the kernel prints no fraction.
  if (size_t dot = t.find('.'); dot != std::string::npos)
    t = t.substr(0, dot) + "Z";
  return t;
}

}  // namespace

MceDecoded decode_mce_log_entry(const MceLogEntry& entry, CpuVendor vendor) {
  MceDecoded d = decode_mce(entry.regs, vendor, MceOrigin::kKernelLog);
  if (!entry.kernel_message.empty())
    apply_kernel_verdict(d, entry.kernel_message);
  return d;
}

void print_mce_log_entry_text(const MceLogEntry& entry, CpuVendor vendor, std::string& out) {
  if (entry.has_mce) {
    print_mce_text(decode_mce_log_entry(entry, vendor), out);
  } else if (entry.edac) {
    print_edac_text(*entry.edac, out);
  }
  if (entry.found_at_boot)
    out +=
        "  found at boot (polled with UC and PCC, no MCIP); most likely what reset the machine\n";
  if (std::string t = log_time(entry); !t.empty())
    out += "  time " + t + "\n";
  if (entry.has_mce && entry.edac) {
    std::string edac;
    print_edac_text(*entry.edac, edac);
    for (std::string_view l : split(edac, '\n'))
      if (!l.empty())
        out += "  " + std::string(l) + "\n";
  }
  // The words are the log's, escaped for the terminal: a log can be
  // anyone's file, and the kernel's log holds what some users chose.
  for (const std::string& words : entry.kernel_decode) {
    out += "  the kernel decoded: ";
    append_terminal_safe(out, words);
    out += "\n";
  }
  out += "  log line " + std::to_string(entry.line);
  if (!entry.kernel_message.empty()) {
    out += ", the kernel said: ";
    append_terminal_safe(out, entry.kernel_message);
  }
  out += "\n";
}

nlohmann::json mce_log_entry_json(const MceLogEntry& entry, CpuVendor vendor) {
  nlohmann::json j;
  if (entry.has_mce) {
    j = mce_json(decode_mce_log_entry(entry, vendor));
    j["source"] = "mce";
    if (entry.edac)
      j["edac"] = edac_json(*entry.edac);
  } else if (entry.edac) {
    j = edac_json(*entry.edac);
  }
  j["log_line"] = entry.line;
  if (std::string t = log_time(entry); !t.empty())
    j["time"] = t;
  if (entry.found_at_boot)
    j["found_at_boot"] = true;
  if (!entry.kernel_decode.empty()) {
    nlohmann::json words = nlohmann::json::array();
    for (const std::string& w : entry.kernel_decode)
      words.push_back(escape_invalid_utf8(w));
    j["kernel_decode"] = words;
  }
  if (!entry.kernel_message.empty())
    j["kernel_message"] = escape_invalid_utf8(entry.kernel_message);
  return j;
}

Result<uint64_t> parse_register_hex(std::string_view text, std::string_view what) {
  std::string_view digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    digits.remove_prefix(2);
  if (digits.empty())
    return usage_error(std::string(what) + " is empty; give a hexadecimal value, e.g. 0x" +
                       "9c00000000010135");
  for (char c : digits)
    if (hex_digit(c) < 0)
      return usage_error(std::string(what) + ": " + quoted(text) +
                         " is not hexadecimal; give the register as the kernel prints it, e.g. "
                         "be00000000000150 or 0xbe00000000000150");
  size_t first = digits.find_first_not_of('0');
  if (first != std::string_view::npos && digits.size() - first > 16)
    return usage_error(std::string(what) + ": " + quoted(text) +
                       " does not fit in 64 bits (at most 16 hex digits)");
  auto v = hex_word(digits);
  if (!v)
    return usage_error(std::string(what) + ": " + quoted(text) + " is not a 64-bit hex value");
  return *v;
}

}  // namespace pp::mce

#include "mce/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>

#include "base/strings.h"

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

class LogParser {
 public:
  MceLog run(std::string_view text) {
    size_t number = 0;
    while (!text.empty()) {
      size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      number++;
      size_t at = line.find(kMarker);
      if (at != std::string_view::npos)
        parse_line(number, line.substr(at + kMarker.size()));
    }
    finish();
    return std::move(log_);
  }

 private:
  void problem(size_t line, std::string what) {
    log_.problems.push_back({line, "line " + std::to_string(line) + ": " + std::move(what)});
  }
  void finish() {
    if (has_current_)
      log_.entries.push_back(std::move(current_));
    has_current_ = false;
    current_ = MceLogEntry{};
  }

  // The error a continuation line adds to, or a problem when there is none.
  MceRegisters* continued(size_t line, std::string_view text) {
    if (has_current_)
      return &current_.regs;
    if (!skipping_)
      problem(line, quoted(text) +
                        " continues a machine check, but no 'CPU N: Machine Check' line came "
                        "before it; is the log cut?");
    return nullptr;
  }

  void parse_line(size_t line, std::string_view text) {
    Cursor c(text);
    if (c.literal("CPU ") && text.find(": Machine Check") != std::string_view::npos)
      return header(line, text);
    if (text.substr(0, 3) == "RIP")
      return rip(line, text);
    if (text.substr(0, 4) == "TSC ")
      return tsc(line, text);
    if (text.substr(0, 10) == "PROCESSOR ")
      return processor(line, text);
    Cursor m(text);
    if (m.literal("Machine check: ") && has_current_) {
      std::string& message = current_.kernel_message;
      message = std::string(m.rest());
      while (!message.empty() && (message.back() == ' ' || message.back() == '\r'))
        message.pop_back();
    }
    // Other [Hardware Error] lines (EDAC's decoding, advice) are not ours.
  }

  // "CPU 0: Machine Check Exception: 5 Bank 1: be00000000000150"
  void header(size_t line, std::string_view text) {
    finish();
    skipping_ = true;  // until this header parses
    Cursor c(text);
    c.literal("CPU ");
    auto cpu = c.decimal(UINT32_MAX);
    bool ok = cpu && c.literal(": Machine Check");
    if (ok)
      c.literal(" Exception");
    ok = ok && c.literal(": ");
    auto mcg = ok ? c.hex(UINT64_MAX) : std::nullopt;
    ok = mcg && c.literal(" Bank ");
    auto bank = ok ? c.decimal(UINT32_MAX) : std::nullopt;
    ok = bank && c.literal(": ");
    auto status = ok ? c.hex(UINT64_MAX) : std::nullopt;
    if (!status || !c.at_end()) {
      problem(line, "malformed machine-check line " + quoted(text) +
                        "; expected 'CPU <n>: Machine Check[ Exception]: <mcgstatus hex> Bank "
                        "<n>: <status hex>' (this error is skipped)");
      return;
    }
    skipping_ = false;
    has_current_ = true;
    current_.line = line;
    current_.regs.cpu = uint32_t(*cpu);
    current_.regs.mcgstatus = *mcg;
    current_.regs.bank = uint32_t(*bank);
    current_.regs.status = *status;
  }

  // "RIP !INEXACT! 10:<ffffffff9c8592eb> {native_safe_halt+0xb/0x10}"
  void rip(size_t line, std::string_view text) {
    MceRegisters* r = continued(line, text);
    if (!r)
      return;
    Cursor c(text);
    c.literal("RIP");
    c.literal(" !INEXACT!");
    bool ok = c.literal(" ");
    auto cs = ok ? c.hex(0xFF) : std::nullopt;
    ok = cs && c.literal(":<");
    auto ip = ok ? c.hex(UINT64_MAX) : std::nullopt;
    if (!ip || !c.literal(">")) {
      problem(line, "malformed RIP line " + quoted(text) +
                        "; expected 'RIP[ !INEXACT!] <cs hex>:<<ip hex>>'");
      return;
    }
    r->cs = uint8_t(*cs);
    r->ip = *ip;
  }

  // "TSC 5663dac3e ADDR 1234000 MISC 86" (then PPIN, SYND, IPID when set)
  void tsc(size_t line, std::string_view text) {
    MceRegisters* r = continued(line, text);
    if (!r)
      return;
    Cursor c(text);
    MceRegisters got;
    while (!c.at_end()) {
      std::string_view key = c.word();
      std::string_view value = c.word();
      auto v = hex_word(value);
      if (!v) {
        problem(line, "malformed TSC line " + quoted(text) + ": " + std::string(key) +
                          " needs a hex value, got " + quoted(value));
        return;
      }
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
    for (auto [to, from] : {std::pair{&r->tsc, &got.tsc},
                            {&r->addr, &got.addr},
                            {&r->misc, &got.misc},
                            {&r->ppin, &got.ppin},
                            {&r->synd, &got.synd},
                            {&r->ipid, &got.ipid}})
      if (*from)
        *to = *from;
  }

  // "PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 microcode 1"
  void processor(size_t line, std::string_view text) {
    MceRegisters* r = continued(line, text);
    if (!r)
      return;
    Cursor c(text);
    c.literal("PROCESSOR ");
    auto vendor = c.decimal(0xFF);
    bool ok = vendor && c.literal(":");
    auto cpuid = ok ? c.hex(UINT32_MAX) : std::nullopt;
    if (!cpuid) {
      problem(line, "malformed PROCESSOR line " + quoted(text) +
                        "; expected 'PROCESSOR <vendor>:<cpuid hex> TIME <seconds> SOCKET <n> APIC "
                        "<hex> microcode <hex>'");
      return;
    }
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
      if (!v) {
        problem(line, "malformed PROCESSOR line " + quoted(text) + ": bad " + std::string(key) +
                          " value " + quoted(value));
        return;
      }
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
  }

  MceLog log_;
  MceLogEntry current_;  // the error being read, when has_current_
  bool has_current_ = false;
  bool skipping_ = false;  // the last header was malformed: drop its continuation lines
};

}  // namespace

MceLog parse_mce_log(std::string_view text) {
  return LogParser().run(text);
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

void print_mce_log_entry_text(const MceLogEntry& entry, CpuVendor vendor, std::string& out) {
  print_mce_text(decode_mce(entry.regs, vendor), out);
  out += "  log line " + std::to_string(entry.line);
  if (!entry.kernel_message.empty())
    out += ", the kernel said: " + entry.kernel_message;
  out += "\n";
}

nlohmann::json mce_log_entry_json(const MceLogEntry& entry, CpuVendor vendor) {
  nlohmann::json j = mce_json(decode_mce(entry.regs, vendor));
  j["log_line"] = entry.line;
  if (!entry.kernel_message.empty())
    j["kernel_message"] = entry.kernel_message;
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

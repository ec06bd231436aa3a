#include "mce/decode.h"

#include <cstdint>
#include <iostream>
#include <string>
#include <tuple>

#include "base/json.h"
#include "base/options.h"
#include "base/terminal.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "mce/kernel_log.h"
#include "sys/input.h"

namespace pp::cmd {

int cmd_decode(int argc, const char** argv) {
  bool json = false, log = false;
  constexpr uint64_t kNotGiven = UINT64_MAX;  // above either option's range
  uint64_t bank = kNotGiven, cpu = kNotGiven;
  std::string vendor_name, mcgstatus, mcgcap, addr, misc, ipid, synd, cs, cpuid;
  OptionParser opts({"perf persistent decode [<options>] STATUS",
                     "perf persistent decode [<options>] --log [FILE|-]"},
                    OptionParser::Positionals::kInterleaved);
  opts.flag(0, "log", &log,
            "decode the hardware errors of a kernel log (FILE, or - or nothing: stdin)")
      .number(0, "bank", "n", &bank, 0, UINT32_MAX, "the MCA bank number")
      .value(0, "mcgstatus", "hex", &mcgstatus, "IA32_MCG_STATUS")
      .value(0, "mcgcap", "hex", &mcgcap, "IA32_MCG_CAP (decides S, AR, threshold and count)")
      .value(0, "addr", "hex", &addr, "MCi_ADDR")
      .value(0, "misc", "hex", &misc, "MCi_MISC")
      .value(0, "ipid", "hex", &ipid, "AMD MCA_IPID (gives the SMCA bank type)")
      .value(0, "synd", "hex", &synd, "AMD MCA_SYND")
      .value(0, "cs", "hex", &cs, "the code segment at the error (3 in its low bits: user mode)")
      .value(0, "cpuid", "hex", &cpuid, "the CPUID signature (leaf 1 EAX)")
      .number(0, "cpu", "n", &cpu, 0, UINT32_MAX, "the CPU that logged the error")
      .value(0, "vendor", "name", &vendor_name, "the CPU vendor: intel or amd (also hygon)")
      .flag('j', "json", &json, "print JSON (schema in perf-persistent-decode(1))");
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && !parsed->help && !log && parsed->args.empty())
    parsed = usage_error(
        "give the STATUS register to decode (e.g. be00000000000150), or --log FILE for a kernel "
        "log");
  if (parsed.ok() && !parsed->help && parsed->args.size() > 1)
    parsed = usage_error(log ? "give at most one log FILE (or - for standard input)"
                             : "give one STATUS register; other registers go in options such "
                               "as --addr");
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    return report_usage_error("decode", parsed.error(), opts, json);
  }
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }

  // What the command line gives, to decode or to complete a log's errors.
  mce::MceRegisters given;
  mce::CpuVendor vendor = mce::CpuVendor::kUnknown;
  if (!vendor_name.empty()) {
    auto v = mce::cpu_vendor_from_name(vendor_name);
    if (!v || *v == mce::CpuVendor::kUnknown)
      return report_usage_error(
          "decode",
          usage_error("--vendor: unknown vendor '" + vendor_name +
                      "'; give intel or amd (hygon, zhaoxin and centaur are known too)"),
          opts, json);
    vendor = *v;
  }
  for (auto [option, text, out] : {
           std::tuple{"--mcgstatus", &mcgstatus, &given.mcgstatus},
           {"--mcgcap", &mcgcap, &given.mcgcap},
           {"--addr", &addr, &given.addr},
           {"--misc", &misc, &given.misc},
           {"--ipid", &ipid, &given.ipid},
           {"--synd", &synd, &given.synd},
       }) {
    if (text->empty())
      continue;
    auto v = mce::parse_register_hex(*text, option);
    if (!v.ok())
      return report_usage_error("decode", v.error(), opts, json);
    *out = *v;
  }
  if (!cs.empty()) {
    auto v = mce::parse_register_hex(cs, "--cs");
    if (v.ok() && *v > 0xFF)
      v = usage_error("--cs: '" + cs + "' is out of range; a code segment selector is 0 to ff");
    if (!v.ok())
      return report_usage_error("decode", v.error(), opts, json);
    given.cs = uint8_t(*v);
  }
  if (!cpuid.empty()) {
    auto v = mce::parse_register_hex(cpuid, "--cpuid");
    if (v.ok() && *v > UINT32_MAX)
      v = usage_error("--cpuid: '" + cpuid + "' is out of range; CPUID leaf 1 EAX is 32 bits");
    if (!v.ok())
      return report_usage_error("decode", v.error(), opts, json);
    given.cpuid = uint32_t(*v);
  }
  if (bank != kNotGiven)
    given.bank = uint32_t(bank);
  if (cpu != kNotGiven)
    given.cpu = uint32_t(cpu);

  if (!log) {
    auto status = mce::parse_register_hex(parsed->args[0], "STATUS");
    if (!status.ok())
      return report_usage_error("decode", status.error(), opts, json);
    given.status = *status;
    mce::MceDecoded d = mce::decode_mce(given, vendor);
    if (json) {
      std::cout << dump_json(mce::mce_json(d)) << '\n';
    } else {
      std::string out;
      mce::print_mce_text(d, out);
      std::cout << out;
    }
    return kExitOk;
  }

  const std::string path = parsed->args.empty() ? std::string("-") : parsed->args[0];
  auto text = sys::read_input(path, "the log");
  if (!text.ok())
    return report_error("decode", text.error(), json);
  mce::MceLog parsed_log = mce::parse_mce_log(*text);
  // Results and problems in log order, so a reader sees where each is.
  size_t problem = 0;
  auto flush_problems = [&](size_t before_line) {
    for (; problem < parsed_log.problems.size() && parsed_log.problems[problem].line < before_line;
         problem++) {
      Error e = usage_error(parsed_log.problems[problem].message);
      if (json)
        std::cout << dump_json(error_json(e)) << '\n';
      else
        std::cerr << "perf persistent decode: " << terminal_safe(e.message()) << "\n";
    }
  };
  bool first = true;
  for (mce::MceLogEntry& entry : parsed_log.entries) {
    flush_problems(entry.line);
    entry.regs = mce::fill_absent(entry.regs, given);
    if (json) {
      std::cout << dump_json(mce::mce_log_entry_json(entry, vendor)) << '\n';
    } else {
      std::string out = first ? "" : "\n";
      mce::print_mce_log_entry_text(entry, vendor, out);
      std::cout << out;
    }
    first = false;
  }
  flush_problems(SIZE_MAX);
  if (parsed_log.entries.empty() && parsed_log.problems.empty())
    return report_error("decode", mce::no_errors_in_log(parsed_log, path), json);
  return parsed_log.problems.empty() ? kExitOk : kExitUsage;
}

}  // namespace pp::cmd

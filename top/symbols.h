// Instruction pointers to symbols, as perf top names them: kernel addresses
// from kallsyms, user addresses from the ELF file mapped at that address in
// the sampled process (its maps, then the file's .symtab or .dynsym read with
// libelf, the file checked by build id), "[unknown]" where nothing is found.
//
//   Symbolizer symbols("/proc");
//   SymbolHit hit = symbols.resolve(pid, ip, /*kernel=*/false);
//   hit.symbol == "busy_loop"; hit.dso == "/usr/bin/busy";
//
// Everything read is cached: a process's maps until an address falls outside
// every mapping known for it (a new mapping), a file's symbols by build id
// (or device, inode and mtime when it has none), kallsyms once; so a refresh
// that resolves the same addresses again reads no file. Only files are
// read, under a root given as a parameter (tests give a fake /proc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace pp::top {

// What an address resolved to.
struct SymbolHit {
  std::string symbol;  // "busy_loop", "[unknown]"
  std::string dso;     // "[kernel.kallsyms]", "/usr/bin/busy", "[unknown]"
  bool kernel = false;
  bool operator==(const SymbolHit&) const = default;
};

// The interface top's views resolve through (tests give a table).
class SymbolSource {
 public:
  virtual ~SymbolSource() = default;
  // The symbol holding `ip` in process `pid`; `kernel` when the sample was
  // taken in kernel mode (its header's cpumode). Never fails: "[unknown]".
  virtual SymbolHit resolve(int32_t pid, uint64_t ip, bool kernel) = 0;
  // The process exited, or its maps may have changed: forget what is cached
  // for it (files stay cached).
  virtual void forget(int32_t pid) = 0;
};

// What a Symbolizer read, for tests and benchmarks. A maps or kallsyms read
// that failed (a pid that exited) counts too: it is what it cost.
struct SymbolizerStats {
  // PID/maps files read.
  uint64_t maps_reads = 0;
  // Files whose symbol tables were read with libelf (one that is not ELF
  // included); a file found in the cache by identity or build id is not.
  uint64_t elf_reads = 0;
  uint64_t kallsyms_reads = 0;
  // resolve() calls.
  uint64_t lookups = 0;
};

class Symbolizer final : public SymbolSource {
 public:
  // `proc_root` is where procfs is mounted ("/proc"): kallsyms, PID/maps,
  // and the mapped files through PID/root/ (the process's own view of the
  // file system) or PID/map_files/.
  explicit Symbolizer(std::string proc_root = "/proc");
  ~Symbolizer() override;
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  SymbolHit resolve(int32_t pid, uint64_t ip, bool kernel) override;
  void forget(int32_t pid) override;
  // Forgets every process (top does it every minute, so that processes that
  // exited do not pile up); files stay cached.
  void forget_processes();
  const SymbolizerStats& stats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pp::top

// Why one file of ~620 lines: the Symbolizer's one cache (Symbolizer::State)
// ties together three readers that have no other user: kallsyms, ELF
// symbols through libelf, and /proc/PID/maps. Each is a section below
// (---- kallsyms ----, ---- ELF files ----, ---- processes ----), read in
// that order; a reader that gains a second user (a build-id cache for
// report, say) is the seam to split along.
#include "top/symbols.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/strings.h"
#include "sys/fd.h"
#include "sys/tree.h"

namespace pp::top {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kUnknown = "[unknown]";
constexpr std::string_view kKernelDso = "[kernel.kallsyms]";
// A kernel text symbol covers the addresses up to the next symbol of any type
// (text or data), but never more than this: past the last symbol of the
// kernel or of a module, an ip further away than this is not that symbol.
constexpr uint64_t kKernelSymbolMaxSpan = uint64_t(1) << 20;
// kallsyms is about 10 MB on a distribution kernel with modules.
constexpr size_t kKallsymsLimit = size_t(256) << 20;
// A maps file of a process with very many mappings.
constexpr size_t kMapsLimit = size_t(64) << 20;
// A pid whose maps cannot be read (it exited, or we may not) is not asked
// again for this long.
constexpr auto kUnreadableRetry = std::chrono::seconds(2);
// An ip in no known mapping re-reads the maps (a new mmap, a dlopen), but
// not again within this long when that re-read was itself caused by a miss.
constexpr auto kMissRereadInterval = std::chrono::seconds(1);
// How far back a lookup walks from the nearest symbol below an address to
// find a larger symbol that encloses it (nested or overlapping symbols).
constexpr size_t kEnclosingSearch = 16;

// One symbol of a file or of the kernel, its name demangled on first use.
struct Sym {
  uint64_t start = 0;
  uint64_t size = 0;  // 0: up to the next symbol
  std::string name;
  bool weak = false;
  bool global = false;
  bool demangled = false;
};

size_t leading_underscores(std::string_view name) {
  size_t n = 0;
  while (n < name.size() && name[n] == '_')
    n++;
  return n;
}

// Of two symbols at the same address, the one perf top would name: a strong
// one over a weak one, a global one over a local one, fewer leading
// underscores, then the longer name.
bool better_symbol(const Sym& a, const Sym& b) {
  if (a.weak != b.weak)
    return !a.weak;
  if (a.global != b.global)
    return a.global;
  size_t ua = leading_underscores(a.name), ub = leading_underscores(b.name);
  if (ua != ub)
    return ua < ub;
  return a.name.size() > b.name.size();
}

// Sorts by address and keeps, of symbols at one address, the best one (the
// largest size of them, so an alias of size 0 does not shrink it).
void sort_and_dedup(std::vector<Sym>* syms) {
  std::stable_sort(syms->begin(), syms->end(),
                   [](const Sym& a, const Sym& b) { return a.start < b.start; });
  std::vector<Sym> out;
  out.reserve(syms->size());
  for (Sym& s : *syms) {
    if (!out.empty() && out.back().start == s.start) {
      uint64_t size = std::max(out.back().size, s.size);
      if (better_symbol(s, out.back()))
        out.back() = std::move(s);
      out.back().size = size;
      continue;
    }
    out.push_back(std::move(s));
  }
  *syms = std::move(out);
}

// The C++ name of a mangled one; the name itself otherwise.
const std::string& demangled_name(Sym* sym) {
  if (!sym->demangled) {
    sym->demangled = true;
    if (sym->name.starts_with("_Z")) {
      int status = -1;
      char* out = abi::__cxa_demangle(sym->name.c_str(), nullptr, nullptr, &status);
      if (status == 0 && out)
        sym->name = out;
      std::free(out);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle's buffer
    }
  }
  return sym->name;
}

// The symbol holding `addr` in a sorted table: the nearest one at or below
// it, if its [start, start+size) holds it or it has no size; else a larger
// symbol a little further back that encloses it.
Sym* find_symbol(std::vector<Sym>& syms, uint64_t addr) {
  auto it = std::upper_bound(syms.begin(), syms.end(), addr,
                             [](uint64_t a, const Sym& s) { return a < s.start; });
  if (it == syms.begin())
    return nullptr;
  --it;
  if (it->size == 0 || addr - it->start < it->size)
    return &*it;
  for (size_t i = 0; i < kEnclosingSearch && it != syms.begin(); i++) {
    --it;
    if (it->size != 0 && addr - it->start < it->size)
      return &*it;
  }
  return nullptr;
}

// ---- kallsyms ----

struct KernelSym {
  uint64_t start = 0;
  uint64_t end = 0;  // exclusive
  Sym sym;
  std::string dso;  // "[kernel.kallsyms]" or "[module]"
};

bool parse_hex(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 16)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    int d = hex_digit(c);
    if (d < 0)
      return false;
    v = (v << 4) | uint64_t(d);
  }
  *out = v;
  return true;
}

// Splits off the next field separated by spaces or tabs.
std::string_view next_field(std::string_view* rest) {
  size_t b = rest->find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    *rest = {};
    return {};
  }
  rest->remove_prefix(b);
  size_t e = rest->find_first_of(" \t");
  std::string_view field = rest->substr(0, e);
  rest->remove_prefix(e == std::string_view::npos ? rest->size() : e);
  return field;
}

bool is_text_type(char type) {
  return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

// Lines of /proc/kallsyms:
//   ffffffff81000000 T _stext
//   ffffffffc0a01000 t ext4_fill_super	[ext4]
// Zero addresses (kptr_restrict) are dropped. Text symbols (t, T, w, W) are
// kept; every symbol bounds the one before it.
std::vector<KernelSym> parse_kallsyms(std::string_view text) {
  struct Line {
    uint64_t addr;
    char type;
    std::string_view name;
    std::string_view module;
  };
  std::vector<Line> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view rest = line;
    std::string_view addr_text = next_field(&rest);
    std::string_view type = next_field(&rest);
    std::string_view name = next_field(&rest);
    std::string_view module = next_field(&rest);
    uint64_t addr;
    if (!parse_hex(addr_text, &addr) || addr == 0 || type.size() != 1 || name.empty())
      continue;
    if (module.size() >= 2 && module.front() == '[' && module.back() == ']')
      module = module.substr(1, module.size() - 2);
    else
      module = {};
    lines.push_back({addr, type[0], name, module});
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.addr < b.addr; });
  std::vector<KernelSym> out;
  size_t next = 0;  // the first line past the current address
  for (size_t i = 0; i < lines.size(); i++) {
    if (!is_text_type(lines[i].type))
      continue;
    uint64_t addr = lines[i].addr;
    if (next <= i)
      next = i + 1;
    while (next < lines.size() && lines[next].addr <= addr)
      next++;
    uint64_t end = addr + kKernelSymbolMaxSpan < addr ? UINT64_MAX : addr + kKernelSymbolMaxSpan;
    if (next < lines.size())
      end = std::min(end, lines[next].addr);
    Sym sym;
    sym.start = addr;
    sym.name = std::string(lines[i].name);
    sym.weak = lines[i].type == 'w' || lines[i].type == 'W';
    sym.global = lines[i].type == 'T';
    KernelSym k;
    k.start = addr;
    k.end = end;
    k.dso = lines[i].module.empty() ? std::string(kKernelDso)
                                    : "[" + std::string(lines[i].module) + "]";
    if (!out.empty() && out.back().start == addr) {
      if (better_symbol(sym, out.back().sym))
        out.back().sym = std::move(sym);
      continue;
    }
    k.sym = std::move(sym);
    out.push_back(std::move(k));
  }
  return out;
}

// ---- ELF files ----

// The symbols of one ELF file and how its file offsets map to addresses.
struct ElfFile {
  struct Load {
    uint64_t offset, vaddr, size;
    bool exec;
  };
  std::vector<Load> loads;
  std::vector<Sym> syms;

  // The ELF virtual address of file offset `off`, if a PT_LOAD holds it.
  bool address_of(uint64_t off, uint64_t* vaddr) const {
    for (int pass = 0; pass < 2; pass++) {
      for (const Load& l : loads) {
        if ((pass == 0) != l.exec)
          continue;
        if (off >= l.offset && off - l.offset < l.size) {
          *vaddr = off - l.offset + l.vaddr;
          return true;
        }
      }
    }
    return false;
  }
};

struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};
using ElfPtr = std::unique_ptr<Elf, ElfCloser>;

// The GNU build id of an ELF file as hex, "" when it has none.
std::string build_id_of(Elf* elf) {
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
      continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf)
      continue;
    size_t offset = 0;
    GElf_Nhdr nhdr;
    size_t name_off, desc_off;
    while (offset < data->d_size) {
      size_t next = gelf_getnote(data, offset, &nhdr, &name_off, &desc_off);
      if (next == 0 || next <= offset)
        break;
      offset = next;
      if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 || nhdr.n_descsz == 0 ||
          desc_off + nhdr.n_descsz > data->d_size || name_off + 4 > data->d_size)
        continue;
      const auto* bytes = static_cast<const unsigned char*>(data->d_buf);
      if (std::memcmp(bytes + name_off, "GNU", 4) != 0)
        continue;
      static constexpr char kHex[] = "0123456789abcdef";
      std::string id;
      for (size_t i = 0; i < nhdr.n_descsz; i++) {
        id += kHex[bytes[desc_off + i] >> 4];
        id += kHex[bytes[desc_off + i] & 0xf];
      }
      return id;
    }
  }
  return "";
}

// Reads the PT_LOAD headers and the FUNC and OBJECT symbols of .symtab, or
// of .dynsym when the file has no .symtab. An odd file gives what it can.
void read_elf_symbols(Elf* elf, ElfFile* file) {
  size_t nphdr = 0;
  if (elf_getphdrnum(elf, &nphdr) == 0) {
    for (size_t i = 0; i < nphdr; i++) {
      GElf_Phdr phdr;
      if (!gelf_getphdr(elf, int(i), &phdr) || phdr.p_type != PT_LOAD)
        continue;
      file->loads.push_back({phdr.p_offset, phdr.p_vaddr, std::max(phdr.p_filesz, phdr.p_memsz),
                             (phdr.p_flags & PF_X) != 0});
    }
  }
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* scn = nullptr;
  while ((scn = elf_nextscn(elf, scn)) != nullptr) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr))
      continue;
    if (shdr.sh_type == SHT_SYMTAB && !symtab)
      symtab = scn;
    else if (shdr.sh_type == SHT_DYNSYM && !dynsym)
      dynsym = scn;
  }
  for (Elf_Scn* table : {symtab, dynsym}) {
    if (!table)
      continue;
    GElf_Shdr shdr;
    Elf_Data* data = elf_getdata(table, nullptr);
    if (!gelf_getshdr(table, &shdr) || !data || shdr.sh_entsize == 0)
      continue;
    size_t count = data->d_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; i++) {
      GElf_Sym s;
      if (!gelf_getsym(data, int(i), &s))
        break;
      int type = GELF_ST_TYPE(s.st_info);
      if ((type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC) ||
          s.st_shndx == SHN_UNDEF || s.st_value == 0)
        continue;
      const char* name = elf_strptr(elf, shdr.sh_link, s.st_name);
      if (!name || !*name)
        continue;
      Sym sym;
      sym.start = s.st_value;
      sym.size = s.st_size;
      sym.name = name;
      int bind = GELF_ST_BIND(s.st_info);
      sym.weak = bind == STB_WEAK;
      sym.global = bind == STB_GLOBAL;
      file->syms.push_back(std::move(sym));
    }
    if (!file->syms.empty())
      break;  // .symtab had symbols: .dynsym adds nothing
  }
  sort_and_dedup(&file->syms);
}

// ---- processes ----

struct Mapping {
  uint64_t start = 0, end = 0, pgoff = 0;
  bool exec = false;
  std::string dev;  // "fd:01"
  uint64_t inode = 0;
  std::string path;  // as maps names it, "" for anonymous memory
  bool file_tried = false;
  std::shared_ptr<ElfFile> file;
};

// Lines of /proc/PID/maps:
//   55d0c8a00000-55d0c8a21000 r-xp 00002000 fd:01 1048602   /usr/bin/busy
// Lines that do not parse are skipped.
std::vector<Mapping> parse_maps(std::string_view text) {
  std::vector<Mapping> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view rest = line;
    std::string_view range = next_field(&rest);
    std::string_view perms = next_field(&rest);
    std::string_view pgoff = next_field(&rest);
    std::string_view dev = next_field(&rest);
    std::string_view inode = next_field(&rest);
    size_t dash = range.find('-');
    Mapping m;
    if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), &m.start) ||
        !parse_hex(range.substr(dash + 1), &m.end) || m.end <= m.start || perms.size() < 3 ||
        !parse_hex(pgoff, &m.pgoff) || dev.empty() || inode.empty())
      continue;
    m.exec = perms[2] == 'x';
    m.dev = std::string(dev);
    for (char c : inode) {
      if (c < '0' || c > '9') {
        m.inode = 0;
        break;
      }
      m.inode = m.inode * 10 + uint64_t(c - '0');
    }
    size_t b = rest.find_first_not_of(" \t");
    if (b != std::string_view::npos)
      m.path = std::string(rest.substr(b));
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(),
            [](const Mapping& a, const Mapping& b) { return a.start < b.start; });
  return out;
}

struct Process {
  bool readable = false;
  bool last_read_for_miss = false;
  Clock::time_point read_at;
  std::vector<Mapping> maps;

  Mapping* find(uint64_t ip) {
    auto it = std::upper_bound(maps.begin(), maps.end(), ip,
                               [](uint64_t a, const Mapping& m) { return a < m.start; });
    if (it == maps.begin())
      return nullptr;
    --it;
    return ip < it->end ? &*it : nullptr;
  }
};

std::string hex(uint64_t v) {
  char buf[20];
  snprintf(buf, sizeof(buf), "%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

struct Symbolizer::State {
  explicit State(std::string root) : proc(std::move(root)) {}

  sys::Tree proc;
  SymbolizerStats stats;

  bool kallsyms_loaded = false;
  std::vector<KernelSym> kernel;

  std::unordered_map<int32_t, Process> processes;
  // Files by build id ("b:<hex>") and by identity ("i:dev:inode:size:mtime").
  std::unordered_map<std::string, std::shared_ptr<ElfFile>> files;

  SymbolHit resolve_kernel(uint64_t ip);
  SymbolHit resolve_user(int32_t pid, uint64_t ip);
  void read_maps(int32_t pid, Process* p, bool for_miss);
  std::shared_ptr<ElfFile> load_file(int32_t pid, const Mapping& m);
};

SymbolHit Symbolizer::State::resolve_kernel(uint64_t ip) {
  if (!kallsyms_loaded) {
    kallsyms_loaded = true;
    stats.kallsyms_reads++;
    auto text = proc.read("kallsyms", kKallsymsLimit);
    if (text.ok())
      kernel = parse_kallsyms(*text);
  }
  SymbolHit hit{std::string(kUnknown), std::string(kKernelDso), true};
  auto it = std::upper_bound(kernel.begin(), kernel.end(), ip,
                             [](uint64_t a, const KernelSym& k) { return a < k.start; });
  if (it == kernel.begin())
    return hit;
  --it;
  if (ip >= it->end)
    return hit;
  hit.symbol = demangled_name(&it->sym);
  hit.dso = it->dso;
  return hit;
}

void Symbolizer::State::read_maps(int32_t pid, Process* p, bool for_miss) {
  stats.maps_reads++;
  p->read_at = Clock::now();
  p->last_read_for_miss = for_miss;
  auto text = proc.read(std::to_string(pid) + "/maps", kMapsLimit);
  if (!text.ok()) {
    p->readable = false;
    p->maps.clear();
    return;
  }
  std::vector<Mapping> fresh = parse_maps(*text);
  // Mappings that did not change keep the file they already resolved to.
  for (Mapping& m : fresh) {
    Mapping* old = p->find(m.start);
    if (old && old->start == m.start && old->end == m.end && old->pgoff == m.pgoff &&
        old->dev == m.dev && old->inode == m.inode && old->path == m.path) {
      m.file_tried = old->file_tried;
      m.file = old->file;
    }
  }
  p->maps = std::move(fresh);
  p->readable = true;
}

std::shared_ptr<ElfFile> Symbolizer::State::load_file(int32_t pid, const Mapping& m) {
  std::string pid_dir = std::to_string(pid);
  sys::Fd fd(::open(proc.path(pid_dir + "/map_files/" + hex(m.start) + "-" + hex(m.end)).c_str(),
                    O_RDONLY | O_CLOEXEC));
  if (!fd && !m.path.empty() && m.path.front() == '/') {
    std::string path = m.path;
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted))
      path.resize(path.size() - kDeleted.size());
    fd = sys::Fd(::open(proc.path(pid_dir + "/root" + path).c_str(), O_RDONLY | O_CLOEXEC));
  }
  if (!fd)
    return nullptr;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return nullptr;
  std::string identity = "i:" + m.dev + ":" + std::to_string(m.inode) + ":" +
                         std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) +
                         "." + std::to_string(st.st_mtim.tv_nsec);
  if (auto it = files.find(identity); it != files.end())
    return it->second;

  stats.elf_reads++;
  auto file = std::make_shared<ElfFile>();
  ElfPtr elf(elf_begin(fd.get(), ELF_C_READ, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    files[identity] = file;  // not ELF: no symbols, not tried again
    return file;
  }
  std::string id = build_id_of(elf.get());
  if (!id.empty()) {
    if (auto it = files.find("b:" + id); it != files.end()) {
      stats.elf_reads--;  // only the notes were read: the symbols are cached
      files[identity] = it->second;
      return it->second;
    }
  }
  read_elf_symbols(elf.get(), file.get());
  files[identity] = file;
  if (!id.empty())
    files["b:" + id] = file;
  return file;
}

SymbolHit Symbolizer::State::resolve_user(int32_t pid, uint64_t ip) {
  SymbolHit hit{std::string(kUnknown), std::string(kUnknown), false};
  auto now = Clock::now();
  auto [pit, inserted] = processes.try_emplace(pid);
  Process& p = pit->second;
  if (inserted) {
    read_maps(pid, &p, false);
  } else if (!p.readable) {
    if (now - p.read_at < kUnreadableRetry)
      return hit;
    read_maps(pid, &p, false);
  }
  Mapping* m = p.find(ip);
  if (!m && p.readable && (!p.last_read_for_miss || now - p.read_at >= kMissRereadInterval)) {
    read_maps(pid, &p, true);
    m = p.find(ip);
  }
  if (!m)
    return hit;
  if (!m->path.empty())
    hit.dso = m->path;
  if (!m->exec || m->path.empty() || m->path.front() != '/')
    return hit;  // anonymous memory, [vdso], [heap], data
  if (!m->file_tried) {
    m->file_tried = true;
    m->file = load_file(pid, *m);
  }
  if (!m->file)
    return hit;
  uint64_t vaddr;
  if (!m->file->address_of(ip - m->start + m->pgoff, &vaddr))
    return hit;
  if (Sym* sym = find_symbol(m->file->syms, vaddr))
    hit.symbol = demangled_name(sym);
  return hit;
}

Symbolizer::Symbolizer(std::string proc_root)
    : state_(std::make_unique<State>(std::move(proc_root))) {
  elf_version(EV_CURRENT);
}

Symbolizer::~Symbolizer() = default;

SymbolHit Symbolizer::resolve(int32_t pid, uint64_t ip, bool kernel) {
  state_->stats.lookups++;
  try {
    return kernel ? state_->resolve_kernel(ip) : state_->resolve_user(pid, ip);
  } catch (...) {  // out of memory on a hostile file: an unknown address, no more
    return SymbolHit{std::string(kUnknown), std::string(kernel ? kKernelDso : kUnknown), kernel};
  }
}

void Symbolizer::forget(int32_t pid) {
  state_->processes.erase(pid);
}

void Symbolizer::forget_processes() {
  state_->processes.clear();
}

const SymbolizerStats& Symbolizer::stats() const {
  return state_->stats;
}

}  // namespace pp::top

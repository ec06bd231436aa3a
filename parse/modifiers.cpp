// Event modifiers: cycles:u, cpu/.../k, {a,b}:uS, ... (perf's check_modifier()
// and get_event_modifier()):
//
//   u k h     count only user, kernel, hypervisor (exclude_* the others)
//   G H       count only guest, host
//   I         exclude_idle
//   p pp ppp  precise_ip 1-3;  P  the most precise level the PMU has
//   S         sample read;  D  pinned;  e  exclusive;  W  weak group;  b  bpf counter
#include "parse/resolver.h"

namespace pp::parse {
namespace {

constexpr std::string_view kModifierLetters = "ukhGHpppPSDIWeb";  // check_modifier()'s limit

struct Modifiers {
  bool eu = false, ek = false, eh = false, eH = false, eG = false, eI = false;
  int precise = 0;
  bool precise_max = false, exclude_gh = false, sample_read = false, pinned = false, weak = false,
       exclusive = false, bpf_counter = false;
};

}  // namespace

// `group` applies to every member, starting from what each has (perf's
// add = true).
Status Resolver::apply_modifiers(size_t first, const Word& mods, bool group) {
  const std::string& str = mods.text;
  if (str.size() > kModifierLetters.size())
    return fail(mods.col, EINVAL, "bad modifier '" + str + "': too many letters",
                "give each modifier once (p up to three times)");
  for (size_t i = 0; i < str.size(); i++)
    if (str[i] != 'p' && str.find(str[i], i + 1) != std::string::npos)
      return fail(mods.col + str.find(str[i], i + 1), EINVAL,
                  "bad modifier '" + str + "': '" + std::string(1, str[i]) + "' is given twice");
  for (size_t i = first; i < out_.size(); i++) {
    Evsel& e = out_[i];
    perf_event_attr& a = e.spec.attr.attr;
    Modifiers m;
    if (group) {
      m.eu = a.exclude_user;
      m.ek = a.exclude_kernel;
      m.eh = a.exclude_hv;
      m.eH = a.exclude_host;
      m.eG = a.exclude_guest;
      m.eI = a.exclude_idle;
      m.precise = int(a.precise_ip);
      m.pinned = a.pinned;
      m.exclusive = a.exclusive;
      m.exclude_gh = e.exclude_gh;
    }
    bool exclude = m.eu || m.ek || m.eh;
    for (char c : str) {
      switch (c) {
        case 'u':
          if (!exclude)
            exclude = m.eu = m.ek = m.eh = true;
          if (!m.exclude_gh)
            m.eG = true;  // perf_guest is false
          m.eu = false;
          break;
        case 'k':
          if (!exclude)
            exclude = m.eu = m.ek = m.eh = true;
          m.ek = false;
          break;
        case 'h':
          if (!exclude)
            exclude = m.eu = m.ek = m.eh = true;
          m.eh = false;
          break;
        case 'G':
          if (!m.exclude_gh)
            m.exclude_gh = m.eG = m.eH = true;
          m.eG = false;
          break;
        case 'H':
          if (!m.exclude_gh)
            m.exclude_gh = m.eG = m.eH = true;
          m.eH = false;
          break;
        case 'I':
          m.eI = true;
          break;
        case 'p':
          m.precise++;
          if (!m.exclude_gh)
            m.eG = true;  // precise needs exclude_guest
          break;
        case 'P':
          m.precise_max = true;
          break;
        case 'S':
          m.sample_read = true;
          break;
        case 'D':
          m.pinned = true;
          break;
        case 'e':
          m.exclusive = true;
          break;
        case 'W':
          m.weak = true;
          break;
        case 'b':
          m.bpf_counter = true;
          break;
        default:
          break;
      }
    }
    if (m.precise > 3)
      return fail(mods.col, EINVAL,
                  "bad modifier '" + str + "': precise level " + std::to_string(m.precise) +
                      " is more than 3",
                  "p, pp and ppp ask for precise levels 1 to 3; P asks for the most the PMU has");
    a.exclude_user = m.eu;
    a.exclude_kernel = m.ek;
    a.exclude_hv = m.eh;
    a.precise_ip = unsigned(m.precise);
    a.exclude_host = m.eH;
    a.exclude_guest = m.eG;
    a.exclude_idle = m.eI;
    e.exclude_gh = m.exclude_gh;
    e.spec.sample_read = m.sample_read;
    e.spec.precise_max = m.precise_max;
    e.spec.weak_group = m.weak;
    e.spec.bpf_counter = m.bpf_counter;
    if (e.spec.leader == int(i)) {
      a.pinned = m.pinned;
      a.exclusive = m.exclusive;
    }
  }
  return ok_status();
}

}  // namespace pp::parse

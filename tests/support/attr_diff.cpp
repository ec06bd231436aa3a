#include "tests/support/attr_diff.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/json.h"
#include "base/strings.h"
#include "sys/perf_abi_attr.h"

namespace pp::testing {
namespace {

using sys::kAttrBlockHeader;
using sys::kAttrBlockRule;

// One perf_event_open attempt perf printed: the attr, then one or more
// "sys_perf_event_open:" lines (one per CPU or thread).
struct Attempt {
  sys::EventAttr attr;
  std::vector<long> group_fds;  // one per open call
  std::vector<long> fds;        // the fds the successful calls returned
  bool failed = false;
  bool retried = false;  // perf tries the same event again (next attempt)
};

// "... group_fd 3  flags 0x8 = 4" -> group_fd 3, fd 4 (or -1 when failed).
Status read_open_line(std::string_view line, Attempt* attempt) {
  size_t at = line.find("group_fd ");
  if (at == std::string_view::npos)
    return errorf(EINVAL, "no group_fd in perf's line '%.*s'", int(line.size()), line.data());
  std::string_view rest = line.substr(at + 9);
  std::string_view number = rest.substr(0, rest.find(' '));
  bool negative = starts_with(number, "-");
  PP_ASSIGN_OR_RETURN(uint64_t group_fd,
                      parse_u64(negative ? number.substr(1) : number, "perf's group_fd"));
  attempt->group_fds.push_back(negative ? -long(group_fd) : long(group_fd));
  if (size_t eq = line.rfind(" = "); eq != std::string_view::npos) {
    PP_ASSIGN_OR_RETURN(uint64_t fd, parse_u64(trim(line.substr(eq + 3)), "perf's fd"));
    attempt->fds.push_back(long(fd));
  }
  return ok_status();
}

bool is_digits(std::string_view s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

// perf stat's counter lines after the run, in event order:
//   "NAME: VAL ENA RUN"            (read; the per-CPU form "NAME: CPU: VAL ENA RUN" is skipped)
//   "failed to read counter NAME"
std::optional<std::string> counter_name(std::string_view line) {
  constexpr std::string_view kFailed = "failed to read counter ";
  if (starts_with(line, kFailed))
    return std::string(line.substr(kFailed.size()));
  size_t colon = line.rfind(": ");
  if (colon == std::string_view::npos)
    return std::nullopt;
  std::vector<std::string_view> numbers = split(line.substr(colon + 2), ' ');
  if (numbers.size() != 3)
    return std::nullopt;
  for (std::string_view n : numbers)
    if (!is_digits(n))
      return std::nullopt;
  std::string_view name = line.substr(0, colon);
  // The per-CPU line: "NAME: -1: ..." or "NAME: 0: ...".
  if (size_t inner = name.rfind(": "); inner != std::string_view::npos) {
    std::string_view cpu = name.substr(inner + 2);
    if (is_digits(starts_with(cpu, "-") ? cpu.substr(1) : cpu))
      return std::nullopt;
  }
  return std::string(name);
}

bool is_retry_line(std::string_view line) {
  return starts_with(line, "switching off") || starts_with(line, "decreasing precise_ip");
}

std::string refusal_text(const std::vector<std::string_view>& lines) {
  // perf's refusal without its debug chatter and the usage it appends.
  std::string out;
  for (std::string_view line : lines) {
    if (starts_with(line, "Using CPUID") || starts_with(line, "Control descriptor") ||
        starts_with(line, "Attempting to add") || starts_with(line, "After aliases"))
      continue;
    if (starts_with(trim(line), "Usage:"))
      break;
    if (!trim(line).empty())
      out += std::string(line) + "\n";
  }
  return out;
}

Result<Shown> read_perf_output(std::string_view output, int status, bool record) {
  std::vector<std::string_view> lines = split(output, '\n');
  std::vector<Attempt> attempts;
  std::vector<std::string> names;
  int guest_cleared_at_attempt = -1;
  for (size_t i = 0; i < lines.size(); i++) {
    std::string_view line = lines[i];
    if (record && starts_with(line, "mmap size"))
      break;  // perf record's own side-band events follow
    if (line == kAttrBlockHeader) {
      Attempt a;
      for (i++; i < lines.size() && lines[i] != kAttrBlockRule; i++) {
        Status s = sys::read_attr_line(lines[i], &a.attr);
        if (!s.ok())
          return std::move(s).error().with_context("reading perf's attr block");
      }
      if (i == lines.size())
        return Error(EINVAL, "perf's attr block has no closing line");
      attempts.push_back(a);
    } else if (starts_with(line, "sys_perf_event_open: ")) {
      if (attempts.empty())
        return Error(EINVAL, "perf opened an event before printing its attr");
      PP_RETURN_IF_ERROR(read_open_line(line, &attempts.back()));
    } else if (starts_with(line, "sys_perf_event_open failed")) {
      if (attempts.empty())
        return Error(EINVAL, "perf reports a failed open before printing an attr");
      attempts.back().failed = true;
    } else if (is_retry_line(line)) {
      if (attempts.empty() || !attempts.back().failed)
        return errorf(EINVAL, "perf retries ('%.*s') without a failed open", int(line.size()),
                      line.data());
      attempts.back().retried = true;
      if (line.find("exclude_guest") != std::string_view::npos && guest_cleared_at_attempt < 0)
        guest_cleared_at_attempt = int(attempts.size()) - 1;
    } else if (starts_with(line, "Weak group for")) {
      return Error(EINVAL,
                   "perf reopened a weak group without grouping; this reader does not follow "
                   "that: keep :W groups to events that open");
    } else if (!record && !attempts.empty()) {
      if (auto name = counter_name(line))
        names.push_back(*name);
    }
  }

  Shown shown;
  if (attempts.empty()) {
    if (status == 0)
      return Error(EINVAL, "perf succeeded without printing an attr: run with -vv?");
    shown.rejected = true;
    shown.message = refusal_text(lines);
    return shown;
  }
  // Attempts to events: a retried attempt and the next one are one event.
  std::vector<Attempt> finals;
  for (size_t a = 0; a < attempts.size(); a++) {
    if (attempts[a].group_fds.empty())
      return Error(EINVAL, "perf printed an attr block without its sys_perf_event_open line");
    ShownEvent e;
    e.attr = attempts[a].attr;
    if (int(a) == guest_cleared_at_attempt)
      shown.guest_bits_cleared_after = int(shown.events.size());
    while (attempts[a].retried) {
      if (++a == attempts.size())
        return Error(EINVAL, "perf said it would retry an event, then printed no attr");
      if (int(a) == guest_cleared_at_attempt)
        shown.guest_bits_cleared_after = int(shown.events.size());
    }
    finals.push_back(attempts[a]);
    shown.events.push_back(e);
  }
  for (size_t e = 0; e < finals.size(); e++) {
    long group_fd = finals[e].group_fds.front();
    if (group_fd < 0) {
      shown.events[e].leader = int(e);
      continue;
    }
    for (size_t l = 0; l < e; l++)
      for (long fd : finals[l].fds)
        if (fd == group_fd)
          shown.events[e].leader = int(l);
  }
  shown.stopped_early = status != 0;
  if (!record && names.size() == shown.events.size())
    for (size_t e = 0; e < names.size(); e++)
      shown.events[e].name = names[e];
  return shown;
}

std::string field_value(std::string_view field_name, const sys::EventAttr& attr) {
  const sys::AttrField* f = sys::find_attr_field(field_name);
  uint64_t value = f->get(attr);
  return value ? sys::format_attr_value(*f, value) : "0";
}

std::string event_label(const Shown& s, size_t i) {
  std::string label = "event " + std::to_string(i);
  if (i < s.events.size() && s.events[i].name)
    label += " (" + *s.events[i].name + ")";
  return label;
}

std::string first_line(std::string_view text) {
  return std::string(trim(text.substr(0, text.find('\n'))));
}

}  // namespace

Result<Shown> read_perf_stat(std::string_view output, int status) {
  return read_perf_output(output, status, false);
}

Result<Shown> read_perf_record(std::string_view output, int status) {
  return read_perf_output(output, status, true);
}

Result<Shown> read_attr_json(std::string_view json, int status) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return errorf(EINVAL, "perf-persistent attr --json printed no JSON object: '%.*s'",
                  int(std::min<size_t>(json.size(), 200)), json.data());
  Shown shown;
  if (status != 0) {
    if (!j.contains("error") || !j["error"].is_object())
      return errorf(EINVAL, "perf-persistent attr failed (status %d) without a JSON error", status);
    shown.rejected = true;
    shown.message = j["error"].value("message", "");
    return shown;
  }
  if (!j.contains("events") || !j["events"].is_array())
    return Error(EINVAL, "perf-persistent attr --json succeeded without an \"events\" array");
  for (const nlohmann::json& e : j["events"]) {
    ShownEvent ev;
    const nlohmann::json* words = nullptr;
    if (e.contains("attr") && e["attr"].contains("words"))
      words = &e["attr"]["words"];
    if (!words || !words->is_array() || words->size() != sys::kAttrWords)
      return Error(EINVAL, "an event in perf-persistent's JSON has no attr.words of 17 words");
    for (unsigned w = 0; w < sys::kAttrWords; w++) {
      std::optional<uint64_t> word = u64_from_hex_json((*words)[w]);
      if (!word)
        return errorf(EINVAL, "attr.words[%u] is not a \"0x...\" string", w);
      ev.attr.words[w] = *word;
    }
    if (!e.contains("name") || !e["name"].is_string() || !e.contains("leader") ||
        !e["leader"].is_number_integer())
      return Error(EINVAL, "an event in perf-persistent's JSON lacks its name or leader");
    ev.name = e["name"].get<std::string>();
    ev.leader = e["leader"].get<int>();
    shown.events.push_back(ev);
  }
  return shown;
}

std::vector<std::string_view> compared_fields(DiffMode mode) {
  std::vector<std::string_view> fields = {
      "type",
      "config",
      "{ bp_addr, config1 }",
      "{ bp_len, config2 }",
      "config3",
      "bp_type",
      "pinned",
      "exclusive",
      "exclude_user",
      "exclude_kernel",
      "exclude_hv",
      "exclude_idle",
      "exclude_host",
      "exclude_guest",
      "exclude_callchain_kernel",
      "exclude_callchain_user",
      "precise_ip",
  };
  if (mode == DiffMode::kRecord) {
    fields.push_back("{ sample_period, sample_freq }");
    fields.push_back("freq");
  }
  if (mode == DiffMode::kExpect) {
    fields.clear();
    for (const sys::AttrField& f : sys::attr_fields())
      if (f.text_name != "size")
        fields.push_back(f.text_name);
  }
  return fields;
}

std::vector<std::string> diff_shown(const Shown& reference, const Shown& ours, DiffMode mode,
                                    std::vector<std::string>* notes) {
  const char* ref_name = mode == DiffMode::kExpect ? "expected" : "perf";
  std::vector<std::string> diffs;
  if (reference.rejected || ours.rejected) {
    if (reference.rejected && !ours.rejected)
      diffs.push_back(std::string(ref_name) + " rejects it (" + first_line(reference.message) +
                      "), ours accepts it: " + std::to_string(ours.events.size()) + " event(s)");
    if (!reference.rejected && ours.rejected)
      diffs.push_back(std::string(ref_name) + " accepts it (" +
                      std::to_string(reference.events.size()) +
                      " event(s)), ours rejects it: " + ours.message);
    return diffs;
  }
  size_t n = std::min(reference.events.size(), ours.events.size());
  if (reference.stopped_early) {
    if (ours.events.size() < reference.events.size())
      diffs.push_back("perf built at least " + std::to_string(reference.events.size()) +
                      " event(s) before it stopped, ours " + std::to_string(ours.events.size()));
    else if (notes && ours.events.size() > reference.events.size())
      notes->push_back("perf stopped after a failed open; events " +
                       std::to_string(reference.events.size()) + ".." +
                       std::to_string(ours.events.size() - 1) + " are not checked");
  } else if (reference.events.size() != ours.events.size()) {
    diffs.push_back(std::string(ref_name) + " built " + std::to_string(reference.events.size()) +
                    " event(s), ours " + std::to_string(ours.events.size()));
  }
  std::vector<std::string_view> fields = compared_fields(mode);
  for (size_t i = 0; i < n; i++) {
    const ShownEvent& r = reference.events[i];
    const ShownEvent& o = ours.events[i];
    std::string label = event_label(reference.events[i].name ? reference : ours, i);
    for (std::string_view field : fields) {
      bool guest_bit = field == "exclude_guest" || field == "exclude_host";
      if (guest_bit && reference.guest_bits_cleared_after >= 0 &&
          int(i) > reference.guest_bits_cleared_after)
        continue;
      const sys::AttrField* f = sys::find_attr_field(field);
      if (f->get(r.attr) != f->get(o.attr))
        diffs.push_back(label + ": " + std::string(field) + ": " + ref_name + " " +
                        field_value(field, r.attr) + ", ours " + field_value(field, o.attr));
    }
    if (r.name && o.name && *r.name != *o.name)
      diffs.push_back(label + ": name: " + ref_name + " '" + *r.name + "', ours '" + *o.name + "'");
    if (r.leader >= 0 && r.leader != o.leader)
      diffs.push_back(label + ": group leader: " + ref_name + " event " + std::to_string(r.leader) +
                      ", ours event " + std::to_string(o.leader));
    if (notes && mode != DiffMode::kExpect && r.leader < 0)
      notes->push_back(label + ": perf's group leader is not known (it failed to open)");
  }
  if (notes && mode == DiffMode::kStat && !reference.events.empty() && !reference.events[0].name)
    notes->push_back("perf printed no counter names: names not checked");
  if (notes && reference.guest_bits_cleared_after >= 0 &&
      reference.guest_bits_cleared_after + 1 < int(n))
    notes->push_back("perf switched off exclude_guest/exclude_host after event " +
                     std::to_string(reference.guest_bits_cleared_after) +
                     ": those bits are not checked after it");
  return diffs;
}

Result<std::vector<CorpusCase>> read_corpus(std::string_view text) {
  std::vector<CorpusCase> cases;
  int number = 0;
  for (std::string_view raw : split(text, '\n')) {
    number++;
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#')
      continue;
    CorpusCase c;
    c.line = number;
    size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos)
      return errorf(EINVAL, "corpus line %d: a mode and an event string are needed", number);
    c.mode = std::string(line.substr(0, space));
    std::string_view rest = trim(line.substr(space));
    if (size_t arrow = rest.find(" => "); arrow != std::string_view::npos) {
      c.expectation = std::string(trim(rest.substr(arrow + 4)));
      rest = trim(rest.substr(0, arrow));
    }
    c.text = std::string(rest);
    std::string base = c.mode.substr(0, c.mode.find(':'));
    bool needs_expectation = base == "expect" || base == "reject";
    if (base != "stat" && base != "record" && !needs_expectation)
      return errorf(EINVAL, "corpus line %d: unknown mode '%s' (stat, record, expect, reject)",
                    number, c.mode.c_str());
    if (needs_expectation == c.expectation.empty())
      return errorf(EINVAL, "corpus line %d: %s '=> ...' for mode %s", number,
                    needs_expectation ? "needs" : "must not have", base.c_str());
    if (c.text.empty())
      return errorf(EINVAL, "corpus line %d: no event string", number);
    cases.push_back(c);
  }
  return cases;
}

void PrintTo(const CorpusCase& c, std::ostream* out) {
  *out << "line " << c.line << ": " << c.mode << " '" << c.text << "'";
}

Result<Shown> read_expectation(std::string_view expectation) {
  Shown shown;
  std::string text(expectation);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(" ; ", start);
    std::string_view part =
        trim(std::string_view(text).substr(start, end == std::string::npos ? end : end - start));
    ShownEvent e;
    for (std::string_view token : split(part, ' ')) {
      if (token.empty())
        continue;
      size_t eq = token.find('=');
      if (eq == std::string_view::npos)
        return errorf(EINVAL, "expectation '%.*s': '%.*s' is not key=value",
                      int(expectation.size()), expectation.data(), int(token.size()), token.data());
      std::string_view key = token.substr(0, eq), value = token.substr(eq + 1);
      if (key == "name") {
        e.name = std::string(value);
        continue;
      }
      PP_ASSIGN_OR_RETURN(uint64_t number, parse_u64(value, key));
      if (key == "leader") {
        e.leader = int(number);
      } else if (starts_with(key, "word")) {
        PP_ASSIGN_OR_RETURN(uint64_t w, parse_u64(key.substr(4), "word index"));
        if (w >= sys::kAttrWords)
          return errorf(EINVAL, "expectation: no word %lu", (unsigned long)w);
        e.attr.words[w] = number;
      } else {
        // The unions go by either name: sample_freq (with freq=1) and
        // wakeup_watermark (with watermark=1) are the same words.
        std::string_view field_key = key == "sample_freq"        ? "sample_period"
                                     : key == "wakeup_watermark" ? "wakeup_events"
                                                                 : key;
        const sys::AttrField* field = nullptr;
        for (const sys::AttrField& f : sys::attr_fields())
          if (f.json_name == field_key)
            field = &f;
        if (!field)
          return errorf(EINVAL, "expectation: unknown field '%.*s'", int(key.size()), key.data());
        if (number > sys::attr_field_max(*field))
          return errorf(EINVAL, "expectation: %.*s=%.*s does not fit the field", int(key.size()),
                        key.data(), int(value.size()), value.data());
        field->set(e.attr, number);
      }
    }
    shown.events.push_back(e);
    if (end == std::string::npos)
      break;
    start = end + 3;
  }
  return shown;
}

}  // namespace pp::testing

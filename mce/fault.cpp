#include "mce/fault.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "base/json.h"
#include "base/wall_time.h"
#include "mce/advice.h"
#include "mce/location.h"

namespace pp::mce {
namespace {

constexpr std::string_view kModeNames[] = {"cell", "row",     "column",     "bank",   "device",
                                           "rank", "channel", "controller", "unknown"};

std::string opt_text(const std::optional<uint32_t>& v) {
  return v ? std::to_string(*v) : "?";
}

// The layers two locations share (the first's where both agree).
MemoryLocation common(const MemoryLocation& a, const MemoryLocation& b) {
  MemoryLocation c;
  auto keep = [](auto& out, const auto& x, const auto& y) {
    if (x && x == y)
      out = x;
  };
  keep(c.socket, a.socket, b.socket);
  keep(c.controller, a.controller, b.controller);
  keep(c.channel, a.channel, b.channel);
  keep(c.slot, a.slot, b.slot);
  keep(c.rank, a.rank, b.rank);
  keep(c.subrank, a.subrank, b.subrank);
  keep(c.bank_group, a.bank_group, b.bank_group);
  keep(c.bank, a.bank, b.bank);
  keep(c.row, a.row, b.row);
  keep(c.column, a.column, b.column);
  keep(c.device, a.device, b.device);
  keep(c.chip_select, a.chip_select, b.chip_select);
  keep(c.address, a.address, b.address);
  keep(c.page, a.page, b.page);
  if (a.label == b.label)
    c.label = a.label;
  return c;
}

// A fault being built from the errors given to add().
struct Builder {
  FaultMode mode = FaultMode::kUnknown;
  std::string dimm;
  std::optional<MemoryLocation> where;
  uint64_t first = 0, last = 0, errors = 0, uncorrected = 0;
  std::set<uint32_t> rows, columns;
  std::set<std::pair<uint32_t, uint32_t>> banks;
  const FaultError* worst_mce = nullptr;  // the machine check the advice is about

  void keep_worst(const FaultError* e) {
    if (e && (!worst_mce || (e->uncorrected && !worst_mce->uncorrected)))
      worst_mce = e;
  }
  void add(const FaultError& e) {
    if (e.mce)
      keep_worst(&e);
    where = where ? common(*where, e.location) : e.location;
    if (e.wall_ns && (!first || e.wall_ns < first))
      first = e.wall_ns;
    last = std::max(last, e.wall_ns);
    errors += e.count;
    if (e.uncorrected)
      uncorrected += e.count;
    if (e.location.row)
      rows.insert(*e.location.row);
    if (e.location.column)
      columns.insert(*e.location.column);
    if (e.location.bank || e.location.bank_group)
      banks.insert({e.location.bank_group.value_or(0), e.location.bank.value_or(0)});
  }
  void merge(const Builder& b) {
    keep_worst(b.worst_mce);
    where = where && b.where ? common(*where, *b.where) : (where ? where : b.where);
    if (b.first && (!first || b.first < first))
      first = b.first;
    last = std::max(last, b.last);
    errors += b.errors;
    uncorrected += b.uncorrected;
    rows.insert(b.rows.begin(), b.rows.end());
    columns.insert(b.columns.begin(), b.columns.end());
    banks.insert(b.banks.begin(), b.banks.end());
  }
  Fault done() const {
    Fault f;
    f.mode = mode;
    f.dimm = dimm;
    f.where = where.value_or(MemoryLocation{});
    f.first_ns = first;
    f.last_ns = last;
    f.errors = errors;
    f.uncorrected = uncorrected;
    f.rows = uint32_t(rows.size());
    f.columns = uint32_t(columns.size());
    f.banks = uint32_t(banks.size());
    f.advice = advice(f);
    return f;
  }
  std::string advice(const Fault& f) const {
    const std::string_view named = mode == FaultMode::kUnknown ? "" : fault_mode_name(mode);
    if (worst_mce) {
      MceDecoded d = *worst_mce->mce;
      d.location = worst_mce->location;  // with the DIMM's label when EDAC gave it
      return mce_advice(d, named);
    }
    std::string what = f.where.label.empty() ? f.dimm : "DIMM " + f.dimm;
    if (what.empty())
      what = f.where.page ? "the page at " + hex_u64(*f.where.page << 12) : "an unknown DIMM";
    if (!named.empty())
      return "Hardware event, not a software error: memory at " + what + " has a " +
             std::string(named) + " fault; plan to replace it.";
    if (f.uncorrected)
      return "Hardware event, not a software error: uncorrected errors in memory at " + what +
             "; plan to replace it.";
    return "Corrected and isolated; no action unless it repeats.";
  }
};

std::optional<uint32_t> rank_of(const MemoryLocation& l) {
  return l.rank ? l.rank : l.chip_select;
}

std::string channel_key(const MemoryLocation& l) {
  return opt_text(l.socket) + "/" + opt_text(l.controller) + "/" + opt_text(l.channel);
}

}  // namespace

std::string_view fault_mode_name(FaultMode mode) {
  return kModeNames[size_t(mode)];
}

std::string dimm_name(const MemoryLocation& l) {
  if (!l.label.empty())
    return l.label;
  std::string out;
  auto add = [&](const char* name, const std::optional<uint32_t>& v) {
    if (v)
      out += std::string(out.empty() ? "" : " ") + name + " " + std::to_string(*v);
  };
  add("socket", l.socket);
  add("controller", l.controller);
  add("channel", l.channel);
  add("slot", l.slot);
  if (!l.slot && !out.empty())
    add("rank", l.rank ? l.rank : l.chip_select);  // rank-level EDAC: no DIMM slot
  return out;
}

std::vector<FaultError> join_machine_checks(std::vector<FaultError> errors, uint64_t window_ns) {
  // EDAC errors by page, with their times.
  std::multimap<uint64_t, uint64_t> edac;
  for (const FaultError& e : errors)
    if (!e.machine_check && e.location.page)
      edac.emplace(*e.location.page, e.wall_ns);
  // In place: a second vector of every error would double the peak.
  std::erase_if(errors, [&](const FaultError& e) {
    if (!e.machine_check || !e.location.page)
      return false;
    auto [lo, hi] = edac.equal_range(*e.location.page);
    return std::any_of(lo, hi, [&](const auto& kv) {
      uint64_t t = kv.second;
      return !e.wall_ns || !t || (t > e.wall_ns ? t - e.wall_ns : e.wall_ns - t) <= window_ns;
    });
  });
  return errors;
}

std::vector<FaultError> label_machine_checks(std::vector<FaultError> errors) {
  // The labels EDAC gave, by socket, controller, channel and slot, each with
  // its rank: one pass over the errors, not one per machine check.
  using Dimm = std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>;
  auto dimm_of = [](const MemoryLocation& l) -> std::optional<Dimm> {
    if (!l.socket || !l.controller || !l.channel || !l.slot)
      return std::nullopt;
    return Dimm{*l.socket, *l.controller, *l.channel, *l.slot};
  };
  std::map<Dimm, std::set<std::pair<std::optional<uint32_t>, std::string>>> edac_labels;
  for (const FaultError& e : errors)
    if (auto dimm = dimm_of(e.location); dimm && !e.machine_check && !e.location.label.empty())
      edac_labels[*dimm].insert({e.location.rank, e.location.label});
  for (FaultError& m : errors) {
    MemoryLocation& l = m.location;
    std::optional<Dimm> dimm = dimm_of(l);
    if (!m.machine_check || !l.label.empty() || !dimm)
      continue;
    auto found = edac_labels.find(*dimm);
    if (found == edac_labels.end())
      continue;
    std::set<std::string_view> labels;
    for (const auto& [rank, label] : found->second)
      if (!l.rank || !rank || *l.rank == *rank)
        labels.insert(label);
    if (labels.size() == 1)
      l.label = std::string(*labels.begin());
  }
  return errors;
}

std::vector<Fault> group_faults(const std::vector<FaultError>& errors) {
  std::vector<Builder> built;
  // Errors with row and column, by DIMM, rank and bank; the others by DIMM
  // and rank (or by page when no DIMM is known).
  using BankKey = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<BankKey, std::vector<const FaultError*>> located;
  std::map<std::pair<std::string, std::string>, Builder> vague;
  for (const FaultError& e : errors) {
    const MemoryLocation& l = e.location;
    std::string dimm = dimm_name(l);
    if (l.row && l.column) {
      located[{dimm, opt_text(rank_of(l)), opt_text(l.bank_group), opt_text(l.bank)}].push_back(&e);
      continue;
    }
    std::string sub = !dimm.empty() ? opt_text(rank_of(l))
                      : l.page      ? "page " + std::to_string(*l.page)
                                    : "";
    Builder& b = vague[{dimm, sub}];
    b.dimm = dimm;
    b.add(e);
  }
  // Per bank: cell, row, column or bank.
  std::map<std::pair<std::string, std::string>, std::vector<Builder>> per_rank;
  for (const auto& [key, list] : located) {
    std::set<uint32_t> rows, columns;
    for (const FaultError* e : list) {
      rows.insert(*e->location.row);
      columns.insert(*e->location.column);
    }
    Builder b;
    b.dimm = std::get<0>(key);
    for (const FaultError* e : list)
      b.add(*e);
    if (rows.size() == 1 && columns.size() == 1)
      b.mode = FaultMode::kCell;
    else if (rows.size() == 1)
      b.mode = FaultMode::kRow;
    else if (columns.size() == 1)
      b.mode = FaultMode::kColumn;
    else
      b.mode = FaultMode::kBank;
    per_rank[{std::get<0>(key), std::get<1>(key)}].push_back(std::move(b));
  }
  // Three or more banks of one rank: a rank (or device) fault.
  for (auto& [key, banks] : per_rank) {
    if (banks.size() < 3) {
      for (Builder& b : banks)
        built.push_back(std::move(b));
      continue;
    }
    Builder r = std::move(banks[0]);
    for (size_t i = 1; i < banks.size(); i++)
      r.merge(banks[i]);
    r.mode = r.where && r.where->device ? FaultMode::kDevice : FaultMode::kRank;
    built.push_back(std::move(r));
  }
  // The errors without row and column: unknown, per DIMM and rank.
  std::map<std::string, std::vector<Builder>> per_channel;
  for (auto& [key, b] : vague) {
    b.mode = FaultMode::kUnknown;
    if (b.where && b.where->channel && !key.first.empty())
      per_channel[channel_key(*b.where)].push_back(std::move(b));
    else
      built.push_back(std::move(b));
  }
  // Unknown faults on two or more DIMMs of one channel: a channel fault.
  std::map<std::string, std::vector<Builder>> per_controller;
  for (auto& [key, list] : per_channel) {
    std::set<std::string> dimms;
    for (const Builder& b : list)
      dimms.insert(b.dimm);
    if (dimms.size() < 2) {
      for (Builder& b : list)
        built.push_back(std::move(b));
      continue;
    }
    Builder c = std::move(list[0]);
    for (size_t i = 1; i < list.size(); i++)
      c.merge(list[i]);
    c.mode = FaultMode::kChannel;
    c.dimm = dimm_name(c.where.value_or(MemoryLocation{}));
    per_controller[opt_text(c.where->socket) + "/" + opt_text(c.where->controller)].push_back(
        std::move(c));
  }
  for (auto& [key, list] : per_controller) {
    if (list.size() < 2) {
      for (Builder& b : list)
        built.push_back(std::move(b));
      continue;
    }
    Builder c = std::move(list[0]);
    for (size_t i = 1; i < list.size(); i++)
      c.merge(list[i]);
    c.mode = FaultMode::kController;
    c.dimm = dimm_name(c.where.value_or(MemoryLocation{}));
    built.push_back(std::move(c));
  }
  std::vector<Fault> faults;
  faults.reserve(built.size());
  for (const Builder& b : built)
    faults.push_back(b.done());
  std::stable_sort(faults.begin(), faults.end(),
                   [](const Fault& a, const Fault& b) { return a.errors > b.errors; });
  return faults;
}

namespace {

std::string seen(uint64_t ns) {
  if (!ns)
    return "unknown";
  std::string t = format_wall_time(ns);
  if (size_t dot = t.find('.'); dot != std::string::npos && t.ends_with(".000000000Z"))
    t = t.substr(0, dot) + "Z";
  return t;
}

}  // namespace

void print_faults_text(const std::vector<Fault>& faults, std::string& out) {
  for (const Fault& f : faults) {
    out += std::string(fault_mode_name(f.mode)) + " fault on " +
           (f.dimm.empty() ? std::string("an unknown DIMM") : f.dimm) + ": " +
           std::to_string(f.errors) + (f.errors == 1 ? " error" : " errors") + " (" +
           std::to_string(f.uncorrected) + " uncorrected), " + seen(f.first_ns) + " to " +
           seen(f.last_ns) + "\n";
    std::string where = describe_memory_location(f.where);
    if (f.where.page && where.empty())
      where = "page " + hex_u64(*f.where.page);
    out += "  " + (where.empty() ? std::string("location unknown") : where) + "; " +
           std::to_string(f.rows) + (f.rows == 1 ? " row, " : " rows, ") +
           std::to_string(f.columns) + (f.columns == 1 ? " column" : " columns") + "\n";
    if (!f.advice.empty())
      out += "  advice: " + f.advice + "\n";
  }
}

nlohmann::json fault_json(const Fault& f) {
  nlohmann::json j;
  j["mode"] = fault_mode_name(f.mode);
  j["dimm"] = f.dimm.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.dimm);
  j["errors"] = f.errors;
  j["uncorrected"] = f.uncorrected;
  j["first_seen"] = f.first_ns ? nlohmann::json(seen(f.first_ns)) : nlohmann::json(nullptr);
  j["last_seen"] = f.last_ns ? nlohmann::json(seen(f.last_ns)) : nlohmann::json(nullptr);
  j["rows"] = f.rows;
  j["columns"] = f.columns;
  j["banks"] = f.banks;
  j["location"] = memory_location_json(f.where);
  j["advice"] = f.advice;
  return j;
}

}  // namespace pp::mce

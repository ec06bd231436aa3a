#include "mce/tally.h"

#include <tuple>

namespace pp::mce {
namespace {

// Each grouping's names: the JSON list and the key of its rows, the text
// block's title and column (also the label of its line).
struct GroupingNames {
  const char* list;
  const char* key;
  const char* title;
  const char* column;
};

GroupingNames names_of(MceTallyGrouping grouping) {
  switch (grouping) {
    case MceTallyGrouping::kSeverity:
      return {"severities", "severity", "machine checks per severity", "severity"};
    case MceTallyGrouping::kBank:
      return {"banks", "bank", "machine checks per bank", "bank"};
    case MceTallyGrouping::kCpu:
      return {"cpus", "cpu", "machine checks per CPU", "cpu"};
    case MceTallyGrouping::kSocket:
      return {"sockets", "socket", "machine checks per socket", "socket"};
    case MceTallyGrouping::kErrorClass:
      break;
  }
  return {"error_classes", "error_class", "machine checks per error class", "class"};
}

// The row's key as text: the name, the number, or "?".
std::string key_text(const MceTallyRow& row) {
  if (row.name)
    return *row.name;
  if (row.number)
    return std::to_string(*row.number);
  return "?";
}

void append_padded(std::string& out, std::string_view text, size_t width) {
  if (text.size() < width)
    out.append(width - text.size(), ' ');
  out += text;
}

}  // namespace

bool MceTally::SeverityOrder::operator()(const std::string& a, const std::string& b) const {
  // Known severities by rank, mildest first; names the decoder does not
  // know after them, alphabetically.
  auto rank = [](const std::string& name) {
    int r = mce_severity_rank(name);
    return r < 0 ? INT32_MAX : r;
  };
  return std::forward_as_tuple(rank(a), a) < std::forward_as_tuple(rank(b), b);
}

bool MceTally::UnknownLast::operator()(const std::optional<uint32_t>& a,
                                       const std::optional<uint32_t>& b) const {
  if (a.has_value() != b.has_value())
    return a.has_value();
  return a.has_value() && *a < *b;
}

void MceTally::add(const MceDecoded& d, std::optional<uint32_t> record_cpu) {
  MceTallyKey key;
  key.severity = mce_severity_name(d.severity);
  key.bank = d.regs.bank;
  key.cpu = d.regs.cpu ? d.regs.cpu : record_cpu;
  key.socket = d.regs.socketid;
  key.error_class = mca_error_class_name(d.error_code.error_class);
  add(key);
}

void MceTally::add(const MceTallyKey& key, uint64_t count) {
  records_ += count;
  severities_[key.severity] += count;
  banks_[key.bank] += count;
  cpus_[key.cpu] += count;
  sockets_[key.socket] += count;
  error_classes_[key.error_class] += count;
}

void MceTally::clear() {
  *this = MceTally();
}

std::vector<MceTallyRow> MceTally::rows(MceTallyGrouping grouping) const {
  std::vector<MceTallyRow> out;
  auto names = [&out](const auto& counts) {
    for (const auto& [name, count] : counts)
      out.push_back({name, std::nullopt, count});
  };
  auto numbers = [&out](const Numbers& counts) {
    for (const auto& [number, count] : counts)
      out.push_back({std::nullopt, number, count});
  };
  switch (grouping) {
    case MceTallyGrouping::kSeverity:
      names(severities_);
      break;
    case MceTallyGrouping::kBank:
      numbers(banks_);
      break;
    case MceTallyGrouping::kCpu:
      numbers(cpus_);
      break;
    case MceTallyGrouping::kSocket:
      numbers(sockets_);
      break;
    case MceTallyGrouping::kErrorClass:
      names(error_classes_);
      break;
  }
  return out;
}

void print_mce_tally_text(const MceTally& tally, MceTallyLayout layout, std::string& out) {
  if (layout == MceTallyLayout::kBlocks) {
    if (tally.empty())
      return;
    out += "#\n# " + std::to_string(tally.records()) +
           (tally.records() == 1 ? " machine check\n" : " machine checks\n");
  }
  for (MceTallyGrouping grouping : kMceTallyGroupings) {
    const GroupingNames names = names_of(grouping);
    const std::vector<MceTallyRow> rows = tally.rows(grouping);
    if (layout == MceTallyLayout::kLines) {
      std::string line(names.column);
      line.resize(8, ' ');
      line += "  ";
      for (size_t i = 0; i < rows.size(); i++)
        line += (i ? "  " : "") + key_text(rows[i]) + "=" + std::to_string(rows[i].count);
      if (rows.empty())
        line += "-";
      out += line + "\n";
      continue;
    }
    out += "#\n# ";
    out += names.title;
    out += "\n#\n#    count  ";
    out += names.column;
    out += '\n';
    for (const MceTallyRow& row : rows) {
      append_padded(out, std::to_string(row.count), 10);
      out += "  " + key_text(row) + "\n";
    }
  }
}

nlohmann::ordered_json mce_tally_json(const MceTally& tally) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["records"] = tally.records();
  for (MceTallyGrouping grouping : kMceTallyGroupings) {
    const GroupingNames names = names_of(grouping);
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const MceTallyRow& row : tally.rows(grouping)) {
      nlohmann::ordered_json item = nlohmann::ordered_json::object();
      if (row.name)
        item[names.key] = *row.name;
      else if (row.number)
        item[names.key] = *row.number;
      else
        item[names.key] = nullptr;
      item["count"] = row.count;
      list.push_back(std::move(item));
    }
    j[names.list] = std::move(list);
  }
  return j;
}

}  // namespace pp::mce

// The keys a filter expression may name, as the command that reads it
// declares them: `top --filter` the fields of the events it shows and its
// own keys, `watch --match` any field of a record. A key may be ranked: its
// values are names on a scale, least to most severe, and compare by rank,
// not by alphabet (`severity >= ucna`).
//
//   filter::Keys keys;
//   keys.add("pid").add("comm").add("severity", &filter::mce_severity_scale());
//   PP_ASSIGN_OR_RETURN(auto e, filter::Expression::parse(text, keys, "--filter"));
//
//   filter::Keys::open("severity, a tracepoint field...")
//       .add("severity", &filter::mce_severity_scale());  // any name; severity ranked
//
// An expression naming a key the declaration lacks is refused where it
// names it, and the message lists the declared keys.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pp::filter {

// The names of a ranked key's values, least to most severe: name i has
// rank i.
class Scale {
 public:
  explicit Scale(std::vector<std::string_view> names) : names_(std::move(names)) {}
  // -1 for a name that is not on the scale.
  int rank(std::string_view name) const;
  // "invalid, corrected, ..., fatal", for messages.
  std::string names_text() const;

 private:
  std::vector<std::string_view> names_;
};

// The SDM's machine-check classes as mce/ ranks them: invalid < corrected <
// deferred < ucna < srao < srar < uncorrected < fatal
// (mce::mce_severities_by_rank()).
const Scale& mce_severity_scale();
// Linux's grades: no < deferred < ucna < keep < some < ao < uc < ar < panic
// (mce::KernelSeverity).
const Scale& kernel_severity_scale();

class Keys {
 public:
  // No key yet: add() declares them.
  Keys() = default;
  // Every name is a key (unranked unless add() says otherwise); `hint`
  // says what they are in messages ("severity, bank, a tracepoint field...").
  static Keys open(std::string hint);

  // Declares `name`, ranked by `scale` (null: unranked), which must outlive
  // the keys and every expression parsed with them. Declaring a name again
  // keeps its place; a scale given then ranks it, null leaves it as it was
  // (a tracepoint's own `severity` beside a machine check's stays ranked).
  Keys& add(std::string name, const Scale* scale = nullptr);

  // Whether `name` is a key.
  bool has(std::string_view name) const;
  // Its scale, or null when it is not ranked (or not a key).
  const Scale* scale(std::string_view name) const;
  bool is_open() const { return open_; }
  // The declared names, in the order they were declared.
  std::vector<std::string> names() const;
  // For messages: the open keys' hint, or the declared names joined by ", ".
  std::string describe() const;

 private:
  struct Key {
    std::string name;
    const Scale* scale = nullptr;
  };
  const Key* find(std::string_view name) const;

  std::vector<Key> keys_;
  bool open_ = false;
  std::string hint_;
};

}  // namespace pp::filter

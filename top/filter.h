// top's filter: which samples its tables count (`--filter`, the `f` key).
//
//   prev_comm==bash && next_pid>100
//   severity>=ucna && bank==7
//   sym~lock
//
// A filter is terms joined by "&&"; a term is KEY OP VALUE with OP one of
// == != < <= > >= ~ (~: the value's text contains VALUE). KEY is a field of
// the event (any tracepoint field by its format's name) or one of top's own
// keys (top_filter_keys()). VALUE is a number (decimal, or hex with 0x; a
// field that is a number compares as one) or text, quoted with ' or " when
// it holds spaces or an operator. A sample whose event has no such key does
// not match. Severities compare in the order of how bad they are
// (report/mce.h mce_severity_rank()), so "severity>=ucna" means ucna or worse.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::top {

// One key's value in one sample.
struct TopValue {
  bool is_number = false;
  bool is_signed = false;
  uint64_t number = 0;
  std::string text;  // numbers too, as shown
};

class TopFilter {
 public:
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kContains };
  struct Term {
    std::string key;
    Op op = Op::kEq;
    std::string value;
    std::optional<uint64_t> number;  // VALUE read as a number
    bool negative = false;           // VALUE was a negative number
  };

  // The empty filter matches everything. A usage error says where the
  // text stops making sense and what a term looks like.
  static Result<TopFilter> parse(std::string_view text);

  bool empty() const { return terms_.empty(); }
  const std::string& text() const { return text_; }
  const std::vector<Term>& terms() const { return terms_; }

  // Whether a sample matches: `get` gives a key's value, or nullopt when
  // the sample has no such key.
  bool match(const std::function<std::optional<TopValue>(std::string_view key)>& get) const;

 private:
  std::string text_;
  std::vector<Term> terms_;
};

// The keys top gives every sample beside its event's fields: "pid", "tid",
// "cpu", "comm"; "sym", "dso" for instruction-pointer events; "severity",
// "bank", "class" for machine checks.
std::span<const std::string_view> top_filter_keys();

}  // namespace pp::top

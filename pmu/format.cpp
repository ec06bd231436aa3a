#include "pmu/format.h"

#include <bit>

#include "base/strings.h"

namespace pp::pmu {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A decimal number of at most `max`, from `text` at `*pos`; advances `*pos`.
Result<unsigned> take_number(std::string_view text, size_t* pos, unsigned max,
                             std::string_view what) {
  size_t start = *pos;
  uint64_t value = 0;
  while (*pos < text.size() && is_digit(text[*pos])) {
    value = value * 10 + unsigned(text[*pos] - '0');
    if (value > max)
      return errorf(EINVAL, "'%.*s': %.*s %.*s... is larger than %u", int(text.size()), text.data(),
                    int(what.size()), what.data(), int(*pos + 1 - start), text.data() + start, max);
    ++*pos;
  }
  if (*pos == start) {
    std::string got = *pos < text.size() ? "'" + std::string(1, text[*pos]) + "'" : "the end";
    return errorf(EINVAL, "'%.*s': expected %.*s at column %zu, found %s", int(text.size()),
                  text.data(), int(what.size()), what.data(), start, got.c_str());
  }
  return unsigned(value);
}

}  // namespace

Result<Format> parse_format(std::string_view raw) {
  std::string_view text = trim(raw);
  constexpr const char* kExpected =
      "expected <config|config1|config2|config3|attr<index>>:<bits>, e.g. 'config:0-7' or "
      "'attr5:23'";
  size_t colon = text.find(':');
  if (text.empty())
    return errorf(EINVAL, "the format is empty; %s", kExpected);
  if (colon == std::string_view::npos)
    return errorf(EINVAL, "'%.*s': no ':' between target and bits; %s", int(text.size()),
                  text.data(), kExpected);

  Format format;
  format.target = std::string(text.substr(0, colon));
  if (format.target == "config") {
    format.word = kConfigWord;
  } else if (format.target == "config1") {
    format.word = kConfig1Word;
  } else if (format.target == "config2") {
    format.word = kConfig2Word;
  } else if (format.target == "config3") {
    format.word = kConfig3Word;
  } else if (starts_with(format.target, "attr") && format.target.size() > 4) {
    size_t pos = 4;
    PP_ASSIGN_OR_RETURN(format.word,
                        take_number(format.target, &pos, kMaxFormatWordSyntax, "attr index"));
    if (pos != format.target.size())
      return errorf(EINVAL, "'%.*s': target '%s' is not attr<decimal index>; %s", int(text.size()),
                    text.data(), format.target.c_str(), kExpected);
  } else {
    return errorf(EINVAL, "'%.*s': unknown target '%s'; %s", int(text.size()), text.data(),
                  format.target.c_str(), kExpected);
  }

  std::string_view bits = text.substr(colon + 1);
  size_t pos = 0;
  for (;;) {
    PP_ASSIGN_OR_RETURN(unsigned first, take_number(bits, &pos, 63, "a bit number"));
    unsigned last = first;
    if (pos < bits.size() && bits[pos] == '-') {
      ++pos;
      PP_ASSIGN_OR_RETURN(last, take_number(bits, &pos, 63, "a bit number"));
      if (last < first)
        return errorf(EINVAL, "'%.*s': range %u-%u is reversed", int(text.size()), text.data(),
                      first, last);
    }
    for (unsigned b = first; b <= last; b++)
      format.bits |= uint64_t(1) << b;
    if (pos == bits.size())
      break;
    if (bits[pos] != ',')
      return errorf(EINVAL,
                    "'%.*s': unexpected '%c' in the bit list; bits are 'N' or 'A-B' "
                    "separated by ','",
                    int(text.size()), text.data(), bits[pos]);
    ++pos;
  }
  return format;
}

uint64_t format_max_value(uint64_t bits) {
  int width = std::popcount(bits);
  return width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
}

void format_scatter(uint64_t bits, uint64_t value, uint64_t* word) {
  unsigned vbit = 0;
  for (unsigned fbit = 0; fbit < 64; fbit++) {
    if (!(bits & (uint64_t(1) << fbit)))
      continue;
    if (vbit < 64 && (value & (uint64_t(1) << vbit)))
      *word |= uint64_t(1) << fbit;
    vbit++;
  }
}

std::string format_bits_string(uint64_t bits) {
  std::string out;
  unsigned b = 0;
  while (b < 64) {
    if (!(bits & (uint64_t(1) << b))) {
      b++;
      continue;
    }
    unsigned end = b;
    while (end + 1 < 64 && (bits & (uint64_t(1) << (end + 1))))
      end++;
    if (!out.empty())
      out += ',';
    out += std::to_string(b);
    if (end != b)
      out += '-' + std::to_string(end);
    b = end + 1;
  }
  return out;
}

std::string format_string(const Format& format) {
  return format.target + ":" + format_bits_string(format.bits);
}

}  // namespace pp::pmu

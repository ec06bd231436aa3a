#include "base/wall_time.h"

#include <chrono>

namespace pp {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;
// The last second whose ns since the epoch fit in 64 bits (2554-07-21).
constexpr uint64_t kLastSecond = UINT64_MAX / kNsPerSecond;

bool is_leap(int year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int days_in_month(int year, int month) {
  constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && is_leap(year) ? 29 : kDays[month - 1];
}

// Leap years from year 1 to `year`, inclusive.
int64_t leaps_through(int64_t year) {
  return year / 4 - year / 100 + year / 400;
}

// Days from 1970-01-01 to a valid date (negative before it).
int64_t days_since_epoch(int year, int month, int day) {
  int64_t days = 365 * int64_t(year - 1970) + leaps_through(year - 1) - leaps_through(1969);
  for (int m = 1; m < month; m++)
    days += days_in_month(year, m);
  return days + day - 1;
}

// `count` decimal digits at `at` of `text`, or -1.
int digits(std::string_view text, size_t at, size_t count) {
  if (at + count > text.size())
    return -1;
  int value = 0;
  for (size_t i = at; i < at + count; i++) {
    if (text[i] < '0' || text[i] > '9')
      return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

Error not_a_time(std::string_view text) {
  return usage_error("'" + std::string(text) +
                     "' is not an ISO 8601 time such as 2026-12-03T14:05:00Z (or "
                     "2026-12-03T15:05:00.5+01:00)");
}

// "YYYY-MM-DD" at the start of `text` as days since the epoch; the caller
// has checked the separators.
Result<int64_t> read_date(std::string_view text, std::string_view whole) {
  int year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  if (year < 0 || month < 0 || day < 0)
    return not_a_time(whole);
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
    return usage_error("'" + std::string(whole) + "': there is no day " +
                       std::string(text.substr(0, 10)));
  return days_since_epoch(year, month, day);
}

// Seconds since the epoch and a fraction in ns into ns, when they fit.
Result<uint64_t> to_ns(int64_t seconds, uint64_t fraction_ns, std::string_view whole) {
  if (seconds < 0 || uint64_t(seconds) > kLastSecond ||
      (uint64_t(seconds) == kLastSecond && fraction_ns > UINT64_MAX % kNsPerSecond))
    return usage_error("'" + std::string(whole) +
                       "' is outside the times this program counts in ns since the epoch "
                       "(1970-01-01 to 2554-07-21)");
  return uint64_t(seconds) * kNsPerSecond + fraction_ns;
}

}  // namespace

std::string format_wall_time(uint64_t wall_ns) {
  std::string out;
  append_wall_time(out, wall_ns);
  return out;
}

void append_wall_time(std::string& text, uint64_t wall_ns) {
  // The civil date by <chrono>'s calendar (proleptic Gregorian, as gmtime),
  // the digits written here: no gmtime_r (which takes the time zone's lock),
  // strftime or snprintf for a text every live record carries.
  uint64_t secs = wall_ns / kNsPerSecond;
  uint64_t fraction = wall_ns % kNsPerSecond;
  std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::days{int64_t(secs / 86400)}}};
  uint64_t of_day = secs % 86400;
  char out[30];  // "YYYY-MM-DDTHH:MM:SS.NNNNNNNNNZ"
  auto put = [&out](size_t at, size_t width, uint64_t value) {
    for (size_t i = at + width; i > at; value /= 10)
      out[--i] = char('0' + value % 10);
  };
  put(0, 4, uint64_t(int(date.year())));  // 1970 to 2554: four digits
  out[4] = '-';
  put(5, 2, unsigned(date.month()));
  out[7] = '-';
  put(8, 2, unsigned(date.day()));
  out[10] = 'T';
  put(11, 2, of_day / 3600);
  out[13] = ':';
  put(14, 2, of_day / 60 % 60);
  out[16] = ':';
  put(17, 2, of_day % 60);
  out[19] = '.';
  put(20, 9, fraction);
  out[29] = 'Z';
  text.append(out, sizeof(out));
}

Result<uint64_t> parse_wall_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-')
    return usage_error("'" + std::string(text) + "' is not a date such as 2026-12-03");
  PP_ASSIGN_OR_RETURN(int64_t days, read_date(text, text));
  return to_ns(days * 86400, 0, text);
}

Result<uint64_t> parse_wall_time(std::string_view text) {
  if (text.size() < 19 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':')
    return not_a_time(text);
  PP_ASSIGN_OR_RETURN(int64_t days, read_date(text, text));
  int hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  if (hour < 0 || minute < 0 || second < 0)
    return not_a_time(text);
  if (hour > 23 || minute > 59 || second > 59)
    return usage_error("'" + std::string(text) + "': there is no time of day " +
                       std::string(text.substr(11, 8)));
  std::string_view rest = text.substr(19);
  uint64_t fraction = 0;
  if (!rest.empty() && rest.front() == '.') {
    size_t i = 1;
    for (uint64_t scale = kNsPerSecond / 10; i < rest.size() && rest[i] >= '0' && rest[i] <= '9';
         i++, scale /= 10)
      fraction += uint64_t(rest[i] - '0') * scale;
    if (i == 1)
      return not_a_time(text);
    rest = rest.substr(i);
  }
  int64_t offset = 0;  // seconds east of UTC
  if (!rest.empty() && rest != "Z") {
    int offset_hours = digits(rest, 1, 2), offset_minutes = digits(rest, 4, 2);
    if (rest.size() != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' ||
        offset_hours < 0 || offset_minutes < 0 || offset_hours > 23 || offset_minutes > 59)
      return not_a_time(text);
    offset =
        (int64_t(offset_hours) * 3600 + int64_t(offset_minutes) * 60) * (rest[0] == '+' ? 1 : -1);
  }
  int64_t seconds = days * 86400 + int64_t(hour) * 3600 + int64_t(minute) * 60 + second - offset;
  return to_ns(seconds, fraction, text);
}

}  // namespace pp

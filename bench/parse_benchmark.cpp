// The parse benchmark's program, built and run by bench/parse.bench.
//
//   parse_benchmark --corpus FILE [--seconds S] [--sysfs DIR] [--tracefs DIR]
//       loads the PMU model once, then parses every line of FILE (blank lines
//       and # comments skipped) over and over for about S seconds (default
//       2), and prints the rate:
//       "in-process: 84 strings, 131 events per pass; 25000 passes in 2.00 s:
//        1637000 events/s, 1050000 strings/s, 0.95 us/string"
//   parse_benchmark --once EVENTS [--sysfs DIR] [--tracefs DIR]
//       loads the model and parses EVENTS once, as a command does when it
//       starts: what the end-to-end comparison with perf times.
//
// Strings the model cannot resolve here (a tracepoint this kernel lacks) are
// left out of the rate and counted in the output.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "parse/parse_events.h"

int main(int argc, char** argv) {
  pp::pmu::Roots roots;
  std::string corpus, once;
  double seconds = 2.0;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "parse_benchmark: %s needs a value\n", arg.c_str());
      return 1;
    }
    std::string value = argv[++i];
    if (arg == "--corpus")
      corpus = value;
    else if (arg == "--once")
      once = value;
    else if (arg == "--seconds")
      seconds = std::stod(value);
    else if (arg == "--sysfs")
      roots.sysfs = value;
    else if (arg == "--tracefs")
      roots.tracefs = value;
    else {
      std::fprintf(stderr, "parse_benchmark: unknown option %s\n", arg.c_str());
      return 1;
    }
  }
  auto model = pp::pmu::Model::load(roots);
  if (!model.ok()) {
    std::fprintf(stderr, "parse_benchmark: %s\n", model.error().message().c_str());
    return 1;
  }
  if (!once.empty()) {
    auto events = pp::parse::parse_events(once, *model);
    if (!events.ok()) {
      std::fprintf(stderr, "%s\n", events.error().message().c_str());
      return 1;
    }
    return 0;
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "usage: parse_benchmark --corpus FILE [--seconds S] | --once EVENTS\n");
    return 1;
  }

  std::ifstream in(corpus);
  if (!in) {
    std::fprintf(stderr, "parse_benchmark: cannot read %s\n", corpus.c_str());
    return 1;
  }
  std::vector<std::string> strings;
  size_t skipped = 0, events_per_pass = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    auto events = pp::parse::parse_events(line, *model);
    if (!events.ok()) {
      skipped++;
      continue;
    }
    events_per_pass += events->size();
    strings.push_back(line);
  }
  if (strings.empty()) {
    std::fprintf(stderr, "parse_benchmark: no string of %s parses here\n", corpus.c_str());
    return 1;
  }

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  size_t passes = 0, checksum = 0;
  double elapsed = 0;
  do {
    for (const std::string& s : strings) {
      auto events = pp::parse::parse_events(s, *model);
      checksum += events.ok() ? events->size() : 0;
    }
    passes++;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  if (checksum != passes * events_per_pass) {
    std::fprintf(stderr, "parse_benchmark: results changed between passes\n");
    return 1;
  }
  double n_strings = double(passes * strings.size());
  std::printf(
      "in-process: %zu strings, %zu events per pass (%zu strings left out: not on this "
      "machine); %zu passes in %.2f s: %.0f events/s, %.0f strings/s, %.2f us/string\n",
      strings.size(), events_per_pass, skipped, passes, elapsed,
      double(passes * events_per_pass) / elapsed, n_strings / elapsed, elapsed * 1e6 / n_strings);
  return 0;
}

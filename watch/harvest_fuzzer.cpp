// libFuzzer target: any bytes as /dev/kmsg's records through watch's harvest
// (the "pri,seq,ts,flags;text" reader, the joining of continuation
// fragments, the kernel-log parser, the keys and the relog rule). The harvest
// must turn malformed records into notes, never crash or read outside its
// input. The bytes go to a file the harvest reads as its kmsg (pstore and
// systemd-pstore's archive skipped). Seeds: tests/fuzz/corpus/harvest_fuzzer/
// (a relog as Debian's 6.1 wrote it under QEMU, with and without the
// fragment split off, and malformed records).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "watch/harvest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The file each input is written to, removed when the fuzzer exits.
struct InputFile {
  std::string path = "/tmp/harvest_fuzzer." + std::to_string(getpid());
  ~InputFile() { unlink(path.c_str()); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const InputFile input;
  const std::string& path = input.path;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    return 0;
  size_t written = std::fwrite(data, 1, size, f);
  std::fclose(f);
  if (written != size)
    return 0;
  pp::watch::HarvestOptions options;
  options.kmsg = path;
  options.pstore.clear();
  options.systemd_pstore.clear();
  auto h = pp::watch::harvest(options);
  if (h.ok())
    for (const pp::watch::WatchRecord& r : h->records)
      (void)r.key.size();
  return 0;
}

// Fills a watch history (watch/history.h) with N memory errors as
// `perf persistent watch --db` stores them: ras:mc_event records on 64
// DIMMs (4 sockets x 2 controllers x 4 channels x 2 slots), most of them
// on a few faulty rows, columns and cells, the rest scattered, one in ten
// with the machine check the kernel logged for it. For bench/ras.bench.
//
//   ras_history_fill FILE N
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "mce/decode.h"
#include "watch/history.h"
#include "watch/record.h"

namespace {

int fill(const char* path, uint64_t n) {
  using namespace pp;
  auto history = watch::History::open(path, {});
  if (!history.ok()) {
    std::fprintf(stderr, "%s\n", history.error().message().c_str());
    return 1;
  }
  uint64_t seed = 12345;
  auto next = [&seed]() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  for (uint64_t i = 0; i < n; i++) {
    uint64_t dimm = next() % 64, kind = next() % 10;
    uint32_t socket = uint32_t(dimm / 16), imc = uint32_t(dimm / 8 % 2),
             channel = uint32_t(dimm / 2 % 4), slot = uint32_t(dimm % 2);
    // 0-3: a row fault of the DIMM, 4-5: a column, 6: a cell, else anywhere.
    uint32_t rank = uint32_t(kind < 7 ? 0 : next() % 2);
    uint32_t bank = uint32_t(kind < 7 ? 1 : next() % 4);
    uint32_t row = uint32_t(kind < 4    ? 0x1000 + dimm
                            : kind < 6  ? next() % 0x20000
                            : kind == 6 ? 0x2000 + dimm
                                        : next() % 0x20000);
    uint32_t col = uint32_t(kind < 4    ? (next() % 128) * 8
                            : kind < 6  ? 0x3f8
                            : kind == 6 ? 0x40
                                        : (next() % 128) * 8);
    uint64_t address = (dimm << 32) | (uint64_t(row) << 13) | (uint64_t(col) << 3);
    uint64_t wall = (1796285030ull + i) * 1000000000ull;
    char label[64], detail[192];
    std::snprintf(label, sizeof(label), "CPU_SrcID#%u_MC#%u_Chan#%u_DIMM#%u", socket, imc, channel,
                  slot);
    std::snprintf(detail, sizeof(detail),
                  "err_code:0x0000:0x009f socket:%u imc:%u rank:%u bg:0 ba:%u row:0x%x col:0x%x",
                  socket, imc, rank, bank, row, col);
    watch::WatchRecord r;
    r.event = "mc_event";
    r.tracepoint = "ras:mc_event";
    r.time = i + 1;
    r.wall_ns = wall;
    r.cpu = int32_t(socket);
    r.pid = 0;
    r.tid = 0;
    r.fields = {{"error_type", 0},
                {"msg", "memory read error"},
                {"label", label},
                {"error_count", 1},
                {"mc_index", socket * 2 + imc},
                {"top_layer", channel},
                {"middle_layer", slot},
                {"lower_layer", -1},
                {"address", address},
                {"grain_bits", 5},
                {"syndrome", 0},
                {"driver_detail", detail}};
    r.key = "edac:" + std::to_string(i);
    if (!(*history)->record(r, watch::record_json(r)).ok())
      return 1;
    if (i % 10 == 0) {
      watch::WatchRecord m;
      m.event = "mce_record";
      m.tracepoint = "mce:mce_record";
      m.wall_ns = wall;
      m.cpu = int32_t(socket);
      m.pid = 0;
      m.tid = 0;
      mce::MceRegisters regs;
      regs.status = 0x8c0000400001009f;
      regs.addr = address;
      regs.bank = 13 + imc * 4 + channel % 3;
      regs.cpu = uint32_t(socket);
      m.mce = mce::decode_mce(regs);
      m.key = "mce:" + std::to_string(i);
      if (!(*history)->record(m, watch::record_json(m)).ok())
        return 1;
    }
    if (i % 10000 == 9999 && !(*history)->tick(0, true).ok())
      return 1;
  }
  return (*history)->tick(0, true).ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ras_history_fill FILE N\n");
    return 1;
  }
  try {
    return fill(argv[1], std::strtoull(argv[2], nullptr, 10));
  } catch (const std::exception& e) {  // nlohmann::json's, or bad_alloc
    std::fprintf(stderr, "ras_history_fill: %s\n", e.what());
    return 1;
  }
}

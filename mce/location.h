// Where in memory an error happened, as far as a record tells: the layers
// from the socket down to the DRAM cell, each present only when a source
// gave it. Three sources fill it: a machine check's MCi_MISC and bank number
// on a model whose memory controller layout is known (mce/), an EDAC
// ras:mc_event record (its location layers and DIMM label), and an Intel
// EDAC kernel log line (CPU_SrcID#0_MC#0_Chan#1_DIMM#0, channel/slot/rank/
// row/col). The fault model groups errors by these layers, so a layer left
// absent is never guessed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace pp::mce {

struct MemoryLocation {
  std::optional<uint32_t> socket;      // package (SrcID / socket id)
  std::optional<uint32_t> controller;  // memory controller (iMC, UMC instance)
  std::optional<uint32_t> channel;     // channel within the controller
  std::optional<uint32_t> slot;        // DIMM slot within the channel
  std::optional<uint32_t> rank;
  std::optional<uint32_t> subrank;
  std::optional<uint32_t> bank_group;
  std::optional<uint32_t> bank;
  std::optional<uint32_t> row;
  std::optional<uint32_t> column;
  std::optional<uint32_t> device;       // failed DRAM device (x4/x8 chip)
  std::optional<uint32_t> chip_select;  // AMD UMC chip select
  std::optional<uint64_t> address;      // physical address
  std::optional<uint64_t> page;         // physical page frame (address >> 12)
  std::string label;                    // DIMM label (EDAC dimm_label), empty if unknown
  std::optional<uint32_t> ecc_mode;     // Intel 10nm iMC MCi_MISC[62:59], raw
  std::optional<bool> transient;        // Intel 10nm iMC MCi_MISC[63]: a transient error

  bool operator==(const MemoryLocation&) const = default;
};

// A MemoryLocation as JSON, the "location" object of perf-persistent-decode(1)
// for a machine check, an EDAC error and a fault alike: each layer present
// as a number, address and page as hex strings, the label as a string (bytes
// that are not UTF-8 as \xNN), ecc_mode a number, transient a boolean;
// absent layers left out.
nlohmann::json memory_location_json(const MemoryLocation& location);
// "socket 0, controller 0, channel 1, slot 0, rank 3, row 0x1d26, column 0x140"
// (the layers present, in order), or "" when none.
std::string describe_memory_location(const MemoryLocation& location);

}  // namespace pp::mce

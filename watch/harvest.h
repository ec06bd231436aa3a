// The machine checks the kernel logged before the watcher attached: this
// boot's kernel log (/dev/kmsg) and a previous boot's panic text kept in
// pstore (/sys/fs/pstore/dmesg-*), decoded into WatchRecords the sinks take
// like live ones, each with an identity key so that a restart, or the same
// error seen live and in the log, stores it once.
//
//   HarvestOptions options;                 // /dev/kmsg and /sys/fs/pstore
//   PP_ASSIGN_OR_RETURN(Harvest h, harvest(options));
//   for (const WatchRecord& r : h.records)  // pstore's first, then kmsg's
//     ...;                                  // origin kPstore or kKmsg
//   for (const std::string& note : h.notes)
//     ...;  // "pstore: read /sys/fs/pstore/dmesg-ramoops-0: 1 machine check(s)"
//
// What is read:
// - kmsg: every record still in the kernel's ring, from the oldest (also
//   those `dmesg -C` cleared, which lseek(SEEK_DATA) would skip), until
//   EAGAIN (a regular file or FIFO in tests: until EOF or EAGAIN). Each
//   read() gives one record:
//
//     2,512,1820736,-;mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 1: be00000000000150
//      SUBSYSTEM=...                    (continuation lines: skipped)
//
//   "pri,seq,ts_us,flags[,caller];text", the text with \xNN escapes; a
//   record whose flags say 'c' (a fragment) is joined to the one before. EPIPE
//   means the kernel overwrote records before they were read: noted.
// - pstore: every dmesg-* file in the directory (dmesg-ramoops-0,
//   dmesg-efi-..., ...), whole; a file that cannot be read, or one pstore
//   could not decompress (*.enc.z), is noted and skipped. Every mce-* file
//   (mce-erst-<id>: the struct mce the kernel wrote to ERST as it
//   panicked, mce/erst.h) is one record of origin "erst", read before the
//   dmesg files; one shorter than the 6.1 struct mce is refused with a note.
// - systemd-pstore's archive (/var/lib/systemd/pstore, where
//   systemd-pstore.service moves pstore's files at boot when pstore.conf
//   says Storage=external, the default): the same files at its top and in
//   each of its directories (<id>/dmesg-erst-..., <id>/dmesg.txt, which it
//   joins from a record's parts), "pstore_file" being
//   "systemd-pstore/<id>/<name>". Storage=journal or none: a note.
// Records with the same key (one error from ERST, from a previous boot's
// trace buffer, from the panic text and from the next boot's relog) are
// one record, at the place of the first: the one whose registers are the
// most whole (ERST's, then the previous boot's mce_record, then pstore's
// text, then kmsg's), its fields' "origins" listing every origin that saw
// it, its own first: ["erst", "pstore", "kmsg"], ["previous-boot",
// "pstore"].
// Only what the kernel's machine-check code wrote is parsed: a kmsg record
// of the kernel's facility (pri >> 3 == 0, which no write to /dev/kmsg can
// claim) whose text begins "mce: [Hardware Error]: ", and in pstore a line
// "<pri>[ seconds] mce: [Hardware Error]: ..." of the same facility. A line
// that mentions "[Hardware Error]" anywhere else (a cgroup or task name the
// kernel quotes in a message of its own, a user's write to /dev/kmsg) is
// counted in a note and ignored.
// The texts go through mce::parse_mce_log(); each machine check becomes
// one WatchRecord: tracepoint "mce:mce_record", the registers' CPU, wall_ns
// from the log's TIME (seconds), mce = mce::decode_mce_log_entry() (origin
// kernel log, the vendor from the registers, the kernel's verdict line
// compared), fields
// {"pstore_file": "dmesg-ramoops-0"} or {"kmsg_seq": 512}, "raw_line": the
// header line as read (kmsg: the whole record, "0,512,...;mce: ..."), and
// "kernel_message" when the log gave the kernel's grading ("Processor
// context corrupt").
//
// A machine check whose banks survive a warm reset (QEMU's Intel model;
// real servers too) is logged again by the next boot's kernel, without
// MCG_STATUS.MCIP and with a new TIME. A kmsg entry without MCIP whose CPU,
// bank, status, addr and misc equal those of a pstore entry of the same
// harvest is that error: it gets the pstore entry's key, and a note says so.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"
#include "watch/record.h"

namespace pp::watch {

inline constexpr const char* kSystemdPstore = "/var/lib/systemd/pstore";

struct HarvestOptions {
  std::string kmsg = "/dev/kmsg";         // "" skips it
  std::string pstore = "/sys/fs/pstore";  // "" skips it
  // systemd-pstore's archive (kSystemdPstore), and its config file
  // (drop-ins in <conf>.d/); "" skips the archive. Read only: nothing there
  // is moved or removed. watch reads it with the default pstore only.
  std::string systemd_pstore;
  std::string systemd_pstore_conf = "/etc/systemd/pstore.conf";
  // The previous boots' trace buffers the broker kept
  // (persistent/previous_boot.h); "" skips them.
  std::string kept_dir;
};

struct Harvest {
  // pstore's records first (file name order), then kmsg's (log order); two
  // records may share a key (the relog above): the first one wins.
  std::vector<WatchRecord> records;
  // What was read and what was skipped, one line each, prefixed "kmsg: "
  // or "pstore: ": files read and their machine-check counts, sources
  // absent, unreadable or compressed files, overwritten kmsg records,
  // malformed machine-check lines, relogged errors.
  std::vector<std::string> notes;
};

// Harvests the sources `options` names. A source that does not exist
// (no /dev/kmsg, pstore not mounted or empty) is a note; one that exists but
// cannot be opened (EACCES, EPERM: kernel.dmesg_restrict, pstore's root-only
// files) is an error (kind kRefused) naming it and the option that skips it.
Result<Harvest> harvest(const HarvestOptions& options);

// The pstore record among `records` that `regs` logs again (the relog rule
// above: no MCIP, the same CPU, bank, status, addr and misc), or nullptr.
// The watcher applies it to live mce_record samples too, in case the
// boot-time relog fires after the persistent event was made: give such a
// sample the returned record's key.
const WatchRecord* relogged_error(const std::vector<WatchRecord>& records,
                                  const mce::MceRegisters& regs);

// The records of one kernel-log text (a pstore file's, or kmsg's texts one
// line each), without the relog rule. `origin` and `source` set the origin
// and the field ("pstore_file" for kPstore; ignored for others). For
// kPstore only the kernel's machine-check lines count (above); other texts
// are taken as the kernel's. Pure.
std::vector<WatchRecord> records_from_log(std::string_view text, Origin origin,
                                          const std::string& source,
                                          std::vector<std::string>& notes);

// The machine checks and other RAS records (mce:mce_record, the RAS
// tracepoints of mce/ras_events.h) of every previous boot's trace buffer
// kept under `kept_dir`, origin kPreviousBoot, in each copy's time order
// (copies oldest first); other records (sched_switch, the clock markers) are
// left out. A machine check's key is mce_key() (the same error seen live in
// its own boot, or by ERST, is one record); another record's
// "previous-boot:<the boot that kept it>:<tracepoint>:<cpu>:<time>".
// wall_ns: a machine check's own TIME, else from the broker's clock markers
// (0 before the first). fields: the tracepoint's, and "kept_copy": the copy's
// directory name. A copy that cannot be read is a note ("previous-boot: ").
std::vector<WatchRecord> previous_boot_records(const std::string& kept_dir,
                                               std::vector<std::string>& notes);

// The identity key of a machine check from its registers, the same for the
// same error wherever it was seen (a live mce_record sample, kmsg, pstore)
// and across restarts and boots: CPU, bank, status, then addr and misc when
// nonzero (the kernel's log omits them when zero), then the TIME seconds
// (mce_record's walltime, the same m->time the log prints) when nonzero;
// hex without 0x or leading zeros, absent registers left out:
//
//   "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796285030"
std::string mce_key(const mce::MceRegisters& regs);

}  // namespace pp::watch

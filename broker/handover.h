// The new broker's side of `perf persistent daemon --replace`
// (Documentation/protocol.txt, HANDOVER): it asks the running broker for
// every event's and context stream's per-CPU fd and its listening socket,
// page by page (SCM_RIGHTS carries at most kMaxFdsPerMessage at once), maps
// each buffer read-only at the size the old broker maps it, and only then
// tells the old broker to go. The buffers so never lose their last mapping:
// samples survive, and the new broker adopts the same events (BrokerConfig::
// handed_over).
//
//   PP_ASSIGN_OR_RETURN(Handover h, Handover::receive(dir, kernel));
//   PP_RETURN_IF_ERROR(h.finish());          // the old broker exits
//   config.handed_over = &h.fds;             // then Broker::start()
#pragma once

#include <optional>
#include <vector>

#include "base/result.h"
#include "persistent/broker_client.h"
#include "persistent/run_dir.h"
#include "sys/kernel.h"
#include "sys/systemd.h"

namespace pp::broker {

class Handover {
 public:
  // ECONNREFUSED (kind broker-down) when no broker runs.
  static Result<Handover> receive(const persistent::RunDir& dir, sys::Kernel& kernel);

  // Tells the old broker the handover is complete: it releases its lock and
  // exits. Returns its pid.
  Result<int> finish();

  std::vector<sys::NamedFd> fds;       // by name (persistent/fd_store.h)
  std::vector<sys::Mapping> mappings;  // held until the new broker maps them too
  size_t events = 0;                   // buffers handed over (fds less the socket)

 private:
  explicit Handover(persistent::BrokerConnection connection) : connection_(std::move(connection)) {}
  std::optional<persistent::BrokerConnection> connection_;
};

}  // namespace pp::broker

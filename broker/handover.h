// The new broker's side of `perf persistent daemon --replace`
// (Documentation/protocol.txt, HANDOVER): it asks the running broker for
// every event's and context stream's per-CPU fd, page by page (SCM_RIGHTS
// carries at most kMaxFdsPerMessage at once), showing the token only the run
// directory's owner can read (RunDir::handover_token), maps each buffer
// read-only at the size the old broker maps it, and only then tells the old
// broker to release its lock; once it holds the lock it takes the listening
// socket, and the old broker exits. The buffers so never lose their last mapping:
// samples survive, and the new broker adopts the same events (BrokerConfig::
// handed_over).
//
//   PP_ASSIGN_OR_RETURN(Handover h, Handover::receive(dir, kernel));
//   PP_RETURN_IF_ERROR(h.finish());          // the old broker releases its lock
//   config.handed_over = &h.fds;             // then Broker::start(), which
//   config.take_listener = [&] { return h.take_listener(); };  // takes the socket
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

  // Tells the old broker the fds are taken: it releases its lock. Returns
  // its pid.
  Result<int> finish();

  // Once this process holds the run directory's lock (Broker::start, through
  // BrokerConfig::take_listener): the old broker's listening socket, which it
  // hands to the lock's holder alone, and then exits.
  Result<sys::Fd> take_listener();

  std::vector<sys::NamedFd> fds;       // by name (persistent/fd_store.h)
  std::vector<sys::Mapping> mappings;  // held until the new broker maps them too
  size_t events = 0;                   // buffers handed over (fds less the socket)

 private:
  explicit Handover(persistent::BrokerConnection connection) : connection_(std::move(connection)) {}
  std::optional<persistent::BrokerConnection> connection_;
};

}  // namespace pp::broker

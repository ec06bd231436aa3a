// The broker backend as its clients see it: requests over the broker's
// socket (Documentation/protocol.txt), fds received with SCM_RIGHTS.
//
// One BrokerBackend is one connection, opened at the first request and kept:
// a reader that keeps it while it reads is counted as the reader of every
// event it opened.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "persistent/backend.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"
#include "sys/unix_socket.h"

namespace pp::persistent {

// One connection to a broker.
class BrokerConnection {
 public:
  // ECONNREFUSED when no broker answers at the socket (none there, or a
  // stale one); EACCES when the run directory or socket is not ours to use.
  static Result<BrokerConnection> connect(const RunDir& dir, int timeout_ms = 30000);

  // Sends a request and waits for its reply: the reply's body, or the Error
  // the broker answered with. Descriptors that came with the reply go to
  // `fds` (closed when null). The request carries a deadline (now plus the
  // timeout, unless it has one): a broker that gets to it only after the
  // client stopped waiting does not carry it out. ETIMEDOUT when no reply
  // came in time; its message says that the request may have been carried
  // out just before, and how to look.
  Result<json> call(const Request& request, std::vector<sys::Fd>* fds = nullptr);

 private:
  BrokerConnection(sys::UnixSocket socket, std::string where, int timeout_ms)
      : socket_(std::move(socket)), where_(std::move(where)), timeout_ms_(timeout_ms) {}

  sys::UnixSocket socket_;
  std::string where_;
  int timeout_ms_;
  FrameReader reader_{FrameKind::kReply, kMaxReplyPayload};
};

class BrokerBackend final : public Backend {
 public:
  explicit BrokerBackend(BackendOptions options);

  std::string_view name() const override { return "broker"; }
  Result<std::vector<EventInfo>> list(bool verbose, std::string* note) override;
  Result<EventInfo> create(const CreateRequest& request, std::string* note) override;
  Result<EventInfo> kill(std::string_view reference) override;
  Result<Buffer> open(uint64_t id, int cpu) override;
  std::vector<EventInfo> down_events() override;

 private:
  // The connection; with `start` set, a broker is started when none answers.
  Result<BrokerConnection*> connection(bool start);
  Status start_broker();
  // Asks systemd to start the broker's unit and waits for its socket.
  Status start_through_systemd();
  // Connects once the broker answers, waiting up to `timeout_ms`.
  Status wait_for_broker(int timeout_ms, const std::function<bool()>& give_up,
                         const std::string& why_not);

  BackendOptions options_;
  RunDir dir_;
  std::optional<BrokerConnection> connection_;
};

}  // namespace pp::persistent

// A broker serving on a thread of the test process: what the broker unit
// tests start, stop and start again (a restart), as the daemon would run it
// (header only; no library code uses it).
//
//   BrokerThread broker;
//   ASSERT_TRUE(broker.start(config).ok());
//   ... clients talk to config.run_dir ...
//   broker.stop();  // serve() returns; its status is broker.served()
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "broker/broker.h"

namespace pp::broker::testing {

class BrokerThread {
 public:
  BrokerThread() = default;
  BrokerThread(const BrokerThread&) = delete;
  BrokerThread& operator=(const BrokerThread&) = delete;
  ~BrokerThread() { stop(); }

  // Broker::start(config), then serve() on a new thread until stop().
  Status start(BrokerConfig config) {
    auto broker = Broker::start(std::move(config));
    if (!broker.ok())
      return broker.error();
    if (::pipe2(stop_, O_CLOEXEC) != 0)
      return error_from_errno(errno, "pipe2");
    broker_ = std::move(*broker);
    served_ = ok_status();
    thread_ = std::thread([this] { served_ = broker_->serve(stop_[0]); });
    return ok_status();
  }

  // Wakes serve() through its stop pipe, joins the thread and drops the
  // broker (its socket and lock go, as when the daemon exits). Idempotent.
  void stop() {
    if (!thread_.joinable())
      return;
    [[maybe_unused]] ssize_t n = ::write(stop_[1], "x", 1);
    thread_.join();
    ::close(stop_[0]);
    ::close(stop_[1]);
    stop_[0] = stop_[1] = -1;
    broker_.reset();
  }

  bool running() const { return thread_.joinable(); }
  Broker* operator->() const { return broker_.get(); }
  // What serve() returned, once stopped.
  const Status& served() const { return served_; }

 private:
  std::unique_ptr<Broker> broker_;
  int stop_[2] = {-1, -1};
  std::thread thread_;
  Status served_;
};

}  // namespace pp::broker::testing

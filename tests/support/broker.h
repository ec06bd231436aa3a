// The broker a test started in its private run directory, and how to stop
// it: a broker outlives the test that started it (it detaches), so every
// fixture that may start one stops it in TearDown.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>

namespace pp::testing {

// The pid in <run_dir>/broker.lock, or 0 when there is none.
pid_t broker_pid(const std::string& run_dir);

// Stops the broker serving `run_dir`, if one runs: sends `signal` and waits
// up to 5 s for it to go, then SIGKILLs it. Returns false when it had to
// (the broker ignored `signal`); the caller decides whether that fails the
// test.
bool stop_broker(const std::string& run_dir, int signal = SIGTERM);

}  // namespace pp::testing

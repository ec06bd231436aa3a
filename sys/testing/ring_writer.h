// The ring writer moved to sys/ring_writer.h (the broker's ftrace backend
// writes with it); the tests and the fake kernel keep their spelling.
#pragma once

#include "sys/ring_writer.h"

namespace pp::sys::testing {

using sys::RingWriter;

}  // namespace pp::sys::testing

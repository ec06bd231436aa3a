#include "watch/ndjson.h"

#include <signal.h>
#include <unistd.h>

#include <ext/stdio_filebuf.h>
#include <gtest/gtest.h>
#include <sstream>

#include "base/json.h"

namespace pp::watch {
namespace {

// Counts flushes, keeps what was written.
class CountingBuf final : public std::stringbuf {
 public:
  int syncs = 0;

 protected:
  int sync() override {
    syncs++;
    return std::stringbuf::sync();
  }
};

WatchRecord sample_record() {
  WatchRecord r;
  r.event = "getppid";
  r.tracepoint = "syscalls:sys_enter_getppid";
  r.time = 1000;
  r.wall_ns = 1796285030500000000ull;
  r.cpu = 0;
  r.pid = r.tid = 7;
  r.comm = "sh";
  r.fields = {{"__syscall_nr", 110}};
  r.key = "k";
  return r;
}

TEST(NdjsonSink, OneLinePerRecordFlushedAtTick) {
  CountingBuf buf;
  std::ostream out(&buf);
  NdjsonSink sink(out);
  WatchRecord r = sample_record();
  auto j = record_json(r);
  ASSERT_TRUE(sink.record(r, j).ok());
  ASSERT_TRUE(sink.record(r, j).ok());
  EXPECT_EQ(buf.syncs, 0) << "lines are flushed at the tick, not per record";
  ASSERT_TRUE(sink.tick(0, false).ok());
  EXPECT_EQ(buf.syncs, 1);
  std::string line = dump_json(j) + "\n";
  EXPECT_EQ(buf.str(), line + line);
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per record";
}

TEST(NdjsonSink, LostNoticeLine) {
  std::ostringstream out;
  NdjsonSink sink(out);
  ASSERT_TRUE(sink.lost(LostNotice{"mce_record", 1, 12, 1796285030500000000ull}).ok());
  ASSERT_TRUE(sink.lost(LostNotice{"mce_record", 2, 3, 0}).ok());
  EXPECT_EQ(out.str(),
            "{\"lost\":{\"event\":\"mce_record\",\"cpu\":1,\"records\":12,"
            "\"wall_time\":\"2026-12-03T08:03:50.500000000Z\"}}\n"
            "{\"lost\":{\"event\":\"mce_record\",\"cpu\":2,\"records\":3}}\n");
}

TEST(NdjsonSink, ClosedPipeIsAnOutputError) {
  struct sigaction ignore = {};
  struct sigaction old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // the reader went away
  Status s, after;
  {
    // Destroyed before SIGPIPE is restored: its destructor flushes again.
    __gnu_cxx::stdio_filebuf<char> buf(fds[1], std::ios::out);
    std::ostream out(&buf);
    NdjsonSink sink(out);
    WatchRecord r = sample_record();
    s = sink.record(r, record_json(r));
    if (s.ok())
      s = sink.tick(0, false);
    after = sink.lost(LostNotice{"e", 0, 1, 0});
  }
  sigaction(SIGPIPE, &old, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kOutput);
  EXPECT_EQ(s.error().code(), EPIPE);
  EXPECT_NE(s.error().message().find("--ndjson"), std::string::npos) << s.error().message();
  // And it stays failed: nothing after the first failure is taken silently.
  EXPECT_FALSE(after.ok());
}

}  // namespace
}  // namespace pp::watch

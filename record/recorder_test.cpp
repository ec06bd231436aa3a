#include "record/recorder.h"

#include <gtest/gtest.h>

#include "record/summary_json.h"

namespace pp::record {
namespace {

// How a recording ends decides record's exit status (perf-persistent(1),
// EXIT STATUS): the error's kind, else COMMAND's own status, never 127.
TEST(RecordOutcome, CommandsOwnStatusPassesThroughExcept127) {
  RecordResult r;
  EXPECT_FALSE(final_error(r));
  EXPECT_EQ(exit_status(r), 0);
  r.command_status = 3;
  EXPECT_FALSE(final_error(r));
  EXPECT_EQ(exit_status(r), 3);
  r.command_status = 127;
  ASSERT_TRUE(final_error(r));
  EXPECT_EQ(final_error(r)->kind(), ErrorKind::kCommand);
  EXPECT_EQ(exit_status(r), 6);
}

TEST(RecordOutcome, ACommandThatCouldNotRunIsStatus6) {
  RecordResult r;
  r.command_error = Error(ErrorKind::kCommand, ENOENT, "running '/no/such': No such file");
  EXPECT_EQ(exit_status(r), 6);
  EXPECT_EQ(final_error(r)->message(), "running '/no/such': No such file");
}

TEST(RecordOutcome, OnlyAnOutputFailureIsStatus5AndSaysWhatToDo) {
  RecordResult r;
  r.output = "x.data";
  r.command_status = 0;
  r.stopped_error = Error(ErrorKind::kOutput, ENOSPC, "writing x.data: No space left on device");
  EXPECT_EQ(exit_status(r), 5);
  EXPECT_NE(final_error(r)->message().find("x.data is complete up to the last record written: "
                                           "free space or record to another file system (-o)"),
            std::string::npos)
      << final_error(r)->message();
  // A failed wait for the buffers is not the disk's fault: no advice to free
  // space, and the status of a refusal.
  r.stopped_error = Error(EBADF, "waiting for the buffers: Bad file descriptor");
  EXPECT_EQ(exit_status(r), 2);
  EXPECT_EQ(final_error(r)->message().find("free space"), std::string::npos);
}

// A lean event's record that could not be completed to the file's layout
// (sys::relayout_record) is left out of the file; the summary says how many,
// and whose.
TEST(RecordSummary, SaysWhatWasLeftOut) {
  RecordResult r;
  r.output = "x.data";
  EXPECT_EQ(record_summary(r).find("left out"), std::string::npos);
  r.left_out = {{"persistent/gp/", 3, "a record of 12 bytes does not decode"},
                {"persistent/mce/", 1, "too long"}};
  std::string summary = record_summary(r);
  EXPECT_NE(summary.find("[ perf persistent record: 3 records of persistent/gp/ could not be "
                         "completed to perf record's layout and were left out (the first: a "
                         "record of 12 bytes does not decode); every other record is in the "
                         "file ]\n"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("[ perf persistent record: 1 record of persistent/mce/ could not be "
                         "completed to perf record's layout and was left out (the first: too "
                         "long)"),
            std::string::npos)
      << summary;
  EXPECT_EQ(summary_json(r)["lost"]["not_completed"], 4);
}

}  // namespace
}  // namespace pp::record

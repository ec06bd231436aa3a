#include "persistent/list_printer.h"

#include <gtest/gtest.h>
#include <sstream>

#include "base/json.h"

namespace pp::persistent {
namespace {

constexpr int64_t kNow = 1700000000;

EventInfo event(uint64_t id, std::string name, std::string text) {
  EventInfo e;
  e.id = id;
  e.name = std::move(name);
  e.event = std::move(text);
  e.backend = "broker";
  e.cpus = {0, 1};
  e.pages = 128;
  e.page_size = 4096;
  e.created = e.buffer_start = kNow - 192;
  return e;
}

TEST(ListPrinter, EmptyRegistryIsTheHeaderOnly) {
  std::ostringstream out, notes;
  print_list_text(out, notes, {}, false, kNow);
  EXPECT_EQ(out.str(), "ID  NAME  EVENT  CPUS  BUFFER  BACKEND  AGE\n");
  EXPECT_EQ(notes.str(), "");
  std::ostringstream json;
  print_list_json(json, {});
  EXPECT_EQ(json.str(), "{\"events\":[]}\n");
}

// A kernel event's name comes from sysfs and may hold any byte; the attr
// words are bit patterns.
TEST(ListPrinter, JsonEscapesInvalidUtf8AndWritesAttrWordsInHex) {
  EventInfo e = event(7, "odd\xff", "sched:\xc3");
  e.attr.attr.config = 0x8000000000000001;
  std::ostringstream out;
  print_list_json(out, {e});
  json doc = json::parse(out.str(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << out.str();
  EXPECT_EQ(doc["events"][0]["name"], "odd\\xff");
  EXPECT_EQ(doc["events"][0]["event"], "sched:\\xc3");
  EXPECT_EQ(doc["events"][0]["attr"][1], "0x8000000000000001");
  EXPECT_EQ(doc["events"][0]["id"], 7) << "ids stay numbers";
}

TEST(ListPrinter, ColumnsAlign) {
  std::vector<EventInfo> events = {event(1, "sys_enter_getppid", "syscalls:sys_enter_getppid"),
                                   event(12, "ctxsw", "sched:sched_switch")};
  events[1].cpus = {0};
  events[1].pages = 16;
  events[1].created = events[1].buffer_start = kNow - 2 * 86400 - 3 * 3600;
  std::ostringstream out, notes;
  print_list_text(out, notes, events, false, kNow);
  EXPECT_EQ(out.str(),
            "ID  NAME               EVENT                       CPUS  BUFFER  BACKEND  AGE\n"
            "1   sys_enter_getppid  syscalls:sys_enter_getppid  0-1   512KiB  broker   3m12s\n"
            "12  ctxsw              sched:sched_switch          0     64KiB   broker   2d03h\n");
}

TEST(ListPrinter, VerboseAddsClockReadersAndCounts) {
  std::vector<EventInfo> events = {event(1, "a", "syscalls:sys_enter_getppid")};
  events[0].counts = std::vector<CpuCount>{{0, 1000}, {1, 3}};
  events[0].readers = 2;
  events[0].kept = true;
  events[0].attr.attr.use_clockid = 1;
  events[0].attr.attr.clockid = 7;
  EventInfo kernel = event(106, "mce_record", "");
  kernel.backend = "kernel";
  kernel.created = kernel.buffer_start = 0;  // unknown
  kernel.counts = std::vector<CpuCount>{};
  events.push_back(kernel);
  std::ostringstream out, notes;
  print_list_text(out, notes, events, true, kNow);
  EXPECT_EQ(
      out.str(),
      "ID   NAME        EVENT                       CPUS  BUFFER  BACKEND  AGE    CONTEXT  CLOCK  "
      "   READERS  KEPT  COUNTS\n"
      "1    a           syscalls:sys_enter_getppid  0-1   512KiB  broker   3m12s  -        "
      "boottime  2        yes   0:1000,1:3\n"
      "106  mce_record  -                           0-1   512KiB  kernel   -      -        -  "
      "       -        -     -\n");
}

// The context stream: hidden from a plain list (text and JSON), shown by -v,
// and each event's CONTEXT names it.
TEST(ListPrinter, ContextStreamsOnlyWithVerbose) {
  std::vector<EventInfo> events = {event(1, "a", "syscalls:sys_enter_getppid"),
                                   event(2, "b", "syscalls:sys_enter_getppid")};
  EventInfo stream = event(1099511627776, "[context]", "dummy");
  stream.is_context = true;
  stream.pages = 32;
  events[0].context = stream.id;
  events.push_back(stream);
  std::ostringstream plain, verbose, notes;
  print_list_text(plain, notes, events, false, kNow);
  EXPECT_EQ(plain.str().find("context"), std::string::npos) << plain.str();
  print_list_text(verbose, notes, events, true, kNow);
  EXPECT_EQ(verbose.str(),
            "ID  NAME       EVENT                       CPUS  BUFFER  BACKEND  AGE    "
            "CONTEXT    CLOCK  READERS  KEPT  COUNTS\n"
            "1   a          syscalls:sys_enter_getppid  0-1   512KiB  broker   3m12s  "
            "[context]  -      -        -     -\n"
            "2   b          syscalls:sys_enter_getppid  0-1   512KiB  broker   3m12s  "
            "-          -      -        -     -\n"
            "-   [context]  context stream              0-1   128KiB  broker   3m12s  "
            "-          -      -        -     -\n");
  std::ostringstream json_plain, json_verbose;
  print_list_json(json_plain, events, false);
  print_list_json(json_verbose, events, true);
  EXPECT_EQ(json::parse(json_plain.str())["events"].size(), 2u);
  json all = json::parse(json_verbose.str())["events"];
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0]["context"], 1099511627776u);
  EXPECT_TRUE(all[1]["context"].is_null());
  EXPECT_EQ(all[2]["role"], "context");
  EXPECT_EQ(all[0]["role"], "event");
}

// Which buffers were lost, when and why (text notes and JSON
// "buffers_lost"), and failed and optional events with their reasons.
TEST(ListPrinter, RestartedAndFailedEventsGetNotes) {
  std::vector<EventInfo> events = {event(1, "a", "x:y"), event(2, "b", "x:z"),
                                   event(3, "c", "mce:mce_record"), event(4, "d", "x:w")};
  events[0].buffer_start = kNow - 10;
  events[1].state = "failed";
  events[1].error = "no tracepoint x:z";
  events[2].state = "unavailable";
  events[2].optional = true;
  events[2].error = "no tracepoint mce:mce_record";
  events[3].buffer_start = kNow - 5;
  events[3].lost_reason = "broker restart: nothing kept its buffers mapped";
  std::ostringstream out, notes;
  print_list_text(out, notes, events, false, kNow);
  EXPECT_EQ(out.str(),
            "ID  NAME  EVENT           CPUS  BUFFER  BACKEND  AGE\n"
            "1   a     x:y             0-1   512KiB  broker   3m12s*\n"
            "2   b     x:z             0-1   failed  broker   3m12s\n"
            "3   c     mce:mce_record  0-1   n/a     broker   3m12s\n"
            "4   d     x:w             0-1   512KiB  broker   3m12s*\n");
  EXPECT_EQ(notes.str(),
            "* a: the buffers restarted 10s ago (broker restart); samples from before are gone\n"
            "b: failed: no tracepoint x:z (tried again at every reload: 'perf persistent daemon "
            "--reload')\n"
            "c: unavailable on this host (optional in the config): no tracepoint mce:mce_record\n"
            "* d: the buffers restarted 5s ago (broker restart: nothing kept its buffers mapped); "
            "samples from before are gone\n");
  std::ostringstream js;
  print_list_json(js, events, false);
  json j = json::parse(js.str())["events"];
  EXPECT_EQ(j[0]["buffers_lost"]["time"], kNow - 10);
  EXPECT_EQ(j[0]["buffers_lost"]["reason"], "broker restart");
  EXPECT_EQ(j[3]["buffers_lost"]["reason"], "broker restart: nothing kept its buffers mapped");
  EXPECT_TRUE(j[1]["buffers_lost"].is_null());
  EXPECT_EQ(j[2]["optional"], true);
  EXPECT_EQ(j[2]["state"], "unavailable");
}

// An unavailable optional event's reason is the broker's parse error, four
// lines with its caret: one line without -v, all of it with -v.
TEST(ListPrinter, AnUnavailableEventIsOneLineWithoutVerbose) {
  std::vector<EventInfo> events(1);
  events[0].id = 1;
  events[0].name = "mce_record";
  events[0].event = "mce:mce_record";
  events[0].state = "unavailable";
  events[0].optional = true;
  events[0].error =
      "event syntax error: 'mce:mce_record'\n                     \\___ unknown tracepoint "
      "'mce:mce_record'\nError: /sys/kernel/tracing/events/mce/mce_record does not exist.\n"
      "Hint: 'perf list tracepoint' lists this kernel's tracepoints";
  std::ostringstream out, notes;
  print_list_text(out, notes, events, false, kNow);
  EXPECT_EQ(notes.str(),
            "mce_record: unavailable on this host (optional in the config): "
            "/sys/kernel/tracing/events/mce/mce_record does not exist. ('perf persistent list -v' "
            "says all)\n");
  std::ostringstream vout, vnotes;
  print_list_text(vout, vnotes, events, true, kNow);
  EXPECT_NE(vnotes.str().find("Hint: 'perf list tracepoint'"), std::string::npos) << vnotes.str();
}

TEST(ListPrinter, AgesAndSizes) {
  EXPECT_EQ(format_age(0), "0s");
  EXPECT_EQ(format_age(59), "59s");
  EXPECT_EQ(format_age(60), "1m00s");
  EXPECT_EQ(format_age(3599), "59m59s");
  EXPECT_EQ(format_age(3600), "1h00m");
  EXPECT_EQ(format_age(86399), "23h59m");
  EXPECT_EQ(format_age(90000), "1d01h");
  EXPECT_EQ(format_age(-5), "-");
  EXPECT_EQ(format_bytes(524288), "512KiB");
  EXPECT_EQ(format_bytes(4096), "4KiB");
  EXPECT_EQ(format_bytes(256 << 20), "256MiB");
  EXPECT_EQ(format_bytes(1536), "1536B");
  EXPECT_EQ(format_bytes(0), "0B");
}

// kill --all's status: the first failure's, but "no such event" wins, so a
// script can tell "something was not there" from any other refusal.
TEST(KillReport, ExitStatusAndJson) {
  KillReport report;
  EXPECT_EQ(report.exit_status(), 0);
  EventInfo killed;
  killed.id = 3;
  killed.name = "ctxsw";
  report.killed.push_back(killed);
  EXPECT_EQ(report.exit_status(), 0);
  report.failed.emplace_back("7", Error(EACCES, "not allowed"));
  EXPECT_EQ(report.exit_status(), 2);
  report.failed.emplace_back("nosuch", not_found_error("no persistent event 'nosuch'"));
  report.failed.emplace_back("8", Error(EBUSY, "busy"));
  EXPECT_EQ(report.exit_status(), 4);

  std::ostringstream out;
  print_kill_json(out, report);
  auto doc = parse_json(out.str(), "kill's JSON");
  ASSERT_TRUE(doc.ok()) << out.str();
  EXPECT_EQ((*doc)["exit_status"], 4);
  EXPECT_EQ((*doc)["killed"][0]["name"], "ctxsw");
  ASSERT_EQ((*doc)["errors"].size(), 3u);
  EXPECT_EQ((*doc)["errors"][1]["ref"], "nosuch");
  EXPECT_EQ((*doc)["errors"][1]["error"]["kind"], "not-found");
  EXPECT_EQ((*doc)["errors"][1]["error"]["exit_status"], 4);
}

}  // namespace
}  // namespace pp::persistent

/*
 * test_cli.c - larkctl as a user types it: emit, tail, get, describe,
 * snapshot, replay and --verify, against a real broker and a running
 * lark-catalog. Exit codes: 0 ok, 1 error, 2 usage.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "events.h"
#include "bed.h"
#include "natsd.h"
#include "platform.h"
#include "proc.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], larkctl[512];
static pid_t catalog, reports_pid;
static char out[1 << 16], err[8192];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "cli", 1000);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  catalog = lt_must_start("lark-catalog", srv.url, dir, "views/catalog",
                          "catalog.log", NULL);
  lt_larkctl_env(srv.url, dir);
}

static void
teardown(void) {
  lt_kill(catalog, SIGTERM);
  if (reports_pid > 0)
    lt_kill(reports_pid, SIGTERM);
  reports_pid = 0;
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 120);

/* Run larkctl with up to 6 arguments (the first NULL ends them); its
 * exit code, stdout in out and stderr in err. */
#define ctl(...)                                                               \
  lt_runl(out, sizeof out, err, sizeof err, larkctl, __VA_ARGS__, (char *)NULL)

static void
append_sample(const char *name, uint64_t prev, const char *type,
              uint64_t *seq) {
  char subject[64], id[33];
  snprintf(subject, sizeof subject, "lark.ev.sample.%s", name);
  bus_event ev;
  lt_event(&ev, id, type, "alice", 1, prev, NULL);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_CHECK, seq, NULL), 0,
               "%s", bus_last_error());
}

/* Wait until `get` shows what we expect (the catalog is asynchronous). */
static int
wait_for(const char *needle) {
  for (int i = 0; i < 100; i++) {
    if (ctl("get", "samples", "-o", "json", NULL, NULL) == 0 &&
        strstr(out, needle))
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

Test(cli, usage_and_errors_have_their_exit_codes) {
  cr_expect_eq(ctl(NULL, NULL, NULL, NULL, NULL, NULL), 2);
  cr_expect_eq(ctl("no-such-command", NULL, NULL, NULL, NULL, NULL), 2);
  cr_expect_eq(ctl("emit", "only-job", NULL, NULL, NULL, NULL), 2);
  cr_expect_eq(ctl("emit", "Bad_Name", "metric", NULL, NULL, NULL), 1);
  cr_expect(strstr(err, "not a job name"), "stderr: %s", err);
  cr_expect_eq(ctl("emit", "train-1", "metric", "--data", "[1,2]", NULL), 1);
  cr_expect_eq(ctl("replay", "no-such-view", NULL, NULL, NULL, NULL), 2);
  cr_expect_eq(ctl("tail", "lark.node.x", NULL, NULL, NULL, NULL), 2);
}

/* lark-reports, which moves `emit`'s reports to LARK_RUNS. */
static void
start_reports(void) {
  char data[512], log[512];
  snprintf(data, sizeof data, "%s/views/reports", dir);
  snprintf(log, sizeof log, "%s/reports.log", dir);
  reports_pid = lt_start_service("lark-reports", srv.url, data, log, NULL);
  cr_assert(reports_pid > 0);
}

/* Wait until `tail subject` shows needle (lark-reports is asynchronous). */
static int
wait_tail(const char *subject, const char *needle) {
  for (int i = 0; i < 300; i++) {
    if (ctl("tail", subject, "-o", "json", NULL, NULL) == 0 &&
        strstr(out, needle))
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

Test(cli, emit_then_tail_shows_the_report) {
  start_reports();
  cr_assert_eq(ctl("emit", "train-1", "metric", "--data",
                   "{\"step\":100,\"reward\":0.5}", NULL),
               0, "stderr: %s", err);
  cr_expect(strstr(out, "lark.rep.admin.train-1 seq 1"), "out: %s", out);
  cr_assert(wait_tail("lark.run.train-1", "run.reported"), "out: %s", out);
  cr_expect(strstr(out, "\"actor\":\"admin\""), "out: %s", out);
  cr_expect(strstr(out, "\"type\":\"run.reported\""), "out: %s", out);
  cr_expect(strstr(out, "\"kind\":\"metric\""), "out: %s", out);
  cr_expect(strstr(out, "\"step\":100"), "out: %s", out);
  cr_expect(strstr(out, "\"subject\":\"lark.run.train-1\""), "out: %s", out);
}

Test(cli, tail_merges_streams_and_filters_types) {
  uint64_t s;
  start_reports();
  append_sample("a", 0, "sample.created", &s);
  cr_assert_eq(ctl("emit", "train-1", "progress", NULL, NULL, NULL), 0);
  cr_assert(wait_tail("lark.run.train-1", "run.reported"), "out: %s", out);
  append_sample("a", s, "sample.updated", &s);
  cr_assert_eq(ctl("tail", NULL, NULL, NULL, NULL, NULL), 0, "%s", err);
  char *created = strstr(out, "sample.created");
  char *report = strstr(out, "run.reported");
  char *updated = strstr(out, "sample.updated");
  cr_assert(created && report && updated, "out: %s", out);
  cr_expect(created < report && report < updated, "time order: %s", out);
  cr_assert_eq(ctl("tail", "--type", "sample.*", NULL, NULL, NULL), 0);
  cr_expect(!strstr(out, "run.reported"), "out: %s", out);
  cr_expect(strstr(out, "sample.updated"), "out: %s", out);
  cr_assert_eq(ctl("tail", "lark.ev.>", "--from-seq", "2", NULL, NULL), 0);
  cr_expect(!strstr(out, "sample.created"), "out: %s", out);
}

Test(cli, get_and_describe_read_the_catalog) {
  uint64_t s;
  append_sample("a", 0, "sample.created", &s);
  append_sample("a", s, "sample.updated", &s);
  append_sample("b", 0, "sample.created", &s);
  cr_assert(wait_for("\"id\":\"b\""), "catalog never showed b: %s %s", out,
            err);
  cr_assert_eq(ctl("get", "samples", NULL, NULL, NULL, NULL), 0);
  cr_expect(strstr(out, "NAME"), "out: %s", out);
  cr_assert_eq(ctl("describe", "sample", "a", "-o", "json", NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "\"events\":2"), "out: %s", out);
  cr_expect(strstr(out, "sample.updated"), "out: %s", out);
  cr_expect_eq(ctl("describe", "sample", "zzz", NULL, NULL, NULL), 1);
}

Test(cli, replay_verify_snapshot_and_time_travel) {
  uint64_t s;
  append_sample("a", 0, "sample.created", &s);
  usleep(200 * 1000);
  char cut[32];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(cut, sizeof cut, "%ld.%03ld", (long)now.tv_sec,
           now.tv_nsec / 1000000);
  sleep(1);
  append_sample("b", 0, "sample.created", &s);
  cr_assert(wait_for("\"id\":\"b\""), "%s", err);
  cr_assert_eq(ctl("replay", "catalog", "--verify", NULL, NULL, NULL), 0,
               "out: %s err: %s", out, err);
  cr_expect(strstr(out, "verified"), "out: %s", out);

  char snap[512], outdir[512];
  snprintf(snap, sizeof snap, "%s/snap1", dir);
  snprintf(outdir, sizeof outdir, "%s/rebuilt", dir);
  cr_assert_eq(ctl("snapshot", "catalog", "--out", snap, NULL, NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "seq 2"), "out: %s", out);
  cr_assert_eq(
      ctl("replay", "catalog", "--from-snapshot", snap, "--out", outdir), 0,
      "%s", err);
  cr_expect(strstr(out, "rebuilt to seq 2"), "out: %s", out);

  cr_assert_eq(ctl("get", "samples", "--at", cut, "-o", "json"), 0, "%s", err);
  cr_expect(strstr(out, "\"id\":\"a\""), "out: %s", out);
  cr_expect(!strstr(out, "\"id\":\"b\""), "b did not exist yet: %s", out);
}

Test(cli, get_at_any_valid_time_answers_truly_and_refuses_the_rest) {
  uint64_t s = 0;
  append_sample("a", 0, "sample.created", &s);
  cr_assert(wait_for("\"id\":\"a\""), "%s", err);
  /* before the first event: the empty platform, not the live one */
  const char *before[] = {"1970-01-01T00:00:00Z", "1970-01-01", "0",
                          "1969-12-31T23:59:59Z", "0001-01-01T00:00:00Z"};
  for (size_t i = 0; i < sizeof before / sizeof *before; i++) {
    cr_assert_eq(ctl("get", "samples", "--at", before[i], "-o", "json"), 0,
                 "%s: %s", before[i], err);
    cr_expect(!strstr(out, "\"id\":\"a\""), "%s: %s", before[i], out);
  }
  /* after the last event, even past 2262: the latest state */
  const char *after[] = {"2262-04-12T00:00:00Z", "2300-01-01T00:00:00Z",
                         "9999-12-31T23:59:59.999+14:00"};
  for (size_t i = 0; i < sizeof after / sizeof *after; i++) {
    cr_assert_eq(ctl("get", "samples", "--at", after[i], "-o", "json"), 0,
                 "%s: %s", after[i], err);
    cr_expect(strstr(out, "\"id\":\"a\""), "%s: %s", after[i], out);
  }
  /* not times: usage errors that say so */
  const char *bad[] = {"2026-02-30",
                       "2026-02-30T00:00:00Z",
                       "2023-02-29",
                       "2026-13-01",
                       "2026-01-01T24:00:00Z",
                       "2026-01-01T10:00:00+5:30",
                       "yesterday",
                       "-5m",
                       "nan",
                       "2026-01-01T10:00:00Zjunk"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(ctl("get", "samples", "--at", bad[i], NULL, NULL), 2,
                 "%s accepted", bad[i]);
    cr_expect(strstr(err, "not a time"), "%s: %s", bad[i], err);
  }
}

Test(cli, tail_refuses_what_is_not_a_sequence) {
  uint64_t s = 0;
  append_sample("a", 0, "sample.created", &s);
  const char *bad[] = {"-5", "0", "abc", "5x", "", "99999999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(ctl("tail", "--from-seq", bad[i], NULL, NULL, NULL), 2,
                 "--from-seq '%s' accepted: %s", bad[i], out);
    cr_expect(strstr(err, "not a stream sequence"), "%s: %s", bad[i], err);
  }
  cr_expect_eq(ctl("tail", "--since", "2026-02-30", NULL, NULL, NULL), 2);
  cr_assert_eq(ctl("tail", "--from-seq", "1", "-o", "json", NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "sample.created"), "out: %s", out);
}

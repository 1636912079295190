/*
 * test_reports.c - users' run reports through lark-reports, against a real
 * broker: a report on lark.rep.<user>.<job> lands on lark.run.<job> with
 * that user as the actor whatever the body says; LARK_RUNS and
 * LARK_REPORTS refuse messages over their size limits; malformed reports,
 * other event types and bad job names are refused and counted without
 * holding back the reports after them; with LARK_RUNS gone the reports
 * wait in the work queue (retried, not refused) and all land once it is
 * back; lark-reports killed with SIGKILL and started again loses and
 * doubles nothing; a burst over several jobs lands complete and in order;
 * a batch holding a report already stored (a batch redelivered after it
 * landed, or one id twice) lands each report once, in order.
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
#include "proc.h"
#include "reports.h"
#include "stream.h"

static lt_natsd srv;
static bus_conn *conn, *app_conn;
static reports *app;
static char dir[256];

static void
setup(void) {
  /* a duplicate window longer than any test: nothing may land twice */
  lt_bed_up(&srv, &conn, dir, sizeof dir, "reports", 120000);
}

static void
teardown(void) {
  reports_stop(app);
  app = NULL;
  bus_conn_close(app_conn);
  app_conn = NULL;
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(reports, .init = setup, .fini = teardown, .timeout = 240);

/* The appender in this process, on a connection of its own. */
static void
start_app(void) {
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = srv.url;
  cr_assert_eq(bus_conn_open(&app_conn, &o), 0, "%s", bus_last_error());
  reports_opts ro;
  reports_opts_init(&ro);
  cr_assert_eq(reports_start(app_conn, &ro, &app), 0, "%s", bus_last_error());
}

static void
pack_report(msgpack_sbuffer *sb, const char *kind, int64_t i, size_t pad) {
  msgpack_packer pk;
  msgpack_sbuffer_clear(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "kind", kind);
  bus_pack_str(&pk, "values");
  size_t nstr = (pad + 999) / 1000;
  msgpack_pack_map(&pk, (uint32_t)(1 + nstr));
  bus_pack_kv_int(&pk, "i", i);
  static char filler[1000];
  memset(filler, 'x', sizeof filler);
  for (size_t k = 0; k < nstr; k++) {
    char key[16];
    int n = snprintf(key, sizeof key, "pad%zu", k);
    msgpack_pack_str_with_body(&pk, key, (size_t)n);
    msgpack_pack_str_with_body(&pk, filler, sizeof filler);
  }
}

/* A run.reported on subject with the given body actor; its id in id. */
static int
send_rep(const char *subject, const char *type, const char *actor, int64_t i,
         size_t pad, char id[33], int async) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_report(&sb, "metric", i, pad);
  if (strcmp(type, "run.reported")) { /* another type: its own data */
    msgpack_packer pk;
    msgpack_sbuffer_clear(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 1);
    bus_pack_kv_str(&pk, "text", "x");
  }
  bus_event ev;
  lt_event(&ev, id, type, actor, 1, 0, &sb);
  int rc = async
               ? bus_append_async(conn, subject, &ev, BUS_APPEND_NOCHECK)
               : bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

typedef struct got {
  size_t n;
  int64_t i[8192];
  char actor[64], cause[33];
  int actors_same;
} got;

static void
add_run(const bus_event *ev, void *arg) {
  got *g = arg;
  if (g->n >= 8192)
    return;
  if (g->n && strcmp(g->actor, ev->actor))
    g->actors_same = 0;
  snprintf(g->actor, sizeof g->actor, "%s", ev->actor);
  snprintf(g->cause, sizeof g->cause, "%s", ev->cause);
  g->i[g->n++] = bus_obj_int(bus_obj_get(&ev->data, "values"), "i", -1);
}

/* Every run.reported on lark.run.<job>, in stream order. */
static void
read_runs(const char *job, got *g) {
  memset(g, 0, sizeof *g);
  g->actors_same = 1;
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_RUNS", &last), 0);
  if (!last)
    return;
  cr_assert_eq(lt_read_runs(conn, job, 5000, 1, add_run, g), 0, "%s",
               bus_last_error());
}

/* Wait (up to secs) until lark.run.<job> holds n reports. */
static int
wait_runs(const char *job, size_t n, int secs, got *g) {
  for (int t = 0; t < secs * 10; t++) {
    read_runs(job, g);
    if (g->n >= n)
      return 1;
    usleep(100000);
  }
  return 0;
}

static uint64_t
stream_msgs_on(const char *stream) {
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(conn, stream, &last), 0);
  return last;
}

Test(reports, actor_is_the_subjects_user_whatever_the_body_says) {
  static got g;
  char id[33];
  start_app();
  const char *forged[] = {"pod:train-0-0", "lark-scheduler", "admin"};
  for (int k = 0; k < 3; k++)
    cr_assert_eq(send_rep("lark.rep.alice.job-a", "run.reported", forged[k], k,
                          0, id, 0),
                 0, "%s", bus_last_error());
  cr_assert(wait_runs("job-a", 3, 30, &g), "landed %zu of 3", g.n);
  cr_expect_eq(g.n, 3);
  cr_expect(g.actors_same);
  cr_expect_str_eq(g.actor, "alice");
  cr_expect_str_eq(g.cause, id, "the cause is the report's id");
  for (int k = 0; k < 3; k++)
    cr_expect_eq(g.i[k], k);
}

Test(reports, streams_refuse_messages_over_their_limit) {
  char id[33];
  cr_assert_eq(bus_stream_msg_max("LARK_RUNS"), 128 * 1024);
  cr_assert_gt(bus_stream_msg_max("LARK_RUNS"),
               bus_stream_msg_max("LARK_REPORTS"));
  cr_assert_gt(bus_stream_msg_max("LARK_EVENTS"), BUS_MAX_PAYLOAD);
  cr_assert_gt(bus_stream_msg_max("LARK_NODE_gpu-1"), BUS_MAX_PAYLOAD);
  /* 200 KiB: valid for the schema, too big for both streams */
  int rc =
      send_rep("lark.run.big", "run.reported", "alice", 0, 200 * 1000, id, 0);
  cr_expect_lt(rc, 0, "LARK_RUNS took a 200 KiB report");
  rc = send_rep("lark.rep.alice.big", "run.reported", "alice", 0, 200 * 1000,
                id, 0);
  cr_expect_lt(rc, 0, "LARK_REPORTS took a 200 KiB report");
  /* the largest a report may be still passes */
  cr_expect_eq(send_rep("lark.rep.alice.big", "run.reported", "alice", 0,
                        100 * 1000, id, 0),
               0, "%s", bus_last_error());
  cr_expect_eq(
      send_rep("lark.run.big", "run.reported", "alice", 0, 100 * 1000, id, 0),
      0, "%s", bus_last_error());
  /* settings already there are brought to the new limits */
  cr_assert_eq(lt_streams(conn, 120000), 0, "%s", bus_last_error());
}

Test(reports, bad_reports_are_refused_and_do_not_block_the_rest) {
  static got g;
  char id[33];
  start_app();
  cr_assert_eq(bus_conn_publish(conn, "lark.rep.alice.job-b", "\xc1junk", 5),
               0);
  cr_assert_eq(
      send_rep("lark.rep.alice.Bad_Job", "run.reported", "x", 1, 0, id, 0), 0);
  cr_assert_eq(
      send_rep("lark.rep.alice.job-b.x", "run.reported", "x", 2, 0, id, 0), 0);
  cr_assert_eq(
      send_rep("lark.rep.alice.job-b", "sample.created", "x", 3, 0, id, 0), 0);
  cr_assert_eq(
      send_rep("lark.rep.alice.job-b", "run.reported", "x", 4, 0, id, 0), 0);
  cr_assert(wait_runs("job-b", 1, 30, &g), "the good report did not land");
  reports_stats st;
  for (int t = 0; t < 100; t++) {
    reports_get_stats(app, &st);
    if (st.refused + st.appended >= 5)
      break;
    usleep(100000);
  }
  cr_expect_eq(st.refused, 4);
  cr_expect_eq(st.appended, 1);
  cr_expect_eq(g.n, 1);
  cr_expect_eq(g.i[0], 4);
  cr_expect_eq(stream_msgs_on("LARK_RUNS"), 1, "a refused report landed");
}

Test(reports, broker_failures_are_retried_not_refused) {
  static got g;
  char id[33];
  cr_assert_eq(bus_stream_delete(conn, "LARK_RUNS"), 0);
  start_app();
  for (int k = 0; k < 50; k++)
    cr_assert_eq(
        send_rep("lark.rep.bob.job-c", "run.reported", "bob", k, 0, id, 0), 0);
  reports_stats st;
  for (int t = 0; t < 300; t++) {
    reports_get_stats(app, &st);
    if (st.retries >= 2)
      break;
    usleep(100000);
  }
  cr_assert_geq(st.retries, 2, "no retry with LARK_RUNS missing");
  cr_expect_eq(st.refused, 0);
  cr_expect_eq(st.appended, 0);
  cr_assert_eq(lt_streams(conn, 120000), 0, "%s", bus_last_error());
  cr_assert(wait_runs("job-c", 50, 60, &g), "landed %zu of 50", g.n);
  for (int k = 0; k < 50; k++)
    cr_expect_eq(g.i[k], k);
}

/* A backlog of n reports on lark.rep.<user>.<job>, then lark-reports
 * started on it (its data and log under dir, log path into log) and left
 * to work until something landed (into g). The body names another actor
 * than the subject. Returns its pid. */
static pid_t
start_on_backlog(const char *user, const char *job, int n, got *g,
                 char log[512]) {
  char id[33], data[512], subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.rep.%s.%s", user, job);
  for (int k = 0; k < n; k++)
    cr_assert_eq(send_rep(subject, "run.reported", "b", k, 0, id, 1), 0);
  cr_assert_eq(bus_append_flush(conn, 30000, NULL), 0, "%s", bus_last_error());
  snprintf(data, 512, "%s/data", dir);
  snprintf(log, 512, "%s/lark-reports.log", dir);
  pid_t pid = lt_start_service("lark-reports", srv.url, data, log, NULL);
  cr_assert(pid > 0);
  for (int t = 0; t < 600; t++) {
    read_runs(job, g);
    if (g->n > 0)
      break;
    usleep(20000);
  }
  return pid;
}

Test(reports, survives_sigkill_of_the_service) {
  static got g;
  char data[512], log[512];
  enum { N = 3000 };
  /* kill it while it works: some landed, not all */
  pid_t pid = start_on_backlog("carol", "job-d", N, &g, log);
  snprintf(data, sizeof data, "%s/data", dir);
  lt_kill(pid, SIGKILL);
  cr_assert_gt(g.n, 0, "nothing landed before the kill");
  pid = lt_start_service("lark-reports", srv.url, data, log, NULL);
  cr_assert(pid > 0);
  int ok = wait_runs("job-d", N, 90, &g);
  lt_kill(pid, SIGTERM);
  cr_assert(ok, "landed %zu of %d", g.n, N);
  usleep(500000);
  read_runs("job-d", &g);
  cr_expect_eq(g.n, N, "a report landed twice");
  cr_expect_str_eq(g.actor, "carol");
}

Test(reports, a_burst_lands_complete_and_in_order_per_job) {
  static got g;
  char id[33], subject[BUS_SUBJECT_MAX];
  enum { JOBS = 3, N = 2000 };
  start_app();
  for (int k = 0; k < N; k++)
    for (int j = 0; j < JOBS; j++) {
      snprintf(subject, sizeof subject, "lark.rep.dave.burst-%d", j);
      cr_assert_eq(send_rep(subject, "run.reported", "d", k, 0, id, 1), 0);
    }
  cr_assert_eq(bus_append_flush(conn, 30000, NULL), 0, "%s", bus_last_error());
  for (int j = 0; j < JOBS; j++) {
    char job[32];
    snprintf(job, sizeof job, "burst-%d", j);
    cr_assert(wait_runs(job, N, 90, &g), "%s: landed %zu of %d", job, g.n, N);
    cr_expect_eq(g.n, N);
    size_t bad = 0;
    for (size_t k = 0; k < g.n; k++)
      bad += g.i[k] != (int64_t)k;
    cr_expect_eq(bad, 0, "%s: %zu reports out of place", job, bad);
    cr_expect(g.actors_same);
    cr_expect_str_eq(g.actor, "dave");
  }
}

/* A report with a given id, published without a Nats-Msg-Id: LARK_REPORTS
 * keeps it even when it holds that id already (a user's retry after the
 * first copy was taken), so the appender sees the id twice. */
static void
send_again(const char *subject, const char *id, int64_t i) {
  msgpack_sbuffer data, body;
  msgpack_sbuffer_init(&data);
  msgpack_sbuffer_init(&body);
  pack_report(&data, "metric", i, 0);
  bus_event ev;
  char fresh_id[33];
  lt_event(&ev, fresh_id, "run.reported", "x", 1, 0, &data);
  ev.id = id;
  cr_assert_eq(bus_event_encode(&ev, &body), 0, "%s", bus_last_error());
  cr_assert_eq(bus_conn_publish(conn, subject, body.data, body.size), 0);
  msgpack_sbuffer_destroy(&body);
  msgpack_sbuffer_destroy(&data);
}

/* Wait until LARK_REPORTS has taken messages up to seq. */
static void
wait_reports_seq(uint64_t seq) {
  for (int t = 0; t < 100 && stream_msgs_on("LARK_REPORTS") < seq; t++)
    usleep(50000);
  cr_assert_geq(stream_msgs_on("LARK_REPORTS"), seq);
}

/* Wait until the appender has settled n reports (appended or refused). */
static reports_stats
wait_settled(uint64_t n) {
  reports_stats st;
  for (int t = 0; t < 300; t++) {
    reports_get_stats(app, &st);
    if (st.appended + st.refused >= n)
      break;
    usleep(100000);
  }
  return st;
}

Test(reports, a_batch_holding_a_landed_report_lands_it_once) {
  static got g;
  char x[33], w[33], id[33];
  const char *subject = "lark.rep.erin.job-e";
  /* the first copy lands as a batch of its own */
  start_app();
  cr_assert_eq(send_rep(subject, "run.reported", "e", 0, 0, x, 0), 0);
  cr_assert(wait_runs("job-e", 1, 30, &g), "the first report did not land");
  reports_stop(app);
  app = NULL;
  bus_conn_close(app_conn);
  app_conn = NULL;
  /* a batch that had landed coming again, with new reports behind it: the
   * atomic batch is refused whole as a duplicate, and goes one by one */
  uint64_t seq = stream_msgs_on("LARK_REPORTS");
  send_again(subject, x, 0);
  for (int k = 1; k <= 4; k++)
    cr_assert_eq(send_rep(subject, "run.reported", "e", k, 0, id, 0), 0);
  wait_reports_seq(seq + 5);
  start_app();
  reports_stats st = wait_settled(5);
  cr_expect_eq(st.appended, 5);
  cr_expect_eq(st.duplicates, 1, "the landed report was not seen as such");
  cr_expect_geq(st.singles, 1, "the batch did not go one by one");
  cr_expect_eq(st.refused, 0);
  /* one id twice in one batch, neither stored before */
  reports_stop(app);
  app = NULL;
  bus_conn_close(app_conn);
  app_conn = NULL;
  seq = stream_msgs_on("LARK_REPORTS");
  cr_assert_eq(send_rep(subject, "run.reported", "e", 5, 0, w, 0), 0);
  send_again(subject, w, 5);
  cr_assert_eq(send_rep(subject, "run.reported", "e", 6, 0, id, 0), 0);
  wait_reports_seq(seq + 3);
  start_app();
  st = wait_settled(3);
  cr_expect_eq(st.appended, 3);
  cr_expect_eq(st.duplicates, 1, "the second copy was not seen as such");
  cr_assert(wait_runs("job-e", 7, 30, &g), "landed %zu of 7", g.n);
  usleep(300000);
  read_runs("job-e", &g);
  cr_expect_eq(g.n, 7, "a report landed twice");
  for (size_t k = 0; k < g.n; k++)
    cr_expect_eq(g.i[k], (int64_t)k, "report %zu out of place", k);
  cr_expect_str_eq(g.actor, "erin");
  cr_expect_eq(stream_msgs_on("LARK_RUNS"), 7);
}

/* The broker is killed (-9) and restarted while lark-reports works
 * through a backlog: every report lands, once. */
Test(reports, survives_a_broker_restart) {
  static got g;
  char log[512];
  enum { N = 3000 };
  pid_t pid = start_on_backlog("erin", "job-r", N, &g, log);
  cr_assert_eq(lt_natsd_kill_restart(&srv), 0);
  usleep(3000 * 1000); /* the test's own connection back before it reads */
  int ok = 0;
  for (int t = 0; t < 90 && !ok; t++) {
    ok = wait_runs("job-r", N, 1, &g);
    cr_assert_eq(kill(pid, 0), 0, "lark-reports died: see %s", log);
  }
  lt_kill(pid, SIGTERM);
  cr_assert(ok, "landed %zu of %d (see %s)", g.n, N, log);
  usleep(500000);
  read_runs("job-r", &g);
  cr_expect_eq(g.n, N, "a report landed twice");
  cr_expect_str_eq(g.actor, "erin");
}

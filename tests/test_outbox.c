/*
 * test_outbox.c - decisions reach the stream exactly once, against a real
 * broker: after a crash between publish and delete, after the dedupe
 * window has passed, and when another writer got there first; what goes
 * to a node's stream unchecked is pushed ahead, the same event. And the
 * service loop end to end: an event in, a decision out.
 */
#include <stdatomic.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "natsd.h"
#include "stream.h"

static const char *const tables[] = {"items", NULL};

static int
apply_items(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  return bus_txn_put(t, "items", ev->subject, strlen(ev->subject), ev->type,
                     strlen(ev->type));
}

static int
decide_items(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now, (void)ud;
  if (!cause || strcmp(cause->type, "sample.created"))
    return 0;
  bus_event ev = {
      .type = "sample.updated", .actor = "items", .prev = cause->seq};
  int rc = bus_txn_emit(t, cause->subject, &ev, BUS_APPEND_CHECK);
  /* for lark.ev.sample.n*, a desired state of node n1's (unchecked, so
   * pushed ahead) and one checked (never pushed) */
  if (!rc && !strncmp(cause->subject, "lark.ev.sample.n", 16)) {
    bus_event d = {.type = "sample.updated", .actor = "items"};
    rc = bus_txn_emit(t, "lark.node.n1.pod.p", &d, BUS_APPEND_NOCHECK);
    if (!rc)
      rc = bus_txn_emit(t, "lark.node.n1.pod.q", &d, BUS_APPEND_CHECK);
  }
  /* and, for subjects under lark.ev.sample.r*, three unchecked reports */
  int reports = !strncmp(cause->subject, "lark.ev.sample.r", 16) ? 3 : 0;
  for (int i = 0; !rc && i < reports; i++) {
    bus_event r = {.type = "run.reported", .actor = "items"};
    r.data_mp = "\x82\xa4kind\xa6metric\xa6values\x80";
    r.data_mp_len = 21;
    rc = bus_txn_emit(t, "lark.run.r", &r, BUS_APPEND_NOCHECK);
  }
  return rc;
}

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "outbox", 1000);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(outbox, .init = setup, .fini = teardown, .timeout = 60);

static bus_view *
open_view(const char *sub) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  bus_view_def d = {.name = "items",
                    .tables = tables,
                    .apply = apply_items,
                    .decide = decide_items};
  return lt_must_open_view(&d, path, 1);
}

static uint64_t
append_create(const char *subject, const char *id) {
  char fresh[33];
  bus_event ev;
  lt_event(&ev, fresh, "sample.created", "tester", 42, 0, NULL);
  ev.id = id; /* the caller's, to be seen again */
  uint64_t seq = 0;
  int rc = bus_append(conn, subject, &ev, BUS_APPEND_CHECK, &seq, NULL);
  cr_assert_eq(rc, 0, "append: %s", bus_last_error());
  return seq;
}

static void
apply_batch(bus_batch *b, void *v) {
  cr_assert_eq(bus_view_apply_batch(v, b), 0, "%s", bus_last_error());
}

/* Read the whole stream into v (live mode: decisions go to the outbox). */
static void
catch_up(bus_view *v) {
  cr_assert_eq(
      lt_read_batches(conn, "LARK_EVENTS", NULL, 2000, 1, apply_batch, v), 0,
      "reader: %s", bus_last_error());
}

static uint64_t
stream_count(void) {
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_EVENTS", &last), 0);
  return last;
}

static void
expect_last_is_update(const char *subject, uint64_t prev) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event last;
  memset(&last, 0, sizeof last);
  cr_assert_eq(bus_last_event(conn, "LARK_EVENTS", subject, &last, &z), 0, "%s",
               bus_last_error());
  cr_expect_str_eq(last.type, "sample.updated");
  cr_expect_eq(last.prev, prev);
  cr_expect_eq(last.ts, 42, "a decided event takes its cause's time");
  msgpack_zone_destroy(&z);
}

Test(outbox, drain_publishes_decisions) {
  bus_view *v = open_view("a");
  uint64_t seq = append_create("lark.ev.sample.a", "create-a");
  catch_up(v);
  uint64_t pub = 0, drop = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, &drop), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, 1);
  cr_expect_eq(drop, 0);
  expect_last_is_update("lark.ev.sample.a", seq);
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  cr_expect_eq(st.outbox, 0);
  bus_view_close(v);
}

/* View "a" with one create (id) on subject applied, its outbox not yet
 * drained, and a snapshot of it taken then in snap (DIR/crashed). */
static bus_view *
snapshotted(const char *subject, const char *id, char *snap, size_t cap) {
  bus_view *v = open_view("a");
  append_create(subject, id);
  catch_up(v);
  snprintf(snap, cap, "%s/crashed", dir);
  cr_assert_eq(bus_view_snapshot(v, snap), 0, "%s", bus_last_error());
  return v;
}

/*
 * A crash after publishing but before deleting the entry: the snapshot
 * still holds the entry. Draining it again must not publish twice, inside
 * the dedupe window (after = 0) or after it (after = 1).
 */
static void
republish(int after_window) {
  char snap[512];
  bus_view *v = snapshotted("lark.ev.sample.a", "create-a", snap, sizeof snap);
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", NULL, NULL), 0);
  cr_assert_eq(stream_count(), 2);
  bus_view_close(v);
  if (after_window)
    usleep(1500 * 1000); /* the dedupe window is 1 s */
  v = open_view("crashed");
  uint64_t pub = 0, drop = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, &drop), 0, "%s",
               bus_last_error());
  cr_expect_eq(stream_count(), 2, "the decision was published twice");
  cr_expect_eq(pub, 1, "the landed decision counts as published");
  cr_expect_eq(drop, 0);
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  cr_expect_eq(st.outbox, 0);
  bus_view_close(v);
}

Test(outbox, republish_inside_dedupe_window_lands_once) {
  republish(0);
}

Test(outbox, republish_after_dedupe_window_lands_once) {
  republish(1);
}

Test(outbox, conflict_with_another_writer_drops_decision) {
  bus_view *v = open_view("a");
  uint64_t seq = append_create("lark.ev.sample.a", "create-a");
  catch_up(v);
  bus_event other;
  char fresh_id[33];
  lt_event(&other, fresh_id, "sample.updated", "someone", 7, seq, NULL);
  other.id = "other-writer";
  cr_assert_eq(bus_append(conn, "lark.ev.sample.a", &other, BUS_APPEND_CHECK,
                          NULL, NULL),
               0);
  uint64_t pub = 9, drop = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, &drop), 0);
  cr_expect_eq(pub, 0);
  cr_expect_eq(drop, 1);
  cr_expect_eq(stream_count(), 2);
  bus_view_close(v);
}

typedef struct runner {
  bus_view *v;
  atomic_int stop;
  int rc;
} runner;

static void *
run_service(void *arg) {
  runner *r = arg;
  bus_service_opts o;
  bus_service_opts_init(&o);
  o.name = "items";
  o.poll_ms = 100;
  o.stop_flag = &r->stop;
  r->rc = bus_service_run(conn, r->v, &o);
  return NULL;
}

static int
wait_seq(uint64_t want, int ms) {
  for (int i = 0; i < ms / 50; i++) {
    if (stream_count() >= want)
      return 1;
    usleep(50 * 1000);
  }
  return 0;
}

Test(outbox, service_loop_applies_decides_and_answers_status) {
  runner r = {.v = open_view("svc")};
  pthread_t th;
  pthread_create(&th, NULL, run_service, &r);
  append_create("lark.ev.sample.a", "create-a");
  append_create("lark.ev.sample.b", "create-b");
  cr_expect(wait_seq(4, 10000), "two decisions expected in the stream");
  bus_status st;
  int rc = -1;
  for (int i = 0; i < 40 && (rc || st.seq < 4); i++) {
    rc = bus_status_query(conn, "items", 1000, &st);
    usleep(100 * 1000);
  }
  cr_assert_eq(rc, 0, "status: %s", bus_last_error());
  cr_expect_str_eq(st.name, "items");
  cr_expect_eq(st.seq, 4);
  cr_expect_eq(st.outbox, 0);
  cr_expect_eq(st.applied, 4);
  cr_expect_eq(strlen(st.digest), 64);
  r.stop = 1;
  pthread_join(th, NULL);
  cr_expect_eq(r.rc, 0, "service: %s", bus_last_error());
  cr_expect_eq(stream_count(), 4, "no decision twice");
  bus_view_close(r.v);
}

static uint64_t
runs_count(void) {
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_RUNS", &last), 0);
  return last;
}

Test(outbox, unchecked_entries_go_out_together_and_once) {
  char snap[512];
  bus_view *v =
      snapshotted("lark.ev.sample.r1", "create-r1", snap, sizeof snap);
  uint64_t pub = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, NULL), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, 4);
  cr_expect_eq(runs_count(), 3);
  bus_view_close(v);
  v = open_view("crashed"); /* the same decisions again, before deletion */
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, NULL), 0);
  cr_expect_eq(runs_count(), 3, "an unchecked decision was published twice");
  cr_expect_eq(stream_count(), 2);
  bus_view_close(v);
}

typedef struct pushes {
  atomic_int n;
  char subject[BUS_SUBJECT_MAX], id[40];
} pushes;

static void
on_push(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  pushes *p = ud;
  msgpack_zone z;
  bus_event ev;
  (void)c, (void)reply;
  msgpack_zone_init(&z, 1024);
  if (atomic_fetch_add(&p->n, 1) == 0 && !bus_event_decode(data, len, &ev, &z))
    snprintf(p->id, sizeof p->id, "%s", ev.id),
        snprintf(p->subject, sizeof p->subject, "%s", subject);
  msgpack_zone_destroy(&z);
}

/*
 * What goes to a node's stream unchecked is pushed first, the same event,
 * on the node's push subject (bus_node_push_subject); a checked entry on
 * a node's stream and an event of another stream are not pushed.
 */
Test(outbox, unchecked_node_entries_are_pushed_as_stored) {
  pushes p = {0};
  bus_serve *s = NULL;
  cr_assert_eq(bus_node_stream_ensure(conn, "n1", NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_conn_serve(conn, "lark.push.>", NULL, on_push, &p, &s), 0);
  bus_view *v = open_view("a");
  append_create("lark.ev.sample.n", "create-n");
  catch_up(v);
  uint64_t pub = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, NULL), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, 3, "the update and both desired states");
  for (int i = 0; i < 50 && atomic_load(&p.n) == 0; i++)
    usleep(20 * 1000);
  usleep(200 * 1000);
  cr_expect_eq(atomic_load(&p.n), 1, "one push: the unchecked desired state");
  cr_expect_str_eq(p.subject, "lark.push.n1.pod.p");
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  bus_event stored;
  memset(&stored, 0, sizeof stored);
  cr_assert_eq(
      bus_last_event(conn, "LARK_NODE_n1", "lark.node.n1.pod.p", &stored, &z),
      0, "%s", bus_last_error());
  cr_expect_str_eq(p.id, stored.id, "the push is the event stored");
  msgpack_zone_destroy(&z);
  bus_conn_unserve(s);
  bus_view_close(v);
}

/*
 * More decisions than a drain sends at once (its chunk), all checked and
 * all in flight together: each is settled by its own answer. Another
 * writer got to one subject first: that decision alone is dropped, and
 * every decision after it in the same chunk still lands, once, on the
 * version it was decided from.
 */
Test(outbox, pipelined_decisions_are_settled_one_by_one) {
  enum { N = 1500, TAKEN = 700 };
  char subject[64], id[32];
  uint64_t seqs[N];
  bus_view *v = open_view("many");
  for (int i = 0; i < N; i++) {
    snprintf(subject, sizeof subject, "lark.ev.sample.m%d", i);
    snprintf(id, sizeof id, "create-m%d", i);
    seqs[i] = append_create(subject, id);
  }
  catch_up(v);
  bus_event other;
  char fresh_id[33];
  lt_event(&other, fresh_id, "sample.updated", "someone", 7, seqs[TAKEN], NULL);
  snprintf(subject, sizeof subject, "lark.ev.sample.m%d", TAKEN);
  cr_assert_eq(bus_append(conn, subject, &other, BUS_APPEND_CHECK, NULL, NULL),
               0);
  uint64_t pub = 0, drop = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, &drop), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, N - 1);
  cr_expect_eq(drop, 1);
  cr_expect_eq(stream_count(), 2 * N, "each decision landed once");
  int probe[] = {0, TAKEN - 1, TAKEN + 1, 1023, 1024, N - 1};
  for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
    snprintf(subject, sizeof subject, "lark.ev.sample.m%d", probe[i]);
    expect_last_is_update(subject, seqs[probe[i]]);
  }
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  cr_expect_eq(st.outbox, 0);
  bus_view_close(v);
}

/*
 * A decision whose subject has no stream stops the drain there: what came
 * before it is published, it and what follows stay in the outbox, and go
 * out once the stream is back.
 */
Test(outbox, missing_stream_keeps_the_rest_for_the_next_drain) {
  bus_view *v = open_view("nostream");
  append_create("lark.ev.sample.r1", "create-r1");
  catch_up(v);
  cr_assert_eq(bus_stream_delete(conn, "LARK_RUNS"), 0, "%s", bus_last_error());
  uint64_t pub = 0;
  int rc = bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, NULL);
  cr_expect_eq(rc, BUS_ENO_STREAM, "%s", bus_last_error());
  cr_expect_eq(pub, 1, "the checked decision before the reports went out");
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  cr_expect_eq(st.outbox, 3);
  cr_assert_eq(lt_streams(conn, 1000), 0);
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, NULL), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, 3);
  cr_expect_eq(runs_count(), 3);
  cr_expect_eq(stream_count(), 2);
  bus_view_close(v);
}

/*
 * test_service_drain.c - a service whose outbox is published from a
 * thread of its own (bus_service_opts.drain_thread) publishes every
 * decision once, in the order decided, while its loop applies the next
 * batches; stopped in the middle and started again, it loses none and
 * doubles none. Against a real broker.
 *
 * The view under test counts the samples it applies and decides, for
 * each, one event on lark.ev.out.<the sample's sequence>. Its loop and
 * its drainer both commit (batches; the outbox's deletes), so the count
 * also shows that neither overwrote the other's counters.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "natsd.h"

#define SAMPLES 1500

static const char *const tables[] = {"count", NULL};

static uint64_t
get_be64(const unsigned char *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++)
    x = (x << 8) | p[i];
  return x;
}

static void
put_be64(unsigned char *p, uint64_t x) {
  for (int i = 7; i >= 0; i--, x >>= 8)
    p[i] = (unsigned char)x;
}

static int
apply_count(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ev, (void)ud;
  const void *v;
  size_t len;
  uint64_t n = 0;
  int rc = bus_txn_get(t, "count", "n", 1, &v, &len);
  if (rc == 0 && len == 8)
    n = get_be64(v);
  else if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  unsigned char val[8];
  put_be64(val, n + 1);
  return bus_txn_put(t, "count", "n", 1, val, 8);
}

/* One decision per sample applied; its id derived from the sample's. */
static int
decide_one(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now, (void)ud;
  if (!cause)
    return 0;
  char subject[64];
  snprintf(subject, sizeof subject, "lark.ev.out.%llu",
           (unsigned long long)cause->seq);
  bus_event ev = {.type = "sample.created", .actor = "drain"};
  ev.data.type = MSGPACK_OBJECT_NIL;
  return bus_txn_emit(t, subject, &ev, BUS_APPEND_NOCHECK);
}

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "drain", 1000);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(drain, .init = setup, .fini = teardown, .timeout = 180);

/* The samples' sequences, in the order appended. */
static uint64_t sample_seq[SAMPLES];

static void
append_samples(int from, int n) {
  for (int i = from; i < from + n; i++) {
    char subject[64], id[48];
    snprintf(subject, sizeof subject, "lark.ev.sample.s%d", i);
    snprintf(id, sizeof id, "drain-%d-%ld", i, (long)time(NULL));
    bus_event ev = {
        .v = 1, .type = "sample.created", .id = id, .ts = 1, .actor = "t"};
    ev.data.type = MSGPACK_OBJECT_NIL;
    int rc = bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, &sample_seq[i],
                        NULL);
    cr_assert_eq(rc, 0, "append: %s", bus_last_error());
  }
}

typedef struct runner {
  bus_view *v;
  atomic_int stop;
  int rc;
  pthread_t th;
} runner;

static void *
run_service(void *arg) {
  runner *r = arg;
  bus_service_opts o;
  bus_service_opts_init(&o);
  o.name = "drain";
  o.filter = "lark.ev.sample.>";
  o.poll_ms = 100;
  o.batch = 16; /* many commits, the drainer's between them */
  o.stop_flag = &r->stop;
  o.drain_thread = 1;
  r->rc = bus_service_run(conn, r->v, &o);
  return NULL;
}

static void
start(runner *r) {
  r->stop = 0;
  cr_assert_eq(pthread_create(&r->th, NULL, run_service, r), 0);
}

static void
stop(runner *r) {
  r->stop = 1;
  pthread_join(r->th, NULL);
  cr_expect_eq(r->rc, 0, "service: %s", bus_last_error());
}

static uint64_t
applied_count(bus_view *v) {
  bus_txn *t;
  const void *val;
  size_t len;
  uint64_t n = 0;
  cr_assert_eq(bus_view_read(v, &t), 0);
  if (bus_txn_get(t, "count", "n", 1, &val, &len) == 0 && len == 8)
    n = get_be64(val);
  bus_txn_end(t);
  return n;
}

/* Until the view applied n samples and its outbox is empty. */
static int
wait_drained(bus_view *v, uint64_t n, int ms) {
  bus_view_stats st = {0};
  for (int i = 0; i < ms / 50; i++) {
    if (applied_count(v) >= n && bus_view_stats_get(v, &st) == 0 &&
        st.outbox == 0)
      return 1;
    usleep(50 * 1000);
  }
  return 0;
}

/* Every sample's decision is in the log once, in the samples' order, and
 * the log holds nothing else. */
static void
expect_each_decided_once(void) {
  uint64_t last_out = 0, last = 0;
  for (int i = 0; i < SAMPLES; i++) {
    char subject[64];
    snprintf(subject, sizeof subject, "lark.ev.out.%llu",
             (unsigned long long)sample_seq[i]);
    uint64_t seq = 0;
    int rc = bus_last_event_seq(conn, "LARK_EVENTS", subject, &seq);
    cr_assert_eq(rc, 0, "sample %d (seq %llu) has no decision: %s", i,
                 (unsigned long long)sample_seq[i], bus_last_error());
    cr_assert_gt(seq, last_out,
                 "the decision of sample %d went out before "
                 "the one of the sample before it",
                 i);
    last_out = seq;
  }
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_EVENTS", &last), 0);
  cr_expect_eq(last, 2 * SAMPLES,
               "the log holds %llu events for %d samples and their decisions",
               (unsigned long long)last, SAMPLES);
}

Test(drain, every_decision_goes_out_once_in_order_beside_the_loop) {
  bus_view_def d = {.name = "drain",
                    .tables = tables,
                    .apply = apply_count,
                    .decide = decide_one};
  runner r = {.v = lt_must_open_view(&d, dir, 1)};
  append_samples(0, SAMPLES / 2);
  start(&r);
  append_samples(SAMPLES / 2, SAMPLES / 2);
  cr_assert(wait_drained(r.v, SAMPLES, 60000),
            "applied %llu of %d samples, or the outbox never emptied",
            (unsigned long long)applied_count(r.v), SAMPLES);
  stop(&r);
  cr_expect_eq(applied_count(r.v), SAMPLES);
  expect_each_decided_once();
  bus_view_close(r.v);
}

Test(drain, stopped_in_the_middle_and_started_again_loses_and_doubles_none) {
  bus_view_def d = {.name = "drain",
                    .tables = tables,
                    .apply = apply_count,
                    .decide = decide_one};
  runner r = {.v = lt_must_open_view(&d, dir, 1)};
  append_samples(0, SAMPLES);
  start(&r);
  while (applied_count(r.v) < SAMPLES / 3)
    usleep(5 * 1000);
  stop(&r); /* mid-way: some decided, some published */
  uint64_t at_stop = applied_count(r.v);
  cr_expect_lt(at_stop, SAMPLES, "stopped only after everything was applied");
  start(&r);
  cr_assert(wait_drained(r.v, SAMPLES, 60000),
            "applied %llu of %d samples after the restart, or the outbox "
            "never emptied",
            (unsigned long long)applied_count(r.v), SAMPLES);
  stop(&r);
  cr_expect_eq(applied_count(r.v), SAMPLES);
  expect_each_decided_once();
  bus_view_close(r.v);
}

/*
 * test_service_order.c - the service loop applies every event of its
 * filter exactly once and in stream order, whatever another client does
 * to its consumer, and says so when its view holds events the stream no
 * longer has. Against a real broker.
 *
 * The view under test writes, for each event it applies, the event's
 * stream sequence at the next position of a list: the list must read
 * 1, 2, 3, ... with nothing missing and nothing twice.
 */
#include <stdatomic.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "bed.h"
#include "natsd.h"

static const char *const tables[] = {"order", "count", NULL};

static void
be64(unsigned char *p, uint64_t x) {
  for (int i = 7; i >= 0; i--, x >>= 8)
    p[i] = (unsigned char)x;
}

static uint64_t
get_be64(const unsigned char *p) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++)
    x = (x << 8) | p[i];
  return x;
}

/* order[n] = seq, count = n + 1 */
static int
apply_order(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  const void *v;
  size_t len;
  uint64_t n = 0;
  int rc = bus_txn_get(t, "count", "n", 1, &v, &len);
  if (rc == 0 && len == 8)
    n = get_be64(v);
  else if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  unsigned char k[8], val[8];
  be64(k, n);
  be64(val, ev->seq);
  if ((rc = bus_txn_put(t, "order", k, 8, val, 8)))
    return rc;
  be64(val, n + 1);
  return bus_txn_put(t, "count", "n", 1, val, 8);
}

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "order", 1000);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(order, .init = setup, .fini = teardown, .timeout = 120);

static bus_view *
open_view(void) {
  bus_view_def d = {.name = "order", .tables = tables, .apply = apply_order};
  return lt_must_open_view(&d, dir, 1);
}

/* Event i on lark.ev.sample.s<i>, tried up to tries times 100 ms apart
 * (a broker coming back); 0, or the last failure. */
static int
append_one(int i, int tries) {
  char subject[64], id[32];
  snprintf(subject, sizeof subject, "lark.ev.sample.s%d", i);
  snprintf(id, sizeof id, "ev-%d-%ld", i, (long)time(NULL));
  bus_event ev = {
      .v = 1, .type = "sample.created", .id = id, .ts = 1, .actor = "t"};
  ev.data.type = MSGPACK_OBJECT_NIL;
  int rc = 0;
  for (int t = 0; t < tries; t++, usleep(100 * 1000))
    if (!(rc = bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL)))
      break;
  return rc;
}

static void
append_n(int from, int n) {
  for (int i = from; i < from + n; i++)
    cr_assert_eq(append_one(i, 1), 0, "append: %s", bus_last_error());
}

typedef struct runner {
  bus_view *v;
  atomic_int stop;
  int rc;
  int state;
  char why[256];
  int late;    /* one more event appended after the first batch applied */
  int late_rc; /* its append's answer, or BUS_ETIMEOUT: never counted */
} runner;

/* Until the broker counts an event as pending for the service's
 * consumer: it counts a stored event for its consumers a moment after it
 * acknowledged the append (another goroutine), so a look in between
 * would not see it yet. BUS_ETIMEOUT when not counted in 5 s. */
static int
counted_pending(void) {
  for (int i = 0; i < 500; i++) {
    bus_consumer_state cs;
    int rc = bus_consumer_state_get(conn, "LARK_EVENTS", "order", &cs);
    if (rc)
      return rc;
    if (cs.pending > 0)
      return 0;
    usleep(10 * 1000);
  }
  return BUS_ETIMEOUT;
}

/* on_batch: the late event, once the view has applied one, appended
 * from the loop itself, after the batch's drain, and counted by the
 * broker for the loop's consumer before the loop looks (no assert here:
 * not the test's thread). */
static void
append_late(const bus_view_stats *st, void *ud) {
  runner *r = ud;
  if (st->applied < 1 || r->late != 1)
    return;
  r->late = 2;
  bus_event ev = {
      .v = 1, .type = "sample.created", .id = "late", .ts = 1, .actor = "t"};
  ev.data.type = MSGPACK_OBJECT_NIL;
  r->late_rc = bus_append(conn, "lark.ev.sample.late", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL);
  if (!r->late_rc)
    r->late_rc = counted_pending();
}

static void
on_state(int state, const char *why, void *ud) {
  runner *r = ud;
  snprintf(r->why, sizeof r->why, "%s", why);
  r->state = state;
}

static void *
run_service(void *arg) {
  runner *r = arg;
  bus_service_opts o;
  bus_service_opts_init(&o);
  o.name = "order";
  o.poll_ms = 100;
  o.batch = 16;
  o.stop_flag = &r->stop;
  o.on_state = on_state;
  o.state_ud = r;
  o.on_batch = append_late;
  o.ud = r;
  r->rc = bus_service_run(conn, r->v, &o);
  if (r->rc)
    fprintf(stderr, "service: %s: %s\n", bus_err_name(r->rc), bus_last_error());
  return NULL;
}

static int
wait_status(const char *what, uint64_t seq, int ms, bus_status *st) {
  for (int i = 0; i < ms / 100; i++) {
    if (bus_status_query(conn, "order", 500, st) == 0 &&
        !strcmp(st->state, what) && st->seq >= seq)
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

/* The service started on r after n events, and up with them applied. */
static void
start_after(runner *r, pthread_t *svc, int n) {
  bus_status st;
  append_n(0, n);
  pthread_create(svc, NULL, run_service, r);
  cr_assert(wait_status("up", (uint64_t)n, 20000, &st),
            "the service did not start");
}

/* The view's list must be 1..n, each once, in order. */
static void
expect_in_order(bus_view *v, uint64_t n) {
  bus_txn *t;
  cr_assert_eq(bus_view_read(v, &t), 0);
  const void *val;
  size_t len;
  cr_assert_eq(bus_txn_get(t, "count", "n", 1, &val, &len), 0);
  cr_expect_eq(get_be64(val), n, "applied %llu events, the stream has %llu",
               (unsigned long long)get_be64(val), (unsigned long long)n);
  for (uint64_t i = 0; i < n; i++) {
    unsigned char k[8];
    be64(k, i);
    cr_assert_eq(bus_txn_get(t, "order", k, 8, &val, &len), 0);
    cr_assert_eq(get_be64(val), i + 1, "position %llu holds seq %llu",
                 (unsigned long long)i, (unsigned long long)get_be64(val));
  }
  bus_txn_end(t);
}

/* Another client keeps pulling from the service's own durable (a raw
 * $JS.API.CONSUMER.MSG.NEXT request, as a hostile client with that
 * permission would) and acks what it takes: each message it takes is a
 * hole in the service's delivery order, noticed and refilled. */
typedef struct thief {
  atomic_int stop;
  int taken;
} thief;

static void *
steal(void *arg) {
  thief *th = arg;
  natsConnection *nc = NULL;
  if (natsConnection_ConnectTo(&nc, srv.url) != NATS_OK)
    return NULL;
  const char *req = "{\"batch\":1,\"expires\":100000000}";
  while (!th->stop) {
    natsMsg *m = NULL;
    natsStatus s = natsConnection_RequestString(
        &m, nc, "$JS.API.CONSUMER.MSG.NEXT.LARK_EVENTS.order", req, 500);
    const char *reply = s == NATS_OK ? natsMsg_GetReply(m) : NULL;
    if (reply && !strncmp(reply, "$JS.ACK.", 8)) {
      th->taken++;
      natsConnection_PublishString(nc, reply, "+ACK");
    }
    natsMsg_Destroy(m);
  }
  natsConnection_Destroy(nc);
  return NULL;
}

Test(order, events_another_client_takes_are_applied_all_the_same) {
  runner r = {.v = open_view()};
  pthread_t svc, thr;
  bus_status st;
  start_after(&r, &svc, 5);
  thief th = {0};
  pthread_create(&thr, NULL, steal, &th);
  for (int i = 0; i < 20; i++) {
    append_n(5 + 10 * i, 10);
    usleep(50 * 1000);
  }
  th.stop = 1;
  pthread_join(thr, NULL);
  /* the last event taken by the other client shows no hole after it:
   * the service sees that the broker delivered more than it received
   * (well before the ack wait, 30 s, would deliver it again) */
  cr_expect(wait_status("up", 205, 10000, &st), "stuck at %llu",
            (unsigned long long)st.seq);
  cr_expect_gt(th.taken, 0, "the other client took nothing: nothing shown");
  cr_expect_gt(st.repositions, 0, "no hole was noticed");
  r.stop = 1;
  pthread_join(svc, NULL);
  cr_expect_eq(r.rc, 0, "service: %s", bus_last_error());
  expect_in_order(r.v, 205);
  bus_view_close(r.v);
}

/* The other client's one pull request (expiring in 5 s), made once the
 * service's own requests have had time to be renewed behind it: the
 * broker serves waiting requests in order, so the next event is its. */
static natsMsg *
take_next_one(natsConnection *nc) {
  natsInbox *inbox = NULL;
  natsSubscription *sub = NULL;
  natsMsg *m = NULL;
  cr_assert_eq(natsInbox_Create(&inbox), NATS_OK);
  cr_assert_eq(natsConnection_SubscribeSync(&sub, nc, inbox), NATS_OK);
  cr_assert_eq(natsConnection_PublishRequestString(
                   nc, "$JS.API.CONSUMER.MSG.NEXT.LARK_EVENTS.order", inbox,
                   "{\"batch\":1,\"expires\":5000000000}"),
               NATS_OK);
  natsConnection_Flush(nc);
  usleep(400 * 1000);
  append_n(100, 1);
  natsSubscription_NextMsg(&m, sub, 5000);
  natsSubscription_Destroy(sub);
  natsInbox_Destroy(inbox);
  return m;
}

Test(order, the_last_event_another_client_takes_is_applied_at_once) {
  runner r = {.v = open_view()};
  pthread_t svc;
  bus_status st;
  start_after(&r, &svc, 5);
  natsConnection *nc = NULL;
  cr_assert_eq(natsConnection_ConnectTo(&nc, srv.url), NATS_OK);
  /* it takes the last event and acks it: the broker never delivers it
   * again, and nothing after it shows the service a hole */
  natsMsg *m = take_next_one(nc);
  cr_assert_not_null(m, "the other client got no message");
  const char *reply = natsMsg_GetReply(m);
  cr_assert(reply && !strncmp(reply, "$JS.ACK.", 8), "not an event: %s",
            reply ? reply : "(no reply)");
  cr_assert_eq(natsConnection_PublishString(nc, reply, "+ACK"), NATS_OK);
  natsConnection_Flush(nc);
  natsMsg_Destroy(m);
  cr_expect(wait_status("up", 6, 5000, &st),
            "the last event, taken by another client, was not applied "
            "within 5 s: stuck at %llu",
            (unsigned long long)st.seq);
  cr_expect_gt(st.repositions, 0, "no hole was noticed");
  natsConnection_Destroy(nc);
  r.stop = 1;
  pthread_join(svc, NULL);
  cr_expect_eq(r.rc, 0, "service: %s", bus_last_error());
  expect_in_order(r.v, 6);
  bus_view_close(r.v);
}

/* The view applied up to 6; the stream is then made anew with fewer
 * events (as an R1 server that lost its unsynced writes would be). */
static void
applied_then_stream_lost(runner *r, int keep) {
  pthread_t svc;
  start_after(r, &svc, 6);
  r->stop = 1;
  pthread_join(svc, NULL);
  cr_assert_eq(bus_stream_delete(conn, "LARK_EVENTS"), 0);
  cr_assert_eq(lt_streams(conn, 1000), 0, "%s", bus_last_error());
  append_n(100, keep);
}

static void
expect_diverged(runner *r, const char *words) {
  pthread_t svc;
  bus_status st;
  r->stop = 0;
  pthread_create(&svc, NULL, run_service, r);
  cr_expect(wait_status("diverged", 0, 20000, &st), "state %s", st.state);
  cr_expect(strstr(st.why, words), "why: %s", st.why);
  cr_expect_eq(r->state, BUS_SERVICE_DIVERGED, "on_state was not called");
  append_n(200, 3);
  usleep(500 * 1000);
  cr_expect(bus_status_query(conn, "order", 1000, &st) == 0 && st.seq == 6,
            "a diverged view went on applying: seq %llu",
            (unsigned long long)st.seq);
  r->stop = 1;
  pthread_join(svc, NULL);
  cr_expect_eq(r->rc, 0);
}

Test(order, a_stream_that_fell_behind_the_view_is_told) {
  runner r = {.v = open_view()};
  applied_then_stream_lost(&r, 2);
  expect_diverged(&r, "lost acknowledged events");
  bus_view_close(r.v);
}

Test(order, a_sequence_reused_by_another_event_is_told) {
  runner r = {.v = open_view()};
  applied_then_stream_lost(&r, 8);
  expect_diverged(&r, "rewritten");
  bus_view_close(r.v);
}

/* ---------------------------------------------------------- decide again */

static uint64_t
count_at(bus_txn *t, const char *key) {
  const void *v;
  size_t len;
  if (bus_txn_get(t, "count", key, strlen(key), &v, &len) || len != 8)
    return 0;
  return get_be64(v);
}

/* decide of the view below: its first pass after an event asks for
 * another (bus_txn_decide_again); the pass after that writes down how
 * many events the view held then, plus one ("saw"; 0: not yet). */
static int
decide_twice(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now, (void)ud;
  unsigned char val[8];
  if (cause)
    return 0;
  if (!count_at(t, "asked")) {
    be64(val, 1);
    bus_txn_decide_again(t);
    return bus_txn_put(t, "count", "asked", 5, val, 8);
  }
  if (count_at(t, "saw"))
    return 0;
  be64(val, count_at(t, "n") + 1);
  return bus_txn_put(t, "count", "saw", 3, val, 8);
}

/* What the pass asked for again saw (0 when it never ran in 10 s). */
static uint64_t
runs_again(int late) {
  bus_view_def d = {.name = "order",
                    .tables = tables,
                    .apply = apply_order,
                    .decide = decide_twice};
  runner r = {.v = lt_must_open_view(&d, dir, 1), .late = late};
  pthread_t svc;
  uint64_t saw = 0;
  append_n(0, 1);
  pthread_create(&svc, NULL, run_service, &r);
  for (int i = 0; i < 100 && !saw; i++) {
    bus_txn *t;
    usleep(100 * 1000);
    cr_assert_eq(bus_view_read(r.v, &t), 0);
    saw = count_at(t, "saw");
    bus_txn_end(t);
  }
  r.stop = 1;
  pthread_join(svc, NULL);
  cr_expect_eq(r.rc, 0);
  cr_expect_eq(r.late_rc, 0, "the late event: %s (%s)", bus_err_name(r.late_rc),
               bus_last_error());
  bus_view_close(r.v);
  return saw;
}

/* An event stored while what decide asked for is being sent is applied
 * before the pass asked for decides: a decision asked for again lands
 * behind what came meanwhile (the scheduler's next gang behind the Jobs
 * submitted meanwhile). */
Test(order, a_pass_asked_for_again_decides_on_what_came_meanwhile) {
  uint64_t saw = runs_again(1);
  cr_assert_eq(saw, 3, "the pass asked for again saw %llu event(s), not 2",
               (unsigned long long)(saw ? saw - 1 : 0));
}

/* With nothing new, the pass asked for runs all the same, at once. */
Test(order, a_pass_asked_for_again_runs_when_nothing_came) {
  uint64_t saw = runs_again(0);
  cr_assert_eq(saw, 2,
               "the pass asked for again saw %llu event(s) (0: it "
               "never ran)",
               (unsigned long long)(saw ? saw - 1 : 0));
}

/* ------------------------------------------------------ a server's stop */

/* A server that shuts down ends the pull request the loop waits on with
 * "409 Server Shutdown": the loop takes it as the connection's loss it
 * is, reconnects and goes on, instead of ending with a broker error (a
 * hub server of a cluster stopped for an upgrade stopped every service
 * attached to it). */
Test(order, a_server_shutting_down_under_the_fetch_is_a_reconnection) {
  runner r = {.v = open_view()};
  pthread_t svc;
  bus_status st;
  start_after(&r, &svc, 3);
  usleep(300 * 1000); /* idle: its fetch waits at the broker */
  cr_assert_eq(lt_natsd_restart(&srv, SIGTERM), 0);
  for (int i = 3; i < 6; i++) /* once the broker takes them again */
    cr_assert_eq(append_one(i, 100), 0, "%s", bus_last_error());
  cr_expect(wait_status("up", 6, 20000, &st),
            "the service did not go on after the restart (rc %s)",
            bus_err_name(r.rc));
  r.stop = 1;
  pthread_join(svc, NULL);
  cr_expect_eq(r.rc, 0, "the service ended with %s", bus_err_name(r.rc));
  expect_in_order(r.v, 6);
  bus_view_close(r.v);
}

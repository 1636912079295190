/*
 * test_worker.c - bus_worker against a real broker: it waits for a stream
 * that is not there yet, hands every message to its handler once acked,
 * opens its consumer again when the broker lost it, gives an unacked batch
 * back for redelivery, and stops promptly while its handler naps.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "events.h"
#include "bus.h"
#include "natsd.h"

typedef struct seen {
  pthread_mutex_t mu;
  int handled, logs, refuse_first;
  char log[512];
} seen;

static lt_natsd srv;
static bus_conn *conn;

static void
setup(void) {
  cr_assert_eq(lt_natsd_start(&srv, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&srv, &conn), 0, "%s", bus_last_error());
}

static void
teardown(void) {
  bus_conn_close(conn);
  lt_natsd_stop(&srv);
}

TestSuite(worker, .init = setup, .fini = teardown, .timeout = 60);

static void
handle(bus_worker *w, bus_batch *b, void *ud) {
  seen *s = ud;
  (void)w;
  pthread_mutex_lock(&s->mu);
  int refuse = s->refuse_first > 0;
  s->refuse_first -= refuse;
  if (!refuse)
    s->handled += (int)bus_batch_len(b);
  pthread_mutex_unlock(&s->mu);
  if (!refuse)
    bus_batch_ack(b);
}

static void
log_line(const char *line, void *ud) {
  seen *s = ud;
  pthread_mutex_lock(&s->mu);
  s->logs++;
  snprintf(s->log, sizeof s->log, "%s", line);
  pthread_mutex_unlock(&s->mu);
}

static int
handled(seen *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->handled;
  pthread_mutex_unlock(&s->mu);
  return n;
}

static int
wait_handled(seen *s, int want) {
  for (int i = 0; i < 200 && handled(s) < want; i++)
    usleep(50 * 1000);
  return handled(s);
}

static void
put(const char *subject, int n) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "text", "hi");
  for (int i = 0; i < n; i++) {
    char id[33];
    bus_event ev;
    lt_event(&ev, id, "sample.created", "test", 1, 0, &b.sb);
    cr_assert_eq(bus_append_async(conn, subject, &ev, 0), 0, "%s",
                 bus_last_error());
  }
  cr_assert_eq(bus_append_flush(conn, 5000, NULL), 0, "%s", bus_last_error());
  bus_packbuf_destroy(&b);
}

static bus_worker *
start(seen *s, int64_t ack_wait_ns) {
  bus_worker_opts o;
  bus_worker_opts_init(&o);
  o.consumer.stream = "LARK_EVENTS";
  o.consumer.durable = "worker-test";
  o.consumer.filter = "lark.ev.sample.>";
  if (ack_wait_ns)
    o.consumer.ack_wait_ns = ack_wait_ns;
  o.batch = 64;
  o.handle = handle;
  o.log = log_line;
  o.ud = s;
  bus_worker *w = NULL;
  cr_assert_eq(bus_worker_start(conn, &o, &w), 0, "%s", bus_last_error());
  return w;
}

Test(worker, waits_for_its_stream_then_takes_every_message) {
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  bus_worker *w = start(&s, 0);
  usleep(300 * 1000);
  cr_expect_eq(s.logs, 1, "one line for the wait, not one a try");
  cr_expect(strstr(s.log, "cannot consume LARK_EVENTS yet"), "%s", s.log);
  cr_assert_eq(lt_streams(conn, 2000), 0, "%s", bus_last_error());
  put("lark.ev.sample.a", 300);
  cr_expect_eq(wait_handled(&s, 300), 300);
  bus_worker_stop(w);
}

Test(worker, opens_its_consumer_again_when_the_broker_lost_it) {
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER};
  cr_assert_eq(lt_streams(conn, 2000), 0, "%s", bus_last_error());
  bus_worker *w = start(&s, 0);
  put("lark.ev.sample.a", 50);
  cr_assert_eq(wait_handled(&s, 50), 50);
  cr_assert_eq(bus_consumer_delete(conn, "LARK_EVENTS", "worker-test"), 0, "%s",
               bus_last_error());
  put("lark.ev.sample.b", 50);
  /* the new consumer starts from the stream's start: 50 + 100 */
  cr_expect_eq(wait_handled(&s, 150), 150, "%s", s.log);
  cr_expect(strstr(s.log, "opening it again"), "%s", s.log);
  bus_worker_stop(w);
}

Test(worker, an_unacked_batch_comes_again) {
  seen s = {.mu = PTHREAD_MUTEX_INITIALIZER, .refuse_first = 1};
  cr_assert_eq(lt_streams(conn, 2000), 0, "%s", bus_last_error());
  bus_worker *w = start(&s, INT64_C(1000000000));
  put("lark.ev.sample.a", 10);
  cr_expect_eq(wait_handled(&s, 10), 10, "redelivered after the ack wait");
  usleep(1500 * 1000);
  cr_expect_eq(handled(&s), 10, "once acked, never again");
  bus_worker_stop(w);
}

static void
nap_long(bus_worker *w, bus_batch *b, void *ud) {
  (void)b;
  atomic_int *entered = ud;
  atomic_store(entered, 1);
  bus_worker_nap(w, 60000);
}

Test(worker, stops_promptly_while_its_handler_naps) {
  cr_assert_eq(lt_streams(conn, 2000), 0, "%s", bus_last_error());
  atomic_int entered = 0;
  bus_worker_opts o;
  bus_worker_opts_init(&o);
  o.consumer.stream = "LARK_EVENTS";
  o.consumer.durable = "worker-nap";
  o.handle = nap_long;
  o.ud = &entered;
  bus_worker *w = NULL;
  cr_assert_eq(bus_worker_start(conn, &o, &w), 0, "%s", bus_last_error());
  put("lark.ev.sample.a", 1);
  for (int i = 0; i < 100 && !atomic_load(&entered); i++)
    usleep(50 * 1000);
  cr_assert(atomic_load(&entered));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bus_worker_stop(w);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  cr_expect_lt(s, 2.0, "stop took %.1f s", s);
}

Test(worker, refuses_options_without_a_handler_or_durable) {
  bus_worker_opts o;
  bus_worker_opts_init(&o);
  o.consumer.stream = "LARK_EVENTS";
  o.handle = handle;
  bus_worker *w = NULL;
  cr_expect_eq(bus_worker_start(conn, &o, &w), BUS_EINVAL);
  o.consumer.durable = "x";
  o.handle = NULL;
  cr_expect_eq(bus_worker_start(conn, &o, &w), BUS_EINVAL);
}

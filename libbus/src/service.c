/*
 * service.c - the loop of a service: fetch, apply, ack, publish, tick.
 *
 * Order matters for exactly-once effects:
 *   1. apply the batch and its decisions in one LMDB transaction;
 *   2. ack the batch (a crash before this redelivers; the view skips what
 *      it already holds);
 *   3. drain the outbox (a crash before this leaves the decisions in the
 *      outbox, published at the next start).
 * The durable consumer is recreated at start from the view's applied
 * sequence, so a view thrown away and rebuilt, or restored from a
 * snapshot, is fed from exactly where it stands.
 *
 * Status and snapshot requests are answered from nats.c's delivery thread: they
 * read the view in their own read transaction (LMDB allows it beside the
 * writer) and the lag this loop last measured.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus-int.h"

#define LAG_EVERY_MS 500

typedef struct service {
  bus_conn *conn;
  bus_view *view;
  const bus_service_opts *o;
  _Atomic uint64_t lag;
  bus_serve *serve_all, *serve_one, *serve_snap;
} service;

void
bus_service_opts_init(bus_service_opts *o) {
  memset(o, 0, sizeof *o);
  o->stream = "LARK_EVENTS";
  o->filter = "lark.ev.>";
  o->batch = 512;
  o->poll_ms = 200;
}

static int64_t
mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t
wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
pack_kv_str(msgpack_packer *pk, const char *k, const char *v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
}

static void
pack_kv_u64(msgpack_packer *pk, const char *k, uint64_t v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_uint64(pk, v);
}

/* {name, seq, digest, lag, applied, stale, rejected, outbox} */
static int
status_encode(service *s, msgpack_sbuffer *sb) {
  uint8_t d[32];
  char hex[65];
  uint64_t seq;
  bus_view_stats st;
  int rc = bus_view_digest(s->view, d, &seq);
  if (!rc)
    rc = bus_view_stats_get(s->view, &st);
  if (rc)
    return rc;
  bus_digest_hex(d, hex);
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 8);
  pack_kv_str(&pk, "name", s->o->name);
  pack_kv_u64(&pk, "seq", seq);
  pack_kv_str(&pk, "digest", hex);
  pack_kv_u64(&pk, "lag", atomic_load(&s->lag));
  pack_kv_u64(&pk, "applied", st.applied);
  pack_kv_u64(&pk, "stale", st.stale);
  pack_kv_u64(&pk, "rejected", st.rejected);
  pack_kv_u64(&pk, "outbox", st.outbox);
  return 0;
}

static void
on_status(bus_conn *c, const char *subject, const char *reply, const void *data,
          size_t len, void *ud) {
  (void)subject;
  (void)data;
  (void)len;
  service *s = ud;
  if (!reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (status_encode(s, &sb) == 0)
    bus_conn_publish(c, reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

/*
 * lark.sys.snapshot.<name> {path}: a compacted copy of the live view at
 * path on the service's host; replies {ok, path, seq} or {error}.
 */
static int
snapshot_to(service *s, const char *path, uint64_t *seq) {
  int rc = bus_view_snapshot(s->view, path);
  if (rc)
    return rc;
  bus_view_def def = {.name = bus_view_name(s->view)};
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = path;
  vo.effects = 0;
  bus_view *copy;
  bus_view_stats st;
  if ((rc = bus_view_open(&copy, &def, &vo)))
    return rc;
  rc = bus_view_stats_get(copy, &st);
  bus_view_close(copy);
  *seq = st.applied_seq;
  return rc;
}

static void
on_snapshot(bus_conn *c, const char *subject, const char *reply,
            const void *data, size_t len, void *ud) {
  (void)subject;
  service *s = ud;
  char path[1024] = "";
  msgpack_zone zone;
  msgpack_zone_init(&zone, 512);
  msgpack_object req = {.type = MSGPACK_OBJECT_NIL};
  if (len && msgpack_unpack(data, len, NULL, &zone, &req) >= 0)
    bus_obj_str(&req, "path", path, sizeof path);
  msgpack_zone_destroy(&zone);
  uint64_t seq = 0;
  int rc = path[0] ? snapshot_to(s, path, &seq)
                   : BUS_ERR(BUS_EINVAL, "snapshot needs a path");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  if (rc == 0) {
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "ok", 2);
    msgpack_pack_true(&pk);
    pack_kv_str(&pk, "path", path);
    pack_kv_u64(&pk, "seq", seq);
  } else {
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "error", 5);
    msgpack_pack_map(&pk, 2);
    pack_kv_str(&pk, "code", bus_err_name(rc));
    pack_kv_str(&pk, "message", bus_last_error());
  }
  if (reply)
    bus_conn_publish(c, reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

static int
serve_status(service *s) {
  char subject[160], snap[160];
  snprintf(subject, sizeof subject, "lark.sys.status.%s", s->o->name);
  snprintf(snap, sizeof snap, "lark.sys.snapshot.%s", s->o->name);
  int rc = bus_conn_serve(s->conn, "lark.sys.status", NULL, on_status, s,
                          &s->serve_all);
  if (!rc)
    rc = bus_conn_serve(s->conn, subject, NULL, on_status, s, &s->serve_one);
  if (!rc)
    rc = bus_conn_serve(s->conn, snap, NULL, on_snapshot, s, &s->serve_snap);
  return rc;
}

static int
open_consumer(service *s, bus_consumer **k) {
  bus_view_stats st;
  int rc = bus_view_stats_get(s->view, &st);
  if (rc)
    return rc;
  bus_consumer_opts co;
  bus_consumer_opts_init(&co);
  co.stream = s->o->stream;
  co.durable = s->o->name;
  co.filter = s->o->filter;
  co.deliver = st.applied_seq ? BUS_DELIVER_FROM_SEQ : BUS_DELIVER_ALL;
  co.start_seq = st.applied_seq + 1;
  co.recreate = 1;
  return bus_consumer_open(s->conn, &co, k);
}

/* One pass: fetch and apply a batch, ack it, publish decisions. */
static int
step(service *s, bus_consumer *k, bus_batch *b) {
  int rc = bus_consumer_fetch(k, s->o->batch, s->o->poll_ms, b);
  if (rc == BUS_ETIMEOUT || rc == BUS_ECONN)
    return 0; /* nothing yet, or reconnecting */
  if (rc)
    return rc;
  if (bus_batch_len(b) == 0)
    return 0;
  if ((rc = bus_view_apply_batch(s->view, b)))
    return rc;
  bus_batch_ack(b); /* a lost ack only means a skipped redelivery */
  return 1;
}

/* Publish what decide left in the outbox. */
static int
after_batch(service *s) {
  bus_view_stats st;
  int rc = bus_view_stats_get(s->view, &st);
  if (rc)
    return rc;
  if (st.outbox) {
    rc = bus_outbox_drain(s->view, s->conn, s->o->stream, NULL, NULL);
    if (rc == BUS_ENO_STREAM && s->o->repair) /* tried again next pass */
      s->o->repair(s->conn, s->o->repair_ud);
    if (rc && rc != BUS_ETIMEOUT && rc != BUS_ECONN && rc != BUS_ENO_STREAM)
      return rc;
    bus_view_stats_get(s->view, &st);
  }
  if (s->o->on_batch)
    s->o->on_batch(&st, s->o->ud);
  return 0;
}

/* The lag costs a request to the broker: measured twice a second at
 * most, not once per batch. */
static void
measure_lag(service *s, bus_consumer *k, int64_t now, int64_t *last) {
  uint64_t pending;
  if (now - *last < LAG_EVERY_MS)
    return;
  *last = now;
  if (bus_consumer_pending(k, &pending) == 0)
    atomic_store(&s->lag, pending);
}

static int
run_loop(service *s, bus_consumer **kp, bus_batch *b) {
  bus_consumer *k = *kp;
  int64_t last_tick = mono_ms(), last_lag = 0;
  int rc = after_batch(s); /* publish what a crash left behind */
  while (!rc && !*s->o->stop) {
    if (bus_conn_closed(s->conn))
      return BUS_ERR(BUS_ECONN, "the broker connection closed for good");
    int got = step(s, k, b);
    if (got == BUS_ENOT_FOUND) { /* the consumer is gone: make it again */
      bus_consumer_close(*kp);
      *kp = NULL;
      if ((got = open_consumer(s, kp)) < 0)
        return got;
      k = *kp;
      continue;
    }
    if (got < 0)
      return got;
    if (got)
      rc = after_batch(s);
    int64_t now = mono_ms();
    measure_lag(s, k, now, &last_lag);
    if (!rc && s->o->tick_ms && now - last_tick >= s->o->tick_ms) {
      last_tick = now;
      rc = bus_view_tick(s->view, wall_ns());
      if (!rc)
        rc = after_batch(s);
    }
  }
  return rc;
}

int
bus_service_run(bus_conn *c, bus_view *v, const bus_service_opts *o) {
  static volatile int never = 0;
  bus_service_opts opts = *o;
  if (!opts.stop)
    opts.stop = &never;
  if (!opts.name)
    return BUS_ERR(BUS_EINVAL, "a service needs a name");
  service s = {.conn = c, .view = v, .o = &opts};
  bus_consumer *k = NULL;
  bus_batch *b = NULL;
  int rc = serve_status(&s);
  if (!rc)
    rc = open_consumer(&s, &k);
  if (!rc)
    rc = bus_batch_new(&b);
  if (!rc)
    rc = run_loop(&s, &k, b);
  bus_conn_unserve(s.serve_all);
  bus_conn_unserve(s.serve_one);
  bus_conn_unserve(s.serve_snap);
  bus_batch_free(b);
  bus_consumer_close(k);
  return rc;
}

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
 * A view never skips an event. The consumer numbers its first deliveries
 * densely, so a message the loop was given and never saw (a pull answered
 * into a connection a broker crash broke, a message another client pulled)
 * shows as a hole in that numbering before anything after it is applied:
 * the loop applies what came in order, then recreates the consumer just
 * after the view's applied sequence (a "reposition"), which delivers the
 * missing events again, in stream order. This holds for a filtered
 * consumer (the broker numbers only what matches) and for deleted
 * messages (never delivered, never numbered). A hole at the tail, with
 * nothing after it, shows in the consumer's info (measure_lag).
 *
 * A view also holds the stored time of the event it applied last. At
 * start and after every reconnection the loop checks that the stream
 * still has that event at that sequence: a stream that lost acknowledged
 * writes (an OS crash of a server that had not synced) may have reused
 * the sequence or not reached it. Then the view describes events the log
 * no longer has: the loop says so (state "diverged", in status and
 * through on_state) and stops applying and deciding until it is rebuilt.
 *
 * Status and snapshot requests are answered from nats.c's delivery thread: they
 * read the view in their own read transaction (LMDB allows it beside the
 * writer) and the lag this loop last measured.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nats-int.h"

#define LAG_EVERY_MS 500

typedef struct service {
  bus_conn *conn;
  bus_view *view;
  const bus_service_opts *o;
  _Atomic uint64_t lag;
  _Atomic uint64_t repositions; /* holes in delivery order, refilled */
  _Atomic int state;            /* BUS_SERVICE_* */
  char why[256];                /* set once, before state turns diverged */
  uint64_t next_cseq;           /* the consumer's next first delivery */
  uint64_t tail_cseq;           /* next_cseq when the broker was ahead */
  unsigned long reconnects;     /* the count at the last stream check */
  unsigned long repaired;       /* the count at the last repair */
  int64_t repair_ms;            /* when repair was last tried */
  bus_serve *serve_all, *serve_one, *serve_snap;
} service;

const char *
bus_service_state_name(int state) {
  return state == BUS_SERVICE_DIVERGED ? "diverged" : "up";
}

void
bus_service_opts_init(bus_service_opts *o) {
  memset(o, 0, sizeof *o);
  o->stream = "LARK_EVENTS";
  o->filter = "lark.ev.>";
  o->batch = 512;
  o->poll_ms = 200;
  o->version = bus_build_version();
}

/* {name, seq, digest, lag, applied, stale, rejected, outbox, state,
 *  repositions[, version][, why]} */
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
  int state = atomic_load(&s->state);
  int version = s->o->version && *s->o->version;
  msgpack_pack_map(&pk, 10 + (uint32_t)version + (state != BUS_SERVICE_UP));
  bus_pack_kv_str(&pk, "name", s->o->name);
  bus_pack_kv_uint(&pk, "seq", seq);
  bus_pack_kv_str(&pk, "digest", hex);
  bus_pack_kv_uint(&pk, "lag", atomic_load(&s->lag));
  bus_pack_kv_uint(&pk, "applied", st.applied);
  bus_pack_kv_uint(&pk, "stale", st.stale);
  bus_pack_kv_uint(&pk, "rejected", st.rejected);
  bus_pack_kv_uint(&pk, "outbox", st.outbox);
  bus_pack_kv_str(&pk, "state", bus_service_state_name(state));
  bus_pack_kv_uint(&pk, "repositions", atomic_load(&s->repositions));
  if (version)
    bus_pack_kv_str(&pk, "version", s->o->version);
  if (state != BUS_SERVICE_UP)
    bus_pack_kv_str(&pk, "why", s->why);
  return 0;
}

static void
on_status(bus_conn *c, const char *subject, const char *reply, const void *data,
          size_t len, void *ud) {
  (void)subject;
  (void)data;
  (void)len;
  service *s = ud;
  if (!bus__is_request(reply))
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
  if (!bus__is_request(reply))
    return;
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
  bus_packbuf b;
  bus_packbuf_init(&b);
  if (rc == 0) {
    msgpack_pack_map(&b.pk, 3);
    bus_pack_kv_bool(&b.pk, "ok", 1);
    bus_pack_kv_str(&b.pk, "path", path);
    bus_pack_kv_uint(&b.pk, "seq", seq);
  } else {
    msgpack_pack_map(&b.pk, 1);
    bus_pack_str(&b.pk, "error");
    msgpack_pack_map(&b.pk, 2);
    bus_pack_kv_str(&b.pk, "code", bus_err_name(rc));
    bus_pack_kv_str(&b.pk, "message", bus_last_error());
  }
  if (reply)
    bus_conn_publish(c, reply, b.sb.data, b.sb.size);
  bus_packbuf_destroy(&b);
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
  s->next_cseq = 1; /* a new consumer numbers from 1 */
  s->tail_cseq = 0;
  /* Between the delete and the create another client may make one of
   * the same name (only where the rules let it): delete and try again. */
  for (int i = 0;; i++) {
    rc = bus_consumer_open(s->conn, &co, k);
    if (rc != BUS_EBROKER || i == 3)
      return rc;
  }
}

#define REPOSITION 2 /* step: a hole in delivery order, reopen */

/*
 * One pass: fetch a batch, apply what came in order and ack it. Returns
 * 1 when something was applied, 0 when nothing came, REPOSITION when the
 * delivery order broke (what followed the hole is left unacked: the
 * consumer is about to be made again).
 */
static int
step(service *s, bus_consumer *k, bus_batch *b) {
  int rc = bus_consumer_fetch(k, s->o->batch, s->o->poll_ms, b);
  if (rc == BUS_ETIMEOUT || rc == BUS_ECONN)
    return 0; /* nothing yet, or reconnecting */
  if (rc)
    return rc;
  if (bus_batch_len(b) == 0)
    return 0;
  bus_view_stats st;
  if ((rc = bus_view_stats_get(s->view, &st)))
    return rc;
  size_t n = bus_batch_len(b);
  size_t keep = bus__batch_in_order(b, st.applied_seq, &s->next_cseq);
  bus__batch_truncate(b, keep);
  if (keep && (rc = bus_view_apply_batch(s->view, b)))
    return rc;
  bus_batch_ack(b); /* a lost ack only means a skipped redelivery */
  return keep < n ? REPOSITION : keep > 0;
}

/*
 * Does the stream still hold, at the view's applied sequence, the event
 * the view applied last (same stored time)? Asked at start and after each
 * reconnection. A failure to ask is not an answer: asked again later.
 */
static void
check_stream(service *s) {
  unsigned long rc_now = atomic_load(&s->conn->reconnects);
  bus_view_stats st;
  if (s->reconnects == rc_now || bus_view_stats_get(s->view, &st))
    return;
  int64_t ns = 0;
  int rc = 0;
  if (st.applied_seq)
    rc = bus__stream_msg_time(s->conn, s->o->stream, st.applied_seq, &ns);
  if (rc == BUS_ENOT_FOUND) {
    uint64_t last = 0;
    if (bus_stream_last_seq(s->conn, s->o->stream, &last) < 0)
      return;
    if (last >= st.applied_seq) { /* deleted on purpose: nothing to say */
      s->reconnects = rc_now;
      return;
    }
    snprintf(s->why, sizeof s->why,
             "the view holds %s up to sequence %llu, the stream ends at "
             "%llu: it lost acknowledged events",
             s->o->stream, (unsigned long long)st.applied_seq,
             (unsigned long long)last);
  } else if (rc < 0) {
    return;
  } else if (st.applied_ns && ns != st.applied_ns) {
    snprintf(s->why, sizeof s->why,
             "%s sequence %llu is not the event the view applied (stored "
             "at %lld, the view's at %lld): the stream was rewritten",
             s->o->stream, (unsigned long long)st.applied_seq, (long long)ns,
             (long long)st.applied_ns);
  } else {
    s->reconnects = rc_now;
    return;
  }
  s->reconnects = rc_now;
  atomic_store(&s->state, BUS_SERVICE_DIVERGED);
  if (s->o->on_state)
    s->o->on_state(BUS_SERVICE_DIVERGED, s->why, s->o->state_ud);
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

/* What the view has applied so far (0 when it cannot say). */
static uint64_t
applied_count(service *s) {
  bus_view_stats st;
  return bus_view_stats_get(s->view, &st) ? 0 : st.applied;
}

/* Has something come for k since its last fetch: messages nats.c holds
 * for it, or ones the broker has not delivered yet? 0 when not, or when
 * the broker cannot say (one request; a fetch would wait out its expiry
 * when nothing came). The broker counts a stored event for its consumers
 * a moment after it acknowledged the append (another goroutine): one
 * stored just before the look may not be counted yet, and is applied in
 * the next pass instead. */
static int
came_meanwhile(bus_consumer *k) {
  uint64_t pending = 0;
  return bus__consumer_queued(k) > 0 ||
         (bus_consumer_pending(k, &pending) == 0 && pending > 0);
}

/*
 * The pass decide asked for (bus_txn_decide_again), once what it decided
 * before is sent: when events came meanwhile (came_meanwhile), the loop
 * fetches and applies them first, and the pass that applies them decides
 * on the whole view anyway. Only when none were applied is the view
 * decided on again alone. What that pass decides is sent too.
 *
 * So a pass asked for decides on everything stored before it, as any
 * other pass does, and what it emits lands behind those events, not
 * ahead of them. The scheduler places its next gang in such a pass:
 * placed ahead of the Jobs submitted while the gang before it was sent,
 * its job.placed was applied in one pass with all of them, its desired
 * states waiting for their apply (docs/BENCHMARKS.md, "The pushes'
 * lead").
 */
static int
decide_again(service *s, uint64_t applied_before) {
  if (applied_count(s) != applied_before)
    return 0;
  int rc = bus_view_tick(s->view, bus_wall_ns());
  return rc ? rc : after_batch(s);
}

/*
 * After a reconnection the broker may be one that restarted and lost what
 * it kept in memory (node streams): the service's repair makes them again
 * and has what they lack sent again. Tried once a second until it
 * succeeds (a broker just up may not answer yet). 1 when it ran now.
 */
static int
repair_after_reconnect(service *s, int64_t now) {
  unsigned long rc_now = atomic_load(&s->conn->reconnects);
  if (!s->o->repair || s->repaired == rc_now || now - s->repair_ms < 1000)
    return 0;
  s->repair_ms = now;
  if (s->o->repair(s->conn, s->o->repair_ud) == 0)
    s->repaired = rc_now;
  return 1;
}

/*
 * The lag costs a request to the broker: measured twice a second at
 * most, not once per batch. The same answer shows a hole at the tail,
 * which no later delivery would show: the broker numbered a delivery
 * the loop never received (taken by another client, or answered into a
 * request that had given up), and nothing came after it. Unacked, it
 * would come again only after the ack wait (30 s); acked by another
 * client, never. Seen twice in a row with nothing received between (the
 * fetches in between hand over whatever nats.c holds), it is a hole:
 * REPOSITION.
 */
static int
measure_lag(service *s, bus_consumer *k, int64_t now, int64_t *last) {
  uint64_t lag, delivered;
  if (now - *last < LAG_EVERY_MS)
    return 0;
  *last = now;
  if (bus__consumer_lag(k, &lag, &delivered))
    return 0;
  atomic_store(&s->lag, lag);
  if (delivered < s->next_cseq) {
    s->tail_cseq = 0;
    return 0;
  }
  if (s->tail_cseq != s->next_cseq) { /* first seen: give it a pass */
    s->tail_cseq = s->next_cseq;
    return 0;
  }
  s->tail_cseq = 0;
  return REPOSITION;
}

/* Make the consumer again just after what the view holds. */
static int
reopen(service *s, bus_consumer **kp) {
  bus_consumer_close(*kp);
  *kp = NULL;
  return open_consumer(s, kp);
}

/* Told to stop. */
static int
stopping(const service *s) {
  return s->o->stop_flag && atomic_load(s->o->stop_flag);
}

static int
run_loop(service *s, bus_consumer **kp, bus_batch *b) {
  bus_consumer *k = *kp;
  int64_t last_tick = bus_mono_ms(), last_lag = 0;
  int rc = after_batch(s); /* publish what a crash left behind */
  int again = bus_view_take_again(s->view);
  while (!rc && !stopping(s)) {
    if (bus_conn_closed(s->conn))
      return BUS_ERR(BUS_ECONN, "the broker connection closed for good");
    check_stream(s);
    if (atomic_load(&s->state) == BUS_SERVICE_DIVERGED) {
      bus_sleep_ms(
          s->o->poll_ms); /* status still answers; nothing is decided */
      continue;
    }
    if (repair_after_reconnect(s, bus_mono_ms()) && (rc = after_batch(s)))
      break;
    int64_t now = bus_mono_ms();
    uint64_t applied = again ? applied_count(s) : 0;
    int got = measure_lag(s, k, now, &last_lag);
    if (!got && (!again || came_meanwhile(k)))
      got = step(s, k, b);
    if (got == REPOSITION)
      atomic_fetch_add(&s->repositions, 1);
    if (got == BUS_ENOT_FOUND || got == REPOSITION) {
      if ((got = reopen(s, kp)) < 0)
        return got;
      k = *kp;
      if (!(rc = after_batch(s)))
        continue;
      break;
    }
    if (got < 0)
      return got;
    if (got)
      rc = after_batch(s);
    if (!rc && again)
      rc = decide_again(s, applied);
    again = bus_view_take_again(s->view);
    now = bus_mono_ms();
    if (!rc && !again && s->o->tick_ms && now - last_tick >= s->o->tick_ms) {
      last_tick = now;
      rc = bus_view_tick(s->view, bus_wall_ns());
      if (!rc)
        rc = after_batch(s);
      again = bus_view_take_again(s->view);
    }
  }
  return rc;
}

int
bus_service_run(bus_conn *c, bus_view *v, const bus_service_opts *o) {
  bus_service_opts opts = *o;
  if (!opts.name)
    return BUS_ERR(BUS_EINVAL, "a service needs a name");
  service s = {.conn = c, .view = v, .o = &opts};
  s.reconnects = (unsigned long)-1; /* check the stream at start */
  s.repaired = atomic_load(&c->reconnects);
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

/*
 * ingress.c - the lark-logs ingress loop, on lark.in.*.logs.>.
 *
 * One worker (bus_worker): fetch a batch of ingress messages, route each
 * through the view (logs_route, one read transaction per batch), append what
 * passes asynchronously to LARK_LOGS, flush, and only then acknowledge the
 * whole batch. A crash before the ack leaves the messages in the work queue;
 * they come back after ack_wait and are appended again with the same
 * Nats-Msg-Id (derived from the ingress event's id), so the broker's
 * duplicate window drops what already landed: nothing is lost and, within
 * that window, nothing is republished twice. A refused batch is logged
 * and acknowledged: it never reaches LARK_LOGS. A pod is refused as
 * unbound only by a view that holds every event LARK_EVENTS held when the
 * batch was routed (catch_up); a view still behind keeps the batch for
 * redelivery instead.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "logs.h"

struct logs_ingress {
  svc_ingress s; /* first: the worker's ud */
  uint64_t published, refused, lines;
};

void
logs_ingress_opts_init(logs_ingress_opts *o) {
  memset(o, 0, sizeof *o);
  o->durable = LOGS_INGRESS_DURABLE;
  o->batch = 256;
  o->ack_wait_ns = INT64_C(5000000000);
}

int
logs_ingress_sync(bus_conn *c, const char *durable, int wait_ms) {
  uint64_t last = 0;
  int rc = bus_stream_last_seq(c, "LARK_INGRESS", &last);
  for (int64_t end = bus_mono_ms() + wait_ms; rc == 0;) {
    bus_consumer_state st;
    if ((rc = bus_consumer_state_get(c, "LARK_INGRESS", durable, &st)))
      break;
    if (st.ack_floor >= last || (!st.pending && !st.ack_pending))
      return 1;
    if (bus_mono_ms() >= end)
      return 0;
    bus_sleep_ms(20);
  }
  return rc;
}

static void
say(logs_ingress *in, const char *subject, const char *fmt, const char *a) {
  svc_queue_say(&in->s.q, subject, fmt, a);
}

/* Republish message i of b when its pod is bound to the sending node. */
static int
forward(logs_ingress *in, bus_txn *t, const bus_batch *b, size_t i,
        msgpack_sbuffer *sb, uint64_t *lines) {
  const char *subject;
  char out[BUS_SUBJECT_MAX], id[33], actor[LOGS_NAME_SZ + 8];
  bus_batch_meta(b, i, &subject, NULL, NULL);
  const bus_event *ev = bus_batch_event(b, i);
  if (!ev) {
    int st = bus_batch_status(b, i);
    return bus_error(st, "undecodable: %s", bus_strerror(st));
  }
  msgpack_sbuffer_clear(sb);
  int rc = logs_route(t, subject, ev, out, sizeof out, sb);
  if (rc)
    return rc;
  *lines = bus_as_log_batch(ev)->lines.n; /* routed: a log.batch */
  bus_event_derive_id(ev->id, 0, id);
  snprintf(actor, sizeof actor, "node:%s", subject + 8);
  actor[strcspn(actor, ".")] = 0;
  bus_event o = {.v = BUS_SCHEMA_VERSION,
                 .type = bus_type_name(BUS_T_LOG_BATCH),
                 .id = id,
                 .ts = ev->ts,
                 .actor = actor,
                 .cause = ev->id,
                 .data_mp = sb->data,
                 .data_mp_len = sb->size};
  return bus_append_async(in->s.c, out, &o, BUS_APPEND_NOCHECK);
}

/* A transport failure: the batch is kept for redelivery, not dropped. */
static int
transient(int rc) {
  return rc == BUS_ECONN || rc == BUS_ETIMEOUT || rc == BUS_EBROKER ||
         rc == BUS_ESTORE;
}

/*
 * Before refusing a pod as unbound, let the view catch up with LARK_EVENTS
 * as it stood now (at most 5 s): right after a start, or a burst of
 * placements, a batch may arrive before its job.placed was applied (a pod
 * started from its pushed desired state sends lines at once). 1 when the
 * view holds everything the stream held then; 0 when it is still behind,
 * or the broker could not say: the view cannot tell then, and the batch
 * is kept for redelivery rather than refused.
 */
static int
catch_up(logs_ingress *in) {
  uint64_t last = 0;
  if (bus_stream_last_seq(in->s.c, "LARK_EVENTS", &last))
    return 0;
  for (int i = 0; i < 250 && !bus_worker_stopping(in->s.q.w); i++) {
    bus_view_stats st;
    if (!bus_view_stats_get(in->s.v, &st) && st.applied_seq >= last)
      return 1;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* Route and append a fetched batch; ack it once every append landed. */
static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  logs_ingress *in = ud;
  msgpack_sbuffer *sb = &in->s.q.sb;
  in->s.q.w = w;
  bus_txn *t = NULL;
  uint64_t pub = 0, ref = 0, nlines = 0;
  int hold = 0, waited = 0, behind = 0;
  if (bus_view_read(in->s.v, &t)) {
    say(in, "lark.in.*.logs.>", "cannot read the view: %s", bus_last_error());
    return; /* not acked: redelivered */
  }
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    uint64_t lines = 0;
    const char *subject;
    bus_batch_meta(b, i, &subject, NULL, NULL);
    int rc = forward(in, t, b, i, sb, &lines);
    if (rc == BUS_EDENIED && !waited) {
      waited = 1;
      bus_txn_end(t);
      behind = !catch_up(in);
      if (bus_view_read(in->s.v, &t)) {
        say(in, subject, "cannot read the view: %s", bus_last_error());
        return;
      }
      rc = forward(in, t, b, i, sb, &lines);
    }
    if (rc == BUS_EDENIED && behind)
      rc = bus_error(BUS_ETIMEOUT,
                     "%s as far as the view knows, and the view "
                     "is behind LARK_EVENTS",
                     bus_last_error());
    if (rc && transient(rc)) {
      hold = 1;
      say(in, subject, "kept for redelivery: %s", bus_last_error());
    } else if (rc) {
      ref++;
      say(in, subject, "refused: %s", bus_last_error());
    } else {
      pub++;
      nlines += lines;
    }
  }
  bus_txn_end(t);
  uint64_t failed = 0;
  int rc = bus_append_flush(in->s.c, 30000, &failed);
  if (rc || hold) {
    say(in, "lark.log.>", "appends failed, the batch will be redelivered: %s",
        rc ? bus_last_error() : "see above");
    return;
  }
  bus_batch_ack(b);
  pthread_mutex_lock(&in->s.q.mu);
  in->published += pub;
  in->refused += ref;
  in->lines += nlines;
  pthread_mutex_unlock(&in->s.q.mu);
}

int
logs_ingress_start(bus_conn *c, bus_view *v, const logs_ingress_opts *o,
                   logs_ingress **out) {
  logs_ingress_opts def;
  logs_ingress_opts_init(&def);
  void *in = NULL;
  int rc = svc_ingress_start(sizeof(logs_ingress), c, v, o, &def,
                             "lark.in.*.logs.>", handle_batch, &in);
  *out = rc ? NULL : in;
  return rc;
}

void
logs_ingress_counts(logs_ingress *in, uint64_t *published, uint64_t *refused,
                    uint64_t *lines) {
  pthread_mutex_lock(&in->s.q.mu);
  *published = in->published;
  *refused = in->refused;
  *lines = in->lines;
  pthread_mutex_unlock(&in->s.q.mu);
}

void
logs_ingress_stop(logs_ingress *in) {
  svc_ingress_stop(in ? &in->s : NULL);
}

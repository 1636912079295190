/*
 * slice.c - the slice thread: the node's own desired states, through its
 * pinned durable consumer `edge-<node>` on the node's own stream
 * LARK_NODE_<node> (filter lark.node.<node>.>, deliver last per subject:
 * the current desired state of each pod, then every change; docs/design.md
 * sections 2 and 6), and of each robot (robot.desired, robot.c).
 *
 * Each message is stored before it is acked, so a crash between the two
 * only redelivers it, and the store keeps a pod's desired state only when
 * its version is newer. A message that is none of these for this node is
 * logged, acked and forgotten. When something changed, the loop is woken
 * to reconcile (or, for a projection, to act on it).
 *
 * The consumer acks a batch with one ack (AckAll), and its one pull
 * request stays open across messages (bus_slice, libbus held.c): a
 * desired state costs the broker the message and an ack, not a request
 * and an end status besides. The broker keeps its position in memory: a
 * broker restart forgets it, and so does a stream made anew. The held
 * pull notices either within a second (a reconnection, "409 Consumer
 * Deleted", 503), not at the end of its wait; the fetch fails, the thread
 * opens the consumer again, and "last per subject" hands over every pod's
 * current state, which the store takes only where it is newer. Cut off,
 * or before the scheduler made its stream, the thread retries after 1 s,
 * then 2, 4, up to 16 s; pods run on meanwhile.
 *
 * The node stream itself is kept in memory: a broker that restarted has
 * none until the scheduler (and lark-engine, lark-devices) make it again
 * and send what it held; meanwhile opening fails ("stream missing") and
 * is tried again as above. The new stream numbers its messages from 1,
 * so "newer" is never the stream's sequence: every desired state and
 * projection carries the version its writer gave it (the sequence of the
 * event that decided it, which only grows), and what is sent again comes
 * with the version it had, which the store already holds: taken as
 * nothing new, nothing is started twice. Only a message without a version
 * (no writer of the platform sends one) falls back to the stream's
 * sequence.
 *
 * Pushes: what is written to the node's stream is first sent to the node
 * as a core message on lark.push.<node>.<rest> (libbus outbox.c,
 * bus_node_push_subject), which only services may publish and only this
 * node hear. The push subscription takes it as the stream's copy would be
 * taken, by its version, so the node has its desired state at the cost
 * of a core message and the stored copy that follows changes nothing. A
 * lost push (a reconnection, a full buffer) costs only the wait for the
 * stored copy: the stream stays the node's reliable path.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "slice.h"

typedef int (*put_fn)(edge_store *s, const char *key, uint64_t seq,
                      const void *data, size_t len, int *stored);

/* ev's data stored under key (the rest of the subject after prefix, which
 * must be name) by put when its version is newer: 1 when it was, 0 when
 * ignored, < 0 when the store failed. */
static int
keep(edge_agent *a, const char *subject, const char *prefix, bus_str name,
     uint64_t seq, const bus_event *ev, put_fn put) {
  size_t n = strlen(prefix);
  if (strncmp(subject, prefix, n) || !bus_str_eq(name, subject + n)) {
    edge_logf("warn", subject, "ignored: %s does not match its subject",
              ev->type);
    return 0;
  }
  bus_packbuf pb;
  bus_packbuf_init(&pb);
  msgpack_pack_object(&pb.pk, ev->data);
  int stored = 0;
  int rc = put(a->store, subject + n, seq, pb.sb.data, pb.sb.size, &stored);
  bus_packbuf_destroy(&pb);
  if (rc) {
    edge_logf("error", subject, "cannot store: %s", bus_last_error());
    return rc;
  }
  return stored;
}

/* Queue job's what (EDGE_CHANGED_*) for the loop and wake it. */
static void
changed(edge_agent *a, bus_str job, unsigned what) {
  size_t i;
  pthread_mutex_lock(&a->changes_mu);
  for (i = 0; i < a->nchanges && !bus_str_eq(job, a->changes[i].job); i++)
    ;
  if (i < a->nchanges)
    a->changes[i].what |= what;
  else if (!bus_grow(&a->changes, a->nchanges, &a->changes_cap,
                     sizeof *a->changes, 8)) {
    bus_str_copy(job, a->changes[i].job, sizeof a->changes[i].job);
    a->changes[a->nchanges++].what = what;
  }
  pthread_mutex_unlock(&a->changes_mu);
  uv_async_send(&a->wake);
}

void
edge_slice_changes(edge_agent *a, edge_slice_change **out, size_t *n) {
  pthread_mutex_lock(&a->changes_mu);
  *out = a->changes, *n = a->nchanges;
  a->changes = NULL, a->nchanges = a->changes_cap = 0;
  pthread_mutex_unlock(&a->changes_mu);
}

/* The engine projection ev is, and its Job and version; NULL when it is
 * none. */
static const char *
engine_what(const bus_event *ev, bus_str *job, uint64_t *version) {
  const bus_ev_engine_stages *st = bus_as_engine_stages(ev);
  const bus_ev_engine_weights *w = bus_as_engine_weights(ev);
  const bus_ev_engine_peers *pe = bus_as_engine_peers(ev);
  if (st && st->has_version)
    *version = st->version;
  if (w && w->has_version)
    *version = w->version;
  if (pe && pe->has_version)
    *version = pe->version;
  *job = st ? st->job : w ? w->job : pe ? pe->job : BUS_STR("");
  return st ? "stages" : w ? "weights" : pe ? "peers" : NULL;
}

/* A message as the slice takes it: from a fetched batch or a push. */
typedef struct slice_msg {
  const char *subject; /* on the node's stream: lark.node.<node>.<rest> */
  uint64_t seq;        /* the stream's sequence; 0 for a push */
  const bus_event *ev;
  const void *body;
  size_t len;
} slice_msg;

/*
 * An engine.stages / engine.weights / engine.peers of a Job, written by
 * lark-engine on lark.node.<node>.engine.<job>.<what>: its body stored as
 * it came when its version is newer (1), for the loop (engine.c).
 */
static int
take_engine(edge_agent *a, const slice_msg *m, const char *what, bus_str job,
            uint64_t version) {
  char want[BUS_SUBJECT_MAX], name[EDGE_NAME_SZ];
  int stored = 0;
  bus_str_copy(job, name, sizeof name);
  snprintf(want, sizeof want, "lark.node.%s.engine.%s.%s", a->cfg.node, name,
           what);
  if (job.len >= sizeof name || strcmp(m->subject, want)) {
    edge_logf("warn", m->subject,
              "ignored: engine.%s does not match its subject", what);
    return 0;
  }
  if (edge_store_engine_put(a->store, name, what, version, m->body, m->len,
                            &stored)) {
    edge_logf("error", m->subject, "cannot store: %s", bus_last_error());
    return -1;
  }
  if (stored)
    changed(a, job,
            what[0] == 's'   ? EDGE_CHANGED_STAGES
            : what[0] == 'w' ? EDGE_CHANGED_WEIGHTS
                             : EDGE_CHANGED_PEERS);
  return 0; /* the loop is woken to act on it, not to reconcile */
}

/* A pod.desired or a robot.desired (robot.c reconciles those), or an
 * engine projection. A push without its writer's version is ignored: it
 * has no stream sequence to fall back on, and its stored copy follows. */
static int
take(edge_agent *a, const slice_msg *m) {
  char prefix[BUS_SUBJECT_MAX];
  const bus_event *ev = m->ev;
  const bus_ev_pod_desired *d = bus_as_pod_desired(ev);
  const bus_ev_robot_desired *rd = bus_as_robot_desired(ev);
  bus_str job;
  uint64_t seq = m->seq;
  const char *what = ev ? engine_what(ev, &job, &seq) : NULL;
  if (what)
    return seq ? take_engine(a, m, what, job, seq) : 0;
  if (!d && !rd) {
    edge_logf("warn", m->subject, "ignored: %s",
              ev ? "not a pod.desired, robot.desired or engine projection"
                 : bus_last_error());
    return 0;
  }
  /* the deciding service's version outlives the stream's own sequence */
  if (d && d->has_version && d->version > 0)
    seq = d->version;
  if (rd && rd->has_version && rd->version > 0)
    seq = rd->version;
  if (!seq)
    return 0;
  snprintf(prefix, sizeof prefix, "lark.node.%s.%s.", a->cfg.node,
           d ? "pod" : "robot");
  return d ? keep(a, m->subject, prefix, d->pod, seq, ev,
                  edge_store_desired_put)
           : keep(a, m->subject, prefix, rd->robot, seq, ev,
                  edge_store_robot_desired_put);
}

/* The i-th message of a fetched batch, taken. */
static int
take_fetched(edge_agent *a, const bus_batch *b, size_t i) {
  slice_msg m = {.ev = bus_batch_event(b, i)};
  bus_batch_meta(b, i, &m.subject, &m.seq, NULL);
  bus_batch_data(b, i, &m.body, &m.len);
  return take(a, &m);
}

/*
 * A desired state pushed ahead of its stream (lark.push.<node>.<rest>,
 * bus_node_push_subject), on the push subscription's thread: taken as
 * the stream's copy is, under its stream subject, so the copy that
 * follows it is nothing new. Only services may publish there.
 */
static void
on_push(bus_conn *c, const char *subject, const char *reply, const void *data,
        size_t len, void *ud) {
  edge_agent *a = ud;
  char as[BUS_SUBJECT_MAX];
  msgpack_zone zone;
  bus_event ev;
  (void)c, (void)reply;
  if (bus_node_pushed_subject(subject, as, sizeof as))
    return;
  msgpack_zone_init(&zone, 2048);
  memset(&ev, 0, sizeof ev);
  int ok = bus_event_decode_typed(data, len, &ev, &zone) == 0;
  slice_msg m = {as, 0, ok ? &ev : NULL, data, len};
  if (take(a, &m) > 0) {
    atomic_store(&a->dirty, 1);
    uv_async_send(&a->wake);
  }
  msgpack_zone_destroy(&zone);
}

void
edge_pushes_start(edge_agent *a) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, BUS_NODE_PUSH_PREFIX "%s.>", a->cfg.node);
  if (bus_conn_serve(a->conn, subject, NULL, on_push, a, &a->pushes))
    edge_logf("warn", subject, "cannot listen for pushes: %s",
              bus_last_error());
}

void
edge_pushes_stop(edge_agent *a) {
  bus_conn_unserve(a->pushes);
  a->pushes = NULL;
}

/* again: after a failed fetch (a hole in the deliveries, a consumer the
 * broker forgot), made anew from each pod's current state; the store
 * keeps the highest version, so what comes again changes nothing. */
static bus_consumer *
open_slice(edge_agent *a, int again) {
  bus_slice sl;
  if (bus_slice_init(&sl, a->cfg.node))
    return NULL;
  sl.opts.recreate = again;
  bus_consumer *k = NULL;
  int rc = bus_consumer_open(a->conn, &sl.opts, &k);
  if (rc) {
    edge_logf("warn", sl.filter, "cannot open the slice: %s (%s)%s",
              bus_strerror(rc), bus_last_error(),
              rc == BUS_ENO_STREAM ? "; the scheduler makes it when it "
                                     "takes this node's registration"
                                   : "");
    return NULL;
  }
  edge_logf("info", sl.filter, "reading the slice through %s on %s", sl.durable,
            sl.stream);
  return k;
}

void *
edge_slice_main(void *arg) {
  edge_agent *a = arg;
  bus_consumer *k = NULL;
  bus_batch *b = NULL;
  int again = 0, idle_s = 1;
  if (bus_batch_new(&b))
    return NULL;
  while (!atomic_load(&a->stop)) {
    if (!k && !(k = open_slice(a, again))) {
      /* 1 s, doubling to 16 s: a fleet registering at once would keep
       * the broker's JetStream API busy with opens of streams the
       * scheduler has not made yet, and slow it making them */
      for (int i = 0; i < idle_s * 10 && !atomic_load(&a->stop); i++)
        usleep(100 * 1000);
      idle_s = idle_s < 16 ? idle_s * 2 : 16;
      continue;
    }
    idle_s = 1;
    /* returns as soon as desired states are there; each wait that ends
     * empty costs the broker a request and a status (edge.h) */
    int rc = bus_consumer_fetch(k, 256, a->cfg.slice_wait_ms, b);
    if (rc && rc != BUS_ETIMEOUT) {
      /* out of reach, or the consumer is gone: open it again */
      if (rc == BUS_ENOT_FOUND)
        edge_logf("info", "-", "%s; opening it again", bus_last_error());
      bus_consumer_close(k);
      k = NULL;
      again = 1;
      usleep(100 * 1000);
      continue;
    }
    int changed = 0, failed = 0;
    for (size_t i = 0; i < bus_batch_len(b) && !failed; i++) {
      int r = take_fetched(a, b, i);
      failed = r < 0;
      changed += r > 0;
    }
    if (!failed)
      bus_batch_ack(b);
    bus_batch_clear(b);
    if (changed) {
      atomic_store(&a->dirty, 1);
      uv_async_send(&a->wake);
    }
  }
  bus_batch_free(b);
  bus_consumer_close(k);
  return NULL;
}

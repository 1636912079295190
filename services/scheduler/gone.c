/*
 * gone.c - a deleted node's stream removed by the scheduler, the service
 * that makes node streams for the nodes it knows (slices.c).
 *
 * apply leaves each deleted node's name in `gone` with the sequence of
 * its node.deleted. The stream is removed after a batch that left the
 * outbox empty: a desired state decided before the deletion and still
 * queued would find its stream missing, and the outbox would wait for
 * the repair to make it again, which it never does for a node the view
 * no longer has. Nothing is queued for the node after its deletion is
 * applied (its pods were failed or stopped there, and decide sends only
 * to bound pods' nodes).
 *
 * Other services write into node streams too (lark-engine's projections,
 * lark-devices' robots), and their outboxes make a missing node stream
 * again (svc_node_streams_repair) for what they queued before they saw
 * the deletion. So a removed stream is watched for SCHED_GONE_WATCH_MS
 * and removed again, every couple of seconds, when it is back.
 *
 * What is removed is remembered in the running process only: after a
 * restart every node in `gone` is tried once more, and a stream already
 * missing is no error. A node registered again leaves `gone` when its
 * node.registered is applied, and its watch ends then: its new stream
 * stays. A sweep between its registration (which made the stream) and
 * that apply removes the stream while it holds nothing yet (nothing is
 * sent to a node the view does not have), and the outbox repair makes it
 * again at the node's first desired state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

typedef struct gone_node {
  char name[SCHED_NAME_SZ];
  uint64_t seq;
} gone_node;

typedef struct gone_list {
  gone_node *v;
  size_t n, cap;
  uint64_t after; /* only those deleted past this sequence */
} gone_list;

static int
take(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  gone_list *g = ud;
  if (kl == 0 || kl >= SCHED_NAME_SZ || vl != 8 || sched_seq_of(v) <= g->after)
    return 0;
  if (bus_grow(&g->v, g->n, &g->cap, sizeof *g->v, 8))
    return bus_error(-ENOMEM, "out of memory listing deleted nodes");
  gone_node *e = &g->v[g->n++];
  sched_copy(e->name, sizeof e->name, k, kl);
  e->seq = sched_seq_of(v);
  return 0;
}

/* Remove node's stream: 1 removed, 0 already missing, <0 failed. */
static int
remove_stream(bus_conn *c, const char *node) {
  char stream[BUS_NODE_STREAM_MAX];
  int rc = bus_node_stream_name(node, stream, sizeof stream);
  if (rc == 0 && (rc = bus_stream_delete(c, stream)) == 0)
    return 1;
  return rc == BUS_ENO_STREAM ? 0 : rc;
}

static void
watch(sched_gone_state *g, const char *node, int64_t now) {
  for (int i = 0; i < g->nwatch; i++)
    if (!strcmp(g->watch[i].node, node))
      return; /* removed once more after a failure: watched already */
  if (g->nwatch == SCHED_GONE_WATCHED)
    return; /* so many at once: the oldest watches end first */
  sched_copy(g->watch[g->nwatch].node, SCHED_NAME_SZ, node, strlen(node));
  g->watch[g->nwatch++].until_ms = now + SCHED_GONE_WATCH_MS;
}

/* Whether node is still in `gone` (not registered again since). */
static int
still_gone(bus_txn *t, const char *node) {
  const void *v;
  size_t n;
  return bus_txn_get(t, SCHED_GONE, node, strlen(node), &v, &n) == 0;
}

/* The streams removed lately, removed again when something made them,
 * unless their node was registered again meanwhile (its new stream). */
static int
rewatch(bus_conn *c, bus_view *v, sched_gone_state *g, int64_t now, int *made) {
  int rc = 0, kept = 0;
  bus_txn *t;
  if (now - g->checked_ms < 2000 || !g->nwatch)
    return 0;
  g->checked_ms = now;
  if ((rc = bus_view_read(v, &t)))
    return rc;
  for (int i = 0; i < g->nwatch; i++)
    if (!still_gone(t, g->watch[i].node))
      g->watch[i].until_ms = now; /* back: its stream stays */
  bus_txn_end(t); /* no read transaction open across network calls */
  for (int i = 0; i < g->nwatch; i++) {
    if (now >= g->watch[i].until_ms)
      continue;
    int r = remove_stream(c, g->watch[i].node);
    if (r > 0)
      (*made)++;
    else if (r < 0)
      rc = r;
    g->watch[kept++] = g->watch[i];
  }
  g->nwatch = kept;
  return rc;
}

int
sched_gone_sweep(bus_conn *c, bus_view *v, uint64_t outbox, sched_gone_state *g,
                 int *removed) {
  gone_list l = {.after = g->done};
  bus_txn *t;
  int64_t now = bus_mono_ms();
  int made = 0, rc = rewatch(c, v, g, now, &made);
  if (!outbox && !rc && !(rc = bus_view_read(v, &t))) {
    rc = bus_txn_scan(t, SCHED_GONE, NULL, 0, take, &l);
    bus_txn_end(t); /* no read transaction open across network calls */
  }
  /* in name order; after a failure the rest wait for the next pass, so
   * done stays below every one not removed */
  uint64_t upto = g->done, left = UINT64_MAX;
  for (size_t i = 0; i < l.n; i++) {
    int r = rc ? rc : remove_stream(c, l.v[i].name);
    if (r >= 0) {
      made += r;
      upto = l.v[i].seq > upto ? l.v[i].seq : upto;
      watch(g, l.v[i].name, now);
    } else {
      rc = r;
      left = l.v[i].seq < left ? l.v[i].seq : left;
    }
  }
  g->done = left <= upto ? left - 1 : upto;
  free(l.v);
  if (removed)
    *removed = made;
  return rc;
}

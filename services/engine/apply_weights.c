/*
 * apply_weights.c - the weights versions of a Job, by reference:
 * weights.published (a new newest version, its publisher's node the
 * first source), weights.cached (another node holds it now) and
 * weights.dropped (a node no longer does). A Job keeps its newest
 * ENG_VERSIONS_MAX versions; each change queues the engine.weights
 * projection.
 */
#include <stdio.h>
#include <string.h>

#include "engine-int.h"

static void
source(bus_txn *t, eng_source *s, bus_str node, int has_addr, bus_str addr) {
  eng_node n;
  memset(s, 0, sizeof *s);
  bus_str_copy(node, s->node, sizeof s->node);
  if (!eng_node_get(t, s->node, &n))
    snprintf(s->cluster, sizeof s->cluster, "%s", n.cluster);
  if (has_addr)
    bus_str_copy(addr, s->address, sizeof s->address);
}

typedef struct oldest {
  unsigned char key[ENG_KEY_SZ];
  size_t len;
  int n;
} oldest;

static int
count_ver(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  oldest *o = ud;
  if (!o->n++ && kl <= sizeof o->key) {
    memcpy(o->key, k, kl);
    o->len = kl;
  }
  return 0;
}

/* Drop the oldest versions past ENG_VERSIONS_MAX. */
static int
trim(bus_txn *t, const char *job) {
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", job), rc = 0;
  for (;;) {
    oldest o = {.n = 0};
    rc = bus_txn_scan(t, "wver", prefix, (size_t)plen, count_ver, &o);
    if (rc || o.n <= ENG_VERSIONS_MAX)
      return rc;
    if ((rc = bus_txn_del(t, "wver", o.key, o.len)))
      return rc;
  }
}

static int
published(bus_txn *t, eng_job *j, const bus_ev_weights_published *e,
          int64_t ts) {
  if (e->version <= j->weights)
    return 0; /* versions grow */
  eng_wver w;
  memset(&w, 0, sizeof w);
  w.layout = ENG_LAYOUT;
  w.version = e->version;
  w.size = e->size;
  w.ts = ts;
  bus_str_copy(e->sha256, w.sha256, sizeof w.sha256);
  bus_str_copy(e->pod, w.pod, sizeof w.pod);
  source(t, &w.src[0], e->node, 1, e->address);
  w.nsrc = 1;
  j->weights = e->version;
  unsigned char key[ENG_KEY_SZ];
  size_t kl = eng_key_seq(key, j->name, e->version);
  int rc = bus_txn_put(t, "wver", key, kl, &w, sizeof w);
  if (!rc)
    rc = eng_job_put(t, j);
  return rc ? rc : trim(t, j->name);
}

/* cached: add the node as a source; dropped: remove it. */
static int
held(bus_txn *t, const eng_job *j, const bus_ev_weights_cached *e, int add) {
  eng_wver w;
  unsigned char key[ENG_KEY_SZ];
  size_t kl = eng_key_seq(key, j->name, e->version);
  if (eng_get(t, "wver", key, kl, &w, sizeof w))
    return 0; /* a version no longer kept */
  int i = 0;
  while (i < w.nsrc && !bus_str_eq(e->node, w.src[i].node))
    i++;
  if (add && i == w.nsrc && w.nsrc < ENG_SOURCES_MAX)
    source(t, &w.src[w.nsrc++], e->node, e->has_address, e->address);
  else if (!add && i < w.nsrc) {
    memmove(&w.src[i], &w.src[i + 1], (size_t)(w.nsrc - i - 1) * sizeof *w.src);
    memset(&w.src[--w.nsrc], 0, sizeof *w.src);
  }
  return bus_txn_put(t, "wver", key, kl, &w, sizeof w);
}

int
eng_apply_weights(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  /* the three share job first; cached and dropped share their layout */
  const bus_ev_weights_cached *c = data;
  eng_job j;
  char name[ENG_NAME_SZ];
  if (eng_job_get(t, bus_str_copy(c->job, name, sizeof name), &j))
    return 0;
  int rc = ev->t == BUS_T_WEIGHTS_PUBLISHED
               ? published(t, &j, data, ev->ts)
               : held(t, &j, c, ev->t == BUS_T_WEIGHTS_CACHED);
  return rc ? rc : eng_queue(t, j.name, 'w', ev->seq);
}

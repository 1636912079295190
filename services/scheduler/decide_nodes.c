/*
 * decide_nodes.c - the nodes of the view as placement's model, kept from
 * one decide pass to the next.
 *
 * Reading a node's facts (its Node resource: capacity, labels, runtimes,
 * devices) means unpacking and checking msgpack; doing that for every
 * node on every pass made a pass cost O(nodes) unpacks however little it
 * placed. The facts are kept instead, each beside a copy of the resource
 * bytes it was read from, and read again only when those bytes change.
 * What moves with every binding (allocations, Ready, cordon, the named
 * devices held) is taken from the node's record on every pass, so the
 * model a pass places into is exactly the one a fresh read would give.
 *
 * The kept set belongs to the thread that decides (a view decides in its
 * service loop's thread only): no lock, freed when the thread ends. A node
 * gone from the view is dropped from the set on the next pass.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

/* A node's resource as last read: the bytes and the pass that saw it. */
typedef struct kept {
  char name[SCHED_NAME_SZ];
  void *spec;
  size_t len;
  uint64_t seen;
} kept;

typedef struct node_cache {
  sched_nodes nodes;
  kept *k; /* sorted by name, like nodes */
  size_t n, cap;
  uint64_t pass;
} node_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void
cache_free(void *p) {
  node_cache *c = p;
  if (!c)
    return;
  sched_nodes_clear(&c->nodes);
  for (size_t i = 0; i < c->n; i++)
    free(c->k[i].spec);
  free(c->k);
  free(c);
}

static void
cache_key_make(void) {
  pthread_key_create(&cache_key, cache_free);
}

static node_cache *
cache_get(void) {
  pthread_once(&cache_once, cache_key_make);
  node_cache *c = pthread_getspecific(cache_key);
  if (!c && (c = calloc(1, sizeof *c)) != NULL) {
    sched_nodes_init(&c->nodes);
    if (pthread_setspecific(cache_key, c)) {
      free(c);
      c = NULL;
    }
  }
  return c;
}

/* The index of name in c->k (or where it would go); *found set. */
static size_t
kept_search(const node_cache *c, const char *name, int *found) {
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = strcmp(c->k[mid].name, name);
    if (d == 0) {
      *found = 1;
      return mid;
    }
    if (d < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}

/* Read the node's facts from its resource and keep them with its bytes.
 * A node whose resource cannot be read takes no pods: it is left out. */
static int
read_facts(node_cache *c, bus_txn *t, const node_rec *r, const void *spec,
           size_t len) {
  msgpack_zone z;
  bus_node_res res;
  sched_node n;
  bus_field_err err;
  int nerr = 0, found;
  if (!msgpack_zone_init(&z, 2048))
    return -ENOMEM;
  sched_node_init(&n, "");
  int bad = sched_spec_read(t, BUS_T_NODE_REGISTERED, r->name, &z, &res) ||
            sched_node_read(&res, &n, &err, 1, &nerr);
  msgpack_zone_destroy(&z);
  if (sched_nodes_find(&c->nodes, r->name))
    sched_nodes_remove(&c->nodes, r->name);
  int rc = bad ? 0 : sched_nodes_put(&c->nodes, &n);
  sched_node_clear(&n);
  size_t i = kept_search(c, r->name, &found);
  if (!found) {
    if (bus_grow(&c->k, c->n, &c->cap, sizeof *c->k, 64))
      return -ENOMEM;
    memmove(c->k + i + 1, c->k + i, (c->n - i) * sizeof *c->k);
    memset(&c->k[i], 0, sizeof c->k[i]);
    sched_copy(c->k[i].name, sizeof c->k[i].name, r->name, strlen(r->name));
    c->n++;
  }
  free(c->k[i].spec);
  c->k[i].spec = malloc(len ? len : 1);
  c->k[i].len = c->k[i].spec ? len : 0;
  if (!c->k[i].spec)
    return -ENOMEM;
  memcpy(c->k[i].spec, spec, len);
  c->k[i].seen = c->pass;
  return rc;
}

/* A named device held on the node being loaded: taken in the model. */
static int
mark_held(const char *device, void *ud) {
  sched_node *n = ud;
  for (int d = 0; d < n->capacity.ndevices; d++)
    if ((n->capacity.devices[d].flags & SCHED_DEV_NAMED) &&
        !strcmp(n->capacity.devices[d].name, device))
      n->dev_used[d] = 1;
  return 0;
}

typedef struct load_walk {
  node_cache *c;
  bus_txn *t;
} load_walk;

/* One node record: its facts (kept, or read again when its resource
 * changed), then its state from the record. */
static int
load_node(void *rec, void *ud) {
  load_walk *w = ud;
  node_cache *c = w->c;
  const node_rec *r = rec;
  const void *spec = NULL;
  size_t len = 0;
  int found, rc = 0;
  if (sched_spec_get(w->t, "nodespecs", r->name, &spec, &len))
    return 0; /* no resource: not placeable */
  size_t i = kept_search(c, r->name, &found);
  if (found && c->k[i].len == len && !memcmp(c->k[i].spec, spec, len))
    c->k[i].seen = c->pass;
  else if ((rc = read_facts(c, w->t, r, spec, len)))
    return rc;
  sched_node *n = sched_nodes_find(&c->nodes, r->name);
  if (!n)
    return 0;
  n->ready = r->ready;
  n->cordoned = r->cordoned;
  n->cpu_used_m = r->cpu_used_m;
  n->memory_used_mib = r->memory_used_mib;
  n->gpu_taken = r->gpu_taken;
  n->pods = r->pods;
  for (int d = 0; d < n->capacity.ndevices; d++) {
    n->dev_used[d] = 0;
    for (uint32_t k2 = 0; k2 < r->ndev; k2++)
      if (!strcmp(n->capacity.devices[d].name, r->dev_name[k2]))
        n->dev_used[d] = r->dev_used[k2];
  }
  return n->nnamed ? sched_each_hold(w->t, r->name, NULL, mark_held, n) : 0;
}

/* Drop what the pass did not see: nodes gone from the view. */
static void
drop_unseen(node_cache *c) {
  size_t keep = 0;
  for (size_t i = 0; i < c->n; i++) {
    if (c->k[i].seen == c->pass) {
      c->k[keep++] = c->k[i];
      continue;
    }
    if (sched_nodes_find(&c->nodes, c->k[i].name))
      sched_nodes_remove(&c->nodes, c->k[i].name);
    free(c->k[i].spec);
  }
  c->n = keep;
}

int
sched_nodes_load(bus_txn *t, sched_nodes **out) {
  node_cache *c = cache_get();
  *out = NULL;
  if (!c)
    return bus_error(-ENOMEM, "out of memory keeping the nodes");
  c->pass++;
  load_walk w = {c, t};
  int rc = sched_each_rec(t, "nodes", NULL, sizeof(node_rec), 1, load_node, &w);
  if (rc) { /* start again from nothing next time */
    sched_nodes_clear(&c->nodes);
    sched_nodes_init(&c->nodes);
    for (size_t i = 0; i < c->n; i++)
      free(c->k[i].spec);
    c->n = 0;
    return rc;
  }
  drop_unseen(c);
  *out = &c->nodes;
  return 0;
}

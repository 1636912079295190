/*
 * jobs.c - the hub's Job table for weights channels (jobs.h).
 *
 * Invariants:
 * - engine.nodes replaces a Job's node set whole; addresses are kept
 *   apart from it, per node, so an address reported before the node set
 *   names its node (or after the node left and came back) still counts
 *   once the node is in the set.
 * - Every count is bounded: nodes by the event (at most 4096), addresses
 *   to RELAY_JOB_ADDRS per node and MAX_ADDR_NODES nodes per Job (the
 *   oldest node's go first), so hostile or runaway events cannot grow
 *   the hub without end.
 * - Addresses are kept in canonical form (wreq.h); one that is not
 *   numeric is not kept, so it never matches.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

#define MAX_ADDR_NODES 4096

typedef struct jnode {
  char node[RELAY_NAME_MAX], cluster[RELAY_NAME_MAX];
} jnode;

typedef struct jaddr {
  char node[RELAY_NAME_MAX];
  char addr[RELAY_JOB_ADDRS][RELAY_ADDR_MAX]; /* newest first */
  int n;
} jaddr;

typedef struct jent {
  struct jent *next;
  char name[RELAY_NAME_MAX];
  jnode *nodes;
  size_t nnodes;
  jaddr *addrs;
  size_t naddrs, addrs_cap;
} jent;

struct relay_jobs {
  pthread_mutex_t mu;
  jent *head;
  size_t n;
};

int
relay_jobs_new(relay_jobs **out) {
  relay_jobs *t = calloc(1, sizeof *t);
  if (!t)
    return -ENOMEM;
  pthread_mutex_init(&t->mu, NULL);
  *out = t;
  return 0;
}

static void
jent_free(jent *j) {
  free(j->nodes);
  free(j->addrs);
  free(j);
}

void
relay_jobs_free(relay_jobs *t) {
  if (!t)
    return;
  for (jent *j = t->head, *next; j; j = next) {
    next = j->next;
    jent_free(j);
  }
  pthread_mutex_destroy(&t->mu);
  free(t);
}

/* The entry of job (made when make); under mu. */
static jent *
find(relay_jobs *t, bus_str job, int make) {
  char name[RELAY_NAME_MAX];
  bus_str_copy(job, name, sizeof name);
  for (jent *j = t->head; j; j = j->next)
    if (!strcmp(j->name, name))
      return j;
  if (!make || !bus_name_valid(name, BUS_NAME_MAX))
    return NULL;
  jent *j = calloc(1, sizeof *j);
  if (!j)
    return NULL;
  snprintf(j->name, sizeof j->name, "%s", name);
  j->next = t->head;
  t->head = j;
  t->n++;
  return j;
}

static void
forget(relay_jobs *t, bus_str job) {
  for (jent **pp = &t->head; *pp; pp = &(*pp)->next)
    if (bus_str_eq(job, (*pp)->name)) {
      jent *j = *pp;
      *pp = j->next;
      jent_free(j);
      t->n--;
      return;
    }
}

static int
set_nodes(relay_jobs *t, const bus_ev_engine_nodes *d) {
  jent *j = find(t, d->job, 1);
  jnode *v = d->nodes.n ? calloc(d->nodes.n, sizeof *v) : NULL;
  if (!j || (d->nodes.n && !v)) {
    free(v);
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < d->nodes.n; i++) {
    bus_str_copy(d->nodes.v[i].node, v[i].node, sizeof v[i].node);
    bus_str_copy(d->nodes.v[i].cluster, v[i].cluster, sizeof v[i].cluster);
  }
  free(j->nodes);
  j->nodes = v;
  j->nnodes = d->nodes.n;
  return 1;
}

/* The address list of node in j, made (dropping the oldest node's when
 * full); NULL without memory. */
static jaddr *
addrs_of(jent *j, const char *node) {
  for (size_t i = 0; i < j->naddrs; i++)
    if (!strcmp(j->addrs[i].node, node))
      return &j->addrs[i];
  if (j->naddrs == MAX_ADDR_NODES) {
    memmove(j->addrs, j->addrs + 1, (j->naddrs - 1) * sizeof *j->addrs);
    j->naddrs--;
  }
  if (bus_grow(&j->addrs, j->naddrs, &j->addrs_cap, sizeof *j->addrs, 8))
    return NULL;
  jaddr *a = &j->addrs[j->naddrs++];
  memset(a, 0, sizeof *a);
  snprintf(a->node, sizeof a->node, "%s", node);
  return a;
}

/* Put addr first in node's list (once). */
static int
add_addr(relay_jobs *t, bus_str job, bus_str node, bus_str addr) {
  char n[RELAY_NAME_MAX], raw[RELAY_WREQ_MAX], canon[RELAY_ADDR_MAX];
  char ip[RELAY_IP_MAX];
  int port;
  bus_str_copy(node, n, sizeof n);
  bus_str_copy(addr, raw, sizeof raw);
  if (!bus_name_valid(n, BUS_NAME_MAX) ||
      relay_addr_canon(raw, strlen(raw), canon, ip, &port))
    return 0;
  jent *j = find(t, job, 1);
  jaddr *a = j ? addrs_of(j, n) : NULL;
  if (!a)
    return -ENOMEM;
  int at = 0;
  while (at < a->n && strcmp(a->addr[at], canon))
    at++;
  if (at == 0 && a->n)
    return 0;
  if (at == a->n && a->n < RELAY_JOB_ADDRS)
    a->n++;
  if (at == a->n)
    at--; /* full: the oldest goes */
  memmove(a->addr[1], a->addr[0], (size_t)at * sizeof a->addr[0]);
  snprintf(a->addr[0], sizeof a->addr[0], "%s", canon);
  return 1;
}

/* Apply a decoded event; under mu. */
static int
apply_locked(relay_jobs *t, const bus_event *ev) {
  const bus_ev_engine_nodes *nodes = bus_as_engine_nodes(ev);
  const bus_ev_weights_published *pub = bus_as_weights_published(ev);
  const bus_ev_weights_cached *cached = bus_as_weights_cached(ev);
  const bus_ev_engine_ended *ended = bus_as_engine_ended(ev);
  if (nodes)
    return set_nodes(t, nodes);
  if (pub)
    return add_addr(t, pub->job, pub->node, pub->address);
  if (cached && cached->has_address)
    return add_addr(t, cached->job, cached->node, cached->address);
  if (ended && ended->has_phase && bus_str_eq(ended->phase, "Deleted")) {
    forget(t, ended->job);
    return 1;
  }
  return 0;
}

int
relay_jobs_apply(relay_jobs *t, const bus_event *ev) {
  if (!ev || !ev->type)
    return BUS_EMALFORMED;
  if (strcmp(ev->type, "engine.nodes") && strcmp(ev->type, "engine.ended") &&
      strcmp(ev->type, "weights.published") &&
      strcmp(ev->type, "weights.cached"))
    return 0;
  if (!ev->typed)
    return BUS_EMALFORMED;
  pthread_mutex_lock(&t->mu);
  int rc = apply_locked(t, ev);
  pthread_mutex_unlock(&t->mu);
  return rc;
}

static const jnode *
node_in(const jent *j, const char *node) {
  for (size_t i = 0; i < j->nnodes; i++)
    if (!strcmp(j->nodes[i].node, node))
      return &j->nodes[i];
  return NULL;
}

static int
has_addr(const jent *j, const char *node, const char *addr) {
  for (size_t i = 0; i < j->naddrs; i++)
    if (!strcmp(j->addrs[i].node, node))
      for (int k = 0; k < j->addrs[i].n; k++)
        if (!strcmp(j->addrs[i].addr[k], addr))
          return 1;
  return 0;
}

/* The rule; under mu. */
static int
check_locked(relay_jobs *t, const relay_wreq *r, const char *cluster,
             char *to_cluster, char *why, size_t cap) {
  const jent *j = find(t, bus_str_of(r->job), 0);
  const jnode *f, *to;
  if (!j || !j->nnodes)
    return snprintf(why, cap, "job %s has no nodes (unknown job)", r->job), -1;
  if (!(f = node_in(j, r->from)))
    return snprintf(why, cap, "node %s hosts no pod of job %s", r->from,
                    r->job),
           -1;
  if (!(to = node_in(j, r->to)))
    return snprintf(why, cap, "node %s hosts no pod of job %s", r->to, r->job),
           -1;
  if (!cluster || !cluster[0] || strcmp(f->cluster, cluster))
    return snprintf(why, cap, "node %s is in cluster %s, the relay in %s",
                    r->from, f->cluster[0] ? f->cluster : "unknown",
                    cluster && cluster[0] ? cluster : "none"),
           -1;
  if (!to->cluster[0])
    return snprintf(why, cap, "node %s has no cluster", r->to), -1;
  if (!has_addr(j, r->to, r->addr))
    return snprintf(why, cap, "job %s gave no address %s for node %s", r->job,
                    r->addr, r->to),
           -1;
  snprintf(to_cluster, RELAY_NAME_MAX, "%s", to->cluster);
  return 0;
}

int
relay_jobs_check(relay_jobs *t, const relay_wreq *r, const char *cluster,
                 char to_cluster[RELAY_NAME_MAX], char *why, size_t cap) {
  pthread_mutex_lock(&t->mu);
  int rc = check_locked(t, r, cluster, to_cluster, why, cap);
  pthread_mutex_unlock(&t->mu);
  return rc ? BUS_EDENIED : 0;
}

size_t
relay_jobs_count(relay_jobs *t) {
  pthread_mutex_lock(&t->mu);
  size_t n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}

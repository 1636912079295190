/*
 * project.c - what lark-engine tells the nodes of a Job, built from the
 * view alone: engine.stages (each loop stage's latest started step, the
 * loading tasks, ended), engine.weights (the versions, newest first, with
 * their sources) and engine.peers (every bound pod with its address: the
 * Domain's virtual IP, else the pod's reported localIP, else its node's
 * first address). Also the set of nodes hosting a Job's pods, which
 * decides where the projections go (engine.nodes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-int.h"

/* ------------------------------------------------------------- nodes */

static int
cmp_name(const void *a, const void *b) {
  return strcmp(a, b);
}

static int
add_node(bus_txn *t, eng_pod *p, void *ud) {
  (void)t;
  eng_names *ns = ud;
  if (!p->bound || !p->node[0])
    return 0;
  for (size_t i = 0; i < ns->n; i++)
    if (!strcmp(ns->v[i], p->node))
      return 0;
  if (bus_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 16))
    return bus_error(-ENOMEM, "out of memory");
  snprintf(ns->v[ns->n++], ENG_NAME_SZ, "%s", p->node);
  return 0;
}

int
eng_job_nodes(bus_txn *t, const char *job, eng_names *out) {
  memset(out, 0, sizeof *out);
  int rc = eng_each_pod(t, job, add_node, out);
  if (!rc && out->n)
    qsort(out->v, out->n, sizeof *out->v, cmp_name);
  return rc;
}

static int
add_jnode(const char *node, void *ud) {
  eng_names *ns = ud;
  if (bus_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 16))
    return bus_error(-ENOMEM, "out of memory");
  snprintf(ns->v[ns->n++], ENG_NAME_SZ, "%s", node);
  return 0;
}

int
eng_nodes_differ(bus_txn *t, const char *job) {
  eng_names now, had = {0};
  int rc = eng_job_nodes(t, job, &now);
  if (!rc)
    rc = eng_each_jnode(t, job, add_jnode, &had); /* in key order */
  int differ = rc || now.n != had.n;
  for (size_t i = 0; !differ && i < now.n; i++)
    differ = strcmp(now.v[i], had.v[i]) != 0;
  free(now.v);
  free(had.v);
  return differ;
}

/* ------------------------------------------------------------ stages */

int
eng_build_stages(bus_txn *t, const eng_job *j, uint64_t version, eng_proj *p) {
  (void)t;
  bus_ev_engine_stages *e = &p->u.stages;
  *e = (bus_ev_engine_stages){.job = bus_str_of(j->name),
                              .has_version = 1,
                              .version = version,
                              .has_mode = 1,
                              .mode = j->mode == ENG_PIPELINE
                                          ? BUS_STR("pipeline")
                                          : BUS_STR("sequential"),
                              .has_stages = 1,
                              .has_loaders = 1,
                              .has_ended = 1,
                              .ended = j->ended || j->over};
  uint32_t n = 0;
  for (int i = 0; i < j->nloop; i++) {
    const eng_stage *s = &j->st[j->loop[i]];
    if (s->step < 0)
      continue;
    p->st[n++] =
        (bus_stage_state){.stage = bus_str_of(eng_stage_names[j->loop[i]]),
                          .step = (uint64_t)s->step,
                          .has_weights = 1,
                          .weights = s->weights,
                          .has_ts = 1,
                          .ts = s->ts};
  }
  e->stages = (bus_stage_state_list){p->st, n};
  n = 0;
  for (int k = 0; k < j->ntasks; k++)
    if (eng_takes_part(j, k, ENG_SYNC) && eng_loads(j, k)) {
      snprintf(p->names[n], ENG_POD_SZ, "%s-%s", j->name, j->tasks[k].name);
      p->strs[n] = bus_str_of(p->names[n]);
      n++;
    }
  e->loaders = (bus_str_list){p->strs, n};
  return 0;
}

/* ----------------------------------------------------------- weights */

typedef struct vers {
  eng_proj *p;
  uint32_t n;
} vers;

static int
add_version(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  vers *vs = ud;
  if (vl != sizeof(eng_wver) || vs->n >= ENG_VERSIONS_MAX)
    return 0;
  memcpy(&vs->p->w[vs->n++], v, sizeof(eng_wver));
  return 0;
}

int
eng_build_weights(bus_txn *t, const eng_job *j, uint64_t version, eng_proj *p) {
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", j->name);
  vers vs = {p, 0};
  int rc = bus_txn_scan(t, "wver", prefix, (size_t)plen, add_version, &vs);
  bus_weights_source *src = p->src;
  for (uint32_t i = 0; !rc && i < vs.n; i++) {
    const eng_wver *w = &p->w[vs.n - 1 - i]; /* newest first */
    for (int s = 0; s < w->nsrc; s++)
      src[s] = (bus_weights_source){.node = bus_str_of(w->src[s].node),
                                    .has_cluster = w->src[s].cluster[0] != 0,
                                    .cluster = bus_str_of(w->src[s].cluster),
                                    .address = bus_str_of(w->src[s].address)};
    p->refs[i] = (bus_weights_ref){.version = w->version,
                                   .size = w->size,
                                   .sha256 = bus_str_of(w->sha256),
                                   .has_sources = 1,
                                   .sources = {src, w->nsrc}};
    src += w->nsrc;
  }
  p->u.weights = (bus_ev_engine_weights){.job = bus_str_of(j->name),
                                         .has_version = 1,
                                         .version = version,
                                         .has_versions = 1,
                                         .versions = {p->refs, vs.n}};
  return rc;
}

/* ------------------------------------------------------------- peers */

static const char *const phases[] = {"Pending", "Running", "Succeeded",
                                     "Failed",  "Stopped", NULL};

static int
add_peer(bus_txn *t, eng_pod *pod, void *ud) {
  eng_proj *p = ud;
  if (!pod->bound || p->npods >= ENG_PEERS_MAX)
    return 0;
  eng_peer *e = &p->pods[p->npods++];
  eng_node n;
  memset(e, 0, sizeof *e);
  e->pod = *pod;
  if (!eng_node_get(t, pod->node, &n)) {
    snprintf(e->cluster, sizeof e->cluster, "%s", n.cluster);
    snprintf(e->address, sizeof e->address, "%s", n.address);
  }
  if (pod->local_ip[0])
    snprintf(e->address, sizeof e->address, "%s", pod->local_ip);
  if (pod->vip[0])
    snprintf(e->address, sizeof e->address, "%s", pod->vip);
  snprintf(e->task, sizeof e->task, "%s-%s", p->job->name,
           p->job->tasks[pod->task].name);
  return 0;
}

static bus_peer
peer_of(const eng_job *j, const eng_peer *e) {
  const char *phase = "Pending";
  for (int i = 0; phases[i]; i++)
    if (!strcmp(e->pod.phase, phases[i]))
      phase = phases[i];
  return (bus_peer){.pod = bus_str_of(e->pod.pod),
                    .task = bus_str_of(e->task),
                    .has_role = 1,
                    .role =
                        bus_str_of(eng_role_name(j->tasks[e->pod.task].role)),
                    .node = bus_str_of(e->pod.node),
                    .has_cluster = e->cluster[0] != 0,
                    .cluster = bus_str_of(e->cluster),
                    .has_address = 1,
                    .address = bus_str_of(e->address),
                    .has_attempt = 1,
                    .attempt = e->pod.attempt,
                    .has_phase = 1,
                    .phase = bus_str_of(phase)};
}

int
eng_build_peers(bus_txn *t, const eng_job *j, uint64_t version, eng_proj *p) {
  p->job = j;
  p->npods = 0;
  int rc = eng_each_pod(t, j->name, add_peer, p);
  for (uint32_t i = 0; !rc && i < p->npods; i++)
    p->peers[i] = peer_of(j, &p->pods[i]);
  p->u.peers = (bus_ev_engine_peers){.job = bus_str_of(j->name),
                                     .has_version = 1,
                                     .version = version,
                                     .has_peers = 1,
                                     .peers = {p->peers, p->npods}};
  return rc;
}

eng_proj *
eng_proj_new(void) {
  return calloc(1, sizeof(eng_proj));
}

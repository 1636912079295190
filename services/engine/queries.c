/*
 * queries.c - reads of lark-engine's view, live and on a replay (the same
 * function): stages.get (a Job's loop, its current steps, its timeline
 * and its weights versions), stages.list (one row per Job) and peers.get
 * (the Job's pods as engine.peers gives them to its nodes). They only
 * read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-int.h"

#define LIMIT_DEFAULT 200
#define LIMIT_MAX 2000

static void
pack_bool(msgpack_packer *pk, int v) {
  if (v)
    msgpack_pack_true(pk);
  else
    msgpack_pack_false(pk);
}

static const char *
mode_name(const eng_job *j) {
  return j->mode == ENG_PIPELINE ? "pipeline" : "sequential";
}

/* The loop stage started last (by its stage.started's sequence). */
static const eng_stage *
latest(const eng_job *j, int *stage) {
  const eng_stage *best = NULL;
  for (int i = 0; i < j->nloop; i++) {
    const eng_stage *s = &j->st[j->loop[i]];
    if (s->step >= 0 && (!best || s->seq > best->seq)) {
      best = s;
      *stage = j->loop[i];
    }
  }
  return best;
}

/* ------------------------------------------------------------- steps */

typedef struct steps {
  msgpack_packer *pk;
  uint32_t n, skip, packed;
} steps;

static int
count_step(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl, (void)v;
  steps *s = ud;
  s->n += vl == sizeof(eng_step);
  return 0;
}

static void
pack_step(msgpack_packer *pk, const eng_step *r) {
  bus_map m;
  bus_map_begin(&m, pk);
  bus_map_str(&m, "stage", eng_stage_names[r->stage % ENG_NSTAGES]);
  bus_map_uint(&m, "step", r->step);
  bus_map_uint(&m, "weights", r->weights);
  msgpack_pack_int64(bus_map_key(&m, "started"), r->started);
  msgpack_pack_int64(bus_map_key(&m, "ended"), r->ended);
  bus_map_uint(
      &m, "ms",
      r->ended > r->started ? (uint64_t)(r->ended - r->started) / 1000000 : 0);
  bus_map_uint(&m, "done", r->done);
  bus_map_uint(&m, "of", r->of);
  bus_map_str(&m, "last", r->last);
  bus_map_uint(&m, "run", r->run);
  msgpack_packer *mp = bus_map_key(&m, "metrics");
  msgpack_pack_map(mp, r->nmetrics);
  for (int i = 0; i < r->nmetrics && i < ENG_METRICS_MAX; i++) {
    bus_pack_str(mp, r->metrics[i].name);
    msgpack_pack_double(
        mp, r->metrics[i].n ? r->metrics[i].sum / (double)r->metrics[i].n : 0);
  }
  bus_map_end(&m);
}

static int
add_step(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  steps *s = ud;
  eng_step r;
  if (vl != sizeof r || s->skip-- > 0)
    return 0;
  s->skip = 0;
  memcpy(&r, v, sizeof r);
  pack_step(s->pk, &r);
  return 0;
}

static int
pack_steps(bus_txn *t, const eng_job *j, uint32_t limit, msgpack_packer *pk) {
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", j->name);
  steps s = {pk, 0, 0, 0};
  int rc = bus_txn_scan(t, "steps", prefix, (size_t)plen, count_step, &s);
  if (rc)
    return rc;
  uint32_t n = s.n < limit ? s.n : limit;
  s.skip = s.n - n;
  msgpack_pack_array(pk, n);
  return bus_txn_scan(t, "steps", prefix, (size_t)plen, add_step, &s);
}

/* ---------------------------------------------------------- versions */

static int
pack_versions(bus_txn *t, const eng_job *j, msgpack_packer *pk) {
  eng_proj *p = eng_proj_new();
  if (!p)
    return bus_error(-ENOMEM, "out of memory");
  int rc = eng_build_weights(t, j, 0, p);
  const bus_ev_engine_weights *w = &p->u.weights;
  msgpack_pack_array(pk, rc ? 0 : w->versions.n);
  for (uint32_t i = 0; !rc && i < w->versions.n; i++) {
    const eng_wver *v = &p->w[w->versions.n - 1 - i];
    bus_map m;
    bus_map_begin(&m, pk);
    bus_map_uint(&m, "version", v->version);
    bus_map_uint(&m, "size", v->size);
    bus_map_str(&m, "sha256", v->sha256);
    bus_map_str(&m, "pod", v->pod);
    bus_map_str(&m, "node", v->nsrc ? v->src[0].node : "");
    msgpack_pack_int64(bus_map_key(&m, "ts"), v->ts);
    msgpack_packer *mp = bus_map_key(&m, "nodes");
    msgpack_pack_array(mp, v->nsrc);
    for (int s = 0; s < v->nsrc; s++)
      bus_pack_str(mp, v->src[s].node);
    rc = bus_map_end(&m);
  }
  free(p);
  return rc;
}

static int
count_bound(bus_txn *t, eng_pod *p, void *ud) {
  (void)t;
  *(uint32_t *)ud += p->bound;
  return 0;
}

static int
pack_current(const eng_job *j, msgpack_packer *pk) {
  int n = 0;
  for (int i = 0; i < j->nloop; i++)
    n += j->st[j->loop[i]].step >= 0;
  msgpack_pack_array(pk, (size_t)n);
  for (int i = 0; i < j->nloop; i++) {
    const eng_stage *s = &j->st[j->loop[i]];
    if (s->step < 0)
      continue;
    bus_map m;
    bus_map_begin(&m, pk);
    bus_map_str(&m, "stage", eng_stage_names[j->loop[i]]);
    bus_map_uint(&m, "step", (uint64_t)s->step);
    bus_map_uint(&m, "weights", s->weights);
    msgpack_pack_int64(bus_map_key(&m, "started"), s->ts);
    pack_bool(bus_map_key(&m, "complete"), s->complete);
    bus_map_end(&m);
  }
  return 0;
}

static int
get(bus_txn *t, const msgpack_object *req, msgpack_packer *pk) {
  char name[ENG_NAME_SZ] = "";
  eng_job j;
  bus_obj_str(req, "name", name, sizeof name);
  int64_t limit = bus_obj_int(req, "limit", LIMIT_DEFAULT);
  int rc = eng_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no job %s", name);
  if (rc)
    return rc;
  uint32_t peers = 0;
  if ((rc = eng_each_pod(t, j.name, count_bound, &peers)))
    return rc;
  bus_map m;
  bus_map_begin(&m, pk);
  bus_map_str(&m, "job", j.name);
  bus_map_uint(&m, "generation", j.generation);
  bus_map_str(&m, "mode", mode_name(&j));
  bus_map_uint(&m, "maxStaleness", j.max_stale);
  bus_map_str(&m, "phase", j.phase);
  pack_bool(bus_map_key(&m, "ended"), j.ended);
  bus_map_uint(&m, "run", j.run);
  bus_map_uint(&m, "syncs", eng_syncs(&j));
  bus_map_uint(&m, "weights", j.weights);
  msgpack_packer *lp = bus_map_key(&m, "loop");
  msgpack_pack_array(lp, j.nloop);
  for (int i = 0; i < j.nloop; i++)
    bus_pack_str(lp, eng_stage_names[j.loop[i]]);
  pack_current(&j, bus_map_key(&m, "current"));
  rc = pack_steps(t, &j,
                  limit <= 0 || limit > LIMIT_MAX ? LIMIT_MAX : (uint32_t)limit,
                  bus_map_key(&m, "steps"));
  if (!rc)
    rc = pack_versions(t, &j, bus_map_key(&m, "versions"));
  bus_map_uint(&m, "peers", peers);
  int rc2 = bus_map_end(&m);
  return rc ? rc : rc2;
}

/* -------------------------------------------------------------- list */

typedef struct list {
  bus_packbuf b;
  uint32_t n;
} list;

static int
add_item(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  list *l = ud;
  eng_job j;
  if (vl != sizeof j)
    return 0;
  memcpy(&j, v, sizeof j);
  int stage = 0;
  const eng_stage *s = latest(&j, &stage);
  bus_map m;
  bus_map_begin(&m, &l->b.pk);
  bus_map_str(&m, "job", j.name);
  bus_map_str(&m, "mode", mode_name(&j));
  bus_map_str(&m, "phase", j.phase);
  bus_map_str(&m, "stage", s ? eng_stage_names[stage] : "");
  msgpack_pack_int64(bus_map_key(&m, "step"), s ? s->step : -1);
  bus_map_uint(&m, "weights", j.weights);
  pack_bool(bus_map_key(&m, "ended"), j.ended);
  l->n++;
  return bus_map_end(&m);
}

static int
list_jobs(bus_txn *t, msgpack_packer *pk) {
  list l = {.n = 0};
  bus_packbuf_init(&l.b);
  int rc = bus_txn_scan(t, "jobs", NULL, 0, add_item, &l);
  if (!rc) {
    msgpack_pack_map(pk, 1);
    bus_pack_str(pk, "items");
    msgpack_pack_array(pk, l.n);
    bus_pack_raw(pk, l.b.sb.data, l.b.sb.size);
  }
  bus_packbuf_destroy(&l.b);
  return rc;
}

/* ------------------------------------------------------------- peers */

static int
peers(bus_txn *t, const msgpack_object *req, msgpack_packer *pk) {
  char name[ENG_NAME_SZ] = "";
  eng_job j;
  bus_obj_str(req, "name", name, sizeof name);
  int rc = eng_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no job %s", name);
  eng_proj *p = rc ? NULL : eng_proj_new();
  if (!rc && !p)
    rc = bus_error(-ENOMEM, "out of memory");
  if (!rc)
    rc = eng_build_peers(t, &j, 0, p);
  if (!rc) {
    msgpack_pack_map(pk, 2);
    bus_pack_kv_str(pk, "job", j.name);
    bus_pack_str(pk, "peers");
    msgpack_pack_array(pk, p->npods);
    for (uint32_t i = 0; i < p->npods; i++)
      bus_peer_write(pk, &p->peers[i]);
  }
  free(p);
  return rc;
}

int
engine_query(bus_txn *t, const char *kind, const char *verb,
             const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)ud;
  if (!strcmp(kind, "stages") && !strcmp(verb, "get"))
    return get(t, req, pk);
  if (!strcmp(kind, "stages") && !strcmp(verb, "list"))
    return list_jobs(t, pk);
  if (!strcmp(kind, "peers") && !strcmp(verb, "get"))
    return peers(t, req, pk);
  return bus_error(BUS_EINVAL, "unknown verb %s.%s", kind, verb);
}

static const bus_verb verbs[] = {
    {NULL, NULL, NULL, engine_query, 0},
    {0},
};

static const char *const kinds[] = {"stages", "peers", NULL};

const bus_verbs engine_verbs = {.kinds = kinds, .verbs = verbs};

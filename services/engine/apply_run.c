/*
 * apply_run.c - lark-engine's apply of its own events: stage.started (a
 * step begins; a stage without participants completes at once),
 * stage.done (each pod's first report for the running step counts; the
 * step completes when every participant is done), engine.ended (the run
 * is over: its nodes' subjects are to be purged), engine.nodes (where the
 * projections go) and the weights events (the versions and who holds
 * them). Each queues the projections it changes at its own sequence: the
 * `version` the nodes keep the highest of.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine-int.h"

int
eng_queue(bus_txn *t, const char *job, char what, uint64_t seq) {
  char jw[ENG_NAME_SZ + 3];
  unsigned char key[8 + sizeof jw];
  int n = snprintf(jw, sizeof jw, "%s/%c", job, what);
  const void *v;
  size_t vl;
  if (bus_txn_get(t, "projlast", jw, (size_t)n, &v, &vl) == 0 && vl == 8) {
    memcpy(key, v, 8); /* its older row: only the latest goes out */
    memcpy(key + 8, jw, (size_t)n);
    int rc = bus_txn_del(t, "projq", key, 8 + (size_t)n);
    if (rc)
      return rc;
  }
  bus_put_be64(key, seq);
  memcpy(key + 8, jw, (size_t)n);
  int rc = bus_txn_put(t, "projq", key, 8 + (size_t)n, "", 0);
  return rc ? rc : bus_txn_put(t, "projlast", jw, (size_t)n, key, 8);
}

static int
own_job(bus_txn *t, const bus_event *ev, bus_str job, eng_job *j) {
  char name[ENG_NAME_SZ];
  bus_txn_unmark(t, ev->id, strlen(ev->id)); /* decide's once-mark */
  return eng_job_get(t, bus_str_copy(job, name, sizeof name), j);
}

/* -------------------------------------------------------------- steps */

int
eng_apply_started(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_stage_started *e = data;
  eng_job j;
  int s = eng_stage_of(e->stage);
  if (own_job(t, ev, e->job, &j) || s < 0)
    return 0;
  eng_stage *st = &j.st[s];
  *st = (eng_stage){.step = (int64_t)e->step,
                    .weights = e->weights,
                    .seq = ev->seq,
                    .ts = ev->ts};
  eng_step row;
  memset(&row, 0, sizeof row);
  row.layout = ENG_LAYOUT;
  row.stage = (uint8_t)s;
  row.run = j.run;
  row.step = e->step;
  row.weights = e->weights;
  row.started = ev->ts;
  unsigned char key[ENG_KEY_SZ];
  size_t kl = eng_key_seq(key, j.name, ev->seq);
  int rc = bus_txn_put(t, "steps", key, kl, &row, sizeof row);
  if (!rc)
    rc = eng_check_complete(t, &j, s, ev->ts, NULL);
  if (!rc)
    rc = eng_job_put(t, &j);
  return rc ? rc : eng_queue(t, j.name, 's', ev->seq);
}

static void
add_metrics(eng_step *row, const bus_stage_done *d) {
  for (uint32_t i = 0; d->has_metrics && i < d->metrics.n; i++) {
    const bus_value *v = &d->metrics.v[i];
    double x = v->kind == BUS_V_INT     ? (double)v->as.i
               : v->kind == BUS_V_UINT  ? (double)v->as.u
               : v->kind == BUS_V_FLOAT ? v->as.f
                                        : 0;
    if (v->kind < BUS_V_INT || v->kind > BUS_V_FLOAT)
      continue;
    int k = 0;
    while (k < row->nmetrics && !bus_str_eq(v->key, row->metrics[k].name))
      k++;
    if (k == row->nmetrics) {
      if (k == ENG_METRICS_MAX)
        continue;
      bus_str_copy(v->key, row->metrics[k].name, sizeof row->metrics[k].name);
      row->nmetrics++;
    }
    row->metrics[k].sum += x;
    row->metrics[k].n++;
  }
}

/* One pod's report: 1 when it counts (its first for this step). */
static int
take(bus_txn *t, const eng_job *j, int s, const bus_stage_done *d,
     eng_step *row, char *pod) {
  eng_pod p;
  bus_str_copy(d->pod, pod, ENG_POD_SZ);
  if (eng_pod_get(t, pod, &p) || strcmp(p.job, j->name) ||
      !eng_takes_part(j, p.task, s) || eng_pod_done(t, j, s, pod))
    return 0;
  char key[ENG_KEY_SZ];
  int n = snprintf(key, sizeof key, "%s/%d/%s", j->name, s, pod);
  eng_done dn = {
      .layout = ENG_LAYOUT, .run = j->run, .step = (uint64_t)j->st[s].step};
  if (n < 0 || (size_t)n >= sizeof key)
    return 0;
  add_metrics(row, d);
  row->done++;
  return bus_txn_put(t, "done", key, (size_t)n, &dn, sizeof dn) ? -1 : 1;
}

int
eng_apply_done(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_stage_done *e = data;
  eng_job j;
  eng_step row;
  int s = eng_stage_of(e->stage);
  if (own_job(t, ev, e->job, &j) || s < 0 || j.st[s].step != (int64_t)e->step ||
      j.st[s].complete)
    return 0; /* a step already complete, or another run's */
  unsigned char key[ENG_KEY_SZ];
  size_t kl = eng_key_seq(key, j.name, j.st[s].seq);
  int rc = eng_get(t, "steps", key, kl, &row, sizeof row);
  char pod[ENG_POD_SZ], last[ENG_POD_SZ] = "";
  for (uint32_t i = 0; !rc && i < e->pods.n; i++) {
    int took = take(t, &j, s, &e->pods.v[i], &row, pod);
    if (took < 0)
      return bus_error(-ENOMEM, "stage.done: a report not stored");
    if (took)
      snprintf(last, sizeof last, "%s", pod);
  }
  if (rc || !last[0])
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  rc = bus_txn_put(t, "steps", key, kl, &row, sizeof row);
  if (!rc && row.done >= row.of)
    rc = eng_check_complete(t, &j, s, ev->ts, last);
  return rc ? rc : eng_job_put(t, &j);
}

/* ---------------------------------------------------------- the run */

typedef struct purge_ctx {
  bus_txn *t;
  const char *job;
  uint64_t seq;
} purge_ctx;

static int
mark_purge(const char *node, void *ud) {
  purge_ctx *p = ud;
  char key[ENG_KEY_SZ];
  unsigned char seq[8];
  bus_put_be64(seq, p->seq);
  return bus_txn_put(p->t, "purge", key, eng_key2(key, p->job, node), seq, 8);
}

int
eng_apply_ended(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  eng_job j;
  if (own_job(t, ev, ((const bus_ev_engine_ended *)data)->job, &j))
    return 0;
  j.ended = 1; /* decide looks at it no more */
  int rc = bus_txn_del(t, "live", j.name, strlen(j.name));
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", j.name);
  purge_ctx p = {t, j.name, ev->seq};
  if (!rc)
    rc = eng_each_jnode(t, j.name, mark_purge, &p);
  if (!rc)
    rc = eng_del_prefix(t, "done", prefix, (size_t)plen);
  if (!rc)
    rc = eng_job_put(t, &j);
  return rc ? rc : eng_queue(t, j.name, 's', ev->seq);
}

int
eng_apply_nodes(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_engine_nodes *e = data;
  eng_job j;
  if (own_job(t, ev, e->job, &j))
    return 0;
  char prefix[ENG_NAME_SZ + 1], key[ENG_KEY_SZ], node[ENG_NAME_SZ];
  int plen = snprintf(prefix, sizeof prefix, "%s/", j.name);
  int rc = eng_del_prefix(t, "jnodes", prefix, (size_t)plen);
  for (uint32_t i = 0; !rc && i < e->nodes.n; i++) {
    bus_str_copy(e->nodes.v[i].node, node, sizeof node);
    rc = bus_txn_put(t, "jnodes", key, eng_key2(key, j.name, node), "", 0);
  }
  j.moved = rc ? 0 : (uint8_t)eng_nodes_differ(t, j.name);
  if (!rc)
    rc = eng_job_put(t, &j);
  for (const char *w = "swp"; !rc && *w; w++)
    rc = eng_queue(t, j.name, *w, ev->seq); /* new nodes need all three */
  return rc;
}

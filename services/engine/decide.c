/*
 * decide.c - what lark-engine decides after each event and on each tick,
 * for each Job whose run has not ended (the `live` table), one event at
 * a time (each on
 * lark.ev.engine.<job> on top of the version decide saw, the broker's
 * check): engine.ended when the Job ended or was deleted; engine.nodes
 * when the nodes hosting its pods changed; else the next stage.started
 * the rules allow (rules.c). Then each projection apply queued goes to
 * the streams of the Job's nodes (lark.node.<node>.engine.<job>.<what>),
 * in the order queued, once (bus_txn_sendq: the last key sent is in
 * _effects, "o"), with version = the sequence of the event that decided
 * it.
 *
 * Every decision is built from the view alone, its id derived from what
 * was decided on which version, so deciding again after a crash writes
 * the same id and the broker drops the copy; a start decided on a version
 * that moved on is refused by the broker and decided again on the new
 * one. A node stream not there keeps the outbox entry; the service's
 * repair makes it (svc_node_streams_repair).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-int.h"

typedef struct pass {
  bus_txn *t;
  bus_decider by;
  eng_proj *proj; /* made on first use */
  bus_sendq out;  /* projq, sent in order */
} pass;

/* ------------------------------------------------------------- runs */

static int
emit_ended(pass *p, const eng_job *j, const char *subject, uint64_t ver) {
  char src[ENG_NAME_SZ + 64];
  snprintf(src, sizeof src, "ended:%s:%u:%llu", j->name, j->run,
           (unsigned long long)ver);
  bus_ev_engine_ended e = {.job = bus_str_of(j->name),
                           .has_phase = 1,
                           .phase = bus_str_of(j->phase),
                           .has_reason = 1,
                           .reason = BUS_STR("the Job ended")};
  return bus_txn_emit_once(p->t, &p->by, subject, BUS_T_ENGINE_ENDED, &e, src,
                           ver);
}

static int
emit_nodes(pass *p, const eng_job *j, const char *subject, uint64_t ver) {
  eng_names ns;
  int rc = eng_job_nodes(p->t, j->name, &ns);
  bus_engine_node *v = rc ? NULL : calloc(ns.n + 1, sizeof *v);
  eng_node *info = v ? calloc(ns.n + 1, sizeof *info) : NULL;
  if (!rc && !info)
    rc = bus_error(-ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < ns.n; i++) {
    v[i].node = bus_str_of(ns.v[i]);
    if (!eng_node_get(p->t, ns.v[i], &info[i]) && info[i].cluster[0]) {
      v[i].has_cluster = 1;
      v[i].cluster = bus_str_of(info[i].cluster);
    }
  }
  char src[ENG_NAME_SZ + 64];
  snprintf(src, sizeof src, "nodes:%s:%llu", j->name, (unsigned long long)ver);
  bus_ev_engine_nodes e = {.job = bus_str_of(j->name),
                           .nodes = {v, (uint32_t)ns.n}};
  if (!rc)
    rc = bus_txn_emit_once(p->t, &p->by, subject, BUS_T_ENGINE_NODES, &e, src,
                           ver);
  free(info);
  free(v);
  free(ns.v);
  return rc;
}

static int
emit_start(pass *p, const eng_job *j, int s, int64_t n, const char *subject,
           uint64_t ver) {
  char src[ENG_NAME_SZ + 96], reason[128];
  snprintf(src, sizeof src, "start:%s:%u:%d:%lld:%llu", j->name, j->run, s,
           (long long)n, (unsigned long long)ver);
  snprintf(reason, sizeof reason, "%s step %lld",
           n ? "the barrier before it completed" : "the Job is running",
           (long long)n);
  bus_ev_stage_started e = {.job = bus_str_of(j->name),
                            .stage = bus_str_of(eng_stage_names[s]),
                            .step = (uint64_t)n,
                            .has_weights = 1,
                            .weights = j->weights,
                            .has_syncs = 1,
                            .syncs = eng_syncs(j),
                            .has_reason = 1,
                            .reason = bus_str_of(reason)};
  return bus_txn_emit_once(p->t, &p->by, subject, BUS_T_STAGE_STARTED, &e, src,
                           ver);
}

static int
decide_job(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  pass *p = ud;
  char name[ENG_NAME_SZ];
  eng_job j;
  if (kl >= sizeof name)
    return 0;
  memcpy(name, k, kl);
  name[kl] = 0;
  if (eng_job_get(p->t, name, &j) || j.ended)
    return 0;
  char subject[BUS_SUBJECT_MAX];
  bus_version ver;
  int rc = bus_subj_stage_started(subject, sizeof subject, j.name);
  if (!rc)
    rc = bus_txn_version(p->t, subject, &ver);
  if (rc)
    return rc;
  int s;
  int64_t n;
  if (j.over)
    return emit_ended(p, &j, subject, ver.seq);
  if (j.moved)
    return emit_nodes(p, &j, subject, ver.seq);
  if (j.placed && eng_next_start(&j, &s, &n))
    return emit_start(p, &j, s, n, subject, ver.seq);
  return 0;
}

/* ------------------------------------------------------- projections */

typedef struct to_nodes {
  pass *p;
  const char *job;
  char what;
  uint64_t seq;
} to_nodes;

static int
emit_proj(const char *node, void *ud) {
  to_nodes *tn = ud;
  char subject[BUS_SUBJECT_MAX], src[ENG_KEY_SZ];
  int rc;
  bus_type type;
  if (tn->what == 's') {
    type = BUS_T_ENGINE_STAGES;
    rc = bus_subj_engine_stages(subject, sizeof subject, node, tn->job);
  } else if (tn->what == 'w') {
    type = BUS_T_ENGINE_WEIGHTS;
    rc = bus_subj_engine_weights(subject, sizeof subject, node, tn->job);
  } else {
    type = BUS_T_ENGINE_PEERS;
    rc = bus_subj_engine_peers(subject, sizeof subject, node, tn->job);
  }
  snprintf(src, sizeof src, "engine-%c:%s:%s:%llu", tn->what, node, tn->job,
           (unsigned long long)tn->seq);
  return rc ? rc
            : bus_txn_emit_decided(tn->p->t, &tn->p->by, subject, type,
                                   &tn->p->proj->u, src, 0, BUS_APPEND_NOCHECK);
}

static int
send_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  pass *p = ud;
  char jw[ENG_NAME_SZ + 3];
  if (kl <= 10 || kl - 8 >= sizeof jw)
    return 0;
  bus_sendq_sent(&p->out, k, kl);
  memcpy(jw, (const char *)k + 8, kl - 8);
  jw[kl - 8] = 0;
  char what = jw[kl - 9];
  jw[kl - 10] = 0; /* <job>/<what> */
  eng_job j;
  if (eng_job_get(p->t, jw, &j))
    return 0;
  if (!p->proj && !(p->proj = eng_proj_new()))
    return bus_error(-ENOMEM, "out of memory");
  uint64_t seq = bus_get_be64(k);
  int rc = what == 's'   ? eng_build_stages(p->t, &j, seq, p->proj)
           : what == 'w' ? eng_build_weights(p->t, &j, seq, p->proj)
                         : eng_build_peers(p->t, &j, seq, p->proj);
  to_nodes tn = {p, j.name, what, seq};
  return rc ? rc : eng_each_jnode(p->t, j.name, emit_proj, &tn);
}

int
engine_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)ud;
  pass p = {.t = t,
            .by = {.actor = ENG_ACTOR,
                   .cause = "",
                   .ts = cause && cause->ts ? cause->ts : now}};
  int rc = bus_txn_scan(t, "live", NULL, 0, decide_job, &p);
  if (!rc)
    rc = bus_txn_sendq(t, "projq", "o", &p.out, send_one, &p);
  free(p.proj);
  return rc;
}

/* ------------------------------------------------------------- purge */

typedef struct purges {
  engine_purge_fn fn;
  void *ud;
} purges;

static int
purge_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  purges *pg = ud;
  char key[ENG_KEY_SZ];
  if (kl >= sizeof key || vl != 8)
    return 0;
  memcpy(key, k, kl);
  key[kl] = 0;
  char *slash = strchr(key, '/');
  if (!slash)
    return 0;
  *slash = 0;
  return pg->fn(key, slash + 1, bus_get_be64(v), pg->ud);
}

int
engine_each_purge(bus_txn *t, engine_purge_fn fn, void *ud) {
  purges pg = {fn, ud};
  return bus_txn_scan(t, "purge", NULL, 0, purge_one, &pg);
}

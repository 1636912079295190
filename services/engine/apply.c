/*
 * apply.c - lark-engine's apply of what others decide: the Jobs (their
 * loop from job.submitted's spec.engine and tasks, their phase, stop,
 * resume, delete), their placement (job.placed, job.unplaced), their pods
 * (pod.phase), the nodes (node.registered) and the Domains' addresses
 * (domain.allocated). Its own events are apply_run.c.
 *
 * apply is pure: no clock, no broker. A Job's run starts when its phase
 * becomes Running while placed; it is to end (decide's engine.ended) when
 * the Job ends or is deleted; job.resumed after an end starts a new run
 * from step 0. Whatever changes what a node's pods see queues that
 * projection (eng_queue) at the event's sequence.
 */
#include <stdio.h>
#include <string.h>

#include "engine-int.h"

static const char *const tables[] = {"jobs",   "live",     "pods",  "nodes",
                                     "jnodes", "done",     "steps", "wver",
                                     "projq",  "projlast", "purge", NULL};

/* ------------------------------------------------------------- submit */

static int
role_of(bus_str r) {
  return bus_str_eq(r, "Rollout") ? ENG_ROLLOUT_ROLE
         : bus_str_eq(r, "Env")   ? ENG_ENV_ROLE
                                  : ENG_ACTOR_ROLE;
}

static void
name_stage(eng_job *j, int stage, int has, bus_str_list names) {
  for (uint32_t i = 0; has && i < names.n; i++)
    for (int k = 0; k < j->ntasks; k++)
      if (bus_str_eq(names.v[i], j->tasks[k].name))
        j->tasks[k].stages |= (uint8_t)(1u << stage);
}

/* The loop: the stages named with tasks, or all four by role. */
static void
set_loop(eng_job *j, const bus_job_engine *e, int has) {
  const bus_engine_stages *s = &e->stages;
  if (has && e->has_stages) {
    name_stage(j, ENG_ROLLOUT, s->has_rollout, s->rollout);
    name_stage(j, ENG_UPDATE, s->has_update_dataset, s->update_dataset);
    name_stage(j, ENG_TRAIN, s->has_train, s->train);
    name_stage(j, ENG_SYNC, s->has_sync_weights, s->sync_weights);
  } else {
    for (int k = 0; k < j->ntasks; k++)
      j->tasks[k].stages = j->tasks[k].role == ENG_ACTOR_ROLE ? 0xe : 0x9;
  }
  for (int st = 0; st < ENG_NSTAGES; st++) {
    int any = 0;
    for (int k = 0; k < j->ntasks; k++)
      any |= j->tasks[k].stages >> st & 1;
    if (any || !(has && e->has_stages))
      j->loop[j->nloop++] = (uint8_t)st;
  }
}

static void
reset_run(eng_job *j) {
  for (int s = 0; s < ENG_NSTAGES; s++) {
    memset(&j->st[s], 0, sizeof j->st[s]);
    j->st[s].step = -1;
  }
  j->running = j->over = j->ended = 0;
}

static int
wipe(bus_txn *t, const char *job) {
  static const char *const per_job[] = {"jnodes", "done",  "steps",
                                        "wver",   "purge", NULL};
  char prefix[ENG_NAME_SZ + 1];
  int plen = snprintf(prefix, sizeof prefix, "%s/", job), rc = 0;
  for (int i = 0; !rc && per_job[i]; i++)
    rc = eng_del_prefix(t, per_job[i], prefix, (size_t)plen);
  return rc;
}

static int
apply_submitted(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_submitted *r = data;
  const bus_job_spec *sp = &r->spec;
  eng_job j;
  memset(&j, 0, sizeof j);
  j.layout = ENG_LAYOUT;
  bus_str_copy(r->metadata.name, j.name, sizeof j.name);
  if (!bus_name_valid(j.name, BUS_NAME_MAX))
    return 0;
  eng_job old;
  if (!eng_job_get(t, j.name, &old))
    j.generation = old.generation;
  j.generation++;
  int rc = wipe(t, j.name);
  for (uint32_t i = 0; i < sp->tasks.n && j.ntasks < ENG_TASKS_MAX; i++) {
    eng_task *tk = &j.tasks[j.ntasks++];
    bus_str_copy(sp->tasks.v[i].name, tk->name, sizeof tk->name);
    tk->role = (uint8_t)role_of(sp->tasks.v[i].role);
    tk->replicas =
        (uint16_t)(sp->tasks.v[i].has_replicas ? sp->tasks.v[i].replicas : 1);
  }
  const bus_job_engine *e = &sp->engine;
  j.mode = sp->has_engine && e->has_mode && bus_str_eq(e->mode, "pipeline")
               ? ENG_PIPELINE
               : ENG_SEQUENTIAL;
  j.max_stale =
      sp->has_engine && e->has_maxStaleness ? (uint32_t)e->maxStaleness : 1;
  set_loop(&j, e, sp->has_engine);
  reset_run(&j);
  snprintf(j.phase, sizeof j.phase, "Pending");
  (void)ev;
  if (!rc)
    rc = bus_txn_put(t, "live", j.name, strlen(j.name), "", 0);
  return rc ? rc : eng_job_put(t, &j);
}

/* ---------------------------------------------------------- placement */

static int
task_index(const eng_job *j, bus_str task) {
  char want[ENG_POD_SZ];
  for (int k = 0; k < j->ntasks; k++) {
    snprintf(want, sizeof want, "%s-%s", j->name, j->tasks[k].name);
    if (bus_str_eq(task, want))
      return k;
  }
  return -1;
}

static int
bind_pod(bus_txn *t, const eng_job *j, const bus_binding *b) {
  int k = task_index(j, b->task);
  if (k < 0)
    return 0;
  eng_pod p;
  char name[ENG_POD_SZ];
  bus_str_copy(b->pod, name, sizeof name);
  if (eng_pod_get(t, name, &p)) {
    memset(&p, 0, sizeof p);
    p.layout = ENG_LAYOUT;
    snprintf(p.pod, sizeof p.pod, "%s", name);
    snprintf(p.job, sizeof p.job, "%s", j->name);
  }
  uint32_t attempt = (uint32_t)(b->has_attempt ? b->attempt : 0);
  if (attempt != p.attempt || !p.bound) {
    p.phase[0] = 0;
    p.local_ip[0] = 0;
  }
  p.attempt = attempt;
  p.bound = 1;
  p.task = (uint8_t)k;
  bus_str_copy(b->node, p.node, sizeof p.node);
  return eng_pod_put(t, &p);
}

static int
apply_placed(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_placed *e = data;
  eng_job j;
  char job[ENG_NAME_SZ];
  bus_str_copy(e->job, job, sizeof job);
  if (eng_job_get(t, job, &j))
    return 0;
  int rc = 0;
  for (uint32_t i = 0; !rc && i < e->bindings.n; i++)
    rc = bind_pod(t, &j, &e->bindings.v[i]);
  j.placed = 1;
  j.moved = (uint8_t)eng_nodes_differ(t, job);
  if (!rc)
    rc = eng_job_put(t, &j);
  return rc ? rc : eng_queue(t, job, 'p', ev->seq);
}

static int
unbind(bus_txn *t, eng_pod *p, void *ud) {
  (void)ud;
  p->bound = 0;
  return eng_pod_put(t, p);
}

static int
apply_unplaced(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  char job[ENG_NAME_SZ];
  bus_str_copy(((const bus_ev_job_unplaced *)data)->job, job, sizeof job);
  eng_job j;
  if (eng_job_get(t, job, &j))
    return 0;
  int rc = eng_each_pod(t, job, unbind, NULL);
  j.placed = 0;
  j.moved = (uint8_t)eng_nodes_differ(t, job);
  if (!rc)
    rc = eng_job_put(t, &j);
  return rc ? rc : eng_queue(t, job, 'p', ev->seq);
}

static int
apply_pod_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_pod_phase *e = data;
  eng_pod p;
  eng_job j;
  if (eng_pod_get(t, eng_subject_id(ev->subject), &p) ||
      eng_job_get(t, p.job, &j))
    return 0;
  uint32_t attempt = (uint32_t)(e->has_attempt ? e->attempt : 0);
  if (attempt < p.attempt)
    return 0; /* about an earlier attempt */
  p.attempt = attempt;
  bus_str_copy(e->phase, p.phase, sizeof p.phase);
  int moved = !bus_str_eq(e->node, p.node);
  bus_str_copy(e->node, p.node, sizeof p.node);
  if (e->has_localIP)
    bus_str_copy(e->localIP, p.local_ip, sizeof p.local_ip);
  int rc = eng_pod_put(t, &p);
  if (moved)
    j.moved = (uint8_t)eng_nodes_differ(t, j.name);
  if (!rc && !strcmp(p.phase, "Succeeded")) /* excused from the barriers */
    rc = eng_check_all(t, &j, ev->ts);
  if (!rc)
    rc = eng_job_put(t, &j);
  return rc ? rc : eng_queue(t, p.job, 'p', ev->seq);
}

/* --------------------------------------------------------------- jobs */

static int
apply_job(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  eng_job j;
  if (eng_job_get(t, eng_subject_id(ev->subject), &j))
    return 0;
  if (ev->t == BUS_T_JOB_PHASE) {
    bus_str ph = ((const bus_ev_job_phase *)data)->phase;
    bus_str_copy(ph, j.phase, sizeof j.phase);
    if (bus_str_eq(ph, "Running") && !j.over)
      j.running = 1;
    else if (!bus_str_eq(ph, "Pending"))
      j.over = 1;
  } else if (ev->t == BUS_T_JOB_DELETED) {
    j.over = j.deleted = 1;
    snprintf(j.phase, sizeof j.phase, "Deleted");
  } else if (ev->t == BUS_T_JOB_RESUMED && j.over && !j.deleted) {
    char prefix[ENG_NAME_SZ + 1];
    int plen = snprintf(prefix, sizeof prefix, "%s/", j.name);
    int rc = eng_del_prefix(t, "purge", prefix, (size_t)plen);
    if (rc)
      return rc;
    reset_run(&j);
    j.run++;
    if ((rc = bus_txn_put(t, "live", j.name, strlen(j.name), "", 0)))
      return rc;
  }
  return eng_job_put(t, &j);
}

/* -------------------------------------------------- nodes and Domains */

static int
apply_registered(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_node_res *r = data;
  const char *node = eng_subject_id(ev->subject);
  if (!bus_name_valid(node, BUS_NAME_MAX))
    return 0;
  eng_node n;
  memset(&n, 0, sizeof n);
  n.layout = ENG_LAYOUT;
  bus_str_copy(r->spec.cluster, n.cluster, sizeof n.cluster);
  if (r->spec.has_addresses && r->spec.addresses.n)
    bus_str_copy(r->spec.addresses.v[0], n.address, sizeof n.address);
  return bus_txn_put(t, "nodes", node, strlen(node), &n, sizeof n);
}

static int
apply_allocated(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_domain_allocated *d = data;
  char job[ENG_NAME_SZ], pod[ENG_POD_SZ];
  bus_str_copy(d->job, job, sizeof job);
  eng_job j;
  if (eng_job_get(t, job, &j))
    return 0;
  int rc = 0;
  for (uint32_t i = 0; !rc && i < d->addresses.n; i++) {
    eng_pod p;
    if (eng_pod_get(t, bus_str_copy(d->addresses.v[i].pod, pod, sizeof pod),
                    &p))
      continue;
    bus_str_copy(d->addresses.v[i].ip, p.vip, sizeof p.vip);
    rc = eng_pod_put(t, &p);
  }
  return rc ? rc : eng_queue(t, job, 'p', ev->seq);
}

/* ------------------------------------------------------------ dispatch */

static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_DOMAIN_ALLOCATED] = apply_allocated,
        [BUS_T_ENGINE_ENDED] = eng_apply_ended,
        [BUS_T_ENGINE_NODES] = eng_apply_nodes,
        [BUS_T_JOB_DELETED] = apply_job,
        [BUS_T_JOB_PHASE] = apply_job,
        [BUS_T_JOB_PLACED] = apply_placed,
        [BUS_T_JOB_RESUMED] = apply_job,
        [BUS_T_JOB_SUBMITTED] = apply_submitted,
        [BUS_T_JOB_UNPLACED] = apply_unplaced,
        [BUS_T_NODE_REGISTERED] = apply_registered,
        [BUS_T_POD_PHASE] = apply_pod_phase,
        [BUS_T_STAGE_DONE] = eng_apply_done,
        [BUS_T_STAGE_STARTED] = eng_apply_started,
        [BUS_T_WEIGHTS_CACHED] = eng_apply_weights,
        [BUS_T_WEIGHTS_DROPPED] = eng_apply_weights,
        [BUS_T_WEIGHTS_PUBLISHED] = eng_apply_weights,
    }};

int
engine_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
engine_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "engine",
                        .tables = tables,
                        .apply = engine_apply,
                        .decide = engine_decide,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>"};
}

/*
 * decide.c - what the scheduler decides after each batch: the placements
 * (or releases) of the queued Jobs on the placement log, one event per
 * Job, chained one on top of the other; the phases its Jobs and Tasks have
 * reached; and the desired states its nodes must be told.
 *
 * Every decision is an event or a message built only from the view, with
 * an id derived from what it was decided from, so deciding again after a
 * crash gives the same ids (the broker drops the copy). What decide has
 * emitted and not yet seen applied is noted in _effects, so the next pass
 * does not emit it twice:
 *   "p:<seq>"  placement-log events emitted on top of version <seq>;
 *                the log moves on when they are applied (one chain per
 *                version: two would conflict on the same prev)
 *   "o"        the last `outgoing` key sent
 *   <id>       a phase event, until apply sees it
 *
 * The desired states are decide_dispatch.c. A pass that would place a
 * gang (GANG_ALONE) sends what desired states wait first. When they are
 * a gang's worth or more (the gang placed before, as a rule), the pass
 * sends them alone and places the next gang in a pass of its own, run as
 * soon as they are sent (bus_txn_decide_again): their pushes to the nodes
 * (libbus outbox.c) then wait for no placement's work. Fewer are sent in
 * the placing pass, before its placement: the outbox sends a checked
 * placement only once what went before it is stored, so the gang's
 * job.placed lands after the desired states decided ahead of it either
 * way. A gang is placed alone in its pass: its clock starts when the
 * nodes' streams have taken the gang before it, and its own desired
 * states go out next, at once, not queued behind the other Jobs of one
 * pass (docs/BENCHMARKS.md, "Gang bursts"). Any other pass that places
 * Jobs while many desired states wait (DISPATCH_APART) leaves them to a
 * pass of their own, run as soon as its placements are committed and
 * sent (bus_txn_decide_again): smaller Jobs' placements would otherwise
 * wait for every desired state of the Jobs placed before them (25,600 for
 * 256 Jobs of 100) to be written, committed and stored (docs/BENCHMARKS.md,
 * "Scheduling throughput"). Fewer are written after the placements, in the
 * same pass: a pass of their own would cost more (its commit, its drain)
 * than it saves. A pass that places nothing sends them itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "phase.h"
#include "placement.h"
#include "scheduler.h"

/* The most placement-log events one pass emits, each published on top of
 * the one before (BUS_APPEND_CHAIN), the chain sent at once. As many as
 * the service fetches in one batch (512 job.submitted), so a burst of Jobs
 * needs no extra pass (and round of commit, drain and apply) for the rest
 * of a batch; half the outbox's drain chunk (1,024), so a chain is sent
 * whole. 256 before: 500 Jobs of 100 then took three passes, not two. */
#define PLACED_PER_PASS 512

/* A Job of this many pods to place, or more, is placed first in a pass
 * and ends its placements: placing it beside others would only start its
 * clock while their desired states go out. Smaller Jobs share passes. */
#define GANG_ALONE 512

typedef struct pass {
  bus_txn *t;
  sched_nodes *nodes; /* NULL until a Job needs them */
  int placed;         /* placement-log events emitted this pass */
  int full;           /* a gang placed, or one waits for the next pass */
  uint64_t log_seq;
} pass;

/* ---------------------------------------------------------------- nodes */

/* The model of the nodes, once per pass (decide_nodes.c keeps it). */
static int
load_nodes(pass *p) {
  if (p->nodes)
    return 0;
  return sched_nodes_load(p->t, &p->nodes);
}

/* ----------------------------------------------------------- placement */

typedef struct waiting {
  uint32_t attempts[SCHED_MAX_PODS];
  size_t n, unbound, first_unbound;
  pod_rec first;
} waiting;

static int
count_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)t;
  waiting *w = ud;
  if (w->n < SCHED_MAX_PODS)
    w->attempts[w->n] = p->attempt;
  if (sched_pod_waiting(p)) {
    if (!w->unbound++) {
      w->first = *p;
      w->first_unbound = w->n;
    }
  }
  w->n++;
  return 0;
}

/*
 * One pod placed again (a retry): a Job of its template alone, one
 * replica, whose binding is then renamed to the real pod.
 */
static int
place_one(pass *p, const sched_job *job, const waiting *w,
          sched_placement *pl) {
  sched_job one;
  sched_job_init(&one, job->name);
  one.strategy = job->strategy;
  const sched_template *src = &job->tasks[w->first.tmpl];
  sched_template *tp = sched_job_add_task(&one, src->name);
  int rc = tp ? 0 : -ENOMEM;
  if (!rc) {
    *tp = *src; /* shares src's arrays: detached below before clear */
    tp->replicas = 1;
    uint32_t attempt = w->first.attempt;
    rc = sched_place(p->nodes, &one, &attempt, pl);
    memset(tp, 0, sizeof *tp);
  }
  if (!rc && pl->ok && pl->n == 1) {
    sched_binding *b = &pl->bindings[0];
    sched_copy(b->pod, sizeof b->pod, w->first.name, strlen(w->first.name));
    b->replica = w->first.replica;
    b->tmpl = w->first.tmpl;
  }
  sched_job_clear(&one);
  return rc;
}

/*
 * The first placement-log event of a pass is checked against the version
 * the pass saw; each next one is chained: the outbox publishes it on top
 * of the sequence the broker gave the one before (its prev set then), so
 * every event of the log still carries the version it was decided on and
 * the broker checks it. A chained event whose predecessor did not land is
 * dropped, and the Job is placed again on the newer view.
 */
static int
log_flags(const pass *p) {
  return p->placed ? BUS_APPEND_CHECK | BUS_APPEND_CHAIN : BUS_APPEND_CHECK;
}

static int
emit_placed(pass *p, const job_rec *j, const sched_placement *pl) {
  msgpack_zone z;
  bus_ev_job_placed d;
  char src[160];
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = sched_placed_data(SCHED_POOL, j->name, j->generation, pl, &z, &d);
  snprintf(src, sizeof src, "placed:%s:%llu", j->name,
           (unsigned long long)p->log_seq);
  if (!rc)
    rc = sched_emit(p->t, SCHED_PLACEMENT_SUBJECT, BUS_T_JOB_PLACED, &d, src,
                    j->sub_id, p->log_seq, log_flags(p));
  msgpack_zone_destroy(&z);
  return rc;
}

static int
emit_unplaced(pass *p, const job_rec *j) {
  bus_ev_job_unplaced d = {.pool = BUS_STR(SCHED_POOL),
                           .job = bus_str_of(j->name),
                           .has_reason = 1,
                           .reason = bus_str_of(j->reason)};
  char src[160];
  snprintf(src, sizeof src, "unplaced:%s:%llu", j->name,
           (unsigned long long)p->log_seq);
  return sched_emit(p->t, SCHED_PLACEMENT_SUBJECT, BUS_T_JOB_UNPLACED, &d, src,
                    j->sub_id, p->log_seq, log_flags(p));
}

/*
 * Whether two Pending reasons name the same blockers: equal once runs of
 * digits are dropped ("0/3 nodes ... 3 lack cpu" is "0/4 ... 4 lack
 * cpu"). Only the first SCHED_REASON_SZ - 1 bytes count, as the view
 * keeps no more.
 */
static int
same_blockers(const char *a, const char *b) {
  size_t i = 0, k = 0, lim = SCHED_REASON_SZ - 1;
  for (;;) {
    while (i < lim && a[i] >= '0' && a[i] <= '9')
      i++;
    while (k < lim && b[k] >= '0' && b[k] <= '9')
      k++;
    int ea = i >= lim || !a[i], eb = k >= lim || !b[k];
    if (ea || eb)
      return ea && eb;
    if (a[i++] != b[k++])
      return 0;
  }
}

/*
 * A Job that does not fit says why: once, and again only when what blocks
 * it changes. Counts of nodes and free capacity move with every node that
 * comes, goes or fills up; writing each of them would fill the log (kept
 * forever) with the same Pending Job.
 */
static int
emit_pending(pass *p, const job_rec *j, const char *reason) {
  if (j->reason[0] && same_blockers(j->reason, reason))
    return 0;
  char subject[BUS_SUBJECT_MAX], src[700];
  bus_version ver;
  int rc = bus_subj_job_phase(subject, sizeof subject, j->name);
  if (!rc)
    rc = bus_txn_version(p->t, subject, &ver);
  if (rc)
    return rc;
  snprintf(src, sizeof src, "pending:%s:%llu:%s", j->name,
           (unsigned long long)ver.seq, reason);
  bus_ev_job_phase d = {.phase = bus_str_of(j->phase),
                        .has_reason = 1,
                        .reason = {reason, (uint32_t)strnlen(reason, 1000)}};
  return sched_emit_once(p->t, subject, BUS_T_JOB_PHASE, &d, src, j->sub_id,
                         ver.seq);
}

/* Try to place job; 1 when a placement-log event was emitted. */
static int
try_job(pass *p, const char *name) {
  job_rec j;
  int rc = sched_job_get(p->t, name, &j);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  if (j.stopped || j.deleted)
    return 0;
  if (j.exhausted && j.bound)
    return (rc = emit_unplaced(p, &j)) ? rc : 1;
  if (j.exhausted)
    return 0; /* waits until its domain releases addresses */
  waiting *w = calloc(1, sizeof *w);
  sched_job job;
  sched_placement pl;
  sched_placement_init(&pl);
  memset(&job, 0, sizeof job);
  if (!w)
    return -ENOMEM;
  rc = sched_each_pod(p->t, name, count_pod, w);
  if (!rc && w->unbound >= GANG_ALONE && (p->full = p->placed > 0))
    w->unbound = 0; /* a gang: first in the next pass */
  if (!rc && w->unbound)
    rc = load_nodes(p);
  if (!rc && w->unbound)
    rc = sched_job_load(p->t, name, &job);
  if (!rc && w->unbound)
    rc = w->unbound == w->n ? sched_place(p->nodes, &job, w->attempts, &pl)
                            : place_one(p, &job, w, &pl);
  if (!rc && w->unbound)
    rc = pl.ok ? emit_placed(p, &j, &pl) : emit_pending(p, &j, pl.reason);
  int placed = !rc && w->unbound && pl.ok;
  p->full |= placed && w->unbound >= GANG_ALONE;
  sched_placement_clear(&pl);
  sched_job_clear(&job);
  free(w);
  return rc ? rc : placed;
}

typedef struct queue_walk {
  pass *p;
  int rc;
} queue_walk;

static int
visit_queued(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  queue_walk *q = ud;
  char name[SCHED_NAME_SZ];
  if (!sched_seq_key_name(k, kl, name, sizeof name))
    return 0;
  int rc = try_job(q->p, name);
  if (rc < 0)
    return rc;
  q->p->placed += rc;
  return q->p->placed >= PLACED_PER_PASS || q->p->full;
}

/* Would the Job placed first in this pass be a gang? The first queued
 * Job try_job would place: not stopped, deleted or out of addresses, with
 * pods waiting. 1 a gang, 2 not, 0 none. */
static int
first_is_gang(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  pass *p = ud;
  char name[SCHED_NAME_SZ];
  job_rec j;
  if (!sched_seq_key_name(k, kl, name, sizeof name) ||
      sched_job_get(p->t, name, &j) || j.stopped || j.deleted || j.exhausted)
    return 0;
  waiting *w = calloc(1, sizeof *w);
  if (!w)
    return -ENOMEM;
  int rc = sched_each_pod(p->t, name, count_pod, w);
  size_t unbound = w->unbound;
  free(w);
  if (rc < 0 || !unbound)
    return rc; /* nothing to place: the next one */
  return unbound >= GANG_ALONE ? 1 : 2;
}

static int
places_gang(pass *p) {
  int rc = bus_txn_scan(p->t, "queue", NULL, 0, first_is_gang, p);
  return rc < 0 ? rc : rc == 1;
}

/* As many desired states as this, or more, waiting to be written: a pass
 * that placed Jobs leaves them to a pass of their own (see the top). */
#define DISPATCH_APART 1024

typedef struct counting {
  int n, want;
} counting;

static int
count_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl, (void)v, (void)vl;
  counting *c = ud;
  return ++c->n >= c->want;
}

/* 1 when want entries of `outgoing` or more are not sent yet. */
static int
many_to_send(bus_txn *t, int want) {
  const void *cur = NULL;
  size_t clen = 0;
  counting c = {0, want};
  if (bus_txn_note_get(t, "o", 1, &cur, &clen))
    clen = 0;
  int rc = bus_txn_scan_after(t, "outgoing", cur, clen, count_one, &c);
  return rc < 0 ? rc : c.n >= want;
}

static int
decide_placement(pass *p) {
  bus_version ver;
  int rc = bus_txn_version(p->t, SCHED_PLACEMENT_SUBJECT, &ver);
  if (rc)
    return rc;
  p->log_seq = ver.seq;
  char mark[40];
  snprintf(mark, sizeof mark, "p:%llu", (unsigned long long)ver.seq);
  if (bus_txn_marked(p->t, mark, strlen(mark)) == 1)
    return 0; /* our last one is on its way */
  queue_walk q = {p, 0};
  rc = bus_txn_scan(p->t, "queue", NULL, 0, visit_queued, &q);
  if (rc < 0)
    return rc;
  return p->placed ? bus_txn_mark(p->t, mark, strlen(mark)) : 0;
}

/* A pass that would place a gang: the desired states waiting go out
 * first, before its placement; a gang's worth or more alone, the gang
 * placed in the next pass (see the top). */
static int
gang_pass(pass *p) {
  int alone = many_to_send(p->t, GANG_ALONE);
  int rc = alone < 0 ? alone : sched_decide_dispatch(p->t);
  if (rc || !alone)
    return rc ? rc : decide_placement(p);
  bus_txn_decide_again(p->t);
  return 0;
}

/* -------------------------------------------------------------- phases */

/* A Task's phase (job: its Job) or, job NULL, a Job's. */
static int
emit_phase(bus_txn *t, const char *name, const char *job, const char *phase,
           const char *cause) {
  char subject[BUS_SUBJECT_MAX], src[600];
  bus_version ver;
  bus_ev_job_phase jd = {.phase = bus_str_of(phase)};
  bus_ev_task_phase td = {.phase = bus_str_of(phase), .job = bus_str_of(job)};
  int rc = job ? bus_subj_task_phase(subject, sizeof subject, name)
               : bus_subj_job_phase(subject, sizeof subject, name);
  if (!rc)
    rc = bus_txn_version(t, subject, &ver);
  if (rc)
    return rc;
  snprintf(src, sizeof src, "phase:%s:%llu:%s", subject,
           (unsigned long long)ver.seq, phase);
  return sched_emit_once(t, subject, job ? BUS_T_TASK_PHASE : BUS_T_JOB_PHASE,
                         job ? (const void *)&td : &jd, src, cause, ver.seq);
}

typedef struct phase_walk {
  bus_txn *t;
  const job_rec *j;
} phase_walk;

static int
task_phase(void *rec, void *ud) {
  phase_walk *w = ud;
  const task_rec *r = rec;
  if (strcmp(r->job, w->j->name) || !strcmp(r->want, r->phase))
    return 0;
  return emit_phase(w->t, r->name, r->job, r->want, w->j->sub_id);
}

static int
job_phases(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  bus_txn *t = ud;
  char name[SCHED_NAME_SZ], prefix[SCHED_NAME_SZ + 1];
  job_rec j;
  sched_copy(name, sizeof name, k, kl);
  if (sched_job_get(t, name, &j))
    return 0;
  phase_walk w = {t, &j};
  snprintf(prefix, sizeof prefix, "%s-", name);
  int rc =
      sched_each_rec(t, "tasks", prefix, sizeof(task_rec), 0, task_phase, &w);
  if (!rc && strcmp(j.want, j.phase) && !j.deleted)
    rc = emit_phase(t, name, NULL, j.want, j.sub_id);
  return rc;
}

/* --------------------------------------------------------------- decide */

int
sched_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now;
  (void)ud;
  if (cause)
    return 0; /* everything is decided on the whole view, once a batch */
  int rc = sched_touched_derive(t);
  if (rc)
    return rc;
  pass p = {.t = t};
  int gang = places_gang(&p);
  rc = gang < 0 ? gang : gang ? gang_pass(&p) : decide_placement(&p);
  if (!rc)
    rc = bus_txn_scan(t, "todo", NULL, 0, job_phases, t);
  int apart = !rc && !gang && p.placed ? many_to_send(t, DISPATCH_APART) : 0;
  if (apart > 0)
    bus_txn_decide_again(t); /* the desired states in a pass of their own */
  else if (!rc && !gang)
    rc = apart < 0 ? apart : sched_decide_dispatch(t);
  return rc;
}

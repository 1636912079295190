/*
 * rules.c - the rules of a Job's loop, on its record alone (and, for
 * completion, its pods and their reports): who takes part in a stage, when
 * a stage's step is complete, and which start comes next.
 *
 * Participants of a stage's step: the pods (<job>-<task>-<i>, whatever
 * their attempt) of the tasks taking part, minus those whose last phase is
 * Succeeded (excused). A step is complete when each participant's latest
 * report is for this run and step. Starts (eng_next_start), one at a time:
 *   sequential: stage i step n after stage i-1 step n completed; the first
 *     stage step n+1 after the last stage step n completed;
 *   pipeline (rollout first in the loop): rollout n after rollout n-1
 *     completed and n - syncs <= maxStaleness; the chain after rollout in
 *     turn: its first stage n after rollout n and the chain's last stage
 *     n-1 completed, each next one after the one before it for the same n.
 * syncs counts the completed steps of the loop's last stage (sync_weights
 * when the loop has it).
 */
#include <stdio.h>
#include <string.h>

#include "engine-int.h"

int
eng_takes_part(const eng_job *j, int task, int stage) {
  if (task < 0 || task >= j->ntasks || stage < 0 || stage >= ENG_NSTAGES)
    return 0;
  const eng_task *tk = &j->tasks[task];
  if (!(tk->stages & (1u << stage)))
    return 0;
  /* pipeline: a rollout pod loads what its rollout step carries, and is
   * held by no sync barrier it cannot reach while rolling out */
  return !(stage == ENG_SYNC && j->mode == ENG_PIPELINE &&
           j->loop[0] == ENG_ROLLOUT && (tk->stages & 1u << ENG_ROLLOUT));
}

int
eng_loads(const eng_job *j, int task) {
  return task >= 0 && task < j->ntasks && j->tasks[task].role != ENG_ACTOR_ROLE;
}

int64_t
eng_completed(const eng_job *j, int stage) {
  const eng_stage *s = &j->st[stage];
  return s->step < 0 ? 0 : s->step + (s->complete ? 1 : 0);
}

uint64_t
eng_syncs(const eng_job *j) {
  return j->nloop ? (uint64_t)eng_completed(j, j->loop[j->nloop - 1]) : 0;
}

/* Stage at loop position i may start step n: not started it yet. */
static int
fresh(const eng_job *j, int i, int64_t n) {
  return j->st[j->loop[i]].step < n;
}

static int
pick(const eng_job *j, int i, int64_t n, int *stage, int64_t *step) {
  *stage = j->loop[i];
  *step = n;
  return fresh(j, i, n);
}

static int
next_sequential(const eng_job *j, int *stage, int64_t *step) {
  int last = j->nloop - 1;
  for (int i = 1; i < j->nloop; i++) {
    int64_t n = eng_completed(j, j->loop[i - 1]) - 1;
    if (n >= 0 && pick(j, i, n, stage, step))
      return 1;
  }
  return pick(j, 0, eng_completed(j, j->loop[last]), stage, step) &&
         eng_completed(j, j->loop[0]) == *step;
}

static int
next_pipeline(const eng_job *j, int *stage, int64_t *step) {
  int64_t done0 = eng_completed(j, ENG_ROLLOUT);
  int64_t n = j->st[ENG_ROLLOUT].step + 1;
  if (n == done0 && n - (int64_t)eng_syncs(j) <= (int64_t)j->max_stale &&
      pick(j, 0, n, stage, step))
    return 1;
  if (j->nloop < 2)
    return 0;
  /* the chain's first stage, at the step after its last stage's */
  int64_t c = eng_completed(j, j->loop[j->nloop - 1]);
  if (c < done0 && j->st[j->loop[1]].step < c && pick(j, 1, c, stage, step))
    return 1;
  for (int i = 2; i < j->nloop; i++) {
    int64_t m = eng_completed(j, j->loop[i - 1]) - 1;
    if (m >= 0 && pick(j, i, m, stage, step))
      return 1;
  }
  return 0;
}

int
eng_next_start(const eng_job *j, int *stage, int64_t *step) {
  if (!j->nloop || !j->running || j->over || j->ended)
    return 0;
  if (j->st[j->loop[0]].step < 0)
    return pick(j, 0, 0, stage, step);
  if (j->mode == ENG_PIPELINE && j->loop[0] == ENG_ROLLOUT)
    return next_pipeline(j, stage, step);
  return next_sequential(j, stage, step);
}

/* ------------------------------------------------------------ barrier */

void
eng_pod_name(const eng_job *j, int task, int r, char *out) {
  snprintf(out, ENG_POD_SZ, "%s-%s-%d", j->name, j->tasks[task].name, r);
}

int
eng_pod_done(bus_txn *t, const eng_job *j, int stage, const char *pod) {
  char key[ENG_KEY_SZ];
  int n = snprintf(key, sizeof key, "%s/%d/%s", j->name, stage, pod);
  eng_done d;
  if (n < 0 || (size_t)n >= sizeof key ||
      eng_get(t, "done", key, (size_t)n, &d, sizeof d))
    return 0;
  return d.run == j->run && (int64_t)d.step == j->st[stage].step;
}

/* Succeeded pods are excused from every barrier. */
static int
excused(bus_txn *t, const char *pod) {
  eng_pod p;
  return !eng_pod_get(t, pod, &p) && !strcmp(p.phase, "Succeeded");
}

/* How many participants, and how many of them are done. */
static void
count(bus_txn *t, const eng_job *j, int stage, uint32_t *done, uint32_t *of) {
  char pod[ENG_POD_SZ];
  *done = *of = 0;
  for (int i = 0; i < j->ntasks; i++) {
    if (!eng_takes_part(j, i, stage))
      continue;
    for (int r = 0; r < j->tasks[i].replicas; r++) {
      eng_pod_name(j, i, r, pod);
      if (excused(t, pod))
        continue;
      (*of)++;
      *done += (uint32_t)eng_pod_done(t, j, stage, pod);
    }
  }
}

int
eng_check_complete(bus_txn *t, eng_job *j, int stage, int64_t ts,
                   const char *last) {
  eng_stage *s = &j->st[stage];
  if (s->step < 0 || s->complete)
    return 0;
  uint32_t done, of;
  count(t, j, stage, &done, &of);
  unsigned char key[ENG_KEY_SZ];
  size_t kl = eng_key_seq(key, j->name, s->seq);
  eng_step row;
  int rc = eng_get(t, "steps", key, kl, &row, sizeof row);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  row.done = done;
  row.of = of;
  if (done >= of) {
    s->complete = 1;
    row.ended = ts;
    if (last)
      snprintf(row.last, sizeof row.last, "%s", last);
  }
  return bus_txn_put(t, "steps", key, kl, &row, sizeof row);
}

int
eng_check_all(bus_txn *t, eng_job *j, int64_t ts) {
  int rc = 0;
  for (int i = 0; !rc && i < j->nloop; i++)
    rc = eng_check_complete(t, j, j->loop[i], ts, NULL);
  return rc;
}

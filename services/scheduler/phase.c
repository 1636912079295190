/*
 * phase.c - the state machines of docs/design.md section 1 as a table, and the
 * derivations of Task and Job phases.
 *
 * Invariants: the table is the only place a transition is allowed, so
 * the service, replay and the tests agree on it. Derivations look only at
 * their arguments (no clock, no view), so apply and replay reach the same
 * phase from the same pods.
 */
#include <stdio.h>
#include <string.h>

#include "phase.h"

#define NPHASES 7

static const char *const names[NPHASES] = {
    "", "Pending", "Running", "Succeeded", "Failed", "Stopped", "Skipped"};

/* allowed[from][to] */
static const unsigned char allowed[NPHASES][NPHASES] = {
    /*               ""  Pend Run Succ Fail Stop Skip */
    [SCHED_PH_NONE] = {0, 1, 0, 0, 0, 0, 1},
    [SCHED_PH_PENDING] = {0, 0, 1, 1, 1, 1, 1},
    [SCHED_PH_RUNNING] = {0, 0, 0, 1, 1, 1, 0},
    [SCHED_PH_SUCCEEDED] = {0, 0, 0, 0, 0, 0, 0},
    [SCHED_PH_FAILED] = {0, 0, 0, 0, 0, 1, 0},
    [SCHED_PH_STOPPED] = {0, 1, 0, 0, 0, 0, 1},
    [SCHED_PH_SKIPPED] = {0, 0, 0, 0, 0, 0, 0},
};

const char *
sched_phase_name(sched_phase p) {
  return (unsigned)p < NPHASES ? names[p] : NULL;
}

int
sched_phase_parse(const char *s, sched_phase *out) {
  for (unsigned i = 0; s && i < NPHASES; i++)
    if (!strcmp(s, names[i])) {
      *out = (sched_phase)i;
      return 0;
    }
  return BUS_EINVAL;
}

int
sched_phase_allowed(sched_phase from, sched_phase to) {
  if ((unsigned)from >= NPHASES || (unsigned)to >= NPHASES)
    return 0;
  return allowed[from][to];
}

int
sched_phase_final(sched_phase p) {
  return p == SCHED_PH_SUCCEEDED || p == SCHED_PH_SKIPPED;
}

int
sched_pod_retry(uint32_t attempt, uint32_t max_retries, uint32_t *next) {
  /* attempt n failing is failure number n + 1 */
  if (attempt >= max_retries)
    return 0;
  if (next)
    *next = attempt + 1;
  return 1;
}

static int
pod_failed(const sched_pod *p) {
  return p->phase == SCHED_PH_FAILED ||
         (p->phase == SCHED_PH_SUCCEEDED && p->exit_code != 0);
}

sched_phase
sched_task_phase(const sched_pod *pods, size_t n, uint32_t max_retries,
                 char *reason, size_t cap) {
  size_t succeeded = 0, stopped = 0, active = 0;
  if (reason && cap)
    reason[0] = 0;
  for (size_t i = 0; i < n; i++) {
    const sched_pod *p = &pods[i];
    if (pod_failed(p) && !sched_pod_retry(p->attempt, max_retries, NULL)) {
      if (reason && cap)
        snprintf(reason, cap, "pod %s failed %u time%s (maxRetries %u)",
                 p->name, (unsigned)p->attempt + 1, p->attempt ? "s" : "",
                 (unsigned)max_retries);
      return SCHED_PH_FAILED;
    }
    succeeded += p->phase == SCHED_PH_SUCCEEDED;
    stopped += p->phase == SCHED_PH_STOPPED;
    active += p->phase == SCHED_PH_RUNNING || p->phase == SCHED_PH_SUCCEEDED ||
              p->phase == SCHED_PH_FAILED;
  }
  if (n && succeeded == n)
    return SCHED_PH_SUCCEEDED;
  if (n && stopped == n)
    return SCHED_PH_STOPPED;
  return active ? SCHED_PH_RUNNING : SCHED_PH_PENDING;
}

sched_phase
sched_job_phase(const sched_phase *tasks, size_t n) {
  size_t succeeded = 0, stopped = 0, active = 0;
  for (size_t i = 0; i < n; i++) {
    if (tasks[i] == SCHED_PH_FAILED)
      return SCHED_PH_FAILED;
    succeeded += tasks[i] == SCHED_PH_SUCCEEDED;
    stopped += tasks[i] == SCHED_PH_STOPPED;
    active += tasks[i] == SCHED_PH_RUNNING || tasks[i] == SCHED_PH_SUCCEEDED;
  }
  if (n && succeeded == n)
    return SCHED_PH_SUCCEEDED;
  if (n && stopped == n)
    return SCHED_PH_STOPPED;
  return active ? SCHED_PH_RUNNING : SCHED_PH_PENDING;
}

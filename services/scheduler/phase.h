/*
 * phase.h - the state machines of Jobs, Tasks and Workflows (docs/design.md
 * section 1) and the derivation of a Task's and a Job's phase from what
 * their pods report.
 *
 *   "" -> Pending -> Running -> Succeeded | Failed
 *   Pending | Running | Failed -> Stopped      (stop)
 *   Stopped -> Pending                         (resume)
 *   "" | Pending | Stopped -> Skipped          (a Workflow's Job whose
 *                                               dependency failed)
 *
 * Also Pending -> Succeeded | Failed: reports may arrive coalesced (a pod
 * that ran and ended between two reports), and a Job whose node is lost
 * before any pod ran fails from Pending. Succeeded and Skipped are final.
 * A phase never "moves" to itself: sched_phase_allowed(p, p) is 0 and the
 * service records nothing.
 *
 * Everything here is a pure function of its arguments.
 */
#ifndef LARK_SCHED_PHASE_H
#define LARK_SCHED_PHASE_H

#include "model.h"

/* "Pending", ...; "" for SCHED_PH_NONE; NULL out of range. */
const char *sched_phase_name(sched_phase p);
/* Parse a phase name ("" is SCHED_PH_NONE); BUS_EINVAL if unknown. */
int sched_phase_parse(const char *s, sched_phase *out);
/* 1 when from -> to is a transition of the state machine, else 0. */
int sched_phase_allowed(sched_phase from, sched_phase to);
/* 1 for Succeeded and Skipped: nothing follows them. */
int sched_phase_final(sched_phase p);

/*
 * A Task's phase from its pods (n of them) and the template's maxRetries:
 *   Failed     a pod failed more than max_retries times: its failed
 *              attempt is >= max_retries (attempts count from 0)
 *   Succeeded  every pod exited 0 (a "Succeeded" pod with a nonzero exit
 *              code counts as failed)
 *   Stopped    every pod is Stopped
 *   Running    a pod runs, has finished, or failed and will be retried
 *   Pending    otherwise (also for n == 0)
 * When reason is not NULL it receives a sentence for people ("pod j-t-1
 * failed 3 times (maxRetries 2)"), or "" (cap bytes, NUL included).
 */
sched_phase sched_task_phase(const sched_pod *pods, size_t n,
                             uint32_t max_retries, char *reason, size_t cap);

/*
 * A Job's phase from its Tasks' phases: Failed when one failed, Succeeded
 * when all succeeded, Stopped when all are Stopped, Running when one runs
 * or has succeeded, Pending otherwise (also for n == 0).
 */
sched_phase sched_job_phase(const sched_phase *tasks, size_t n);

/*
 * A pod failed at attempt `attempt`: retry it (returns 1, *next =
 * attempt + 1; the pod keeps its name) while it has failed at most
 * max_retries times, else the Task fails (returns 0, *next untouched).
 * next may be NULL.
 */
int sched_pod_retry(uint32_t attempt, uint32_t max_retries, uint32_t *next);

#endif

/*
 * placement_why.c - what a placement tells people: the Pending reason
 * when a pod finds no node (what it asks for, and how many nodes each
 * filter left), and the why of a placement that succeeded (the counts of
 * the tightest template and each chosen node's score).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expand.h"
#include "placement-int.h"
#include "placement.h"

/* --------------------------------------------------------------- reasons */

static void append(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
append(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  va_list ap;
  if (len + 1 >= cap)
    return;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* What one pod of t asks for: "(4 cpu, 2048 MiB, 2 GPUs, x 1)". */
static void
describe_request(char *buf, size_t cap, const sched_template *t) {
  const char *sep = "";
  append(buf, cap, " (");
  if (t->req.cpu_m) {
    append(buf, cap, "%s%llu cpu", sep,
           (unsigned long long)t->req.cpu_m / 1000);
    sep = ", ";
  }
  if (t->req.memory_mib) {
    append(buf, cap, "%s%llu MiB", sep, (unsigned long long)t->req.memory_mib);
    sep = ", ";
  }
  if (t->req.gpu) {
    append(buf, cap, "%s%u GPU%s", sep, t->req.gpu, t->req.gpu > 1 ? "s" : "");
    sep = ", ";
  }
  for (int d = 0; d < t->req.ndevices; d++) {
    append(buf, cap, "%s%s %u", sep, t->req.devices[d].name,
           t->req.devices[d].count);
    sep = ", ";
  }
  append(buf, cap, "%s)", *sep ? "" : "nothing");
}

static void
part(char *buf, size_t cap, int *first, uint32_t count, const char *fmt,
     const char *arg) {
  char text[160];
  if (!count)
    return;
  snprintf(text, sizeof text, fmt, arg);
  append(buf, cap, "%s%u %s", *first ? ": " : ", ", (unsigned)count, text);
  *first = 0;
}

/* The Pending reason when pod `replica` of template t finds no node, with
 * the Job's pods booked so far still in place. */
void
sched_pl_explain(ctx *x, const sched_template *t, uint32_t replica,
                 size_t placed) {
  char *buf = x->out->reason, task[SCHED_DNAME_SZ], gpus[32];
  size_t cap = sizeof x->out->reason;
  uint32_t why[5] = {0}, conflict = 0, nodev = 0;
  int first = 1;
  counts k;
  sched_pl_filter(x, t, &k);
  for (size_t i = 0; i < x->nc; i++) {
    if (sched_pl_role_conflict(x, x->c[i].node, t))
      conflict++;
    else
      why[sched_pl_fits(x->c[i].node, t, cand_slots(x, i))]++;
  }
  nodev = k.ready - (uint32_t)x->nc;
  sched_task_name(x->job->name, t->name, task, sizeof task);
  buf[0] = 0;
  append(buf, cap, "task %s: 0/%u nodes can take pod %s-%u", task, k.nodes,
         task, (unsigned)replica);
  describe_request(buf, cap, t);
  part(buf, cap, &first, k.nodes - k.selector, "fail the selector%s", "");
  part(buf, cap, &first, k.selector - k.runtime - k.subnet, "lack runtime %s",
       t->runtime);
  part(buf, cap, &first, k.subnet,
       "lack runtime %s, which a robot's subnet needs", "raw+netns");
  part(buf, cap, &first, k.notready, "not ready%s", "");
  part(buf, cap, &first, k.cordoned, "cordoned%s", "");
  part(buf, cap, &first, nodev, "lack a device asked for%s", "");
  part(buf, cap, &first, conflict, "%s",
       t->role == SCHED_ACTOR ? "host the Job's Rollout/Env pods"
                              : "host the Job's Actor pods");
  part(buf, cap, &first, why[NOFIT_CPU], "lack cpu%s", "");
  part(buf, cap, &first, why[NOFIT_MEMORY], "lack memory%s", "");
  snprintf(gpus, sizeof gpus, "%u", t->req.gpu);
  part(buf, cap, &first, why[NOFIT_GPU], "have fewer than %s free GPUs", gpus);
  part(buf, cap, &first, why[NOFIT_DEVICE], "lack free devices%s", "");
  if (placed)
    append(buf, cap, "; %zu of %zu pods fit before", placed,
           sched_job_pods(x->job));
}

/* ---------------------------------------------------------------- why */

static int
by_name(const void *a, const void *b) {
  return strcmp((*(sched_node *const *)a)->name,
                (*(sched_node *const *)b)->name);
}

int
sched_pl_fill_why(ctx *x) {
  sched_why *w = &x->out->why;
  w->strategy = x->job->strategy;
  w->nodes = x->best.nodes;
  w->selector = x->best.selector;
  w->runtime = x->best.runtime;
  w->ready = x->best.ready;
  w->capacity = x->best.capacity;
  qsort(x->chosen, x->nchosen, sizeof *x->chosen, by_name);
  w->scores = calloc(x->nchosen ? x->nchosen : 1, sizeof *w->scores);
  if (!w->scores)
    return -ENOMEM;
  for (size_t i = 0; i < x->nchosen; i++) {
    memcpy(w->scores[i].node, x->chosen[i]->name, SCHED_NAME_SZ);
    w->scores[i].score = x->chosen[i]->scratch_score;
  }
  w->nscores = x->nchosen;
  return 0;
}

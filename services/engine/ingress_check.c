/*
 * ingress_check.c - what lark-engine takes from a node. A node may only
 * write its own ingress subjects (the broker enforces it), so the <node>
 * token names the sender; nothing else it sends is trusted:
 *   stage.report (lark.in.<node>.engine.stage.<pod>): the pod is the
 *     subject's, of the Job named, bound on <node> now; its task takes
 *     part in the stage; the step is the stage's latest started (an older
 *     or completed one is a duplicate, ignored; one not started is
 *     refused); a loader's report in sync_weights carries at least the
 *     stage's weights; the pod's first report for the step counts.
 *   weights.report (lark.in.<node>.engine.weights.<job>): the node hosts
 *     pods of the Job; published: the pod is bound there and the version
 *     grows past the Job's newest.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine-ingress.h"

int
eng_route_parse(const char *subject, eng_route *r) {
  bus_in_route in;
  int rc = bus_in_route_parse(subject, &in);
  if (rc)
    return rc;
  if (!in.name || strcmp(in.kind, "engine") ||
      strlen(in.node) >= sizeof r->node || strlen(in.what) >= sizeof r->what ||
      strlen(in.name) >= sizeof r->name ||
      !bus_name_valid(in.node, BUS_NAME_MAX))
    return bus_error(BUS_EINVAL, "not an engine ingress subject");
  strcpy(r->node, in.node);
  strcpy(r->what, in.what);
  strcpy(r->name, in.name);
  return 0;
}

__attribute__((format(printf, 3, 4))) static int
verdict(eng_verdict *out, int v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  out->v = v;
  vsnprintf(out->why, sizeof out->why, fmt, ap);
  va_end(ap);
  return 0;
}

static int
version(bus_txn *t, const char *job, eng_verdict *out) {
  char subject[BUS_SUBJECT_MAX];
  bus_version ver = {0};
  int rc = bus_subj_stage_started(subject, sizeof subject, job);
  if (!rc)
    rc = bus_txn_version(t, subject, &ver);
  out->prev = ver.seq;
  return rc;
}

/* The pod, bound on the route's node, of job. */
static int
bound_pod(bus_txn *t, const eng_route *r, const char *pod, const char *job,
          eng_pod *p, eng_verdict *out) {
  if (eng_pod_get(t, pod, p) || strcmp(p->job, job))
    return verdict(out, ENG_NOT_YET, "pod %s is not of job %s", pod, job), 1;
  if (!p->bound || strcmp(p->node, r->node))
    return verdict(out, ENG_NOT_YET, "pod %s is not bound on node %s", pod,
                   r->node),
           1;
  return 0;
}

static int
step_check(const eng_job *j, int s, const bus_ev_stage_report *rep,
           eng_verdict *out) {
  const eng_stage *st = &j->st[s];
  if (j->ended || j->over)
    return verdict(out, ENG_DUPLICATE, "the run of %s ended", j->name), 1;
  if (st->step < 0 || (int64_t)rep->step > st->step)
    return verdict(out, ENG_NOT_YET, "%s step %llu has not started",
                   eng_stage_names[s], (unsigned long long)rep->step),
           1;
  if ((int64_t)rep->step < st->step || st->complete)
    return verdict(out, ENG_DUPLICATE, "%s step %llu is complete",
                   eng_stage_names[s], (unsigned long long)rep->step),
           1;
  return 0;
}

int
eng_check_stage(bus_txn *t, const eng_route *r, const bus_ev_stage_report *rep,
                eng_verdict *out) {
  char pod[ENG_POD_SZ], job[ENG_NAME_SZ];
  eng_job j;
  eng_pod p;
  memset(out, 0, sizeof *out);
  bus_str_copy(rep->pod, pod, sizeof pod);
  bus_str_copy(rep->job, job, sizeof job);
  int s = out->stage = eng_stage_of(rep->stage);
  out->step = rep->step;
  if (strcmp(pod, r->name) || s < 0)
    return verdict(out, ENG_REFUSE, "a report for pod %s on %s's subject", pod,
                   r->name);
  int rc = eng_job_get(t, job, &j);
  if (rc == BUS_ENOT_FOUND)
    return verdict(out, ENG_NOT_YET, "no job %s", job);
  if (rc || bound_pod(t, r, pod, job, &p, out))
    return rc;
  if (!eng_takes_part(&j, p.task, s))
    return verdict(out, ENG_REFUSE, "pod %s takes no part in %s", pod,
                   eng_stage_names[s]);
  if (step_check(&j, s, rep, out))
    return 0;
  if (s == ENG_SYNC && eng_loads(&j, p.task) && rep->weights < j.st[s].weights)
    return verdict(
        out, ENG_REFUSE, "pod %s loaded weights %llu, the step needs %llu", pod,
        (unsigned long long)rep->weights, (unsigned long long)j.st[s].weights);
  if (eng_pod_done(t, &j, s, pod))
    return verdict(out, ENG_DUPLICATE, "pod %s reported it already", pod);
  return version(t, job, out);
}

typedef struct hosts {
  const char *node;
  int found;
} hosts;

static int
on_node(bus_txn *t, eng_pod *p, void *ud) {
  (void)t;
  hosts *h = ud;
  h->found |= p->bound && !strcmp(p->node, h->node);
  return h->found;
}

int
eng_check_weights(bus_txn *t, const eng_route *r,
                  const bus_ev_weights_report *rep, eng_verdict *out) {
  char job[ENG_NAME_SZ], pod[ENG_POD_SZ];
  eng_job j;
  eng_pod p;
  memset(out, 0, sizeof *out);
  bus_str_copy(rep->job, job, sizeof job);
  if (strcmp(job, r->name))
    return verdict(out, ENG_REFUSE, "a report for job %s on %s's subject", job,
                   r->name);
  int rc = eng_job_get(t, job, &j);
  if (rc == BUS_ENOT_FOUND)
    return verdict(out, ENG_NOT_YET, "no job %s", job);
  if (rc)
    return rc;
  if (bus_str_eq(rep->event, "published")) {
    if (!rep->has_pod || !rep->has_address || !rep->has_size)
      return verdict(out, ENG_REFUSE, "published needs pod, size, address");
    if (bound_pod(t, r, bus_str_copy(rep->pod, pod, sizeof pod), job, &p, out))
      return 0;
    if (rep->version <= j.weights)
      return verdict(out, ENG_REFUSE, "version %llu is not past %llu",
                     (unsigned long long)rep->version,
                     (unsigned long long)j.weights);
    return version(t, job, out);
  }
  hosts h = {r->node, 0};
  if ((rc = eng_each_pod(t, job, on_node, &h)) < 0)
    return rc;
  if (!h.found)
    return verdict(out, ENG_REFUSE, "node %s hosts no pod of job %s", r->node,
                   job);
  return version(t, job, out);
}

/*
 * pods.c - the node's processes brought in line with its desired states.
 *
 * Reconciling is level-triggered: for each pod, the desired state (from
 * the store), the run record (what was started) and the live process
 * decide what to do, so the same code serves a new message, a process
 * that ended, and a restart.
 *
 * Invariants:
 * - An attempt is started at most once: the run record (attempt,
 *   STARTING) is committed before the spawn, and a pod whose run record
 *   has that attempt (or a later one) is never started again.
 * - Every phase report is queued in the same transaction as the run
 *   record it describes (report.c).
 * - A newer attempt replaces an older one only after the older process
 *   ended (lifetime.c); the replaced attempt's end is not reported.
 * - A desired state naming an older attempt than the live process's is
 *   ignored, whatever it asks: it was decided before the attempt that
 *   runs (a stop of a lost attempt reaching the node after its retry was
 *   placed there), so it must not stop or replace it.
 * - A raw+netns pod's network (netns.c), with a macvlan on the subnet of
 *   each robot it holds that has one, is made after its STARTING record
 *   and removed once its end is recorded (or its start failed), before a
 *   next attempt is started; every report of it carries its localIP.
 *   A raw pod that holds such a robot runs without one (it has no
 *   namespace of its own to put it in; the scheduler gives such pods
 *   raw+netns), and the log says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "fetch.h"
#include "lifetime.h"
#include "log.h"
#include "netns.h"
#include "pods.h"
#include "podnet.h"
#include "report.h"
#include "sender.h"
#include "sock.h"

static int
mkdirs(const char *path) {
  char tmp[4300];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *s = tmp + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return -errno;
      *s = '/';
    }
  return mkdir(tmp, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

static int
nonempty_str(bus_str s) {
  return s.len && !memchr(s.ptr, 0, s.len);
}

/* The runtime the desired state asks for: raw when it names none. */
static bus_str
runtime_of(const bus_ev_pod_desired *d) {
  return d->has_runtime ? d->runtime : BUS_STR("raw");
}

/* Why this desired state cannot run here, or NULL. Loop thread only (the
 * reason may be in a static buffer). */
static const char *
unrunnable(const edge_agent *a, const bus_ev_pod_desired *d) {
  bus_str rt = runtime_of(d);
  static char bad[400];
  char r[200];
  lark_artifact parsed;
  if (!bus_str_eq(rt, "raw") && !bus_str_eq(rt, "raw+netns"))
    return "unknown runtime";
  if (!bus_str_eq(rt, "raw") && !edge_runtime_offered(&a->cfg, "raw+netns"))
    return "runtime raw+netns is not offered by this node (no --pod-cidr)";
  const bus_raw_runtime *raw = d->has_raw ? &d->raw : NULL;
  if (raw && raw->artifact.len &&
      lark_artifact_parse(raw->artifact.ptr, raw->artifact.len, &parsed, r,
                          sizeof r)) {
    snprintf(bad, sizeof bad, "artifact: %s", r);
    return bad;
  }
  if (!raw || !raw->entrypoint.n) /* runScript instead */
    return nonempty_str(d->runScript) ? NULL : "no entrypoint and no runScript";
  for (uint32_t i = 0; i < raw->entrypoint.n; i++)
    if (memchr(raw->entrypoint.v[i].ptr, 0, raw->entrypoint.v[i].len))
      return "entrypoint arguments must be strings without NUL";
  return NULL;
}

/* A raw+netns pod's network, with the robot subnets it reaches
 * (netns.c): its namespace's path into netns; why says what failed. */
static int
net_up(edge_agent *a, const char *pod, const bus_ev_pod_desired *d,
       edge_proc *p, char *netns, size_t ncap, char *why, size_t wcap) {
  edge_subnet_want want[EDGE_SUBNETS_MAX];
  edge_net net;
  int own_ns = bus_str_eq(runtime_of(d), "raw+netns");
  int rc, n = edge_net_wants(&a->devices, d, want, EDGE_SUBNETS_MAX);
  if (!own_ns) {
    if (n > 0) /* the scheduler's choice: said, not second-guessed */
      edge_logf("warn", pod,
                "holds a robot on %s but runs raw: no macvlan "
                "(only raw+netns pods get one)",
                want[0].cidr);
    return 0;
  }
  if (n < 0) {
    snprintf(why, wcap, "%s", bus_last_error());
    return n;
  }
  if ((rc = edge_net_setup(a, pod, want, n, &net))) {
    snprintf(why, wcap, "cannot set up the pod's network: %s",
             bus_last_error());
    return rc;
  }
  p->netns = 1;
  snprintf(p->ip, sizeof p->ip, "%s", net.pod_ip);
  snprintf(netns, ncap, "%s/%s", podnet_rundir(), net.ns);
  return 0;
}

static void
start(edge_agent *a, const char *pod, const bus_ev_pod_desired *d,
      uint32_t attempt) {
  char job[EDGE_NAME_SZ], cwd[4200], why[512] = "", netns[4200] = "";
  edge_run r = {.attempt = attempt, .state = EDGE_RUN_STARTING};
  bus_str_copy(d->job, job, sizeof job);
  bus_str_copy(d->workingDir, cwd, sizeof cwd);
  /* committed before anything runs: never twice */
  if (edge_record(a, pod, &r, NULL, 0, 0, NULL, NULL))
    return;
  edge_proc *p = edge_proc_new(a, pod, job, attempt);
  if (!p)
    return;
  const char *bad = unrunnable(a, d);
  int rc = bad ? BUS_EINVAL
               : net_up(a, pod, d, p, netns, sizeof netns, why, sizeof why);
  if (!bad && !rc) {
    if ((rc = mkdirs(p->dir)) || (cwd[0] && (rc = mkdirs(cwd))))
      snprintf(why, sizeof why, "cannot make %.400s: %s", cwd[0] ? cwd : p->dir,
               strerror(-rc));
    else if ((rc = edge_sock_listen(p)) ||
             (rc = edge_proc_spawn(p, d, cwd[0] ? cwd : p->dir, netns)))
      snprintf(why, sizeof why, "cannot start: %s", bus_last_error());
  } else if (bad)
    snprintf(why, sizeof why, "%s", bad);
  if (rc) {
    p->ended = 1;
    r.state = EDGE_RUN_ENDED;
    edge_record(a, pod, &r, "Failed", -1, 0, NULL, why);
    if (p->netns)
      edge_net_teardown(a, pod);
    edge_proc_finish(p);
    return;
  }
  atomic_fetch_add(&a->npods, 1);
  r.state = EDGE_RUN_RUNNING;
  r.pid = p->pid;
  r.start_ticks = p->ticks;
  edge_record(a, pod, &r, "Running", -1, 0, p->ip, NULL);
}

/* --------------------------------------------------------- reconcile */

/*
 * A Deleted pod that no longer runs is forgotten: its run and desired
 * state leave the store (with its engine row; its Job's projections too
 * when no pod of the Job is left, engine.c), and pod.forgotten tells the
 * scheduler, which then purges the pod's subject from this node's stream
 * (so the stream holds only pods that still matter). Said again if the
 * tombstone comes again before the purge.
 */
static void
forget(edge_agent *a, const char *pod, bus_str job, uint64_t version) {
  char jobname[EDGE_NAME_SZ];
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_ev_pod_forgotten d = {
      .pod = bus_str_of(pod), .has_version = version != 0, .version = version};
  int rc = bus_subj_pod_forgotten(subject, sizeof subject, a->cfg.node, pod);
  if (!rc)
    rc = bus_pod_forgotten_pack(&sb, &d);
  edge_msg m = {subject, "pod.forgotten", sb.data, sb.size};
  if (!rc)
    rc = edge_store_forget(a->store, pod, &m);
  msgpack_sbuffer_destroy(&sb);
  if (rc) {
    edge_logf("error", subject, "cannot forget: %s", bus_last_error());
    return;
  }
  edge_logf("info", subject, "deleted and forgotten");
  edge_sender_wake(a);
  edge_engine_pod_forgotten(a, bus_str_copy(job, jobname, sizeof jobname));
}

static void
reconcile(edge_agent *a, const char *pod, const void *data, size_t len) {
  msgpack_zone z;
  msgpack_object o;
  bus_ev_pod_desired d;
  msgpack_zone_init(&z, 2048);
  if (msgpack_unpack(data, len, NULL, &z, &o) < 0 ||
      bus_pod_desired_unpack(&o, &z, &d)) {
    msgpack_zone_destroy(&z);
    return;
  }
  uint32_t attempt = d.has_attempt ? (uint32_t)d.attempt : 0;
  edge_proc *p = edge_proc_find_live(a, pod);
  edge_run r;
  int have = edge_store_run_get(a->store, pod, &r) == 0;
  if (p && attempt < p->attempt) {
    /* stale; not logged: every wake reconciles every pod again */
  } else if (bus_str_eq(d.desired, "Running")) {
    if (p && p->attempt < attempt)
      edge_proc_stop(p, 0, 1); /* replaced: start when it ended */
    else if (!p && !(have && r.attempt >= attempt))
      start(a, pod, &d, attempt);
  } else if (p) {
    edge_proc_stop(p, p->attempt == attempt, p->attempt != attempt);
  } else if (bus_str_eq(d.desired, "Deleted")) {
    if (edge_net_teardown(a, pod) == 0) /* a network kept is tried later */
      forget(a, pod, d.job, d.has_version ? d.version : 0);
  }
  msgpack_zone_destroy(&z);
}

static void
reconcile_cb(const char *pod, const void *data, size_t len, void *ud) {
  reconcile(ud, pod, data, len);
}

void
edge_pods_reconcile_one(edge_agent *a, const char *pod) {
  void *data = NULL;
  size_t len = 0;
  if (a->closing || edge_store_desired_get(a->store, pod, &data, &len))
    return;
  reconcile(a, pod, data, len);
  free(data);
}

void
edge_pods_reconcile(edge_agent *a) {
  if (!a->closing)
    edge_store_desired_each(a->store, reconcile_cb, a);
}

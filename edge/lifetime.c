/*
 * lifetime.c - a pod's process from its spawn to its end (lifetime.h).
 *
 * - A pod runs as `lark-edge pod-shim` in its own session: the shim
 *   writes the exit status to the pod's directory, so a process that
 *   ends while no agent watches still reports how it ended; a stop
 *   signals the whole process group.
 * - A process that ended has what it left in its FIFOs sent first (its
 *   last lines travel ahead of its end), then its end recorded
 *   (report.c), its raw+netns network removed (netns.c), its output
 *   drained, and then its pod is reconciled again (edge_agent.pod_ended), so a
 * replaced attempt is started only after the older process ended.
 * - An adopted process (started by a previous agent) is polled: its pid
 *   with the start time recorded, then the shim's status file.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fetch.h"
#include "lifetime.h"
#include "log.h"
#include "netns.h"
#include "output.h"
#include "report.h"
#include "shimcmd.h"
#include "sock.h"
#include "utf8.h"

enum { POLL_MS = 300, DRAIN_MS = 1000 };

/* ------------------------------------------------------ process ends */

/* Close everything; the proc is freed by the last close callback. With
 * nothing open it is freed here. */
void
edge_proc_finish(edge_proc *p) {
  if (p->finishing)
    return;
  p->finishing = 1;
  edge_proc_flush(p);
  edge_stream_close(&p->out);
  edge_stream_close(&p->err);
  edge_sock_close(p);
  edge_proc_close_handle((uv_handle_t *)&p->proc, &p->has_proc);
  edge_proc_close_handle((uv_handle_t *)&p->poll, &p->has_poll);
  edge_proc_close_handle((uv_handle_t *)&p->grace, &p->has_grace);
  edge_proc_maybe_free(p);
}

static void
on_drained(uv_timer_t *t) {
  edge_proc_finish(t->data);
}

/* The process ended with code (>= 0) or signal sig; why for people. */
static void
ended(edge_proc *p, int code, int sig, const char *why) {
  if (p->ended)
    return;
  p->ended = 1;
  atomic_fetch_sub(&p->a->npods, 1);
  if (p->has_grace)
    uv_timer_stop(&p->grace);
  edge_run r = {.attempt = p->attempt,
                .state = EDGE_RUN_ENDED,
                .pid = p->pid,
                .start_ticks = p->ticks};
  const char *phase = p->report_stop      ? "Stopped"
                      : code == 0 && !sig ? "Succeeded"
                                          : "Failed";
  char reason[EDGE_REASON_MAX] = "";
  /* its last lines go out ahead of its end on the node's ordered queue,
   * so a reader who sees the phase finds them (not a flush timer later) */
  edge_stream_drain(&p->out);
  edge_stream_drain(&p->err);
  edge_proc_flush(p);
  if (why)
    snprintf(reason, sizeof reason, "%s", why);
  else if (sig)
    snprintf(reason, sizeof reason, "killed by signal %d", sig);
  else if (code)
    snprintf(reason, sizeof reason, "exit status %d", code);
  edge_record(p->a, p->pod, &r, p->silent ? NULL : phase, sig ? -1 : code, sig,
              p->ip, reason);
  if (p->netns)
    edge_net_teardown(p->a, p->pod);
  /* let the output drain, then let go of the handles */
  if (!p->has_poll) {
    uv_timer_init(p->a->loop, &p->poll);
    p->poll.data = p;
    p->has_poll = 1;
    p->handles++;
  }
  uv_timer_start(&p->poll, on_drained, DRAIN_MS, 0);
  if (p->a->pod_ended)
    p->a->pod_ended(p->a, p->pod);
}

/* What the shim wrote for p's attempt (edge_shim_status). */
static int
read_status(const edge_proc *p, int *code, int *sig, char *why, size_t cap) {
  char path[4300];
  snprintf(path, sizeof path, "%s/exit-%u", p->dir, p->attempt);
  return edge_shim_status(path, code, sig, why, cap);
}

static void
on_exit_cb(uv_process_t *h, int64_t status, int sig) {
  edge_proc *p = h->data;
  char why[EDGE_REASON_MAX];
  int code = -1, fsig = 0;
  if (!read_status(p, &code, &fsig, why, sizeof why) && why[0])
    ended(p, fsig ? -1 : code, fsig, why); /* a step before the entrypoint */
  else
    ended(p, sig ? -1 : (int)status, sig, NULL);
}

static void
on_poll(uv_timer_t *t) {
  edge_proc *p = t->data;
  if (p->ended || edge_proc_start_ticks(p->pid) == p->ticks)
    return;
  int code = -1, sig = 0;
  char why[EDGE_REASON_MAX];
  if (read_status(p, &code, &sig, why, sizeof why))
    ended(p, 1, 0, "lost on agent restart: its exit status is unknown");
  else
    ended(p, sig ? -1 : code, sig, why[0] ? why : NULL);
}

/* ------------------------------------------------------------- stops */

static void
signal_group(edge_proc *p, int sig) {
  if (p->pid <= 0 || edge_proc_start_ticks(p->pid) != p->ticks)
    return;
  if (kill(-p->pid, sig) < 0)
    kill(p->pid, sig);
}

static void
on_grace(uv_timer_t *t) {
  edge_proc *p = t->data;
  if (!p->ended) {
    edge_logf("info", p->pod, "grace period over: SIGKILL");
    signal_group(p, SIGKILL);
  }
}

void
edge_proc_stop(edge_proc *p, int report, int silent) {
  p->report_stop = report;
  p->silent = silent;
  if (p->stopping)
    return;
  p->stopping = 1;
  signal_group(p, SIGTERM);
  uv_timer_init(p->a->loop, &p->grace);
  p->grace.data = p;
  p->has_grace = 1;
  p->handles++;
  uv_timer_start(&p->grace, on_grace, (uint64_t)p->a->cfg.grace_ms, 0);
}

/* ------------------------------------------------------------ spawns */

static int
make_fifo(const edge_proc *p, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%u.%s", p->dir, p->attempt, name);
  unlink(path);
  if (mkfifo(path, 0600) < 0)
    return bus_error(-errno, "mkfifo %s", path);
  return 0;
}

/* Spawn the shim (in namespace file netns when p->netns); fills p->pid
 * and p->ticks. */
int
edge_proc_spawn(edge_proc *p, const bus_ev_pod_desired *d, const char *cwd,
                char *netns) {
  char status[4300], out[4300], err[4300];
  int wfd[2] = {-1, -1}, rc;
  snprintf(status, sizeof status, "%s/exit-%u", p->dir, p->attempt);
  unlink(status);
  if ((rc = make_fifo(p, "stdout", out, sizeof out)) ||
      (rc = make_fifo(p, "stderr", err, sizeof err)))
    return rc;
  /* readers first, so the pod's opens do not block */
  if ((rc = edge_stream_open(p, &p->out, out, "stdout")) ||
      (rc = edge_stream_open(p, &p->err, err, "stderr")))
    return rc;
  wfd[0] = open(out, O_RDWR | O_CLOEXEC);
  wfd[1] = open(err, O_RDWR | O_CLOEXEC);
  edge_args argv = {0};
  edge_env e = {0};
  if (wfd[0] < 0 || wfd[1] < 0)
    rc = bus_error(-errno, "open the pod's output");
  else if ((rc = edge_shim_argv(p, d, status, netns, &argv)))
    rc = bus_error(rc, "out of memory");
  if (rc)
    goto out;
  edge_shim_env(p, d, &e);
  uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                   {.flags = UV_INHERIT_FD, .data.fd = wfd[0]},
                                   {.flags = UV_INHERIT_FD, .data.fd = wfd[1]}};
  uv_process_options_t o = {.exit_cb = on_exit_cb,
                            .file = p->a->self_exe,
                            .args = argv.v,
                            .env = e.v,
                            .cwd = cwd,
                            .flags = UV_PROCESS_DETACHED,
                            .stdio_count = 3,
                            .stdio = stdio};
  p->proc.data = p;
  rc = uv_spawn(p->a->loop, &p->proc, &o);
  if (rc == 0) {
    p->has_proc = 1;
    p->handles++;
    p->pid = p->proc.pid;
    p->ticks = edge_proc_start_ticks(p->pid);
  } else
    rc = bus_error(BUS_EINVAL, "spawn: %s", uv_strerror(rc));
  edge_env_free(&e);
out:
  edge_args_free(&argv);
  for (int i = 0; i < 2; i++)
    if (wfd[i] >= 0)
      close(wfd[i]);
  return rc;
}

/* ------------------------------------------------------------- adopt */

/* The Job of pod's stored desired state into job ("" when none): an
 * adopted pod's engine requests and weights are its Job's. */
static void
desired_job(edge_agent *a, const char *pod, char *job, size_t cap) {
  void *data = NULL;
  size_t len = 0;
  msgpack_zone z;
  msgpack_object o;
  bus_ev_pod_desired d;
  job[0] = 0;
  if (edge_store_desired_get(a->store, pod, &data, &len))
    return;
  msgpack_zone_init(&z, 2048);
  if (msgpack_unpack(data, len, NULL, &z, &o) >= 0 &&
      !bus_pod_desired_unpack(&o, &z, &d))
    bus_str_copy(d.job, job, cap);
  msgpack_zone_destroy(&z);
  free(data);
}

static void
adopt_one(const char *pod, const void *val, void *ud) {
  const edge_run *r = val;
  edge_agent *a = ud;
  edge_run e = *r;
  e.state = EDGE_RUN_ENDED;
  if (r->state == EDGE_RUN_STARTING) {
    edge_record(a, pod, &e, "Failed", -1, 0, NULL, "lost on agent restart");
    return; /* its network, if any, goes with the sweep */
  }
  if (r->state != EDGE_RUN_RUNNING)
    return;
  char job[EDGE_NAME_SZ];
  desired_job(a, pod, job, sizeof job);
  edge_proc *p = edge_proc_new(a, pod, job, r->attempt);
  if (!p)
    return;
  p->pid = r->pid;
  p->ticks = r->start_ticks;
  p->adopted = 1;
  edge_net net;
  if (edge_store_net_get(a->store, pod, &net) == 0) {
    p->netns = 1;
    snprintf(p->ip, sizeof p->ip, "%s", net.pod_ip);
  }
  atomic_fetch_add(&a->npods, 1);
  char path[4300];
  snprintf(path, sizeof path, "%s/%u.stdout", p->dir, p->attempt);
  edge_stream_open(p, &p->out, path, "stdout");
  snprintf(path, sizeof path, "%s/%u.stderr", p->dir, p->attempt);
  edge_stream_open(p, &p->err, path, "stderr");
  edge_sock_listen(p);
  uv_timer_init(a->loop, &p->poll);
  p->poll.data = p;
  p->has_poll = 1;
  p->handles++;
  uv_timer_start(&p->poll, on_poll, 0, POLL_MS);
  edge_logf("info", pod, "adopted attempt %u (pid %d)", p->attempt,
            (int)p->pid);
}

void
edge_procs_adopt(edge_agent *a) {
  edge_store_run_each(a->store, adopt_one, a);
}

void
edge_procs_close(edge_agent *a) {
  a->closing = 1;
  edge_proc *next;
  for (edge_proc *p = a->procs; p; p = next) {
    next = p->next;
    p->ended = 1;
    edge_proc_finish(p);
  }
}

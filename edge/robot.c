/*
 * robot.c - the node's robots as supervised launch processes, brought in
 * line with their robot.desired (robot.h).
 *
 * A robot runs as `lark-edge pod-shim <dir>/exit-<n> [--user U] --
 * LAUNCH... MODE...` in its own session, as a pod does: the shim drops
 * to the device's user before it runs the launch line, and writes how it
 * ended, so an agent that restarted meanwhile still learns it. Its
 * output goes to <data>/robots/<robot>/launch.log.
 *
 * Reconciling is level-triggered, like pods.c: the desired state in the
 * store, the run record and the live process decide. Desired Running and
 * nothing runs: launch. Running in another mode, or resets grew: stop,
 * then launch again when it ended (switched, or started after a reset).
 * Desired Stopped: SIGTERM to the group, SIGKILL after the grace period,
 * then stopped. A launch that ends on its own is reported exited and,
 * while desired Running, started again after a backoff (1 s doubling to
 * 30 s; robot.report restarted).
 *
 * Invariants:
 * - Each report is queued in the same transaction as the run record it
 *   describes (store_robot.c): a crash never loses one or makes one
 *   twice.
 * - The run record names the launch's pid and start time as soon as it
 *   is spawned; a restarted agent watches that process (polling it, then
 *   reading the shim's status file) and never launches it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "robot.h"
#include "sender.h"
#include "shimcmd.h"

enum { POLL_MS = 300, BACKOFF_MS = 1000, BACKOFF_MAX_MS = 30000 };
/* A launch that ran this long before it died starts its backoff over. */
enum { STABLE_MS = 60000 };

static void reconcile(edge_robot *r);

/* -------------------------------------------------------- the record */

/* Record r->run and queue robot.report event (when not NULL) with the
 * exit (code >= 0 or sig > 0) and why. */
static void
record(edge_robot *r, const char *event, int code, int sig, const char *why) {
  edge_agent *a = r->all->a;
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_ev_robot_report d = {.robot = bus_str_of(r->dev->name),
                           .event = bus_str_of(event ? event : ""),
                           .has_mode = r->run.mode[0] != 0,
                           .mode = bus_str_of(r->run.mode),
                           .has_version = r->run.version != 0,
                           .version = r->run.version,
                           .has_exitCode = code >= 0 || (event && sig > 0),
                           .exitCode =
                               code >= 0 ? (code > 255 ? 255 : code) : -1,
                           .has_signal = sig > 0,
                           .signal = (uint64_t)(sig > 64 ? 64 : sig),
                           .has_restarts = 1,
                           .restarts = r->run.restarts,
                           .has_reason = why && *why,
                           .reason = bus_str_of(why ? why : "")};
  int rc =
      bus_subj_robot_report(subject, sizeof subject, a->cfg.node, r->dev->name);
  if (!rc && event && (rc = bus_robot_report_pack(&sb, &d)))
    edge_logf("error", subject, "cannot report %s: %s", event,
              bus_last_error());
  edge_msg m = {subject, "robot.report", sb.data, sb.size};
  if (!rc)
    rc = edge_store_robot_run_put(a->store, r->dev->name, &r->run,
                                  event ? &m : NULL);
  msgpack_sbuffer_destroy(&sb);
  if (rc)
    edge_logf("error", subject, "cannot record the robot: %s",
              bus_last_error());
  else if (event) {
    edge_logf("info", subject, "%s (mode %s, pid %d)%s%s", event, r->run.mode,
              (int)r->run.pid, why && *why ? ": " : "", why ? why : "");
    edge_sender_wake(a);
  }
}

/* The robot's desired state from the store into r (Stopped, default
 * mode, when none came yet). New request ids are kept to be answered. */
static void
take_desired(edge_robot *r) {
  void *data = NULL;
  size_t len = 0;
  uint64_t seq = 0;
  msgpack_zone z;
  msgpack_object o;
  bus_ev_robot_desired d;
  if (edge_store_robot_desired_get(r->all->a->store, r->dev->name, &seq, &data,
                                   &len))
    return;
  msgpack_zone_init(&z, 1024);
  if (msgpack_unpack(data, len, NULL, &z, &o) >= 0 &&
      !bus_robot_desired_unpack(&o, &z, &d)) {
    r->want_run = bus_str_eq(d.desired, "Running");
    bus_str_copy(d.has_mode ? d.mode : BUS_STR(""), r->want_mode,
                 sizeof r->want_mode);
    r->version = seq;
    r->resets = d.has_resets ? d.resets : 0;
    bus_str_copy(d.has_holder ? d.holder : BUS_STR(""), r->holder,
                 sizeof r->holder);
    char req[EDGE_REQ_SZ];
    bus_str_copy(d.has_request ? d.request : BUS_STR(""), req, sizeof req);
    int known = !req[0];
    for (int i = 0; i < r->nseen && !known; i++)
      known = !strcmp(r->seen[i], req);
    if (!known && r->nseen < EDGE_ROBOT_SEEN)
      snprintf(r->seen[r->nseen++], EDGE_REQ_SZ, "%s", req);
  }
  msgpack_zone_destroy(&z);
  free(data);
}

/* In line with its desired state, nothing under way: answer the pods
 * whose requests led here. */
static void
maybe_settled(edge_robot *r) {
  if (r->stopping || (r->want_run && !r->live && !r->retrying))
    return;
  for (int i = 0; i < r->nseen; i++)
    if (r->all->settled)
      r->all->settled(r->all, r, r->seen[i]);
  r->nseen = 0;
}

const char *
edge_robot_state(const edge_robot *r) {
  if (r->live)
    return "Running";
  if (r->retrying)
    return "Restarting";
  return r->want_run ? "Exited" : "Stopped";
}

/* ---------------------------------------------------------- the ends */

static void
handle_closed(uv_handle_t *h) {
  (void)h;
}

static void
proc_closed(uv_handle_t *h) {
  free(h);
}

/* Let go of the spawned launch's handle (the process is not touched). */
static void
drop_proc(edge_robot *r) {
  if (r->proc) {
    uv_close((uv_handle_t *)r->proc, proc_closed);
    r->proc = NULL;
  }
}

/* What the shim wrote for launch n (edge_shim_status). */
static int
read_status(const edge_robot *r, uint32_t n, int *code, int *sig, char *why,
            size_t cap) {
  char path[4300];
  snprintf(path, sizeof path, "%s/exit-%u", r->dir, n);
  return edge_shim_status(path, code, sig, why, cap);
}

static void on_retry(uv_timer_t *t);

/* The launch ended with code (>= 0) or signal sig. */
static void
ended(edge_robot *r, int code, int sig, const char *why) {
  edge_agent *a = r->all->a;
  r->live = 0;
  drop_proc(r);
  uv_timer_stop(&r->poll);
  uv_timer_stop(&r->grace);
  r->run.state = EDGE_RUN_ENDED;
  take_desired(r);
  if (r->stopping) { /* as asked: a stop, or a switch or reset under way */
    r->stopping = 0;
    r->run.version = r->version;
    if (!r->want_run)
      r->next = NULL; /* the switch or reset is moot */
    record(r, r->want_run ? NULL : "stopped", code, sig, why);
    reconcile(r);
    return;
  }
  if (uv_now(a->loop) - r->launched >= STABLE_MS)
    r->crashes = 0;
  record(r, "exited", code, sig, why);
  if (!r->want_run) {
    maybe_settled(r);
    return;
  }
  uint64_t ms = (uint64_t)BACKOFF_MS << (r->crashes < 5 ? r->crashes : 5);
  if (ms > BACKOFF_MAX_MS)
    ms = BACKOFF_MAX_MS;
  r->crashes++;
  r->retrying = 1;
  uv_timer_start(&r->retry, on_retry, ms, 0);
  maybe_settled(r);
}

static void
on_exit_cb(uv_process_t *h, int64_t status, int sig) {
  edge_robot *r = h->data;
  char why[512];
  int code = -1, fsig = 0;
  if (!read_status(r, r->run.attempt, &code, &fsig, why, sizeof why) && why[0])
    ended(r, fsig ? -1 : code, fsig, why); /* the shim failed a step */
  else
    ended(r, sig ? -1 : (int)status, sig, NULL);
}

/* An adopted launch: still there? Else how it ended, from its status. */
static void
on_poll(uv_timer_t *t) {
  edge_robot *r = t->data;
  if (!r->live || edge_proc_start_ticks(r->run.pid) == r->run.start_ticks)
    return;
  int code = -1, sig = 0;
  char why[512];
  if (read_status(r, r->run.attempt, &code, &sig, why, sizeof why))
    ended(r, -1, 0, "lost on agent restart: its exit status is unknown");
  else
    ended(r, sig ? -1 : code, sig, why[0] ? why : NULL);
}

/* --------------------------------------------------- launch and stop */

static void
signal_group(edge_robot *r, int sig) {
  pid_t pid = r->run.pid;
  if (pid <= 0 || edge_proc_start_ticks(pid) != r->run.start_ticks)
    return;
  if (kill(-pid, sig) < 0)
    kill(pid, sig);
}

static void
on_grace(uv_timer_t *t) {
  edge_robot *r = t->data;
  if (r->live) {
    edge_logf("info", r->dev->name, "grace period over: SIGKILL");
    signal_group(r, SIGKILL);
  }
}

/* SIGTERM to the launch's group, SIGKILL after the grace period; next
 * is what the next launch reports (NULL: none is due). */
static void
stop(edge_robot *r, const char *next) {
  r->next = next;
  if (r->stopping)
    return;
  r->stopping = 1;
  signal_group(r, SIGTERM);
  uv_timer_start(&r->grace, on_grace, (uint64_t)r->all->a->cfg.grace_ms, 0);
}

/* `lark-edge pod-shim STATUS [--user U] -- LAUNCH... MODE...` */
static int
launch_argv(const edge_robot *r, const edge_dev_mode *m, const char *status,
            edge_args *b) {
  const char *head[] = {r->all->a->self_exe, "pod-shim", status};
  for (int i = 0; i < 3; i++)
    edge_args_add(b, head[i]);
  if (r->dev->user[0]) {
    edge_args_add(b, "--user");
    edge_args_add(b, r->dev->user);
  }
  edge_args_add(b, "--");
  for (int i = 0; i < r->dev->nlaunch; i++)
    edge_args_add(b, r->dev->launch[i]);
  for (int i = 0; i < m->argc; i++)
    edge_args_add(b, m->argv[i]);
  return b->failed ? -ENOMEM : 0;
}

/* The agent's environment (edge_env_inherit), and the robot's own
 * ROS_MASTER_URI or ROS_DOMAIN_ID when given. */
static void
launch_env(const edge_robot *r, edge_env *e) {
  char num[16];
  edge_env_inherit(e);
  if (r->dev->kind == EDGE_DEV_ROS && r->dev->ros_master_uri[0])
    edge_env_put(e, "ROS_MASTER_URI", r->dev->ros_master_uri);
  if (r->dev->kind == EDGE_DEV_ROS2 && r->dev->ros_domain_id >= 0) {
    snprintf(num, sizeof num, "%d", r->dev->ros_domain_id);
    edge_env_put(e, "ROS_DOMAIN_ID", num);
  }
}

static int
spawn(edge_robot *r, const edge_dev_mode *m) {
  edge_agent *a = r->all->a;
  char status[4300], log[4300];
  snprintf(status, sizeof status, "%s/exit-%u", r->dir, r->run.attempt);
  snprintf(log, sizeof log, "%s/launch.log", r->dir);
  unlink(status);
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0)
    return bus_error(-errno, "cannot open %s", log);
  edge_args argv = {0};
  edge_env env = {0};
  int rc = launch_argv(r, m, status, &argv);
  launch_env(r, &env);
  uv_stdio_container_t io[3] = {{.flags = UV_IGNORE},
                                {.flags = UV_INHERIT_FD, .data.fd = fd},
                                {.flags = UV_INHERIT_FD, .data.fd = fd}};
  uv_process_options_t o = {.exit_cb = on_exit_cb,
                            .file = a->self_exe,
                            .args = argv.v,
                            .env = env.v,
                            .cwd = r->dir,
                            .flags = UV_PROCESS_DETACHED,
                            .stdio_count = 3,
                            .stdio = io};
  uv_process_t *h = rc ? NULL : malloc(sizeof *h);
  if (!rc && !h)
    rc = -ENOMEM;
  if (!rc && (rc = uv_spawn(a->loop, h, &o))) {
    rc = bus_error(BUS_EINVAL, "spawn: %s", uv_strerror(rc));
    uv_close((uv_handle_t *)h, proc_closed); /* libuv wants it closed */
  } else if (!rc) {
    h->data = r;
    r->proc = h;
    r->run.pid = h->pid;
    r->run.start_ticks = edge_proc_start_ticks(h->pid);
  }
  edge_env_free(&env);
  edge_args_free(&argv);
  close(fd);
  return rc;
}

/* Launch in the desired mode; event is what it reports. */
static void
launch(edge_robot *r, const char *event, const char *why) {
  const edge_dev_mode *m = edge_device_mode(r->dev, r->want_mode);
  char reason[600];
  r->run.version = r->version;
  r->run.resets = r->resets;
  if (!m) { /* said once for this desired state */
    if (r->refused != r->version)
      record(r, "exited", -1, 0, "no such mode on this robot");
    r->refused = r->version;
    return;
  }
  snprintf(r->run.mode, sizeof r->run.mode, "%s", m->name);
  r->run.attempt++;
  r->launched = uv_now(r->all->a->loop);
  if (spawn(r, m)) {
    snprintf(reason, sizeof reason, "cannot launch: %s", bus_last_error());
    r->live = 1; /* ends at once, as a launch that died */
    ended(r, -1, 0, reason);
    return;
  }
  r->live = 1;
  r->run.state = EDGE_RUN_RUNNING;
  record(r, event, -1, 0, why);
}

static void
on_retry(uv_timer_t *t) {
  edge_robot *r = t->data;
  r->retrying = 0;
  take_desired(r);
  if (!r->want_run || r->live)
    return;
  r->run.restarts++;
  launch(r, "restarted", NULL);
  maybe_settled(r);
}

/* ------------------------------------------------------- reconcile */

static void
reconcile(edge_robot *r) {
  take_desired(r);
  const edge_dev_mode *m = edge_device_mode(r->dev, r->want_mode);
  const char *want = m ? m->name : r->want_mode;
  if (r->live) {
    if (!r->want_run)
      stop(r, NULL);
    else if (strcmp(want, r->run.mode))
      stop(r, "switched");
    else if (r->resets > r->run.resets)
      stop(r, "started");
  } else if (r->retrying) {
    if (!r->want_run) { /* no restart is due any more */
      r->retrying = 0;
      uv_timer_stop(&r->retry);
      r->run.version = r->version;
      record(r, "stopped", -1, 0, "stopped while waiting to restart");
    }
  } else if (r->want_run) {
    const char *event = r->next ? r->next : "started";
    int reset = r->resets > r->run.resets && r->run.attempt;
    r->next = NULL;
    r->crashes = 0;
    r->run.restarts = 0;
    launch(r, event, reset && !strcmp(event, "started") ? "reset" : NULL);
  }
  maybe_settled(r);
}

void
edge_robots_reconcile(edge_robots *all) {
  if (!all || all->a->closing)
    return;
  for (int i = 0; i < all->n; i++)
    reconcile(&all->v[i]);
}

edge_robot *
edge_robot_find(edge_robots *all, const char *name) {
  for (int i = 0; all && i < all->n; i++)
    if (!strcmp(all->v[i].dev->name, name))
      return &all->v[i];
  return NULL;
}

/* ------------------------------------------------- open, adopt, close */

/* What a previous agent left: a launch still running is watched; one it
 * spawned but did not record yet is found and said started. */
static void
adopt(edge_robot *r) {
  edge_robot_run found = {0};
  if (edge_store_robot_run_get(r->all->a->store, r->dev->name, &r->run))
    memset(&r->run, 0, sizeof r->run);
  if (r->run.state != EDGE_RUN_RUNNING) {
    if (!edge_robot_find_launch(r, r->run.attempt, &found))
      return;
    take_desired(r);
    r->run.attempt = found.attempt;
    r->run.pid = found.pid;
    r->run.start_ticks = found.start_ticks;
    memcpy(r->run.mode, found.mode, sizeof r->run.mode);
    r->run.state = EDGE_RUN_RUNNING;
    r->run.version = r->version;
    r->run.resets = r->resets;
    record(r, "started", -1, 0, "found running without its record");
  }
  r->live = 1;
  r->launched = uv_now(r->all->a->loop);
  uv_timer_start(&r->poll, on_poll, 0, POLL_MS);
  edge_logf("info", r->dev->name, "adopted launch %u (pid %d, mode %s)",
            r->run.attempt, (int)r->run.pid, r->run.mode);
}

static int
robot_init(edge_robots *all, edge_robot *r, const edge_device *dev) {
  edge_agent *a = all->a;
  r->all = all;
  r->dev = dev;
  snprintf(r->dir, sizeof r->dir, "%s/robots/%s", a->cfg.data, dev->name);
  if (mkdir(r->dir, 0700) < 0 && errno != EEXIST)
    return bus_error(-errno, "cannot make %s", r->dir);
  uv_timer_t *timers[] = {&r->poll, &r->grace, &r->retry};
  for (int i = 0; i < 3; i++) {
    uv_timer_init(a->loop, timers[i]);
    timers[i]->data = r;
  }
  adopt(r);
  return 0;
}

int
edge_robots_open(edge_agent *a, const edge_devices *devs, edge_robots **out) {
  int n = 0, rc = 0;
  char path[4200];
  *out = NULL;
  for (int i = 0; devs && i < devs->n; i++)
    n += devs->v[i].kind != EDGE_DEV_CAMERA;
  if (!n)
    return 0;
  edge_robots *all = calloc(1, sizeof *all);
  if (!all || !(all->v = calloc((size_t)n, sizeof *all->v))) {
    free(all);
    return -ENOMEM;
  }
  all->a = a;
  snprintf(path, sizeof path, "%s/robots", a->cfg.data);
  mkdir(path, 0700);
  for (int i = 0; !rc && i < devs->n; i++)
    if (devs->v[i].kind != EDGE_DEV_CAMERA)
      rc = robot_init(all, &all->v[all->n++], &devs->v[i]);
  *out = all;
  return rc;
}

void
edge_robots_close(edge_robots *all) {
  if (!all)
    return;
  for (int i = 0; i < all->n; i++) {
    edge_robot *r = &all->v[i];
    uv_handle_t *h[] = {(uv_handle_t *)&r->poll, (uv_handle_t *)&r->grace,
                        (uv_handle_t *)&r->retry};
    for (int k = 0; k < 3; k++)
      if (!uv_is_closing(h[k]))
        uv_close(h[k], handle_closed);
    drop_proc(r);
  }
}

void
edge_robots_free(edge_robots *all) {
  if (!all)
    return;
  free(all->socks);
  free(all->v);
  free(all);
}

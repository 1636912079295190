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
 *   STARTING) is committed before uv_spawn, and a pod whose run record
 *   has that attempt (or a later one) is never started again.
 * - Every phase report is queued in the same transaction as the run
 *   record it describes, so a crash never loses one or makes one twice.
 * - A pod runs as `lark-edge pod-shim` in its own session: the shim
 *   writes the exit status to the pod's directory, so a process that
 *   ends while no agent watches still reports how it ended; a stop
 *   signals the whole process group.
 * - A newer attempt replaces an older one only after the older process
 *   ended; the replaced attempt's end is not reported.
 * - A raw+netns pod's network (netns.c) is made after its STARTING record
 *   and removed once its end is recorded (or its start failed), before a
 *   next attempt is started; every report of it carries its localIP.
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
#include "podnet.h"
#include "proc.h"

extern char **environ;

enum { POLL_MS = 300, DRAIN_MS = 1000 };

/* ------------------------------------------------------------ helpers */

uint64_t
edge_proc_start_ticks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = 0;
  const char *p = strrchr(buf, ')');
  if (!p || p[1] != ' ')
    return 0;
  /* after ") ": state is field 3; starttime is field 22 */
  p += 2;
  if (*p == 'Z' || *p == 'X')
    return 0; /* a zombie has ended */
  for (int f = 3; f < 22 && p; f++)
    if ((p = strchr(p, ' ')))
      p++;
  return p ? strtoull(p, NULL, 10) : 0;
}

static edge_proc *
find_live(edge_agent *a, const char *pod) {
  for (edge_proc *p = a->procs; p; p = p->next)
    if (!p->ended && !strcmp(p->pod, pod))
      return p;
  return NULL;
}

int
edge_proc_send(edge_proc *p, const char *what, const char *type,
               const msgpack_sbuffer *sb) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.in.%s.%s.%s", p->a->cfg.node, what,
           p->pod);
  edge_msg m = {subject, type, sb->data, sb->size};
  return edge_send(p->a, &m);
}

/* A pod.report {pod, phase, attempt, exitCode?, signal?, localIP?,
 * reason?}. */
static void
pack_report(msgpack_sbuffer *sb, const char *pod, uint32_t attempt,
            const char *phase, int code, int sig, const char *ip,
            const char *reason) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  int n = 3 + (code >= 0) + (sig > 0) + (ip && *ip) + (reason && *reason);
  msgpack_pack_map(&pk, (uint32_t)n);
  msgpack_pack_str_with_body(&pk, "pod", 3);
  msgpack_pack_str_with_body(&pk, pod, strlen(pod));
  msgpack_pack_str_with_body(&pk, "phase", 5);
  msgpack_pack_str_with_body(&pk, phase, strlen(phase));
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint32(&pk, attempt);
  if (code >= 0) {
    msgpack_pack_str_with_body(&pk, "exitCode", 8);
    msgpack_pack_int32(&pk, code > 255 ? 255 : code);
  }
  if (sig > 0) {
    msgpack_pack_str_with_body(&pk, "signal", 6);
    msgpack_pack_uint32(&pk, (uint32_t)(sig > 64 ? 64 : sig));
  }
  if (ip && *ip) {
    msgpack_pack_str_with_body(&pk, "localIP", 7);
    msgpack_pack_str_with_body(&pk, ip, strlen(ip));
  }
  if (reason && *reason) {
    size_t l = strlen(reason);
    l = edge_utf8_cut(reason, l, 1000);
    msgpack_pack_str_with_body(&pk, "reason", 6);
    msgpack_pack_str_with_body(&pk, reason, l);
  }
}

/* Record the run and queue its report (with the pod's localIP ip, when
 * not NULL) in one transaction. */
static int
record(edge_agent *a, const char *pod, const edge_run *r, const char *phase,
       int code, int sig, const char *ip, const char *reason) {
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  snprintf(subject, sizeof subject, "lark.in.%s.sched.pod.%s", a->cfg.node,
           pod);
  if (phase)
    pack_report(&sb, pod, r->attempt, phase, code, sig, ip, reason);
  edge_msg m = {subject, "pod.report", sb.data, sb.size};
  int rc = edge_store_run_put(a->store, pod, r, phase ? &m : NULL);
  msgpack_sbuffer_destroy(&sb);
  if (rc)
    edge_logf("error", subject, "cannot record %s: %s", phase ? phase : "run",
              bus_last_error());
  else {
    if (phase)
      edge_logf("info", subject, "attempt %u %s%s%s", r->attempt, phase,
                reason && *reason ? ": " : "", reason ? reason : "");
    edge_sender_wake(a);
  }
  return rc;
}

/* ------------------------------------------------------ process ends */

static void
maybe_free(edge_proc *p) {
  if (p->handles > 0 || !p->finishing)
    return;
  edge_agent *a = p->a;
  for (edge_proc **pp = &a->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  msgpack_sbuffer_destroy(&p->lines);
  free(p);
}

void
edge_proc_unref(edge_proc *p) {
  p->handles--;
  maybe_free(p);
}

void
edge_proc_handle_closed(uv_handle_t *h) {
  edge_proc_unref(h->data);
}

static void
close_handle(uv_handle_t *h, int *has) {
  if (!*has)
    return;
  *has = 0;
  uv_close(h, edge_proc_handle_closed);
}

/* Close everything; the proc is freed by the last close callback. With
 * nothing open it is freed here. */
static void
finish(edge_proc *p) {
  if (p->finishing)
    return;
  p->finishing = 1;
  edge_proc_flush(p);
  edge_stream_close(&p->out);
  edge_stream_close(&p->err);
  edge_sock_close(p);
  close_handle((uv_handle_t *)&p->proc, &p->has_proc);
  close_handle((uv_handle_t *)&p->poll, &p->has_poll);
  close_handle((uv_handle_t *)&p->grace, &p->has_grace);
  maybe_free(p);
}

static void reconcile_pod(edge_agent *a, const char *pod);

static void
on_drained(uv_timer_t *t) {
  finish(t->data);
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
  if (why)
    snprintf(reason, sizeof reason, "%s", why);
  else if (sig)
    snprintf(reason, sizeof reason, "killed by signal %d", sig);
  else if (code)
    snprintf(reason, sizeof reason, "exit status %d", code);
  record(p->a, p->pod, &r, p->silent ? NULL : phase, sig ? -1 : code, sig,
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
  reconcile_pod(p->a, p->pod);
}

/* What the shim wrote: "<code> <signal>", then the reason a step before
 * the entrypoint failed, if one did (why, cap bytes; "" else). 0 when
 * found. */
static int
read_status(const edge_proc *p, int *code, int *sig, char *why, size_t cap) {
  char path[4300];
  snprintf(path, sizeof path, "%s/exit-%u", p->dir, p->attempt);
  why[0] = 0;
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  int n = fscanf(f, "%d %d", code, sig);
  if (n == 2 && fgetc(f) == '\n' && fgets(why, (int)cap, f)) {
    why[strcspn(why, "\n")] = 0;
    edge_utf8_fix(why, strlen(why));
  }
  fclose(f);
  return n == 2 ? 0 : -1;
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

static void
stop_proc(edge_proc *p, int report, int silent) {
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

/* ------------------------------------------------------------ starts */

typedef struct envb {
  char **v;
  size_t n, cap;
} envb;

static void
env_set(envb *e, const char *name, size_t nlen, const char *val, size_t vlen) {
  char *kv = malloc(nlen + vlen + 2);
  if (!kv)
    return;
  memcpy(kv, name, nlen);
  kv[nlen] = '=';
  memcpy(kv + nlen + 1, val, vlen);
  kv[nlen + 1 + vlen] = 0;
  for (size_t i = 0; i < e->n; i++)
    if (!strncmp(e->v[i], kv, nlen + 1)) {
      free(e->v[i]);
      e->v[i] = kv;
      return;
    }
  if (e->n + 2 > e->cap) {
    size_t cap = e->cap ? e->cap * 2 : 64;
    char **g = realloc(e->v, cap * sizeof *g);
    if (!g) {
      free(kv);
      return;
    }
    e->v = g;
    e->cap = cap;
  }
  e->v[e->n++] = kv;
  e->v[e->n] = NULL;
}

static void
env_sets(envb *e, const char *name, const char *val) {
  env_set(e, name, strlen(name), val, strlen(val));
}

static void
env_free(envb *e) {
  for (size_t i = 0; i < e->n; i++)
    free(e->v[i]);
  free(e->v);
}

/* A scalar as text into buf. */
static const char *
scalar(const msgpack_object *o, char *buf, size_t cap, size_t *len) {
  switch (o->type) {
  case MSGPACK_OBJECT_STR:
    *len = o->via.str.size;
    return o->via.str.ptr;
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    snprintf(buf, cap, "%llu", (unsigned long long)o->via.u64);
    break;
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    snprintf(buf, cap, "%lld", (long long)o->via.i64);
    break;
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    snprintf(buf, cap, "%g", o->via.f64);
    break;
  case MSGPACK_OBJECT_BOOLEAN:
    snprintf(buf, cap, "%s", o->via.boolean ? "true" : "false");
    break;
  default:
    buf[0] = 0;
  }
  *len = strlen(buf);
  return buf;
}

static int
safe_name(const char *s, size_t n) {
  if (!n || memchr(s, '=', n) || memchr(s, 0, n))
    return 0;
  return 1;
}

/* The platform's variables about devices the pod asked for. */
static void
env_devices(envb *e, const msgpack_object *dev, const char *node) {
  if (!dev || dev->type != MSGPACK_OBJECT_MAP || !dev->via.map.size)
    return;
  char list[2048] = "", num[32];
  size_t used = 0;
  uint64_t total = 0;
  for (uint32_t i = 0; i < dev->via.map.size; i++) {
    const msgpack_object_kv *kv = &dev->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR ||
        kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER)
      continue;
    total += kv->val.via.u64;
    int n = snprintf(list + used, sizeof list - used, "%s%.*s=%llu",
                     used ? "," : "", (int)kv->key.via.str.size,
                     kv->key.via.str.ptr, (unsigned long long)kv->val.via.u64);
    if (n > 0 && used + (size_t)n < sizeof list)
      used += (size_t)n;
  }
  env_sets(e, "RLINF_EMBODIED_DEVICES", list);
  snprintf(num, sizeof num, "%llu", (unsigned long long)total);
  env_sets(e, "RLINF_EMBODIED_DEVICE_COUNT", num);
  env_sets(e, "RLINF_EMBODIED_NODE", node);
}

/* Environment: the agent's (without its own LARK_ and NATS settings),
 * raw.environment, the message's env map, then what the node knows. */
static void
build_env(edge_proc *p, const msgpack_object *d, envb *e) {
  char buf[64];
  size_t len;
  for (char **v = environ; v && *v; v++)
    if (strncmp(*v, "LARK_", 5) && strncmp(*v, "NATS_", 5)) {
      const char *eq = strchr(*v, '=');
      if (eq)
        env_set(e, *v, (size_t)(eq - *v), eq + 1, strlen(eq + 1));
    }
  const msgpack_object *ev = bus_obj_get(bus_obj_get(d, "raw"), "environment");
  for (uint32_t i = 0;
       ev && ev->type == MSGPACK_OBJECT_ARRAY && i < ev->via.array.size; i++) {
    const msgpack_object *n = bus_obj_get(&ev->via.array.ptr[i], "name");
    const msgpack_object *v = bus_obj_get(&ev->via.array.ptr[i], "value");
    if (!n || n->type != MSGPACK_OBJECT_STR ||
        !safe_name(n->via.str.ptr, n->via.str.size))
      continue;
    const char *val = v ? scalar(v, buf, sizeof buf, &len) : "";
    env_set(e, n->via.str.ptr, n->via.str.size, val, v ? len : 0);
  }
  const msgpack_object *m = bus_obj_get(d, "env");
  for (uint32_t i = 0;
       m && m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size; i++) {
    const msgpack_object_kv *kv = &m->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR ||
        !safe_name(kv->key.via.str.ptr, kv->key.via.str.size))
      continue;
    const char *val = scalar(&kv->val, buf, sizeof buf, &len);
    if (!memchr(val, 0, len))
      env_set(e, kv->key.via.str.ptr, kv->key.via.str.size, val, len);
  }
  char gpus[256] = "";
  size_t used = 0;
  const msgpack_object *g = bus_obj_get(d, "gpus");
  for (uint32_t i = 0;
       g && g->type == MSGPACK_OBJECT_ARRAY && i < g->via.array.size; i++)
    if (g->via.array.ptr[i].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
        used + 8 < sizeof gpus)
      used += (size_t)snprintf(gpus + used, sizeof gpus - used, "%s%llu",
                               used ? "," : "",
                               (unsigned long long)g->via.array.ptr[i].via.u64);
  env_sets(e, "CUDA_VISIBLE_DEVICES", gpus);
  env_devices(e, bus_obj_get(d, "devices"), p->a->cfg.node);
  env_sets(e, "LARK_POD", p->pod);
  env_sets(e, "LARK_NODE", p->a->cfg.node);
  if (p->job[0])
    env_sets(e, "LARK_JOB", p->job);
  snprintf(buf, sizeof buf, "%u", p->attempt);
  env_sets(e, "LARK_ATTEMPT", buf);
  env_sets(e, "LARK_SOCKET", p->sock_path);
}

static edge_proc *
proc_new(edge_agent *a, const char *pod, const char *job, uint32_t attempt) {
  edge_proc *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->a = a;
  snprintf(p->pod, sizeof p->pod, "%s", pod);
  snprintf(p->job, sizeof p->job, "%s", job);
  snprintf(p->dir, sizeof p->dir, "%s/%s", a->pods_dir, pod);
  p->attempt = attempt;
  msgpack_sbuffer_init(&p->lines);
  p->next = a->procs;
  a->procs = p;
  return p;
}

static int
make_fifo(const edge_proc *p, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%u.%s", p->dir, p->attempt, name);
  unlink(path);
  if (mkfifo(path, 0600) < 0)
    return bus_error(-errno, "mkfifo %s", path);
  return 0;
}

/* The shim's command line, every string owned. */
typedef struct argb {
  char **v;
  size_t n, cap;
  int failed;
} argb;

static void
arg_add(argb *b, const char *s, size_t len) {
  if (b->n + 2 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 32;
    char **g = realloc(b->v, cap * sizeof *g);
    if (!g) {
      b->failed = 1;
      return;
    }
    b->v = g;
    b->cap = cap;
  }
  if (!(b->v[b->n] = strndup(s, len)))
    b->failed = 1;
  else
    b->v[++b->n] = NULL;
}

static void
arg_str(argb *b, const char *s) {
  arg_add(b, s, strlen(s));
}

static void
arg_obj(argb *b, const char *opt, const msgpack_object *o) {
  if (!o || o->type != MSGPACK_OBJECT_STR || !o->via.str.size)
    return;
  if (opt)
    arg_str(b, opt);
  arg_add(b, o->via.str.ptr, o->via.str.size);
}

static void
arg_free(argb *b) {
  for (size_t i = 0; i < b->n; i++)
    free(b->v[i]);
  free(b->v);
}

/* `lark-edge pod-shim STATUS [options] -- ARGV`: the entrypoint, or
 * /bin/sh -c runScript when entry is NULL (shim.c). */
static int
shim_argv(const edge_proc *p, const msgpack_object *d,
          const msgpack_object *entry, const char *status, const char *netns,
          argb *b) {
  const edge_config *c = &p->a->cfg;
  const msgpack_object *art = bus_obj_get(bus_obj_get(d, "raw"), "artifact");
  char num[32];
  arg_str(b, p->a->self_exe);
  arg_str(b, "pod-shim");
  arg_str(b, status);
  if (p->netns) { /* the file's path: the shim's environment is the pod's */
    arg_str(b, "--netns");
    arg_str(b, netns);
  }
  if (art && art->type == MSGPACK_OBJECT_STR && art->via.str.size) {
    arg_obj(b, "--artifact", art);
    if (c->artifact_ca && *c->artifact_ca) {
      arg_str(b, "--ca");
      arg_str(b, c->artifact_ca);
    }
    snprintf(num, sizeof num, "%llu", (unsigned long long)c->artifact_max);
    arg_str(b, "--max");
    arg_str(b, num);
    snprintf(num, sizeof num, "%d", c->artifact_timeout_s);
    arg_str(b, "--timeout");
    arg_str(b, num);
  }
  arg_obj(b, "--prepare", bus_obj_get(d, "prepareScript"));
  arg_str(b, "--");
  if (entry)
    for (uint32_t i = 0; i < entry->via.array.size; i++)
      arg_add(b, entry->via.array.ptr[i].via.str.ptr,
              entry->via.array.ptr[i].via.str.size);
  else {
    arg_str(b, "/bin/sh");
    arg_str(b, "-c");
    arg_obj(b, NULL, bus_obj_get(d, "runScript"));
  }
  return b->failed ? -ENOMEM : 0;
}

/* Spawn the shim (in namespace file netns when p->netns); fills p->pid
 * and p->ticks. */
static int
spawn(edge_proc *p, const msgpack_object *d, const msgpack_object *entry,
      const char *cwd, char *netns) {
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
  argb argv = {0};
  envb e = {0};
  if (wfd[0] < 0 || wfd[1] < 0)
    rc = bus_error(-errno, "open the pod's output");
  else if ((rc = shim_argv(p, d, entry, status, netns, &argv)))
    rc = bus_error(rc, "out of memory");
  if (rc)
    goto out;
  build_env(p, d, &e);
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
  env_free(&e);
out:
  arg_free(&argv);
  for (int i = 0; i < 2; i++)
    if (wfd[i] >= 0)
      close(wfd[i]);
  return rc;
}

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
nonempty_str(const msgpack_object *o) {
  return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size &&
         !memchr(o->via.str.ptr, 0, o->via.str.size);
}

/* Why this desired state cannot run here, or NULL; *entry: its
 * entrypoint, or NULL when its runScript runs instead. Loop thread only
 * (the reason may be in a static buffer). */
static const char *
unrunnable(const edge_agent *a, const msgpack_object *d,
           const msgpack_object **entry) {
  char rt[32] = "raw";
  bus_obj_str(d, "runtime", rt, sizeof rt);
  if (strcmp(rt, "raw") && strcmp(rt, "raw+netns"))
    return "unknown runtime";
  if (strcmp(rt, "raw") && !edge_runtime_offered(&a->cfg, rt))
    return "runtime raw+netns is not offered by this node (no --pod-cidr)";
  const msgpack_object *art = bus_obj_get(bus_obj_get(d, "raw"), "artifact");
  lark_artifact parsed;
  static char bad[400];
  char r[200];
  if (art && (art->type != MSGPACK_OBJECT_STR ||
              (art->via.str.size &&
               lark_artifact_parse(art->via.str.ptr, art->via.str.size, &parsed,
                                   r, sizeof r)))) {
    snprintf(bad, sizeof bad, "artifact: %s",
             art->type == MSGPACK_OBJECT_STR ? r : "must be a string");
    return bad;
  }
  *entry = bus_obj_get(bus_obj_get(d, "raw"), "entrypoint");
  if (!*entry || (*entry)->type != MSGPACK_OBJECT_ARRAY ||
      !(*entry)->via.array.size) {
    *entry = NULL; /* runScript instead */
    return nonempty_str(bus_obj_get(d, "runScript"))
               ? NULL
               : "no entrypoint and no runScript";
  }
  for (uint32_t i = 0; i < (*entry)->via.array.size; i++) {
    const msgpack_object *s = &(*entry)->via.array.ptr[i];
    if (s->type != MSGPACK_OBJECT_STR ||
        memchr(s->via.str.ptr, 0, s->via.str.size))
      return "entrypoint arguments must be strings without NUL";
  }
  return NULL;
}

static void
start(edge_agent *a, const char *pod, const msgpack_object *d,
      uint32_t attempt) {
  char job[EDGE_NAME_SZ] = "", cwd[4200] = "", why[512] = "", rt[32] = "raw";
  char netns[4200] = "";
  const msgpack_object *entry = NULL;
  edge_run r = {.attempt = attempt, .state = EDGE_RUN_STARTING};
  bus_obj_str(d, "job", job, sizeof job);
  bus_obj_str(d, "runtime", rt, sizeof rt);
  /* committed before anything runs: never twice */
  if (record(a, pod, &r, NULL, 0, 0, NULL, NULL))
    return;
  edge_proc *p = proc_new(a, pod, job, attempt);
  if (!p)
    return;
  const char *bad = unrunnable(a, d, &entry);
  int rc = bad ? BUS_EINVAL : 0;
  edge_net net;
  if (!bad && !strcmp(rt, "raw+netns")) {
    if ((rc = edge_net_setup(a, pod, &net)))
      snprintf(why, sizeof why, "cannot set up the pod's network: %s",
               bus_last_error());
    else {
      p->netns = 1;
      snprintf(p->ip, sizeof p->ip, "%s", net.pod_ip);
      snprintf(netns, sizeof netns, "%s/%s", podnet_rundir(), net.ns);
    }
  }
  if (!bad && !rc) {
    bus_obj_str(d, "workingDir", cwd, sizeof cwd);
    if ((rc = mkdirs(p->dir)) || (cwd[0] && (rc = mkdirs(cwd))))
      snprintf(why, sizeof why, "cannot make %.400s: %s", cwd[0] ? cwd : p->dir,
               strerror(-rc));
    else if ((rc = edge_sock_listen(p)) ||
             (rc = spawn(p, d, entry, cwd[0] ? cwd : p->dir, netns)))
      snprintf(why, sizeof why, "cannot start: %s", bus_last_error());
  } else if (bad)
    snprintf(why, sizeof why, "%s", bad);
  if (rc) {
    p->ended = 1;
    r.state = EDGE_RUN_ENDED;
    record(a, pod, &r, "Failed", -1, 0, NULL, why);
    if (p->netns)
      edge_net_teardown(a, pod);
    finish(p);
    return;
  }
  atomic_fetch_add(&a->npods, 1);
  r.state = EDGE_RUN_RUNNING;
  r.pid = p->pid;
  r.start_ticks = p->ticks;
  record(a, pod, &r, "Running", -1, 0, p->ip, NULL);
}

/* --------------------------------------------------------- reconcile */

/*
 * A Deleted pod that no longer runs is forgotten: its run and desired
 * state leave the store, and pod.forgotten tells the scheduler, which
 * then purges the pod's subject from this node's stream (so the stream
 * holds only pods that still matter). Said again if the tombstone comes
 * again before the purge.
 */
static void
forget(edge_agent *a, const char *pod, uint64_t version) {
  char subject[BUS_SUBJECT_MAX];
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, version ? 2 : 1);
  msgpack_pack_str_with_body(&pk, "pod", 3);
  msgpack_pack_str_with_body(&pk, pod, strlen(pod));
  if (version) {
    msgpack_pack_str_with_body(&pk, "version", 7);
    msgpack_pack_uint64(&pk, version);
  }
  snprintf(subject, sizeof subject, "lark.in.%s.sched.pod.%s", a->cfg.node,
           pod);
  edge_msg m = {subject, "pod.forgotten", sb.data, sb.size};
  int rc = edge_store_forget(a->store, pod, &m);
  msgpack_sbuffer_destroy(&sb);
  if (rc) {
    edge_logf("error", subject, "cannot forget: %s", bus_last_error());
    return;
  }
  edge_logf("info", subject, "deleted and forgotten");
  edge_sender_wake(a);
}

static void
reconcile(edge_agent *a, const char *pod, const void *data, size_t len) {
  msgpack_zone z;
  msgpack_object d;
  char want[16] = "";
  msgpack_zone_init(&z, 2048);
  if (msgpack_unpack(data, len, NULL, &z, &d) < 0 ||
      d.type != MSGPACK_OBJECT_MAP) {
    msgpack_zone_destroy(&z);
    return;
  }
  uint32_t attempt = (uint32_t)bus_obj_int(&d, "attempt", 0);
  bus_obj_str(&d, "desired", want, sizeof want);
  edge_proc *p = find_live(a, pod);
  edge_run r;
  int have = edge_store_run_get(a->store, pod, &r) == 0;
  if (!strcmp(want, "Running")) {
    if (p && p->attempt < attempt)
      stop_proc(p, 0, 1); /* replaced: start when it ended */
    else if (!p && !(have && r.attempt >= attempt))
      start(a, pod, &d, attempt);
  } else if (p) {
    stop_proc(p, p->attempt == attempt, p->attempt != attempt);
  } else if (!strcmp(want, "Deleted")) {
    if (edge_net_teardown(a, pod) == 0) /* a network kept is tried later */
      forget(a, pod, (uint64_t)bus_obj_int(&d, "version", 0));
  }
  msgpack_zone_destroy(&z);
}

static void
reconcile_cb(const char *pod, const void *data, size_t len, void *ud) {
  reconcile(ud, pod, data, len);
}

static void
reconcile_pod(edge_agent *a, const char *pod) {
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

/* ------------------------------------------------------------- adopt */

static void
adopt_one(const char *pod, const edge_run *r, void *ud) {
  edge_agent *a = ud;
  edge_run e = *r;
  e.state = EDGE_RUN_ENDED;
  if (r->state == EDGE_RUN_STARTING) {
    record(a, pod, &e, "Failed", -1, 0, NULL, "lost on agent restart");
    return; /* its network, if any, goes with the sweep */
  }
  if (r->state != EDGE_RUN_RUNNING)
    return;
  edge_proc *p = proc_new(a, pod, "", r->attempt);
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
edge_pods_adopt(edge_agent *a) {
  edge_store_run_each(a->store, adopt_one, a);
}

static void
sweep_one(const char *pod, const edge_net *n, void *ud) {
  edge_agent *a = ud;
  (void)n;
  if (!find_live(a, pod))
    edge_net_teardown(a, pod);
}

void
edge_pods_sweep_nets(edge_agent *a) {
  edge_store_net_each(a->store, sweep_one, a);
}

int
edge_runtime_offered(const edge_config *cfg, const char *rt) {
  size_t n = strlen(rt);
  for (const char *s = cfg->runtimes; s && *s;) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && !strncmp(s, rt, n))
      return 1;
    s = end ? end + 1 : s + len;
  }
  return 0;
}

void
edge_pods_flush_logs(edge_agent *a) {
  for (edge_proc *p = a->procs; p; p = p->next)
    edge_proc_flush(p);
}

void
edge_pods_close(edge_agent *a) {
  a->closing = 1;
  edge_proc *next;
  for (edge_proc *p = a->procs; p; p = next) {
    next = p->next;
    p->ended = 1;
    finish(p);
  }
}

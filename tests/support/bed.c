/*
 * bed.c - the test bed of service tests (see bed.h).
 */
#include "bed.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "deploy.h"
#include "events.h"
#include "files.h"
#include "proc.h"
#include "replay.h"
#include "secure.h"
#include "service.h"
#include "stream.h"
#include "wait.h"

void
lt_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
          const char *tag, int dedupe_ms) {
  cr_assert_eq(lt_broker_up(srv, conn, dedupe_ms), 0, "%s", bus_last_error());
  lt_tmpdir(dir, cap, tag);
}

pid_t
lt_sched_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
                const char *tag) {
  lt_bed_up(srv, conn, dir, cap, tag, 1000);
  return lt_must_start_named("lark-scheduler", srv->url, dir, "scheduler");
}

static void
kill_all(pid_t *pids, int n) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      lt_kill(pids[i], SIGTERM);
      pids[i] = 0;
    }
}

void
lt_bed_down(lt_natsd *srv, bus_conn *conn, const char *dir, pid_t *pids,
            int n) {
  kill_all(pids, n);
  bus_conn_close(conn);
  lt_natsd_stop(srv);
  if (!getenv("LARK_KEEP"))
    lt_rmtree(dir);
}

void
lt_node_bed_down(lt_natsd *srv, bus_conn *conn, bus_consumer *reports,
                 const char *dir, pid_t *pids, int n) {
  kill_all(pids, n);
  bus_consumer_close(reports);
  lt_bed_down(srv, conn, dir, NULL, 0);
}

pid_t
lt_must_start(const char *bin_name, const char *url, const char *dir,
              const char *data, const char *log, const char *const extra[]) {
  char d[512], l[512];
  snprintf(d, sizeof d, "%s/%s", dir, data);
  snprintf(l, sizeof l, "%s/%s", dir, log);
  pid_t pid = lt_start_service(bin_name, url, d, l, extra);
  cr_assert(pid > 0, "%s did not start", bin_name);
  return pid;
}

pid_t
lt_must_start_named(const char *bin_name, const char *url, const char *dir,
                    const char *name) {
  pid_t pid = lt_start_named_service(bin_name, url, dir, name);
  cr_assert(pid > 0, "%s did not start", bin_name);
  return pid;
}

static void
creds(const char *dir, const char *name, lark_role role) {
  cr_assert_eq(lark_creds_ensure(dir, name, role, NULL, NULL), 0, "%s",
               lark_cfg_error());
}

void
lt_secure_bed_up(lt_natsd *srv, bus_conn **conn, const char *dir,
                 const char *const names[], const lark_role roles[]) {
  for (int i = 0; names[i]; i++)
    creds(dir, names[i], roles[i]);
  cr_assert_eq(lt_secure_natsd_start(srv, dir), 0, "%s", lark_cfg_error());
  cr_assert_eq(lt_connect_as(srv->url, dir, "admin", 0, conn), 0, "%s",
               bus_last_error());
  cr_assert_eq(lt_streams(*conn, 2000), 0, "%s", bus_last_error());
}

pid_t
lt_edge_bed_up(lt_natsd *srv, bus_conn **conn, const char *dir,
               const char *const nodes[]) {
  static const char *const names[] = {"admin", "lark-scheduler", NULL};
  static const lark_role roles[] = {LARK_ROLE_ADMIN, LARK_ROLE_SERVICE};
  char cr[512];
  for (int i = 0; nodes[i]; i++)
    creds(dir, nodes[i], LARK_ROLE_NODE);
  lt_secure_bed_up(srv, conn, dir, names, roles);
  lark_creds_path(dir, "lark-scheduler", cr, sizeof cr);
  const char *extra[] = {"--creds", cr, NULL};
  return lt_must_start("lark-scheduler", srv->url, dir, "scheduler",
                       "scheduler.log", extra);
}

void
lt_pod_report_take(lt_pod_reports *r, const bus_event *ev) {
  int cap = (int)(sizeof r->seen / sizeof r->seen[0]);
  if (strcmp(ev->type, "pod.report") || r->n == cap)
    return;
  lt_pod_report *p = &r->seen[r->n++];
  memset(p, 0, sizeof *p);
  bus_obj_str(&ev->data, "pod", p->pod, sizeof p->pod);
  bus_obj_str(&ev->data, "phase", p->phase, sizeof p->phase);
  bus_obj_str(&ev->data, "localIP", p->ip, sizeof p->ip);
  bus_obj_str(&ev->data, "reason", p->reason, sizeof p->reason);
  p->attempt = (uint32_t)bus_obj_int(&ev->data, "attempt", 0);
}

static const lt_pod_report *
find_report(const lt_pod_reports *r, const char *pod, const char *phase) {
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->seen[i].pod, pod) && !strcmp(r->seen[i].phase, phase))
      return &r->seen[i];
  return NULL;
}

const lt_pod_report *
lt_pod_report_wait(lt_pod_reports *r, void (*drain)(int timeout_ms),
                   const char *pod, const char *phase, int seconds) {
  const lt_pod_report *p = NULL;
  for (int w = 0; w < seconds * 4 && !(p = find_report(r, pod, phase)); w++)
    drain(250);
  if (!p)
    cr_log_error("no %s report for %s", phase, pod);
  return p;
}

static void
take_report(const bus_event *ev, void *r) {
  lt_pod_report_take(r, ev);
}

void
lt_pod_reports_read(lt_pod_reports *r, bus_consumer *k, int timeout_ms) {
  lt_drain(k, 64, timeout_ms, take_report, r);
}

const lt_pod_report *
lt_pod_report_await(lt_pod_reports *r, bus_consumer *k, const char *pod,
                    const char *phase, int seconds) {
  const lt_pod_report *p = NULL;
  for (int w = 0; w < seconds * 4 && !(p = find_report(r, pod, phase)); w++)
    lt_pod_reports_read(r, k, 250);
  if (!p)
    cr_log_error("no %s report for %s", phase, pod);
  return p;
}

const char *
lt_pod_phases(const lt_pod_reports *r, const char *pod, char *out, size_t cap) {
  out[0] = 0;
  for (int i = 0; i < r->n; i++)
    if (!strcmp(r->seen[i].pod, pod)) {
      size_t n = strlen(out);
      snprintf(out + n, cap - n, "%s%s", n ? " " : "", r->seen[i].phase);
    }
  return out;
}

pid_t
lt_must_start_edge(const char *url, const char *dir, const char *node,
                   int with_creds, const char *const extra[]) {
  char cr[512], log[300];
  const char *argv[32];
  int n = 0;
  if (with_creds) {
    lark_creds_path(dir, node, cr, sizeof cr);
    argv[n++] = "--creds";
    argv[n++] = cr;
  }
  /* a short pull: tests cut and restart brokers, and wait for the node */
  const char *fixed[] = {"--node",  node, "--heartbeat",  "0.5",
                         "--grace", "1",  "--slice-wait", "1"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    argv[n++] = fixed[i];
  for (int i = 0; extra && extra[i]; i++) {
    cr_assert_lt(n, 31, "too many arguments for lark-edge");
    argv[n++] = extra[i];
  }
  argv[n] = NULL;
  snprintf(log, sizeof log, "%s.log", node);
  return lt_must_start("lark-edge", url, dir, node, log, argv);
}

void
lt_node_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
               const char *tag, const char *node, bus_consumer **reports) {
  char filter[BUS_SUBJECT_MAX];
  lt_bed_up(srv, conn, dir, cap, tag, 2000);
  cr_assert_eq(bus_node_stream_ensure(*conn, node, NULL), 0, "%s",
               bus_last_error());
  snprintf(filter, sizeof filter, "lark.in.%s.>", node);
  bus_consumer_opts o;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_INGRESS";
  o.durable = "test";
  o.filter = filter;
  cr_assert_eq(bus_consumer_open(*conn, &o, reports), 0, "%s",
               bus_last_error());
}

void
lt_drain(bus_consumer *k, size_t max, int timeout_ms,
         void (*fn)(const bus_event *ev, void *ud), void *ud) {
  bus_batch *b = NULL;
  cr_assert_eq(bus_batch_new(&b), 0);
  cr_assert_eq(bus_consumer_fetch(k, max, timeout_ms, b), 0, "%s",
               bus_last_error());
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const bus_event *ev = bus_batch_event(b, i);
    if (ev)
      fn(ev, ud);
  }
  bus_batch_ack(b);
  bus_batch_free(b);
}

void
lt_pod_desire(bus_conn *conn, const char *node, const char *pod,
              uint32_t attempt, const char *desired, const char *runtime,
              const char *const argv[], const char *const bound[]) {
  bus_str args[16], held[16];
  uint32_t na = 0, nb = 0;
  for (; argv && argv[na]; na++) {
    cr_assert_lt(na, 16, "too long an entrypoint");
    args[na] = bus_str_of(argv[na]);
  }
  for (; bound && bound[nb]; nb++) {
    cr_assert_lt(nb, 16, "too many bound devices");
    held[nb] = bus_str_of(bound[nb]);
  }
  int run = !strcmp(desired, "Running");
  bus_ev_pod_desired d = {
      .pod = bus_str_of(pod),
      .job = BUS_STR("j"),
      .task = BUS_STR("j-a"),
      .desired = bus_str_of(desired),
      .has_attempt = true,
      .attempt = attempt,
      .has_runtime = true,
      .runtime = bus_str_of(runtime),
      .has_raw = run,
      .raw = {.has_entrypoint = true, .entrypoint = {args, na}},
      .has_boundDevices = run && nb > 0,
      .boundDevices = {held, nb},
  };
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_pod_desired_pack(&sb, &d), 0, "%s", bus_last_error());
  char id[33], subject[BUS_SUBJECT_MAX];
  bus_event ev;
  lt_event(&ev, id, "pod.desired", "lark-scheduler", bus_wall_ns(), 0, &sb);
  cr_assert_eq(bus_subj_pod_desired(subject, sizeof subject, node, pod), 0);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

void
lt_pod_running(bus_conn *conn, const char *node, const char *pod,
               const char *script, const char *const *bound) {
  const char *const argv[] = {"sh", "-c", script, NULL};
  lt_pod_desire(conn, node, pod, 0, "Running", "raw", argv, bound);
}

json_t *
lt_pod_result(const char *path, int seconds) {
  for (int i = 0; i < seconds * 10 && access(path, F_OK); i++)
    lt_sleep_ms(100);
  json_error_t e;
  json_t *r = json_load_file(path, 0, &e);
  cr_assert_not_null(r, "%s: %s", path, e.text);
  const char *fatal = json_string_value(json_object_get(r, "fatal"));
  cr_assert_null(fatal, "%s: %s", path, fatal);
  return r;
}

void
lt_device_field(bus_conn *conn, const char *node, const char *name,
                const char *key, char *out, size_t cap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r;
  out[0] = 0;
  if (!lt_command(conn, "device", "get",
                  json_pack("{s:s, s:s}", "node", node, "name", name), &z,
                  &r)) {
    const msgpack_object *item = bus_obj_get(bus_obj_get(&r, "result"), "item");
    lt_obj_text(item ? bus_obj_get(item, key) : NULL, out, cap);
  }
  msgpack_zone_destroy(&z);
}

int
lt_device_becomes(bus_conn *conn, const char *node, const char *name,
                  const char *key, const char *want, int seconds) {
  char got[256] = "";
  for (int i = 0; i < seconds * 10; i++, lt_sleep_ms(100)) {
    lt_device_field(conn, node, name, key, got, sizeof got);
    if (!strcmp(got, want))
      return 1;
  }
  cr_log_error("%s/%s %s is '%s', not '%s'", node, name, key, got, want);
  return 0;
}

void
lt_platform_ready(lt_platform *p, const char *tag, const char *const extra[]) {
  lt_platform_init(p, tag);
  unsetenv("LARK_URL");
  unsetenv("LARK_CREDS");
  unsetenv("LARK_USER");
  int rc = lt_platform_start(p, extra, 60);
  cr_assert_gt(p->pid, 0);
  cr_assert_eq(rc, 0, "larkctl up is not ready (see %s)", p->up_log);
}

const char *
lt_source_dir(void) {
  const char *s = getenv("LARK_SOURCE_DIR");
  return s ? s : ".";
}

void
lt_example_ready(lt_platform *p, const char *tag, const char *const extra[]) {
  setenv("LARKBUS_HOME", lt_source_dir(), 1);
  lt_platform_ready(p, tag, extra);
}

void
lt_platform_apply(const lt_platform *p, const char *path, int seconds) {
  static char out[1 << 14], err[1 << 14];
  int rc = -1;
  for (int i = 0;
       i < seconds * 10 && (rc = lt_larkctl(p, out, sizeof out, err, sizeof err,
                                            "apply -f %s", path));
       i++)
    lt_sleep_ms(100);
  cr_assert_eq(rc, 0, "larkctl apply -f %s: %s%s", path, out, err);
}

void
lt_platform_sh_job(const lt_platform *p, const char *name, const char *script,
                   int retries) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.yaml", p->dir, name);
  cr_assert_eq(lt_write_file(path,
                             "apiVersion: rlinf.io/v1alpha1\nkind: Job\n"
                             "metadata:\n  name: %s\nspec:\n  tasks:\n"
                             "  - name: main\n    role: Actor\n"
                             "    replicas: 1\n    maxRetries: %d\n"
                             "    raw:\n"
                             "      entrypoint: [/bin/sh, -c, '%s']\n",
                             name, retries, script),
               0);
  lt_platform_apply(p, path, 20);
}

void
lt_platform_end(lt_platform *p) {
  lt_platform_stop(p);
  lt_platform_remove(p);
}

void
lt_fixture_up(lt_fixture *f) {
  memset(f, 0, sizeof *f);
  cr_assert_eq(lt_broker_up(&f->s, &f->c, 2000), 0, "%s", bus_last_error());
  cr_assert_eq(bus_batch_new(&f->b), 0);
  lt_pack_text(&f->data, "hello");
}

void
lt_fixture_down(lt_fixture *f) {
  bus_batch_free(f->b);
  bus_conn_close(f->c);
  lt_natsd_stop(&f->s);
  msgpack_sbuffer_destroy(&f->data);
}

void
lt_expect_replay(bus_conn *c, const char *view, int tries, int same_seq) {
  bus_status live;
  lark_replay_result res;
  const lark_view_entry *ve = lark_view_find(view);
  cr_assert_not_null(ve, "no view %s", view);
  int rc = -1;
  for (int i = 0; i < tries && rc; i++) {
    if (i)
      lt_sleep_ms(200);
    rc = lark_replay_verify(c, ve, NULL, &live, &res);
  }
  cr_expect_eq(rc, 0, "live %s differs from its replay: %s", view,
               bus_last_error());
  if (same_seq)
    cr_expect_eq(res.seq, live.seq);
}

bus_view *
lt_must_open_view(const bus_view_def *d, const char *dir, int effects) {
  bus_view_opts o;
  bus_view *v = NULL;
  bus_view_opts_init(&o);
  o.dir = dir;
  o.effects = effects;
  cr_assert_eq(bus_view_open(&v, d, &o), 0, "open %s: %s", dir,
               bus_last_error());
  return v;
}

const char *
lt_sub_of(const char *kind) {
  return strcmp(kind, "job") ? NULL : "job";
}

int
lt_field_becomes(bus_conn *c, const char *kind, const char *sub,
                 const char *name, const char *key, const char *want,
                 int seconds) {
  char got[512] = "";
  if (lt_wait_field(c, kind, sub, name, key, want, seconds, got, sizeof got))
    return 1;
  cr_log_error("%s %s: %s is '%s', not '%s'", kind, name, key, got, want);
  return 0;
}

void
lt_ingress(bus_conn *c, const char *node, const char *type, const char *what,
           const msgpack_sbuffer *data) {
  char subject[256], id[33];
  snprintf(subject, sizeof subject, "lark.in.%s.sched.%s", node, what);
  bus_event ev;
  lt_event(&ev, id, type, node, 1, 0, data);
  cr_assert_eq(bus_append(c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0,
               "%s", bus_last_error());
}

static void
take_running(const bus_event *ev, void *arg) {
  int64_t *ts = arg;
  char phase[32] = "";
  if (!*ts && !strcmp(ev->type, "pod.phase") &&
      !strcmp(bus_obj_str(&ev->data, "phase", phase, sizeof phase), "Running"))
    *ts = ev->ts;
}

int64_t
lt_pod_running_ts(bus_conn *c, const char *pod) {
  char filter[BUS_SUBJECT_MAX];
  int64_t ts = 0;
  snprintf(filter, sizeof filter, "lark.ev.pod.%s", pod);
  cr_assert_eq(
      lt_read_stream(c, "LARK_EVENTS", filter, 500, 1, take_running, &ts), 0,
      "%s", bus_last_error());
  return ts;
}

void
lt_pod_says(bus_conn *c, const char *node, const char *pod, uint32_t attempt,
            const char *phase, const char *local_ip) {
  char what[256];
  snprintf(what, sizeof what, "pod.%s", pod);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, local_ip ? 4 : 3);
  bus_pack_kv_str(&b.pk, "pod", pod);
  bus_pack_kv_str(&b.pk, "phase", phase);
  bus_pack_kv_uint(&b.pk, "attempt", attempt);
  if (local_ip)
    bus_pack_kv_str(&b.pk, "localIP", local_ip);
  lt_ingress(c, node, "pod.report", what, &b.sb);
  bus_packbuf_destroy(&b);
}

void
lt_log_tail(const char *dir, const char *file, int lines) {
  char path[512], buf[1 << 16];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > (long)sizeof buf - 1)
    fseek(f, -(long)(sizeof buf - 1), SEEK_END);
  else
    rewind(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *p = buf + n; /* back to the start of the last lines */
  for (int k = 0; p > buf; p--)
    if (p[-1] == '\n' && p != buf + n && ++k == lines)
      break;
  cr_log_error("%s, its last lines:\n%s", file, p);
}

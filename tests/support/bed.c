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

#include "cmd.h"
#include "deploy.h"
#include "events.h"
#include "proc.h"
#include "replay.h"
#include "secure.h"
#include "service.h"
#include "wait.h"

void
lt_bed_up(lt_natsd *srv, bus_conn **conn, char *dir, size_t cap,
          const char *tag, int dedupe_ms) {
  cr_assert_eq(lt_broker_up(srv, conn, dedupe_ms), 0, "%s", bus_last_error());
  lt_tmpdir(dir, cap, tag);
}

void
lt_bed_down(lt_natsd *srv, bus_conn *conn, const char *dir, pid_t *pids,
            int n) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      lt_kill(pids[i], SIGTERM);
      pids[i] = 0;
    }
  bus_conn_close(conn);
  lt_natsd_stop(srv);
  if (!getenv("LARK_KEEP"))
    lt_rmtree(dir);
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

pid_t
lt_edge_bed_up(lt_natsd *srv, bus_conn **conn, const char *dir,
               const char *const nodes[]) {
  char cr[512];
  creds(dir, "admin", LARK_ROLE_ADMIN);
  creds(dir, "lark-scheduler", LARK_ROLE_SERVICE);
  for (int i = 0; nodes[i]; i++)
    creds(dir, nodes[i], LARK_ROLE_NODE);
  cr_assert_eq(lt_secure_natsd_start(srv, dir), 0, "%s", lark_cfg_error());
  cr_assert_eq(lt_connect_as(srv->url, dir, "admin", 0, conn), 0, "%s",
               bus_last_error());
  cr_assert_eq(lt_streams(*conn, 2000), 0, "%s", bus_last_error());
  lark_creds_path(dir, "lark-scheduler", cr, sizeof cr);
  const char *extra[] = {"--creds", cr, NULL};
  return lt_must_start("lark-scheduler", srv->url, dir, "scheduler",
                       "scheduler.log", extra);
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
  const char *fixed[] = {"--node", node, "--heartbeat", "0.5", "--grace", "1"};
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
lt_node_bed_up(lt_natsd *srv, bus_conn **conn, const char *node,
               bus_consumer **reports) {
  char filter[BUS_SUBJECT_MAX];
  cr_assert_eq(lt_broker_up(srv, conn, 2000), 0, "%s", bus_last_error());
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
lt_pod_running(bus_conn *conn, const char *node, const char *pod,
               const char *script, const char *const *bound) {
  int nb = 0;
  while (bound && bound[nb])
    nb++;
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 7 + (nb > 0));
  bus_pack_kv_str(&b.pk, "pod", pod);
  bus_pack_kv_str(&b.pk, "job", "j");
  bus_pack_kv_str(&b.pk, "task", "j-a");
  bus_pack_kv_str(&b.pk, "desired", "Running");
  bus_pack_kv_str(&b.pk, "runtime", "raw");
  bus_pack_kv_uint(&b.pk, "attempt", 0);
  bus_pack_str(&b.pk, "raw");
  msgpack_pack_map(&b.pk, 1);
  bus_pack_str(&b.pk, "entrypoint");
  msgpack_pack_array(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "sh", "-c");
  bus_pack_str(&b.pk, script);
  if (nb) {
    bus_pack_str(&b.pk, "boundDevices");
    msgpack_pack_array(&b.pk, (uint32_t)nb);
    for (int i = 0; i < nb; i++)
      bus_pack_str(&b.pk, bound[i]);
  }
  char id[33], subject[256];
  bus_event ev;
  lt_event(&ev, id, "pod.desired", "lark-scheduler", bus_wall_ns(), 0, &b.sb);
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node, pod);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  bus_packbuf_destroy(&b);
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

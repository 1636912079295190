/*
 * test_node_delete.c - decommissioning a node and rotating its key, end
 * to end: `larkctl up` (every service, no local node), nodes added with
 * `larkctl node add` and run by real lark-edge agents started here, each
 * with its own copy of its seed as a node elsewhere holds it.
 *
 * delete: a user and a node asking are refused and change nothing; the
 * admin's `delete node` appends node.deleted, the pod whose task may retry
 * runs again on the other node, the one that may not fails its Job; the
 * node leaves `get nodes`, its stream and its key go; its agent is cut off
 * and says it was refused for authorization, and its seed no longer
 * opens a connection. Added again under the same name, the node comes
 * back with a new key and a new stream, and takes pods; replaying the
 * scheduler's and lark-devices' views gives what they hold.
 *
 * rotate: as soon as larkctl returns, the old seed is refused and the
 * new one connects; the running agent is cut off with its old key, and
 * started again (as its unit restarts it) it reads the new seed and runs
 * a pod.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <unistd.h>

#include "deploy.h"
#include "events.h"
#include "files.h"
#include "json.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

typedef struct bed {
  lt_platform p;
  char url[512];
  pid_t edges[4];
  char alive[PATH_MAX]; /* the test's pods run while it exists */
  bus_conn *admin;
} bed;

static char out[65536], err[8192];

#define ctl(...)                                                               \
  lt_larkctl(&b->p, out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
bed_up(bed *b, const char *tag) {
  memset(b, 0, sizeof *b);
  lt_platform_init(&b->p, tag);
  const char *const extra[] = {"--no-gateway", NULL};
  cr_assert_eq(lt_platform_start(&b->p, extra, 90), 0, "larkctl up: see %s",
               b->p.up_log);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%.300s/url", b->p.dir);
  long n = lark_read_text(path, b->url, sizeof b->url);
  cr_assert_gt(n, 0, "no %s", path);
  b->url[strcspn(b->url, "\n")] = 0;
  snprintf(b->alive, sizeof b->alive, "%.300s/alive", b->p.dir);
  cr_assert_eq(lt_write_file(b->alive, "%s", ""), 0);
  b->admin = lt_platform_admin(&b->p);
  cr_assert(b->admin, "admin: %s", bus_last_error());
}

static void
bed_down(bed *b) {
  unlink(b->alive); /* the pods end within a second */
  for (int i = 0; i < 4; i++)
    if (b->edges[i] > 0)
      lt_kill(b->edges[i], SIGTERM);
  lt_sleep_ms(1200);
  bus_conn_close(b->admin);
  lt_platform_stop(&b->p);
  lt_platform_remove(&b->p);
}

/* `node add name`; its seed copied to <dir>/<name>.seed (what the node
 * holds); its public key into pub. */
static void
add_node(bed *b, const char *name, char pub[BUS_NKEY_PUB_LEN + 1]) {
  char src[PATH_MAX], dst[PATH_MAX];
  cr_assert_eq(ctl("node add %s", name), 0, "%s%s", out, err);
  cr_assert(strstr(out, "reloaded"), "%s", out);
  lark_creds_path(b->p.dir, name, src, sizeof src);
  snprintf(dst, sizeof dst, "%s/%s.seed", b->p.dir, name);
  static char seed[512];
  cr_assert(lt_read_file(src, seed, sizeof seed) && seed[0], "%s", src);
  cr_assert_eq(lt_write_file(dst, "%s", seed), 0, "%s", dst);
  const char *k = strstr(out, "(U");
  cr_assert(k, "%s", out);
  memcpy(pub, k + 1, BUS_NKEY_PUB_LEN);
  pub[BUS_NKEY_PUB_LEN] = 0;
}

/* lark-edge for name in slot i, with the seed file given. */
static void
start_edge(bed *b, int i, const char *name, const char *seed) {
  char bin[PATH_MAX], data[PATH_MAX], log[PATH_MAX];
  lt_bin("lark-edge", bin, sizeof bin);
  snprintf(data, sizeof data, "%s/edge-%s", b->p.dir, name);
  snprintf(log, sizeof log, "%s/edge-%s.log", b->p.dir, name);
  const char *argv[] = {bin,       "--node",  name,     "--url", b->url,
                        "--creds", seed,      "--data", data,    "--heartbeat",
                        "0.5",     "--grace", "1",      NULL};
  b->edges[i] = lt_spawn((char *const *)argv, log);
  cr_assert_gt(b->edges[i], 0);
}

/* The words of name's row in `larkctl get KIND` (NAME first), waited
 * for until the row has want in column col (up to seconds); 1 if so. */
static int
row_has(bed *b, const char *kind, const char *name, int col, const char *want,
        int seconds) {
  for (int64_t until = lt_now_ms() + seconds * 1000; lt_now_ms() < until;
       lt_sleep_ms(250)) {
    static char rows[sizeof out];
    if (ctl("get %s", kind))
      continue;
    memcpy(rows, out, sizeof rows); /* out stays whole for messages */
    for (char *save, *line = strtok_r(rows, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
      char *w[6] = {0}, *s2;
      int n = 0;
      for (char *t = strtok_r(line, " ", &s2); t && n < 6;
           t = strtok_r(NULL, " ", &s2))
        w[n++] = t;
      if (n > col && !strcmp(w[0], name) && !strcmp(w[col], want))
        return 1;
    }
  }
  return 0;
}

static int
gone_from(bed *b, const char *kind, const char *name, int seconds) {
  for (int64_t until = lt_now_ms() + seconds * 1000; lt_now_ms() < until;
       lt_sleep_ms(250))
    if (ctl("get %s -o name", kind) == 0) {
      char row[200];
      snprintf(row, sizeof row, "/%s\n", name);
      if (!strstr(out, row))
        return 1;
    }
  return 0;
}

/* A Job of one pod (task w) running until the bed's alive file goes, or
 * for 4 minutes at most (a failed test leaves the file behind). */
static void
apply_job(bed *b, const char *name, int retries) {
  char path[PATH_MAX], text[8192];
  snprintf(path, sizeof path, "%s/%s.yaml", b->p.dir, name);
  snprintf(text, sizeof text,
           "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {name: %s}\n"
           "spec:\n  tasks:\n  - name: w\n    role: Actor\n    replicas: 1\n"
           "    maxRetries: %d\n    resources: {cpu: 1, memory: 64}\n"
           "    runtime:\n      raw:\n        entrypoint: [/bin/sh, -c, "
           "'end=$(($(date +%%s) + 240)); while [ -e %s ] && "
           "[ $(date +%%s) -lt $end ]; do sleep 0.2; done']\n",
           name, retries, b->alive);
  cr_assert_eq(lt_write_file(path, "%s", text), 0);
  cr_assert_eq(ctl("apply -f %s", path), 0, "%s%s", out, err);
}

/* Whether node's stream exists (1) or not (0), waited for up to seconds
 * to be want; -1 when the broker does not say. */
static int
stream_is(bed *b, const char *node, int want, int seconds) {
  char stream[BUS_NODE_STREAM_MAX];
  bus_node_stream_name(node, stream, sizeof stream);
  for (int64_t until = lt_now_ms() + seconds * 1000;; lt_sleep_ms(250)) {
    int rc = lark_stream_info(b->admin, stream, NULL, NULL, NULL, NULL);
    int has = rc == 0 ? 1 : rc == BUS_ENOT_FOUND ? 0 : -1;
    if (has == want || lt_now_ms() >= until)
      return has;
  }
}

/* A connection with seed: 0, or the code refusing it. */
static int
connect_with(const char *url, const char *seed, const char *node) {
  char inbox[80];
  bus_conn_opts o;
  bus_conn *c = NULL;
  bus_conn_opts_init(&o);
  snprintf(inbox, sizeof inbox, "_INBOX_%s", node);
  o.url = url;
  o.creds = seed;
  o.inbox_prefix = inbox;
  int rc = bus_conn_open(&c, &o);
  bus_conn_close(c);
  return rc;
}

/* node.registered on node's ingress, as its agent sends it at start. */
static void
registration(bed *b, const char *node) {
  char text[512], id[33];
  snprintf(text, sizeof text,
           "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Node\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cluster\":\"local\","
           "\"runtimes\":"
           "[\"raw\"],\"capacity\":{\"cpu\":2,\"memory\":1024}}}",
           node);
  json_t *j = json_loads(text, 0, NULL);
  cr_assert(j, "%s", text);
  bus_packbuf pb;
  bus_packbuf_init(&pb);
  lt_pack_json(&pb.pk, j);
  json_decref(j);
  bus_event ev;
  lt_event(&ev, id, "node.registered", node, bus_wall_ns(), 0, &pb.sb);
  snprintf(text, sizeof text, "lark.in.%s.sched.node", node);
  cr_assert_eq(bus_append(b->admin, text, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  bus_packbuf_destroy(&pb);
}

/* The seed file of name as the registry has it. */
static const char *
seed_of(bed *b, const char *name) {
  static char path[PATH_MAX];
  lark_creds_path(b->p.dir, name, path, sizeof path);
  return path;
}

static int
registered(bed *b, const char *name) {
  char path[PATH_MAX], text[8192], row[80];
  snprintf(path, sizeof path, "%.300s/creds/users", b->p.dir);
  lt_read_file(path, text, sizeof text);
  snprintf(row, sizeof row, "\n%s node ", name);
  return strstr(text, row) != NULL;
}

Test(node_delete, pods_move_stream_and_key_go_agent_refused, .timeout = 240) {
  bed bb, *b = &bb;
  char pub_a[BUS_NKEY_PUB_LEN + 1], pub_b[BUS_NKEY_PUB_LEN + 1],
      seed_a[PATH_MAX], log_a[PATH_MAX], user[64] = "";
  bed_up(b, "node-delete");
  add_node(b, "node-a", pub_a);
  add_node(b, "node-b", pub_b);
  snprintf(seed_a, sizeof seed_a, "%.300s/node-a.seed", b->p.dir);
  snprintf(log_a, sizeof log_a, "%.300s/edge-node-a.log", b->p.dir);
  start_edge(b, 0, "node-a", seed_a);
  start_edge(b, 1, "node-b", seed_of(b, "node-b"));
  cr_assert(row_has(b, "nodes", "node-a", 1, "Ready", 30), "%s", out);
  cr_assert(row_has(b, "nodes", "node-b", 1, "Ready", 30), "%s", out);
  cr_assert_eq(stream_is(b, "node-a", 1, 5), 1);

  /* both pods on node-a: node-b takes none until they run */
  cr_assert_eq(ctl("cordon node node-b"), 0, "%s%s", out, err);
  apply_job(b, "keep", 1);
  apply_job(b, "last", 0);
  cr_assert(row_has(b, "pods", "keep-w-0", 1, "Running", 30), "%s", out);
  cr_assert(row_has(b, "pods", "last-w-0", 1, "Running", 30), "%s", out);
  cr_assert(row_has(b, "pods", "keep-w-0", 2, "node-a", 1), "%s", out);
  cr_assert(row_has(b, "pods", "last-w-0", 2, "node-a", 1), "%s", out);
  cr_assert_eq(ctl("uncordon node node-b"), 0, "%s%s", out, err);

  /* a user and a node asking change nothing */
  cr_assert_eq(lt_sh(user, sizeof user, NULL, 0,
                     "awk '$2 == \"user\" {print $1; exit}' %s/creds/users",
                     b->p.dir),
               0);
  user[strcspn(user, "\n")] = 0;
  cr_assert(user[0], "no user in the registry");
  cr_assert_neq(ctl("--creds %s delete node node-a", seed_of(b, user)), 0,
                "a user deleted a node: %s", out);
  cr_assert(strstr(err, "only admin may delete"), "%s", err);
  cr_assert_neq(ctl("--creds %s delete node node-a", seed_of(b, "node-b")), 0,
                "a node deleted a node: %s", out);
  cr_assert(strstr(err, "may not send"), "%s", err);
  cr_assert(registered(b, "node-a"));
  cr_assert(row_has(b, "nodes", "node-a", 1, "Ready", 5), "%s", out);

  /* the admin's, with a registration of node-a racing it (sent before
   * its key went, read before or after the deletion) */
  registration(b, "node-a");
  cr_assert_eq(ctl("delete node node-a"), 0, "%s%s", out, err);
  cr_assert(strstr(out, "node.rlinf.io/node-a deleted"), "%s", out);
  cr_assert(strstr(out, "credentials of node-a removed"), "%s", out);
  cr_assert(strstr(out, "broker reloaded"), "%s", out);
  cr_assert_not(registered(b, "node-a"));
  cr_assert_neq(access(seed_of(b, "node-a"), F_OK), 0, "seed file left");

  cr_assert(row_has(b, "pods", "keep-w-0", 3, "1", 30),
            "keep-w-0 was not retried: %s", out);
  cr_assert(row_has(b, "pods", "keep-w-0", 1, "Running", 30), "%s", out);
  cr_assert(row_has(b, "pods", "keep-w-0", 2, "node-b", 1), "%s", out);
  cr_assert(row_has(b, "pods", "last-w-0", 1, "Failed", 30), "%s", out);
  cr_assert(strstr(out, "NodeDeleted"), "%s", out);
  cr_assert(row_has(b, "jobs", "last", 1, "Failed", 30), "%s", out);
  cr_assert(gone_from(b, "nodes", "node-a", 10), "%s", out);
  lt_sleep_ms(3000); /* and it stays gone */
  cr_assert(gone_from(b, "nodes", "node-a", 1), "%s", out);
  cr_assert_eq(stream_is(b, "node-a", 0, 15), 0, "node-a's stream is left");
  cr_assert_eq(ctl("tail --type node.deleted"), 0, "%s%s", out, err);
  cr_assert(strstr(out, "lark.ev.node.node-a node.deleted actor=admin"), "%s",
            out);

  /* the agent is cut off: refused for authorization, and so is its seed */
  cr_assert(lt_file_says(log_a, "Authorization Violation", 30),
            "node-a's agent did not say it was refused");
  cr_assert_eq(connect_with(b->url, seed_a, "node-a"), BUS_EAUTH);
  cr_assert_eq(connect_with(b->url, seed_of(b, "node-b"), "node-b"), 0);

  /* deleting again: nothing left to delete */
  cr_assert_neq(ctl("delete node node-a"), 0, "%s", out);
  cr_assert(strstr(err, "no such node"), "%s", err);

  /* the same name again: a new key, a new stream, pods again */
  char pub_a2[BUS_NKEY_PUB_LEN + 1];
  lt_kill(b->edges[0], SIGTERM);
  b->edges[0] = 0;
  add_node(b, "node-a", pub_a2);
  cr_assert_str_neq(pub_a, pub_a2, "the old key came back");
  start_edge(b, 2, "node-a", seed_of(b, "node-a"));
  cr_assert(row_has(b, "nodes", "node-a", 1, "Ready", 30), "%s", out);
  cr_assert_eq(ctl("cordon node node-b"), 0, "%s%s", out, err);
  apply_job(b, "again", 0);
  cr_assert(row_has(b, "pods", "again-w-0", 1, "Running", 30), "%s", out);
  cr_assert(row_has(b, "pods", "again-w-0", 2, "node-a", 1), "%s", out);
  /* its new stream: made at its registration, or, when the sweep of the
   * old one came between that and its apply, again for its first
   * desired state (gone.c) */
  cr_assert_eq(stream_is(b, "node-a", 1, 10), 1);
  /* the views the deletion changed are what their events make */
  cr_assert_eq(ctl("replay scheduler --verify"), 0, "%s%s", out, err);
  cr_assert_eq(ctl("replay devices --verify"), 0, "%s%s", out, err);

  /* an agent whose seed went (as an up-node's, which reads the registry's
   * file, when the node is deleted) says so, rather than trying to
   * connect again and again without a word; and when it is back */
  char seed_b[PATH_MAX], away[PATH_MAX + 8], log_b[PATH_MAX];
  snprintf(seed_b, sizeof seed_b, "%s", seed_of(b, "node-b"));
  snprintf(away, sizeof away, "%s.away", seed_b);
  snprintf(log_b, sizeof log_b, "%.300s/edge-node-b.log", b->p.dir);
  cr_assert_eq(rename(seed_b, away), 0);
  cr_assert(lt_file_says(log_b, "cannot read the node's credentials", 10),
            "node-b's agent did not say its seed is gone");
  cr_assert_eq(rename(away, seed_b), 0);
  cr_assert(lt_file_says(log_b, "can be read again", 10),
            "node-b's agent did not say its seed is back");
  bed_down(b);
}

Test(node_delete, rotate_retires_the_old_key, .timeout = 180) {
  bed bb, *b = &bb;
  char pub[BUS_NKEY_PUB_LEN + 1], old_seed[PATH_MAX], log[PATH_MAX];
  bed_up(b, "node-rotate");
  add_node(b, "node-r", pub);
  snprintf(old_seed, sizeof old_seed, "%.300s/node-r.seed", b->p.dir);
  /* the agent reads the registry's seed file, which rotate replaces */
  start_edge(b, 0, "node-r", seed_of(b, "node-r"));
  cr_assert(row_has(b, "nodes", "node-r", 1, "Ready", 30), "%s", out);

  cr_assert_eq(ctl("node rotate node-r"), 0, "%s%s", out, err);
  cr_assert(strstr(out, "node node-r rotated"), "%s", out);
  cr_assert(strstr(out, "retired"), "%s", out);
  cr_assert(strstr(out, "broker reloaded"), "%s", out);
  cr_assert(strstr(out, pub), "the old key is not named: %s", out);

  /* at once: larkctl returns once the broker has applied the reload */
  cr_assert_eq(connect_with(b->url, old_seed, "node-r"), BUS_EAUTH,
               "the old seed still connects");
  cr_assert_eq(connect_with(b->url, seed_of(b, "node-r"), "node-r"), 0, "%s",
               bus_last_error());
  cr_assert(registered(b, "node-r"));

  /* the agent is cut off at the reload (nats.c keeps the key it signed
   * in with) and exits; started again, as its unit restarts it, it signs
   * in with the new seed and runs a pod */
  snprintf(log, sizeof log, "%.300s/edge-node-r.log", b->p.dir);
  cr_assert(lt_file_says(log, "closed for good: Authorization Violation", 30),
            "the agent with the old key was not cut off");
  lt_kill(b->edges[0], SIGTERM);
  start_edge(b, 1, "node-r", seed_of(b, "node-r"));
  apply_job(b, "after", 0);
  cr_assert(row_has(b, "pods", "after-w-0", 1, "Running", 45), "%s", out);
  cr_assert(row_has(b, "nodes", "node-r", 1, "Ready", 5), "%s", out);

  /* rotating what is not a node, or nothing, is refused */
  cr_assert_neq(ctl("node rotate lark-scheduler"), 0, "%s", out);
  cr_assert(strstr(err, "not a node"), "%s", err);
  cr_assert_neq(ctl("node rotate nobody"), 0, "%s", out);
  cr_assert(strstr(err, "no node nobody"), "%s", err);
  bed_down(b);
}

/* A reload is over when the broker says so: one it refuses (a broken
 * accounts file) is an error naming the server's reason, and the broker
 * keeps its users; made again from the registry, it reloads. */
Test(node_delete, reload_waits_for_the_brokers_word, .timeout = 120) {
  bed bb, *b = &bb;
  char path[PATH_MAX];
  int n = -1;
  bed_up(b, "node-reload");
  snprintf(path, sizeof path, "%.300s/broker/accounts.conf", b->p.dir);
  cr_assert_eq(lt_write_file(path, "%s", "accounts {\n"), 0);
  cr_assert_lt(lark_reload_servers(b->p.dir, &n), 0, "a broken reload passed");
  cr_assert(strstr(lark_cfg_error(), "did not reload"), "%s", lark_cfg_error());
  cr_assert(strstr(lark_cfg_error(), "Failed to reload server configuration"),
            "%s", lark_cfg_error());
  cr_assert_eq(ctl("get nodes"), 0, "the broker lost its users: %s%s", out,
               err);
  cr_assert_eq(lark_regen_accounts(b->p.dir), 0, "%s", lark_cfg_error());
  cr_assert_eq(lark_reload_servers(b->p.dir, &n), 0, "%s", lark_cfg_error());
  cr_assert_eq(n, 1);
  bed_down(b);
}

/* The registry alone: what remove and rotate change, and what they
 * refuse. */
Test(node_delete, registry_remove_and_rotate) {
  char dir[] = "/tmp/lark-creds-XXXXXX", path[PATH_MAX], text[4096];
  cr_assert(mkdtemp(dir));
  lark_principal a, s, r;
  char old[BUS_NKEY_PUB_LEN + 1];
  int removed = -1;
  cr_assert_eq(lark_creds_ensure(dir, "gpu-1", LARK_ROLE_NODE, &a, NULL), 0);
  cr_assert_eq(
      lark_creds_ensure(dir, "lark-scheduler", LARK_ROLE_SERVICE, &s, NULL), 0);
  /* rotate: a new key in the seed file and the registry; others kept */
  cr_assert_eq(lark_creds_rotate(dir, "gpu-1", LARK_ROLE_NODE, &r, old), 0,
               "%s", lark_cfg_error());
  cr_assert_str_eq(old, a.pub);
  cr_assert_str_neq(r.pub, a.pub);
  snprintf(path, sizeof path, "%s/creds/users", dir);
  lt_read_file(path, text, sizeof text);
  cr_assert(strstr(text, r.pub) && !strstr(text, a.pub), "%s", text);
  cr_assert(strstr(text, s.pub), "%s", text);
  lark_principal again;
  int created = 1;
  cr_assert_eq(
      lark_creds_ensure(dir, "gpu-1", LARK_ROLE_NODE, &again, &created), 0);
  cr_assert_eq(created, 0);
  cr_assert_str_eq(again.pub, r.pub, "the seed file holds the new key");
  /* refused: another role's name, a name not registered, a bad name */
  cr_assert_eq(
      lark_creds_rotate(dir, "lark-scheduler", LARK_ROLE_NODE, NULL, NULL),
      BUS_EINVAL);
  cr_assert(strstr(lark_cfg_error(), "not a node"), "%s", lark_cfg_error());
  cr_assert_eq(lark_creds_rotate(dir, "gpu-9", LARK_ROLE_NODE, NULL, NULL),
               BUS_ENOT_FOUND);
  cr_assert_eq(lark_creds_rotate(dir, "../x", LARK_ROLE_NODE, NULL, NULL),
               BUS_ENAME);
  cr_assert_eq(
      lark_creds_remove(dir, "lark-scheduler", LARK_ROLE_NODE, &removed),
      BUS_EINVAL);
  cr_assert_eq(lark_creds_remove(dir, "../x", LARK_ROLE_NODE, &removed),
               BUS_ENAME);
  /* remove: line and seed gone, the service kept; twice is no error */
  cr_assert_eq(lark_creds_remove(dir, "gpu-1", LARK_ROLE_NODE, &removed), 0);
  cr_assert_eq(removed, 1);
  lt_read_file(path, text, sizeof text);
  cr_assert(!strstr(text, "gpu-1") && strstr(text, s.pub), "%s", text);
  lark_creds_path(dir, "gpu-1", path, sizeof path);
  cr_assert_neq(access(path, F_OK), 0);
  cr_assert_eq(lark_creds_remove(dir, "gpu-1", LARK_ROLE_NODE, &removed), 0);
  cr_assert_eq(removed, 0);
  /* a site's node leaves its site's member list too */
  const char *const members[] = {"gpu-2", "gpu-3"};
  lark_site_opts so;
  lark_site_opts_init(&so);
  so.hub_url = "nats-leaf://127.0.0.1:7422";
  cr_assert_eq(lark_site_add(dir, "s1", members, 2, &so, NULL), 0, "%s",
               lark_cfg_error());
  char site[BUS_NAME_MAX + 1];
  cr_assert_eq(lark_creds_remove(dir, "gpu-2", LARK_ROLE_NODE, &removed), 0);
  cr_assert_eq(lark_site_forget(dir, "gpu-2", site, sizeof site), 1);
  cr_assert_str_eq(site, "s1");
  cr_assert_eq(lark_regen_accounts(dir), 0, "%s", lark_cfg_error());
  snprintf(path, sizeof path, "%s/sites/s1/nodes", dir);
  lt_read_file(path, text, sizeof text);
  cr_assert_str_eq(text, "gpu-3\n");
  snprintf(path, sizeof path, "%s/sites/s1/accounts.conf", dir);
  lt_read_file(path, text, sizeof text);
  cr_assert(!strstr(text, "gpu-2") && strstr(text, "gpu-3"), "%s", text);
  snprintf(path, sizeof path, "%s/sites/s1/creds/gpu-2.nk", dir);
  cr_assert_neq(access(path, F_OK), 0, "the site keeps gpu-2's seed");
  cr_assert_eq(lark_site_forget(dir, "gpu-2", site, sizeof site), 0);
  /* added again: a key never seen before */
  cr_assert_eq(lark_creds_ensure(dir, "gpu-1", LARK_ROLE_NODE, &again, NULL),
               0);
  cr_assert(strcmp(again.pub, a.pub) && strcmp(again.pub, r.pub));
  lt_sh(text, sizeof text, NULL, 0, "rm -rf %s", dir);
}

/*
 * test_edge_weights_cache.c - a node's weights cache on its own
 * (edge/weights.h), in process with a real store and a real libuv loop, no
 * broker: a pod's file published into <data>/weights/<sha256> (read only,
 * its SHA-256 as openssl computes it) with its weights.report queued in
 * the store; waits answered from what is held, parked until a publish, or
 * timed out; paths outside the pod's directory and non-files refused; the
 * drop policy (keep K, never the newest) with a dropped report each; the
 * index read back after a restart. Two nodes in this process, with
 * certificates of a test CA (tests/data/node_cert.sh) and the engine's
 * projections put in their stores: a wait on one fetched from the other
 * over TLS; refused (ERR) while the server's engine.peers does not list
 * the fetching node, fetched once it does; a copy corrupted at the source
 * refused and fetched again once repaired.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "events.h"
#include "files.h"
#include "natsd.h"
#include "../edge/proc.h" /* tests/support has a proc.h too */
#include "store.h"
#include "weights.h"

typedef struct answer {
  int n, rc;
  uint64_t version, size;
  char path[4200], sha[65], why[256];
} answer;

static void
on_answer(void *ud, int rc, const char *why, uint64_t version, const char *path,
          const char *sha256, uint64_t size) {
  answer *r = ud;
  r->n++, r->rc = rc, r->version = version, r->size = size;
  snprintf(r->why, sizeof r->why, "%s", why ? why : "");
  snprintf(r->path, sizeof r->path, "%s", path ? path : "");
  snprintf(r->sha, sizeof r->sha, "%s", sha256 ? sha256 : "");
}

typedef struct node {
  char dir[512], name[16], tls[600];
  edge_agent a;
  struct edge_proc p;
  uv_loop_t loop;
} node;

static void
node_up(node *n, const char *dir, int keep) {
  char path[700];
  memset(&n->a, 0, sizeof n->a);
  snprintf(n->dir, sizeof n->dir, "%s", dir);
  edge_config_init(&n->a.cfg);
  if (!n->name[0])
    snprintf(n->name, sizeof n->name, "n1");
  n->a.cfg.node = n->name;
  if (n->tls[0]) {
    n->a.cfg.tls_dir = n->tls;
    n->a.cfg.weights_listen = "127.0.0.1:0";
  }
  n->a.cfg.data = n->dir;
  n->a.cfg.weights_keep = keep;
  pthread_mutex_init(&n->a.mu, NULL);
  pthread_cond_init(&n->a.cv, NULL);
  uv_loop_init(&n->loop);
  n->a.loop = &n->loop;
  snprintf(path, sizeof path, "%s/store", dir);
  cr_assert_eq(edge_store_open(&n->a.store, path), 0, "%s", bus_last_error());
  memset(&n->p, 0, sizeof n->p);
  snprintf(n->p.pod, sizeof n->p.pod, "j1-learner-0");
  snprintf(n->p.job, sizeof n->p.job, "j1");
  snprintf(n->p.dir, sizeof n->p.dir, "%s/pods/j1-learner-0", dir);
  snprintf(path, sizeof path, "%s/pods", dir);
  mkdir(path, 0700);
  mkdir(n->p.dir, 0700);
  cr_assert_eq(edge_weights_start(&n->a), 0, "%s", bus_last_error());
}

static void
node_down(node *n) {
  edge_weights_stop(&n->a);
  uv_run(&n->loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&n->loop), 0);
  edge_store_close(n->a.store);
}

static void
run_until(node *n, const answer *r, int want) {
  for (int i = 0; i < 5000 && r->n < want; i++)
    uv_run(&n->loop, UV_RUN_NOWAIT), usleep(1000);
  cr_assert_eq(r->n, want, "no answer");
}

/* A file of size bytes in the pod's directory, its sha256 from openssl. */
static void
pod_file(node *n, const char *name, size_t size, int seed, char sha[65]) {
  char path[4300], cmd[8800], out[128];
  snprintf(path, sizeof path, "%s/%s", n->p.dir, name);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  for (size_t i = 0; i < size; i++)
    fputc((int)((i * 31 + (size_t)seed) & 0xff), f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "openssl dgst -sha256 -r %s", path);
  FILE *p = popen(cmd, "r");
  cr_assert(p && fgets(out, sizeof out, p));
  pclose(p);
  memcpy(sha, out, 64);
  sha[64] = 0;
}

static answer
publish(node *n, uint64_t version, const char *path) {
  answer r = {0};
  int rc = edge_weights_publish(&n->a, &n->p, version, path, on_answer, &r);
  if (rc) {
    r.n = 1, r.rc = rc;
    snprintf(r.why, sizeof r.why, "%s", bus_last_error());
    return r;
  }
  run_until(n, &r, 1);
  return r;
}

/* The queued reports' events, in order, as "published:1 dropped:1 ...". */
static void
queued_reports(node *n, char *out, size_t cap) {
  edge_queued q[32];
  size_t k = 0;
  out[0] = 0;
  cr_assert_eq(edge_store_peek_n(n->a.store, q, 32, &k), 0);
  for (size_t i = 0; i < k; i++) {
    msgpack_zone z;
    msgpack_object o;
    bus_ev_weights_report r;
    msgpack_zone_init(&z, 1024);
    if (!strcmp(q[i].type, "weights.report") &&
        msgpack_unpack(q[i].data, q[i].len, NULL, &z, &o) >= 0 &&
        bus_weights_report_unpack(&o, &z, &r) == 0)
      snprintf(out + strlen(out), cap - strlen(out), "%s%.*s:%llu",
               *out ? " " : "", (int)r.event.len, r.event.ptr,
               (unsigned long long)r.version);
    msgpack_zone_destroy(&z);
    edge_queued_free(&q[i]);
  }
}

Test(weights_cache, publish_wait_policy) {
  char dir[256], sha1[65], sha2[65], sha3[65], path[4300], ev[512];
  static node n;
  struct stat st;
  lt_tmpdir(dir, sizeof dir, "wcache");
  node_up(&n, dir, 2);
  pod_file(&n, "w1.bin", 300000, 1, sha1);
  answer r = publish(&n, 1, "w1.bin");
  cr_assert_eq(r.rc, 0, "%s", r.why);
  cr_assert_str_eq(r.sha, sha1);
  cr_assert_eq(r.size, 300000);
  snprintf(path, sizeof path, "%s/weights/%s", dir, sha1);
  cr_assert_str_eq(r.path, path);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0444);
  /* the same version and bytes again: the same answer, one report */
  cr_assert_eq(publish(&n, 1, "w1.bin").rc, 0);
  /* refused: outside the pod's directory, not a file, not newer, none */
  snprintf(path, sizeof path, "%s/store/data.mdb", dir);
  r = publish(&n, 2, path);
  cr_assert_neq(r.rc, 0);
  cr_assert(strstr(r.why, "outside"), "%s", r.why);
  cr_assert(
      strstr(publish(&n, 2, "../j1-learner-0/../../store").why, "outside"));
  cr_assert_neq(publish(&n, 2, ".").rc, 0);
  cr_assert_neq(publish(&n, 2, "missing.bin").rc, 0);
  cr_assert_neq(publish(&n, 0, "w1.bin").rc, 0);
  pod_file(&n, "w0.bin", 10, 9, sha3);
  r = publish(&n, 1, "w0.bin");
  cr_assert(r.rc != 0 && strstr(r.why, "not newer"), "%s", r.why);

  /* waits: held, parked until a publish, timed out */
  answer w1 = {0}, w2 = {0}, w3 = {0};
  cr_assert_null(edge_weights_wait_for(&n.a, &n.p, 1, 0, on_answer, &w1));
  cr_assert(w1.n == 1 && w1.rc == 0 && w1.version == 1);
  cr_assert_not_null(edge_weights_wait_for(&n.a, &n.p, 2, 0, on_answer, &w2));
  cr_assert_not_null(edge_weights_wait_for(&n.a, &n.p, 9, 50, on_answer, &w3));
  edge_weights_wait *gone =
      edge_weights_wait_for(&n.a, &n.p, 9, 0, on_answer, &w1);
  edge_weights_wait_cancel(gone);
  run_until(&n, &w3, 1);
  cr_assert_eq(w3.rc, BUS_ETIMEOUT);
  cr_assert_eq(w2.n, 0);
  pod_file(&n, "w2.bin", 1000, 2, sha2);
  cr_assert_eq(publish(&n, 2, "w2.bin").rc, 0);
  cr_assert(w2.n == 1 && w2.rc == 0 && w2.version == 2 &&
            !strcmp(w2.sha, sha2));
  cr_assert_eq(w1.n, 1, "a cancelled wait is never answered");

  /* keep 2: version 3 drops version 1 and its file */
  pod_file(&n, "w3.bin", 5000, 3, sha3);
  cr_assert_eq(publish(&n, 3, "w3.bin").rc, 0);
  snprintf(path, sizeof path, "%s/weights/%s", dir, sha1);
  cr_assert_neq(stat(path, &st), 0, "version 1's file is dropped");
  queued_reports(&n, ev, sizeof ev);
  cr_assert_str_eq(ev, "published:1 published:2 published:3 dropped:1");
  node_down(&n);

  /* a restart reads the index back; a file gone from the cache is dropped */
  snprintf(path, sizeof path, "%s/weights/%s", dir, sha2);
  chmod(path, 0644);
  unlink(path);
  node_up(&n, dir, 2);
  answer w4 = {0};
  cr_assert_null(edge_weights_wait_for(&n.a, &n.p, 2, 0, on_answer, &w4));
  cr_assert(w4.rc == 0 && w4.version == 3, "%d %llu", w4.rc,
            (unsigned long long)w4.version);
  queued_reports(&n, ev, sizeof ev);
  cr_assert_str_eq(ev,
                   "published:1 published:2 published:3 dropped:1 dropped:2");
  node_down(&n);
  lt_rmtree(dir);
}

/* ------------------------------------------------------- two nodes */

/* An engine.<what> event of j1 put in n's store at version, as the slice
 * stores it, and the weights part told. */
static void
project(node *n, const char *what, const msgpack_sbuffer *body,
        uint64_t version) {
  char id[33], type[32];
  bus_event ev;
  msgpack_sbuffer enc;
  msgpack_sbuffer_init(&enc);
  snprintf(type, sizeof type, "engine.%s", what);
  lt_event(&ev, id, type, "lark-engine", bus_wall_ns(), 0, body);
  cr_assert_eq(bus_event_encode(&ev, &enc), 0, "%s", bus_last_error());
  cr_assert_eq(edge_store_engine_put(n->a.store, "j1", what, version, enc.data,
                                     enc.size, NULL),
               0);
  msgpack_sbuffer_destroy(&enc);
  edge_weights_on_projection(&n->a, "j1");
}

static void
project_peers(node *n, const char *other, uint64_t version) {
  bus_peer p[2] = {{.pod = BUS_STR("j1-learner-0"),
                    .task = BUS_STR("j1-learner"),
                    .node = BUS_STR("n1")},
                   {.pod = BUS_STR("j1-sampler-0"),
                    .task = BUS_STR("j1-sampler"),
                    .node = bus_str_of(other)}};
  bus_ev_engine_peers d = {.job = BUS_STR("j1"),
                           .has_version = 1,
                           .version = version,
                           .has_peers = 1,
                           .peers = {p, 2}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_peers_pack(&sb, &d), 0);
  project(n, "peers", &sb, version);
  msgpack_sbuffer_destroy(&sb);
}

/* engine.weights on n: version v (sha, size) from n1 at addr. */
static void
project_weights(node *n, uint64_t v, const char *sha, uint64_t size,
                const char *addr) {
  bus_weights_source src = {.node = BUS_STR("n1"), .address = bus_str_of(addr)};
  bus_weights_ref ref = {.version = v,
                         .size = size,
                         .sha256 = bus_str_of(sha),
                         .has_sources = 1,
                         .sources = {&src, 1}};
  bus_ev_engine_weights d = {.job = BUS_STR("j1"),
                             .has_version = 1,
                             .version = v,
                             .has_versions = 1,
                             .versions = {&ref, 1}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_weights_pack(&sb, &d), 0);
  project(n, "weights", &sb, v);
  msgpack_sbuffer_destroy(&sb);
}

/* The address in n's first queued weights.report. */
static void
served_at(node *n, char *addr, size_t cap) {
  edge_queued q;
  msgpack_zone z;
  msgpack_object o;
  cr_assert_eq(edge_store_peek(n->a.store, &q), 0);
  msgpack_zone_init(&z, 1024);
  cr_assert(msgpack_unpack(q.data, q.len, NULL, &z, &o) >= 0);
  bus_obj_str(&o, "address", addr, cap);
  msgpack_zone_destroy(&z);
  edge_queued_free(&q);
  cr_assert(strncmp(addr, "127.0.0.1:", 10) == 0, "served at %s", addr);
}

static void
flip(const char *dir, const char *sha) {
  char path[700];
  snprintf(path, sizeof path, "%s/weights/%s", dir, sha);
  cr_assert_eq(lt_flip_byte(path, 77, 1), 0, "%s", path);
}

static void
certs(const char *dir) {
  char cmd[1024];
  const char *src = getenv("LARK_SOURCE_DIR");
  cr_assert(src, "LARK_SOURCE_DIR is not set");
  snprintf(cmd, sizeof cmd,
           "sh %s/tests/data/node_cert.sh ca %s/ca && for n in n1 n2; do sh "
           "%s/tests/data/node_cert.sh node %s/ca %s/tls-$n $n; done",
           src, dir, src, dir, dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void
two_up(node *a, node *b, const char *dir) {
  char sub[300];
  certs(dir);
  memset(a, 0, sizeof *a), memset(b, 0, sizeof *b);
  snprintf(a->name, sizeof a->name, "n1");
  snprintf(b->name, sizeof b->name, "n2");
  snprintf(a->tls, sizeof a->tls, "%s/tls-n1", dir);
  snprintf(b->tls, sizeof b->tls, "%s/tls-n2", dir);
  snprintf(sub, sizeof sub, "%s/a", dir);
  mkdir(sub, 0700);
  node_up(a, sub, 3);
  snprintf(sub, sizeof sub, "%s/b", dir);
  mkdir(sub, 0700);
  node_up(b, sub, 3);
}

Test(weights_cache, fetch_between_nodes, .timeout = 60) {
  char dir[256], sha1[65], sha2[65], addr[64];
  static node a, b;
  lt_tmpdir(dir, sizeof dir, "wfetch");
  two_up(&a, &b, dir);
  pod_file(&a, "w1.bin", 3 << 20, 1, sha1);
  cr_assert_eq(publish(&a, 1, "w1.bin").rc, 0);
  served_at(&a, addr, sizeof addr);

  /* n2 is not in n1's engine.peers yet: refused, no answer */
  project_peers(&a, "n9", 1);
  answer w1 = {0}, w2 = {0}, w3 = {0};
  cr_assert_not_null(edge_weights_wait_for(&b.a, &b.p, 1, 0, on_answer, &w1));
  cr_assert_not_null(edge_weights_wait_for(&b.a, &b.p, 1, 0, on_answer, &w2));
  project_weights(&b, 1, sha1, 3 << 20, addr);
  for (int i = 0; i < 500; i++)
    uv_run(&b.loop, UV_RUN_NOWAIT), usleep(1000);
  cr_assert_eq(w1.n, 0, "fetched while refused");
  project_peers(&a, "n2", 2);
  run_until(&b, &w1, 1);
  cr_assert(w1.rc == 0 && w1.version == 1 && !strcmp(w1.sha, sha1), "%s",
            w1.why);
  cr_assert_eq(w2.n, 1, "both waits answered by one fetch");
  cr_assert_null(edge_weights_wait_for(&b.a, &b.p, 1, 0, on_answer, &w3));

  /* corrupted at the source: refused; repaired: fetched */
  pod_file(&a, "w2.bin", 1 << 20, 2, sha2);
  cr_assert_eq(publish(&a, 2, "w2.bin").rc, 0);
  flip(a.dir, sha2);
  answer w4 = {0};
  cr_assert_not_null(edge_weights_wait_for(&b.a, &b.p, 2, 0, on_answer, &w4));
  project_weights(&b, 2, sha2, 1 << 20, addr);
  for (int i = 0; i < 500; i++)
    uv_run(&b.loop, UV_RUN_NOWAIT), usleep(1000);
  cr_assert_eq(w4.n, 0, "a corrupted copy was taken");
  flip(a.dir, sha2);
  run_until(&b, &w4, 1);
  cr_assert(w4.rc == 0 && w4.version == 2 && !strcmp(w4.sha, sha2));
  node_down(&a);
  node_down(&b);
  lt_rmtree(dir);
}

/*
 * test_edge_weights_cache.c - a node's weights cache on its own
 * (edge/weights.h), in process with a real store and a real libuv loop, no
 * broker: a pod's file published into <data>/weights/<sha256> (read only,
 * its SHA-256 as openssl computes it) with its weights.report queued in
 * the store; waits answered from what is held, parked until a publish, or
 * timed out; paths outside the pod's directory and non-files refused; the
 * drop policy (keep K, never the newest) with a dropped report each; the
 * index read back after a restart.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  char dir[512];
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
  n->a.cfg.node = "n1";
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
  node n;
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

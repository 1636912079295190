/*
 * test_edge_store.c - a node's local store (edge/store.c,
 * edge/store_engine.c), without a broker. Desired states: only a newer
 * version kept, and a forgotten pod's tombstone, which refuses every
 * older desired state (a stored copy or a push that comes after the pod
 * was forgotten through a newer one) but takes the same version again and
 * anything newer, hides from readers, outlives a reopen and is swept once
 * old enough. The RL engine's projections and per-pod engine rows: the
 * highest version kept, the body handed back as it came, a Job's rows
 * forgotten together, and a pod's row gone with the pod.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

static char dir[256];
static edge_store *s;

static void
setup(void) {
  snprintf(dir, sizeof dir, "/tmp/lark-edge-store-XXXXXX");
  cr_assert(mkdtemp(dir));
  cr_assert_eq(edge_store_open(&s, dir), 0, "%s", bus_last_error());
}

static void
teardown(void) {
  char cmd[300];
  edge_store_close(s);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

TestSuite(engine_store, .init = setup, .fini = teardown, .timeout = 30);

static void
expect_body(const char *job, const char *what, const char *want) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(edge_store_engine_get(s, job, what, &sb), 0, "%s",
               bus_last_error());
  cr_expect_eq(sb.size, strlen(want));
  cr_expect(sb.size == strlen(want) && !memcmp(sb.data, want, sb.size),
            "%s/%s: %.*s", job, what, (int)sb.size, sb.data);
  msgpack_sbuffer_destroy(&sb);
}

Test(engine_store, the_highest_version_is_kept) {
  int stored = -1;
  cr_assert_eq(edge_store_engine_put(s, "j", "stages", 5, "five", 4, &stored),
               0);
  cr_expect_eq(stored, 1);
  cr_assert_eq(edge_store_engine_put(s, "j", "stages", 3, "three", 5, &stored),
               0);
  cr_expect_eq(stored, 0, "an older version is not kept");
  cr_assert_eq(edge_store_engine_put(s, "j", "stages", 5, "again", 5, &stored),
               0);
  cr_expect_eq(stored, 0, "nor the same one again");
  expect_body("j", "stages", "five");
  cr_assert_eq(edge_store_engine_put(s, "j", "stages", 9, "nine", 4, &stored),
               0);
  cr_expect_eq(stored, 1);
  expect_body("j", "stages", "nine");
  /* a row of each kind, each on its own */
  cr_assert_eq(edge_store_engine_put(s, "j", "weights", 1, "w", 1, NULL), 0);
  cr_assert_eq(edge_store_engine_put(s, "j", "peers", 2, "p", 1, NULL), 0);
  expect_body("j", "weights", "w");
  expect_body("j", "peers", "p");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_expect_eq(edge_store_engine_get(s, "k", "stages", &sb), BUS_ENOT_FOUND);
  cr_expect_eq(edge_store_engine_get(s, "j", "nope", &sb), BUS_EINVAL);
  cr_expect_eq(edge_store_engine_put(s, "a/b", "stages", 1, "x", 1, NULL),
               BUS_EINVAL);
  msgpack_sbuffer_destroy(&sb);
}

static void
collect(const char *job, void *ud) {
  char *out = ud;
  strcat(out, job);
  strcat(out, " ");
}

Test(engine_store, a_jobs_rows_go_together_and_survive_a_reopen) {
  const char *whats[] = {"stages", "weights", "peers"};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(edge_store_engine_put(s, "ja", whats[i], 1, "a", 1, NULL), 0);
    cr_assert_eq(edge_store_engine_put(s, "jb", whats[i], 1, "b", 1, NULL), 0);
  }
  char jobs[256] = "";
  cr_assert_eq(edge_store_engine_jobs(s, collect, jobs), 0);
  cr_expect_str_eq(jobs, "ja jb ");
  edge_store_close(s);
  cr_assert_eq(edge_store_open(&s, dir), 0);
  expect_body("jb", "peers", "b");
  cr_assert_eq(edge_store_engine_forget(s, "ja"), 0);
  jobs[0] = 0;
  cr_assert_eq(edge_store_engine_jobs(s, collect, jobs), 0);
  cr_expect_str_eq(jobs, "jb ");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  for (int i = 0; i < 3; i++)
    cr_expect_eq(edge_store_engine_get(s, "ja", whats[i], &sb), BUS_ENOT_FOUND);
  msgpack_sbuffer_destroy(&sb);
  cr_expect_eq(edge_store_engine_forget(s, "ja"), 0, "forgetting twice");
}

Test(engine_store, a_pods_row_is_written_with_its_report_and_goes_with_it) {
  edge_engine_pod r = {.handed = 7, .done = {3, 0, 0, 1}}, got;
  cr_expect_eq(edge_store_engine_pod_get(s, "p1", &got), BUS_ENOT_FOUND);
  edge_msg m = {"lark.in.n1.engine.stage.p1", "stage.report", "\x80", 1};
  cr_assert_eq(edge_store_engine_pod_put(s, "p1", &r, &m), 0);
  cr_expect_eq(edge_store_queued(s), 1, "the report, in the same transaction");
  cr_assert_eq(edge_store_engine_pod_get(s, "p1", &got), 0);
  cr_expect_eq(got.handed, 7);
  cr_expect_eq(got.done[0], 3);
  cr_expect_eq(got.done[3], 1);
  cr_assert_eq(edge_store_forget(s, "p1", NULL), 0);
  cr_expect_eq(edge_store_engine_pod_get(s, "p1", &got), BUS_ENOT_FOUND);
}

TestSuite(edge_store, .init = setup, .fini = teardown, .timeout = 30);

/* Put pod's desired state at version v ("\x81\xa1v\x01": a map); whether
 * the store took it. */
static int
put(const char *pod, uint64_t v) {
  int stored = -1;
  cr_assert_eq(edge_store_desired_put(s, pod, v, "\x81\xa1v\x01", 4, &stored),
               0, "%s", bus_last_error());
  return stored;
}

static int
there(const char *pod) {
  void *data = NULL;
  size_t len = 0;
  int rc = edge_store_desired_get(s, pod, &data, &len);
  free(data);
  return rc == 0;
}

static void
count_cb(const char *pod, const void *data, size_t len, void *ud) {
  (void)pod, (void)data, (void)len;
  (*(int *)ud)++;
}

static int
rows(void) {
  int n = 0;
  cr_assert_eq(edge_store_desired_each(s, count_cb, &n), 0);
  return n;
}

Test(edge_store, only_newer_desired_states_are_kept) {
  cr_expect_eq(put("p", 5), 1);
  cr_expect_eq(put("p", 5), 0, "the same version again is nothing new");
  cr_expect_eq(put("p", 4), 0, "an older one never rolls the pod back");
  cr_expect_eq(put("p", 6), 1);
}

Test(edge_store, a_forgotten_pod_takes_nothing_older_again) {
  cr_assert_eq(put("p", 5), 1); /* Running */
  cr_assert_eq(put("p", 7), 1); /* Deleted */
  cr_assert_eq(put("q", 3), 1);
  cr_assert_eq(edge_store_forget(s, "p", NULL), 0, "%s", bus_last_error());
  cr_expect(!there("p"), "a tombstone is not a desired state");
  cr_expect_eq(rows(), 1, "readers see q alone");
  cr_expect_eq(put("p", 5), 0, "the stale Running taken after the forget");
  cr_expect_eq(put("p", 6), 0);
  edge_store_close(s);
  cr_assert_eq(edge_store_open(&s, dir), 0, "%s", bus_last_error());
  cr_expect_eq(put("p", 5), 0, "the tombstone outlives a reopen");
  cr_expect_eq(put("p", 7), 1, "its own version again: forgotten again");
  cr_expect(there("p"));
  cr_assert_eq(edge_store_forget(s, "p", NULL), 0);
  cr_expect_eq(put("p", 9), 1, "a newer generation of the pod");
  cr_expect_eq(rows(), 2);
  cr_expect_eq(edge_store_forget(s, "never-was", NULL), 0);
  cr_expect_eq(put("never-was", 1), 1, "no row, no tombstone");
}

Test(edge_store, old_tombstones_are_swept) {
  cr_assert_eq(put("old", 5), 1);
  cr_assert_eq(edge_store_forget(s, "old", NULL), 0);
  edge_store_tomb_keep(s, 0);
  sleep(2);
  /* a sweep comes with every 256th forget */
  for (int i = 0; i < 256; i++) {
    char pod[16];
    snprintf(pod, sizeof pod, "p%d", i);
    cr_assert_eq(edge_store_forget(s, pod, NULL), 0);
  }
  cr_expect_eq(put("old", 1), 1, "the old tombstone was swept");
  edge_store_tomb_keep(s, EDGE_TOMB_KEEP_S);
  cr_assert_eq(put("young", 5), 1);
  cr_assert_eq(edge_store_forget(s, "young", NULL), 0);
  for (int i = 0; i < 256; i++) {
    char pod[16];
    snprintf(pod, sizeof pod, "q%d", i);
    cr_assert_eq(edge_store_forget(s, pod, NULL), 0);
  }
  cr_expect_eq(put("young", 1), 0, "a young tombstone stays");
}

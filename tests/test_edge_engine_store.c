/*
 * test_edge_engine_store.c - the node's copy of the RL engine's
 * projections and its per-pod engine rows in the local store
 * (edge/store_engine.c), without a broker: the highest version kept, the
 * body handed back as it came, a Job's rows forgotten together, and a
 * pod's row gone with the pod.
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
  snprintf(dir, sizeof dir, "/tmp/lark-engine-store-XXXXXX");
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

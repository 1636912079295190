/*
 * test_edge_idle.c - an idle node's timing (docs/design.md "Idle nodes"):
 * lark-edge with its production pull wait and heartbeat (30 s, 60 s),
 * under its own credentials, against a real broker and lark-scheduler.
 * What the long pull must not cost: a placement reaches the node at once,
 * not at the end of the pull it is waiting in; and SIGTERM stops the agent
 * at once, not after that pull.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bed.h"
#include "cmd_check.h"
#include "proc.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t sched, edge;

static void
setup(void) {
  const char *nodes[] = {"idle-1", NULL};
  /* lark-edge's defaults: given here so that bed.c's short test timing
   * (which comes first on the command line) is overridden */
  const char *extra[] = {"--slice-wait", "30", "--heartbeat", "60", NULL};
  lt_tmpdir(dir, sizeof dir, "edge_idle");
  sched = lt_edge_bed_up(&srv, &conn, dir, nodes);
  edge = lt_must_start_edge(srv.url, dir, "idle-1", 1, extra);
}

static void
teardown(void) {
  pid_t pids[] = {edge, sched};
  lt_bed_down(&srv, conn, dir, pids, 2);
}

TestSuite(edge_idle, .init = setup, .fini = teardown, .timeout = 120);

#define wait_field(kind, name, key, want, seconds)                             \
  lt_field_becomes(conn, kind, lt_sub_of(kind), name, key, want, seconds)

/* The node Ready and its agent reading its slice: a pull is waiting. */
static void
idle_node(void) {
  char log[600];
  snprintf(log, sizeof log, "%s/idle-1.log", dir);
  cr_assert(wait_field("node", "idle-1", "status", "Ready", 30));
  cr_assert(lt_file_says(log, "reading the slice", 30),
            "the agent never opened its slice");
  lt_sleep_ms(1500);
}

Test(edge_idle, a_placement_does_not_wait_for_the_held_pull) {
  idle_node();
  json_t *spec = json_pack(
      "{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:i,s:{s:i,s:i},s:{s:{s:[s,s]}}}]}}",
      "apiVersion", "rlinf.io/v1alpha1", "kind", "Job", "metadata", "name",
      "quick", "spec", "tasks", "name", "a", "role", "Actor", "replicas", 1,
      "resources", "cpu", 1, "memory", 64, "runtime", "raw", "entrypoint",
      "sleep", "30");
  cr_assert_not_null(spec);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  int64_t t0 = lt_now_ms();
  msgpack_object r = lt_must_command_json(
      conn, "job", "apply", json_pack("{s:o}", "resource", spec), &z);
  cr_assert_null(bus_obj_get(&r, "error"), "job apply refused");
  msgpack_zone_destroy(&z);
  /* well inside the 30 s the node's pull may still be held */
  cr_assert(wait_field("pod", "quick-a-0", "phase", "Running", 10));
  cr_expect_lt(lt_now_ms() - t0, 10000);
}

Test(edge_idle, sigterm_does_not_wait_for_the_held_pull) {
  idle_node();
  int64_t t0 = lt_now_ms();
  int st = lt_kill(edge, SIGTERM);
  int64_t took = lt_now_ms() - t0;
  edge = -1;
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "lark-edge status %d", st);
  cr_expect_lt(took, 5000, "lark-edge took %lld ms to stop", (long long)took);
}

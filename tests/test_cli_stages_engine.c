/*
 * test_cli_stages_engine.c - larkctl get stages and get peers against the
 * real lark-engine on a real broker. The test plays the scheduler (a
 * Job's submission, placement and phase, as lark-scheduler appends them)
 * and the nodes (stage.report on their ingress subjects, as lark-edge
 * sends them); larkctl runs as a process and is read as a user reads
 * it: the timeline as the stages start and end, --at before a step
 * ended (a replay of the view "engine"), -w printing the steps that start
 * and end after it, the peers with their nodes, every Job's current
 * stage, and replay engine --verify.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "files.h"
#include "proc.h"
#include "schedplay.h"
#include "service.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], larkctl[512];
static char out[1 << 16], err[8192];
static pid_t procs[1];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "cli-stages-engine", 1000);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  lt_larkctl_env(srv.url, dir);
  unsetenv("LARK_USER");
  procs[0] =
      lt_must_start("lark-engine", srv.url, dir, "engine", "engine.log", NULL);
  cr_assert(lt_service_answers(conn, "engine", 100),
            "lark-engine does not answer; see %s/engine.log", dir);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 1);
}

TestSuite(cli_stages_engine, .init = setup, .fini = teardown, .timeout = 120);

#define run(...) lt_runl(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* Job rl-t, sequential: a learner (Actor) on n1, samplers (Rollout) 0
 * on n1 and 1 on n2; placed, then Running. */
static void
job_running(void) {
  lt_sched_rl_job(conn, conn, "rl-t", 0);
}

/* Node n reports pod's stage step done, as lark-edge does. */
static void
report(const char *node, const char *pod, const char *stage, uint64_t step) {
  cr_assert_eq(lt_stage_report(conn, node, "rl-t", pod, stage, step, 3), 0);
}

/* Whether out has a row "STAGE STEP ..." whose DURATION is dur (or, with
 * dur "ended", anything but running) and DONE done; NULL: any. */
static int
has_row(const char *stage, int step, const char *dur, const char *done) {
  char copy[sizeof out];
  snprintf(copy, sizeof copy, "%s", out);
  for (char *save, *l = strtok_r(copy, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    char st[32], w[8][64];
    int n;
    if (sscanf(l, "%31s %d %63s %63s %63s %63s", st, &n, w[0], w[1], w[2],
               w[3]) != 6 ||
        strcmp(st, stage) || n != step)
      continue;
    int ended = strcmp(w[2], "running") != 0;
    if ((!strcmp(dur, "ended") ? ended : !strcmp(w[2], dur)) &&
        (!done || !strcmp(w[3], done)))
      return 1;
  }
  return 0;
}

/* Wait until `get stages rl-t` has that row. */
static int
becomes(const char *stage, int step, const char *dur, const char *done) {
  for (int i = 0; i < 100; i++, lt_sleep_ms(100))
    if (run(larkctl, "get", "stages", "rl-t", NULL) == 0 &&
        has_row(stage, step, dur, done))
      return 1;
  cr_log_error("no %s %d %s %s in\n%s%s", stage, step, dur, done ? done : "",
               out, err);
  return 0;
}

Test(cli_stages_engine, timeline_at_watch_peers) {
  cr_assert_eq(run(larkctl, "get", "stages", "rl-t", NULL), 1);
  cr_expect(strstr(err, "NOT_FOUND"), "an unknown Job: %s", err);
  job_running();
  cr_assert(becomes("rollout", 0, "running", "0/2"));
  cr_expect(strstr(out, "Job rl-t  mode sequential"), "%s", out);
  /* --at takes whole seconds: the next one, and the reports after it */
  int64_t at_s = bus_wall_ns() / 1000000000 + 1;
  while (bus_wall_ns() < at_s * 1000000000 + 200000000)
    lt_sleep_ms(50);
  report("n1", "rl-t-sampler-0", "rollout", 0);
  report("n2", "rl-t-sampler-1", "rollout", 0);
  cr_assert(becomes("update_dataset", 0, "running", "0/1"));
  cr_expect(has_row("rollout", 0, "ended", "2/2"), "%s", out);
  cr_expect(strstr(out, "rl-t-sampler-"), "who was last: %s", out);
  /* as it was before the reports: rollout 0 running, nothing after it */
  char at[32];
  snprintf(at, sizeof at, "%lld", (long long)at_s);
  cr_assert_eq(run(larkctl, "get", "stages", "rl-t", "--at", at, NULL), 0, "%s",
               err);
  cr_expect(has_row("rollout", 0, "running", NULL), "--at %s:\n%s", at, out);
  cr_expect_null(strstr(out, "update_dataset"), "--at %s:\n%s", at, out);
  /* -w: update_dataset 0 ends, train 0 starts */
  char log[512];
  snprintf(log, sizeof log, "%s/watch.log", dir);
  char *argv[] = {larkctl,        (char *)"get", (char *)"stages",
                  (char *)"rl-t", (char *)"-w",  NULL};
  pid_t w = lt_spawn(argv, log);
  lt_sleep_ms(1000);
  report("n1", "rl-t-learner-0", "update_dataset", 0);
  int seen = 0;
  for (int i = 0; i < 100 && !seen; i++, lt_sleep_ms(100))
    seen = lt_read_file(log, out, sizeof out) &&
           has_row("train", 0, "running", "0/1");
  lt_kill(w, SIGINT);
  cr_expect(seen, "-w printed no train 0:\n%s", out);
  cr_expect(has_row("update_dataset", 0, "ended", "1/1"), "%s", out);
  /* the peers, every Job's current stage, the replay */
  cr_assert_eq(run(larkctl, "get", "peers", "rl-t", NULL), 0, "%s", err);
  cr_expect(strstr(out, "rl-t-sampler-1") && strstr(out, "n2") &&
                strstr(out, "Rollout") && strstr(out, "rl-t-learner-0"),
            "%s", out);
  cr_assert_eq(run(larkctl, "get", "stages", NULL), 0, "%s", err);
  cr_expect(strstr(out, "rl-t") && strstr(out, "train"), "%s", out);
  cr_expect_eq(run(larkctl, "replay", "engine", "--verify", NULL), 0, "%s%s",
               out, err);
}

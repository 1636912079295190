/*
 * test_example_rl_engine.c - examples/rl-engine.yaml as a user runs it:
 * `larkctl up --nodes 2` (broker, every service with lark-engine, two
 * edge nodes, every process real under its own credentials), both Jobs
 * applied, and what the user then sees:
 *
 *   - rl-seq (sequential) and rl-pipe (pipeline, maxStaleness 1) reach
 *     Succeeded: their stand-in learner (examples/rl_learner.py) published
 *     four weights versions through larkbus.Run, their samplers
 *     (examples/rl_sampler.py) loaded them from their own node and found
 *     the bytes the learner wrote (they exit non-zero otherwise);
 *   - `larkctl tail` shows weights.published with the sha256 of those
 *     bytes (computed here from the learner's own function), the
 *     samplers' node fetching them (weights.cached: the Jobs are
 *     disaggregate), and no rl-pipe rollout more than one sync ahead;
 *   - `larkctl get stages JOB` names each stage with each of its four
 *     steps, all ended; describe job has its Stages section;
 *   - `larkctl replay engine --verify` holds.
 *
 * And a sampler killed (-9) in the middle of a rollout step: its pod is
 * retried (maxRetries 1), the new attempt joins the Job at the current
 * step, and the run goes on to Succeeded with every step once.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

#define STEPS 4

static lt_platform plat;
static char out[1 << 18], errout[1 << 14];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, errout, sizeof errout, __VA_ARGS__)

static void
platform_up(void) {
  const char *const extra[] = {"--nodes", "2", NULL};
  /* A short pull and beat, as tests keep them (docs/design.md, "Idle
   * nodes"): a node whose slice consumer is made anew after the sampler's
   * kill would otherwise see the retry only when its held pull's 30 s
   * wait ends, which under ASan is past the run's step. */
  setenv("LARK_SLICE_WAIT", "1", 1);
  setenv("LARK_HEARTBEAT", "0.5", 1);
  lt_example_ready(&plat, "rlengine", extra);
}

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(example, .init = platform_up, .fini = platform_down, .timeout = 280);

/* The sha256 of version's bytes, as examples/rl_learner.py writes them. */
static void
expected_sha(const char *job, int version, char sha[65]) {
  char o[256], e[1024];
  int rc = lt_sh(o, sizeof o, e, sizeof e,
                 "python3 -c 'import sys, hashlib; sys.path.insert(0, "
                 "\"%s/examples\"); import rl_learner; print(hashlib.sha256("
                 "rl_learner.weights_bytes(\"%s\", %d)).hexdigest())'",
                 lt_source_dir(), job, version);
  cr_assert_eq(rc, 0, "%s", e);
  snprintf(sha, 65, "%.64s", o);
}

/* Every (stage, step) of the four stages and STEPS steps is in the
 * timeline (stages.get's answer as JSON), and ended. */
static void
expect_every_step(const char *job, json_t *r) {
  static const char *const stages[] = {"rollout", "update_dataset", "train",
                                       "sync_weights"};
  int seen[4][STEPS] = {{0}};
  json_t *steps = json_object_get(r, "steps"), *s;
  size_t i;
  json_array_foreach(steps, i, s) {
    const char *st = json_string_value(json_object_get(s, "stage"));
    json_int_t n = json_integer_value(json_object_get(s, "step"));
    for (int k = 0; st && k < 4; k++)
      if (!strcmp(st, stages[k]) && n >= 0 && n < STEPS) {
        seen[k][n]++;
        cr_expect(json_integer_value(json_object_get(s, "ended")) > 0,
                  "%s: %s %d not ended", job, st, (int)n);
      }
  }
  for (int k = 0; k < 4; k++)
    for (int n = 0; n < STEPS; n++)
      cr_expect_eq(seen[k][n], 1, "%s: %s step %d seen %d times", job,
                   stages[k], n, seen[k][n]);
}

static void
expect_stages(const char *job, const char *mode) {
  cr_assert_eq(ctl("get stages %s -o json", job), 0, "%s", errout);
  json_t *r = json_loads(out, 0, NULL);
  cr_assert(r, "%s", out);
  cr_expect_str_eq(json_string_value(json_object_get(r, "mode")), mode);
  expect_every_step(job, r);
  json_decref(r);
  /* the table names each stage with its steps: a row "STAGE STEP ..." */
  cr_assert_eq(ctl("get stages %s", job), 0, "%s", errout);
  cr_expect(strstr(out, "Job ") && strstr(out, mode), "%s", out);
  static const char *const stages[] = {"rollout", "update_dataset", "train",
                                       "sync_weights"};
  int rows[4][STEPS] = {{0}};
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
    char stage[32];
    int step;
    if (sscanf(l, "%31s %d", stage, &step) != 2 || step < 0 || step >= STEPS)
      continue;
    for (int k = 0; k < 4; k++)
      rows[k][step] += !strcmp(stage, stages[k]);
  }
  for (int k = 0; k < 4; k++)
    for (int n = 0; n < STEPS; n++)
      cr_expect_eq(rows[k][n], 1, "%s: %d rows for %s %d", job, rows[k][n],
                   stages[k], n);
}

/* tail shows job's weights.published for each version with its sha256. */
static void
expect_published(const char *job) {
  cr_assert_eq(ctl("tail lark.ev.engine.%s --type weights.published", job), 0,
               "%s", errout);
  for (int v = 1; v <= STEPS; v++) {
    char sha[65];
    expected_sha(job, v, sha);
    cr_expect(strstr(out, sha), "%s: version %d's sha256 %s not in\n%s", job, v,
              sha, out);
  }
}

/* The samplers' node fetched the versions from the learner's (the Jobs
 * are disaggregate: learner and samplers on different nodes). */
static void
expect_fetched(const char *job) {
  cr_assert_eq(ctl("tail lark.ev.engine.%s --type weights.cached", job), 0,
               "%s", errout);
  cr_expect(strstr(out, "weights.cached"), "%s: no version fetched:\n%s", job,
            out);
}

/* In rl-pipe no rollout started more than maxStaleness (1) completed
 * syncs ahead: step - syncs <= 1 in every stage.started of rollout. */
static void
expect_staleness_held(void) {
  cr_assert_eq(ctl("tail lark.ev.engine.rl-pipe --type stage.started -o json"),
               0, "%s", errout);
  int rollouts = 0;
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
    json_t *e = json_loads(l, 0, NULL), *d = json_object_get(e, "data");
    const char *st = json_string_value(json_object_get(d, "stage"));
    if (st && !strcmp(st, "rollout")) {
      json_int_t step = json_integer_value(json_object_get(d, "step"));
      json_int_t syncs = json_integer_value(json_object_get(d, "syncs"));
      cr_expect_leq(step - syncs, 1, "rollout %d started after %d syncs",
                    (int)step, (int)syncs);
      rollouts++;
    }
    json_decref(e);
  }
  cr_expect_geq(rollouts, STEPS, "%d rollouts started", rollouts);
}

Test(example, rl_engine_runs_both_loops_to_the_end) {
  char file[1024];
  snprintf(file, sizeof file, "%s/examples/rl-engine.yaml", lt_source_dir());
  cr_assert_eq(ctl("apply -f %s", file), 0, "%s%s", out, errout);
  int seq = ctl("wait job rl-seq --for Succeeded --timeout 180s");
  cr_assert_eq(seq, 0, "rl-seq: %s%s", out, errout);
  int pipe = ctl("wait job rl-pipe --for Succeeded --timeout 60s");
  cr_assert_eq(pipe, 0, "rl-pipe: %s%s", out, errout);
  /* the pod's lines reach the log store on their own path, which may end
   * after the Job's phase: read them until the line is there (20 s) */
  cr_expect(lt_larkctl_until(&plat, out, sizeof out, errout, sizeof errout,
                             "loaded weights version 4", 20, "logs job rl-seq"),
            "%s%s", out, errout);
  expect_published("rl-seq");
  expect_published("rl-pipe");
  expect_fetched("rl-seq");
  expect_fetched("rl-pipe");
  expect_staleness_held();
  expect_stages("rl-seq", "sequential");
  expect_stages("rl-pipe", "pipeline");
  cr_assert_eq(ctl("describe job rl-pipe"), 0, "%s", errout);
  cr_expect(strstr(out, "\nStages:\n") && strstr(out, "maxStaleness 1"), "%s",
            out);
  cr_assert_eq(ctl("get peers rl-seq"), 0, "%s", errout);
  cr_expect(strstr(out, "rl-seq-learner-0") && strstr(out, "rl-seq-sampler-1"),
            "%s", out);
  cr_expect_eq(ctl("replay engine --verify"), 0, "%s%s", out, errout);
}

/* rl-seq's loop again, as Job rl-retry: the samplers' rollouts take
 * seconds and may be retried once. */
static const char retry_yaml[] =
    "apiVersion: rlinf.io/v1alpha1\n"
    "kind: Job\n"
    "metadata: {name: rl-retry}\n"
    "spec:\n"
    "  strategy: disaggregate\n"
    "  engine: {mode: sequential}\n"
    "  tasks:\n"
    "    - name: sampler\n"
    "      role: Rollout\n"
    "      replicas: 2\n"
    "      maxRetries: 1\n"
    "      runtime:\n"
    "        raw:\n"
    "          entrypoint: [/bin/sh, -c,\n"
    "            'exec python3 \"$LARKBUS_HOME/examples/rl_sampler.py\"']\n"
    "          environment:\n"
    "            - {name: RL_STEPS, value: \"4\"}\n"
    "            - {name: RL_ROLLOUT_SECONDS, value: \"3\"}\n"
    "    - name: learner\n"
    "      role: Actor\n"
    "      runtime:\n"
    "        raw:\n"
    "          entrypoint: [/bin/sh, -c,\n"
    "            'exec python3 \"$LARKBUS_HOME/examples/rl_learner.py\"']\n"
    "          environment:\n"
    "            - {name: RL_STEPS, value: \"4\"}\n";

/* The pid of the process whose environment has LARK_POD=pod and whose
 * command line runs script; 0 when none. */
static pid_t
pod_process(const char *pod, const char *script) {
  char want[300], path[64], buf[65536];
  snprintf(want, sizeof want, "LARK_POD=%s", pod);
  DIR *d = opendir("/proc");
  pid_t found = 0;
  for (struct dirent *e; d && !found && (e = readdir(d));) {
    pid_t pid = (pid_t)atoi(e->d_name);
    FILE *f = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    if (pid <= 0 || !(f = fopen(path, "r")))
      continue;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    if (!memmem(buf, n, script, strlen(script)))
      continue;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    if (!(f = fopen(path, "r")))
      continue;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1)
      if (!strcmp(buf + at, want))
        found = pid;
  }
  if (d)
    closedir(d);
  return found;
}

/* Wait (60 s) until rollout step is the Job's current, running stage. */
static void
wait_rollout_running(const char *job, int step) {
  for (int t = 0; t < 600; t++, usleep(100000)) {
    if (ctl("get stages %s -o json", job))
      continue;
    json_t *r = json_loads(out, 0, NULL), *s;
    size_t i;
    int running = 0;
    json_array_foreach(json_object_get(r, "steps"), i, s) {
      const char *st = json_string_value(json_object_get(s, "stage"));
      running |= st && !strcmp(st, "rollout") &&
                 json_integer_value(json_object_get(s, "step")) == step &&
                 !json_integer_value(json_object_get(s, "ended"));
    }
    json_decref(r);
    if (running)
      return;
  }
  cr_assert_fail("%s: rollout step %d never ran:\n%s", job, step, out);
}

Test(example, a_sampler_killed_mid_rollout_is_retried_and_the_run_goes_on) {
  char file[512];
  snprintf(file, sizeof file, "%s/rl-retry.yaml", plat.dir);
  cr_assert_eq(lt_write_file(file, "%s", retry_yaml), 0);
  cr_assert_eq(ctl("apply -f %s", file), 0, "%s%s", out, errout);
  wait_rollout_running("rl-retry", 1);
  pid_t pid = pod_process("rl-retry-sampler-0", "rl_sampler.py");
  cr_assert(pid > 0, "no process of rl-retry-sampler-0");
  cr_assert_eq(kill(pid, SIGKILL), 0);
  cr_assert_eq(ctl("wait job rl-retry --for Succeeded --timeout 180s"), 0,
               "%s%s", out, errout);
  /* the kill failed attempt 0; attempt 1 ran to the end */
  cr_assert_eq(ctl("tail lark.ev.pod.rl-retry-sampler-0 --type pod.phase "
                   "-o json"),
               0, "%s", errout);
  cr_expect(strstr(out, "\"Failed\""), "%s", out);
  cr_expect(strstr(out, "\"attempt\": 1") || strstr(out, "\"attempt\":1"), "%s",
            out);
  cr_assert_eq(ctl("get stages rl-retry -o json"), 0, "%s", errout);
  json_t *r = json_loads(out, 0, NULL);
  cr_assert(r, "%s", out);
  expect_every_step("rl-retry", r);
  json_decref(r);
  cr_expect_eq(ctl("replay engine --verify"), 0, "%s%s", out, errout);
}

/*
 * test_cli_stages.c - larkctl get stages, get peers and describe job's
 * Stages section, run as a process against a real broker, with the
 * answers of lark-engine's queries fixed: a responder in this test serves
 * the command kinds stages, peers and job with the contract's shapes, so
 * every line larkctl prints is known. Checked: the timeline's header and
 * rows (newest at the bottom, a running step says so, durations as
 * people read them), -o json is the answer, the list of Jobs, the peers
 * table, describe job's per-stage summary and weights versions, -w
 * printing a step when it starts and when it ends, an unknown Job and a
 * missing engine told apart, bad input refused with a usage.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "json.h"
#include "natsd.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], larkctl[512];
static char out[1 << 16], err[8192];
static bus_serve *serves[3];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *timeline; /* stages.get's answer for rl-seq, JSON */

#define SHA1 "1f0b6b3c4b1f1e0c9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e"
#define SHA2 "2a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40414243444546474849"

/* Two steps of each stage ended, rollout 2 running; sampler-1 was last
 * in both rollouts. Times: 2026-12-01T10:00:00Z and after. */
#define T0 "1796119200000000000"
#define STEP(stage, step, w, started, ended, ms, done, of, last)               \
  "{\"stage\":\"" stage "\",\"step\":" #step ",\"weights\":" #w                \
  ",\"started\":" started ",\"ended\":" ended ",\"ms\":" #ms                   \
  ",\"done\":" #done ",\"of\":" #of ",\"last\":\"" last                        \
  "\",\"metrics\":{\"reward\":0.5}}"
static const char *const base_steps[] = {
    STEP("rollout", 0, 0, T0, "1796119201500000000", 1500, 2, 2,
         "rl-seq-sampler-1"),
    STEP("train", 0, 0, "1796119201500000000", "1796119201750000000", 250, 1, 1,
         "rl-seq-learner-0"),
    STEP("sync_weights", 0, 1, "1796119201750000000", "1796119202000000000",
         250, 3, 3, "rl-seq-sampler-0"),
    STEP("rollout", 1, 1, "1796119202000000000", "1796119205500000000", 3500, 2,
         2, "rl-seq-sampler-1"),
};
static const char running[] =
    "{\"stage\":\"train\",\"step\":1,\"weights\":1,\"started\":"
    "1796119205500000000,\"ended\":0,\"ms\":0,\"done\":0,\"of\":1}";
static const char train_ended[] =
    STEP("train", 1, 1, "1796119205500000000", "1796119206700000000", 1200, 1,
         1, "rl-seq-learner-0");

/* The timeline with the given last step(s) after the base ones. */
static void
set_timeline(const char *tail) {
  char *t = NULL;
  int n = asprintf(
      &t,
      "{\"job\":\"rl-seq\",\"generation\":1,\"mode\":\"sequential\","
      "\"maxStaleness\":1,\"phase\":\"Running\",\"ended\":false,\"syncs\":1,"
      "\"weights\":1,\"current\":[],\"steps\":[%s,%s,%s,%s,%s],"
      "\"versions\":["
      "{\"version\":1,\"size\":1048576,\"sha256\":\"" SHA1
      "\",\"pod\":\"rl-seq-learner-0\",\"node\":\"node-1\",\"ts\":" T0
      ",\"nodes\":[\"node-1\",\"node-2\"]}],\"peers\":3}",
      base_steps[0], base_steps[1], base_steps[2], base_steps[3], tail);
  cr_assert(n > 0);
  pthread_mutex_lock(&lock);
  free(timeline);
  timeline = t;
  pthread_mutex_unlock(&lock);
}

static const char list_answer[] =
    "{\"items\":[{\"job\":\"rl-seq\",\"mode\":\"sequential\",\"phase\":"
    "\"Running\",\"stage\":\"train\",\"step\":1,\"weights\":1,\"ended\":false},"
    "{\"job\":\"rl-pipe\",\"mode\":\"pipeline\",\"phase\":\"Succeeded\","
    "\"stage\":\"sync_weights\",\"step\":3,\"weights\":4,\"ended\":true}]}";
static const char peers_answer[] =
    "{\"job\":\"rl-seq\",\"peers\":[{\"pod\":\"rl-seq-learner-0\",\"task\":"
    "\"rl-seq-learner\",\"role\":\"Actor\",\"node\":\"node-1\",\"cluster\":"
    "\"c1\",\"address\":\"10.1.0.5\",\"attempt\":0,\"phase\":\"Running\"},"
    "{\"pod\":\"rl-seq-sampler-0\",\"task\":\"rl-seq-sampler\",\"role\":"
    "\"Rollout\",\"node\":\"node-2\",\"cluster\":\"c1\",\"address\":\"\","
    "\"attempt\":1,\"phase\":\"Pending\"}]}";
static const char job_answer[] =
    "{\"job\":{\"name\":\"rl-seq\",\"phase\":\"Running\"}}";

/* {ok, seq, result: json} to cmd. */
static void
reply_json(bus_conn *c, const bus_cmd *cmd, const char *text) {
  json_t *j = json_loads(text, 0, NULL);
  cr_assert(j, "bad fixture: %s", text);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_str_with_body(&b.pk, "result", 6);
  lt_pack_json(&b.pk, j);
  bus_cmd_reply_ok(c, cmd, 0, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
  json_decref(j);
}

/* The stand-in for lark-engine (and the scheduler's job.describe). */
static void
answer(bus_conn *c, const bus_cmd *cmd, void *ud) {
  (void)ud;
  char name[64] = "";
  bus_obj_str(&cmd->body, "name", name, sizeof name);
  int known = !name[0] || !strcmp(name, "rl-seq");
  if (!known) {
    bus_cmd_reply_error(c, cmd, BUS_ENOT_FOUND, "no engine for that Job", NULL,
                        0);
  } else if (!strcmp(cmd->kind, "job")) {
    reply_json(c, cmd, job_answer);
  } else if (!strcmp(cmd->kind, "peers")) {
    reply_json(c, cmd, peers_answer);
  } else if (!strcmp(cmd->verb, "list")) {
    reply_json(c, cmd, list_answer);
  } else {
    pthread_mutex_lock(&lock);
    char *t = strdup(timeline);
    pthread_mutex_unlock(&lock);
    reply_json(c, cmd, t);
    free(t);
  }
}

static void
serve_engine(void) {
  static const char *const kinds[] = {"stages", "peers", "job"};
  for (int i = 0; i < 3; i++)
    cr_assert_eq(bus_cmd_serve(conn, kinds[i], answer, NULL, &serves[i]), 0,
                 "%s", bus_last_error());
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "cli-stages", 1000);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  lt_larkctl_env(srv.url, dir);
  unsetenv("LARK_USER");
  set_timeline(running);
}

static void
teardown(void) {
  for (int i = 0; i < 3; i++)
    if (serves[i])
      bus_conn_unserve(serves[i]);
  memset(serves, 0, sizeof serves);
  lt_bed_down(&srv, conn, dir, NULL, 0);
  free(timeline);
  timeline = NULL;
}

TestSuite(cli_stages, .init = setup, .fini = teardown, .timeout = 60);

#define run(...) lt_runl(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* The line of out holding needle, or fail. */
static const char *
line_with(const char *needle, char *buf, size_t cap) {
  const char *p = strstr(out, needle);
  cr_assert(p, "no line with '%s' in:\n%s", needle, out);
  while (p > out && p[-1] != '\n')
    p--;
  snprintf(buf, cap, "%.*s", (int)strcspn(p, "\n"), p);
  return buf;
}

/* The words of line, split on blanks, into w (at most n); how many. */
static int
words(char *line, char **w, int n) {
  int k = 0;
  for (char *s = strtok(line, " \n"); s && k < n; s = strtok(NULL, " \n"))
    w[k++] = s;
  return k;
}

Test(cli_stages, timeline_table) {
  serve_engine();
  cr_assert_eq(run(larkctl, "get", "stages", "rl-seq", NULL), 0, "%s", err);
  char l[512], *w[12];
  line_with("Job rl-seq", l, sizeof l);
  cr_expect(strstr(l, "mode sequential") && strstr(l, "phase Running") &&
                strstr(l, "weights 1") && strstr(l, "syncs 1"),
            "%s", l);
  cr_expect_null(strstr(l, "maxStaleness"), "sequential: %s", l);
  line_with("STAGE", l, sizeof l);
  cr_assert_eq(words(l, w, 12), 7, "%s", out);
  const char *cols[] = {"STAGE",    "STEP", "WEIGHTS", "STARTED",
                        "DURATION", "DONE", "LAST"};
  for (int i = 0; i < 7; i++)
    cr_expect_str_eq(w[i], cols[i]);
  /* rollout 0: started 10:00:00, 1.50s, 2/2, sampler-1 last */
  line_with("rl-seq-sampler-1", l, sizeof l);
  cr_assert_eq(words(l, w, 12), 7, "%s", out);
  cr_expect_str_eq(w[0], "rollout");
  cr_expect_str_eq(w[1], "0");
  cr_expect_str_eq(w[3], "2026-12-01T10:00:00.000Z");
  cr_expect_str_eq(w[4], "1.50s");
  cr_expect_str_eq(w[5], "2/2");
  line_with("250ms", l, sizeof l);
  cr_expect(strstr(l, "train") && strstr(l, "rl-seq-learner-0"), "%s", l);
  /* the newest at the bottom: train 1, running, no one last yet */
  const char *lastline = out + strlen(out) - 1;
  while (lastline > out && lastline[-1] != '\n')
    lastline--;
  snprintf(l, sizeof l, "%.500s", lastline);
  cr_assert_eq(words(l, w, 12), 7, "%s", out);
  cr_expect_str_eq(w[0], "train");
  cr_expect_str_eq(w[1], "1");
  cr_expect_str_eq(w[4], "running");
  cr_expect_str_eq(w[5], "0/1");
  cr_expect_str_eq(w[6], "-");
  /* -o wide adds each step's metric means */
  cr_assert_eq(run(larkctl, "get", "stages", "rl-seq", "-o", "wide", NULL), 0);
  cr_expect(strstr(out, "METRICS") && strstr(out, "reward=0.5"), "%s", out);
}

Test(cli_stages, json_is_the_answer) {
  serve_engine();
  cr_assert_eq(run(larkctl, "get", "stages", "rl-seq", "-o", "json", NULL), 0,
               "%s", err);
  json_t *j = json_loads(out, 0, NULL), *want = json_loads(timeline, 0, NULL);
  cr_assert(j, "%s", out);
  cr_expect(json_equal(j, want), "%s", out);
  json_decref(j);
  json_decref(want);
  cr_assert_eq(run(larkctl, "get", "stages", "rl-seq", "-o", "name", NULL), 0);
  cr_expect_str_eq(out, "stages/rl-seq\n");
}

Test(cli_stages, list_and_peers) {
  serve_engine();
  char l[512], *w[12];
  cr_assert_eq(run(larkctl, "get", "stages", NULL), 0, "%s", err);
  line_with("JOB", l, sizeof l);
  cr_expect(strstr(l, "MODE") && strstr(l, "STAGE") && strstr(l, "STEP"), "%s",
            l);
  line_with("rl-pipe", l, sizeof l);
  cr_assert_eq(words(l, w, 12), 7, "%s", out);
  cr_expect_str_eq(w[1], "pipeline");
  cr_expect_str_eq(w[3], "sync_weights");
  cr_expect_str_eq(w[6], "true");
  cr_assert_eq(run(larkctl, "get", "peers", "rl-seq", NULL), 0, "%s", err);
  line_with("rl-seq-learner-0", l, sizeof l);
  cr_assert_eq(words(l, w, 12), 8, "%s", out);
  cr_expect_str_eq(w[2], "Actor");
  cr_expect_str_eq(w[5], "10.1.0.5");
  line_with("rl-seq-sampler-0", l, sizeof l);
  cr_expect(strstr(l, "Pending") && strstr(l, "Rollout"), "%s", l);
  cr_assert_eq(run(larkctl, "get", "peers", "rl-seq", "-o", "name", NULL), 0);
  cr_expect_str_eq(out, "peers/rl-seq-learner-0\npeers/rl-seq-sampler-0\n");
}

Test(cli_stages, describe_job_has_stages) {
  serve_engine();
  cr_assert_eq(run(larkctl, "describe", "job", "rl-seq", NULL), 0, "%s", err);
  char l[512], *w[12];
  cr_assert(strstr(out, "\nStages:\n"), "%s", out);
  line_with("Mode:", l, sizeof l);
  cr_expect(strstr(l, "sequential"), "%s", l);
  /* rollout: latest 1, mean of 1.5 s and 3.5 s, sampler-1 last twice */
  line_with("  rollout", l, sizeof l);
  cr_assert_eq(words(l, w, 12), 7, "%s", out);
  cr_expect_str_eq(w[1], "1");
  cr_expect_str_eq(w[2], "2.50s");
  cr_expect_str_eq(w[3], "rl-seq-sampler-1");
  cr_expect_str_eq(w[4], "(2");
  /* train: latest 1 (running), the mean of the ended one */
  line_with("  train", l, sizeof l);
  cr_assert_gt(words(l, w, 12), 3, "%s", l);
  cr_expect_str_eq(w[1], "1");
  cr_expect_str_eq(w[2], "250ms");
  line_with(SHA1, l, sizeof l);
  cr_assert_eq(words(l, w, 12), 6, "%s", l);
  cr_expect_str_eq(w[0], "1");
  cr_expect_str_eq(w[1], "1048576");
  cr_expect_str_eq(w[3], "rl-seq-learner-0");
  cr_expect_str_eq(w[4], "node-1,");
  cr_assert_eq(run(larkctl, "describe", "job", "rl-seq", "-o", "json", NULL),
               0);
  json_t *j = json_loads(out, 0, NULL);
  cr_assert(j, "%s", out);
  cr_expect_str_eq(
      json_string_value(json_object_get(json_object_get(j, "stages"), "job")),
      "rl-seq");
  json_decref(j);
}

/* Append a stage.started for rl-seq, as lark-engine would. */
static void
engine_event(const char *stage, uint64_t step) {
  bus_ev_stage_started d = {
      .job = BUS_STR("rl-seq"), .stage = {stage, strlen(stage)}, .step = step};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_stage_started_pack(&sb, &d), 0, "%s", bus_last_error());
  bus_event ev;
  char id[33], subject[128];
  lt_sample_event(&ev, id, "stage.started", &sb);
  bus_subj_stage_started(subject, sizeof subject, "rl-seq");
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

/* Wait until the log holds needle (its text into out). */
static int
log_has(const char *log, const char *needle, int ms) {
  for (int i = 0; i < ms / 50; i++) {
    if (lt_read_file(log, out, sizeof out) && strstr(out, needle))
      return 1;
    lt_sleep_ms(50);
  }
  return 0;
}

Test(cli_stages, watch_prints_steps_as_they_start_and_end) {
  serve_engine();
  char log[512];
  snprintf(log, sizeof log, "%s/watch.log", dir);
  char *argv[] = {larkctl,          (char *)"get", (char *)"stages",
                  (char *)"rl-seq", (char *)"-w",  NULL};
  pid_t pid = lt_spawn(argv, log);
  cr_assert(pid > 0);
  cr_assert(log_has(log, "running", 5000), "no table: %s", out);
  /* train 1 ends: one row for it, with its duration */
  set_timeline(train_ended);
  engine_event("sync_weights", 1);
  cr_expect(log_has(log, "1.20s", 5000), "the end not printed: %s", out);
  lt_sleep_ms(1800); /* the settle time: no row twice */
  lt_kill(pid, SIGINT);
  lt_read_file(log, out, sizeof out);
  int rows = 0;
  for (const char *p = out; (p = strstr(p, "\ntrain ")); p++)
    rows++;
  cr_expect_eq(rows, 3, "train 0, train 1 running, train 1 ended:\n%s", out);
}

Test(cli_stages, refusals) {
  /* no engine answering: said so, naming the service */
  cr_assert_eq(run(larkctl, "get", "stages", "rl-seq", NULL), 1);
  cr_expect(strstr(err, "lark-engine"), "%s", err);
  /* the Job's describe works without it, with no Stages section */
  bus_serve *job = NULL;
  cr_assert_eq(bus_cmd_serve(conn, "job", answer, NULL, &job), 0);
  cr_assert_eq(run(larkctl, "describe", "job", "rl-seq", NULL), 0, "%s", err);
  cr_expect_null(strstr(out, "Stages:"), "%s", out);
  bus_conn_unserve(job);
  serve_engine();
  cr_assert_eq(run(larkctl, "get", "stages", "nope", NULL), 1);
  cr_expect(strstr(err, "NOT_FOUND"), "%s", err);
  cr_expect_eq(run(larkctl, "get", "peers", NULL), 2, "peers needs a Job");
  cr_expect_eq(run(larkctl, "get", "stages", "-w", NULL), 2);
  cr_expect_eq(
      run(larkctl, "get", "stages", "rl-seq", "-w", "--at", "1h", NULL), 2);
  cr_expect_eq(run(larkctl, "get", "stages", "Bad_Name!", NULL), 2);
}

Test(cli_stages, completion_offers_stages) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "source <(%s completion bash); COMP_WORDS=(larkctl get st); "
           "COMP_CWORD=2; _larkctl; echo \"${COMPREPLY[*]}\"",
           larkctl);
  cr_assert_eq(run("/bin/bash", "-c", cmd, NULL), 0, "%s", err);
  cr_expect(strstr(out, "stages"), "%s", out);
  snprintf(cmd, sizeof cmd,
           "source <(%s completion bash); COMP_WORDS=(larkctl replay en); "
           "COMP_CWORD=2; _larkctl; echo \"${COMPREPLY[*]}\"",
           larkctl);
  cr_assert_eq(run("/bin/bash", "-c", cmd, NULL), 0, "%s", err);
  cr_expect(strstr(out, "engine"), "%s", out);
}

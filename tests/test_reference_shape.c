/*
 * test_reference_shape.c - tasks written in the reference platform's
 * shape: the runtime directly in the task (`raw: {...}` next to `name`)
 * and its other fields (agentType, tensorBoardDir, prepareScript,
 * runScript).
 *
 * Without a broker: the reference shape parses into the same bytes as
 * the `runtime:` wrapper; a task with both, or with two runtimes, is
 * refused naming it; the four fields are kept and bounded; a kubernetes
 * task is refused by the scheduler's check naming the task and runtime.
 *
 * End to end: `larkctl up --nodes 1`, then `larkctl apply` of a Workflow
 * in the reference shape (the dependent template listed first, an
 * `environment` list, agentType), which Succeeds with each pod's
 * environment honoured (each pod writes its variable to a file); and a
 * Workflow and a Job with a runtime no node offers, refused naming the
 * task and the runtime.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expand.h"
#include "files.h"
#include "manifest.h"
#include "model.h"
#include "natsd.h"
#include "bed.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

/* ------------------------------------------------------ the reader */

#define API "apiVersion: rlinf.io/v1alpha1\n"
#define WF API "kind: Workflow\nmetadata: {name: w}\nspec:\n  jobTemplates:\n"
#define HEAD                                                                   \
  API "kind: Job\nmetadata: {name: j}\n"                                       \
      "spec:\n  tasks:\n  - name: actor\n    role: Actor\n    replicas: 2\n"

#define ENV                                                                    \
  "{entrypoint: [python, train.py], environment: [{name: A, value: '1'}]}"

static char err[640];

static void
parse_ok(lark_manifest *m, const char *text) {
  memset(m, 0, sizeof *m);
  cr_assert_eq(
      lark_manifest_parse(m, "t.yaml", text, strlen(text), err, sizeof err), 0,
      "%s", err);
  cr_assert_eq(m->ndocs, 1);
}

/* m's document passes lark_doc_check (its errors in e, n); the
 * document as an object in z (msgpack_zone_destroy it). */
static msgpack_object
checked(lark_manifest *m, bus_field_err e[4], int *n, msgpack_zone *z) {
  msgpack_object o;
  cr_assert_eq(lark_doc_check(&m->docs[0], e, 4, n), 0, "%s: %s", e[0].path,
               e[0].reason);
  msgpack_zone_init(z, 4096);
  cr_assert_eq(msgpack_unpack(m->docs[0].mp, m->docs[0].mp_len, NULL, z, &o),
               MSGPACK_UNPACK_SUCCESS);
  return o;
}

/* The parse fails; its message is left in err. */
static void
parse_fails(const char *text) {
  lark_manifest m;
  memset(&m, 0, sizeof m);
  cr_assert_neq(
      lark_manifest_parse(&m, "t.yaml", text, strlen(text), err, sizeof err), 0,
      "parsed: %s", text);
  lark_manifest_free(&m);
}

static void
same_bytes(const char *a, const char *b) {
  lark_manifest ma, mb;
  parse_ok(&ma, a);
  parse_ok(&mb, b);
  cr_assert_eq(ma.docs[0].mp_len, mb.docs[0].mp_len);
  cr_assert_eq(memcmp(ma.docs[0].mp, mb.docs[0].mp, ma.docs[0].mp_len), 0);
  bus_field_err e[4];
  int n = 0;
  cr_assert_eq(lark_doc_check(&ma.docs[0], e, 4, &n), 0, "%s: %s", e[0].path,
               e[0].reason);
  lark_manifest_free(&ma);
  lark_manifest_free(&mb);
}

Test(reference_shape, runtime_in_the_task_is_the_wrapper_form) {
  same_bytes(HEAD "    raw: " ENV "\n    maxRetries: 1\n",
             HEAD "    runtime: {raw: " ENV "}\n    maxRetries: 1\n");
  /* last in the task, and in a Workflow's template */
  same_bytes(HEAD "    raw: " ENV "\n", HEAD "    runtime: {raw: " ENV "}\n");
  same_bytes("apiVersion: rlinf.io/v1alpha1\nkind: Workflow\nmetadata: {name: "
             "w}\nspec:\n  jobTemplates:\n"
             "  - name: t\n    spec:\n      tasks:\n      - name: a\n"
             "        raw: " ENV "\n        role: Env\n",
             "apiVersion: rlinf.io/v1alpha1\nkind: Workflow\nmetadata: {name: "
             "w}\nspec:\n  jobTemplates:\n"
             "  - name: t\n    spec:\n      tasks:\n      - name: a\n"
             "        runtime: {raw: " ENV "}\n        role: Env\n");
}

Test(reference_shape, a_schema_error_below_raw_keeps_its_line) {
  lark_manifest m;
  parse_ok(&m, HEAD "    raw:\n      entrypoint: [python]\n"
                    "      bogus: 1\n");
  bus_field_err e[4];
  int n = 0;
  cr_assert_neq(lark_doc_check(&m.docs[0], e, 4, &n), 0);
  cr_assert_str_eq(e[0].path, "spec.tasks[0].runtime.raw.bogus");
  cr_assert_eq(lark_doc_line(&m.docs[0], e[0].path), 11);
  lark_manifest_free(&m);
}

Test(reference_shape, both_forms_or_two_runtimes_are_refused_naming_the_task) {
  parse_fails(HEAD "    raw: " ENV "\n    runtime: {raw: " ENV "}\n");
  cr_expect(strstr(err, "task actor: both runtime and raw given"), "%s", err);
  cr_expect(strstr(err, "doc 1 line 9"), "%s", err);
  parse_fails(HEAD "    raw: " ENV "\n    docker: {image: x}\n");
  cr_expect(strstr(err, "task actor: two runtimes (raw and docker)"), "%s",
            err);
  parse_fails(HEAD "    runtime: {raw: " ENV ", kubernetes: {}}\n");
  cr_expect(strstr(err, "task actor: two runtimes (raw and kubernetes)"), "%s",
            err);
  parse_fails("apiVersion: rlinf.io/v1alpha1\nkind: Workflow\nmetadata: {name: "
              "w}\nspec:\n  jobTemplates:\n"
              "  - name: t\n    spec:\n      tasks:\n      - name: a\n"
              "        kubernetes: {}\n        docker: {}\n");
  cr_expect(strstr(err, "template t, task a: two runtimes (kubernetes and "
                        "docker)"),
            "%s", err);
}

Test(reference_shape, the_reference_fields_are_kept_and_bounded) {
  lark_manifest m;
  parse_ok(&m, HEAD "    agentType: ray\n    tensorBoardDir: /tb\n"
                    "    prepareScript: pip install x\n"
                    "    runScript: python run.py\n"
                    "    raw: {artifact: 's3://b/a.tgz', entrypoint: [x]}\n");
  bus_field_err e[4];
  int n = 0;
  msgpack_zone z;
  msgpack_object o = checked(&m, e, &n, &z);
  const msgpack_object *ts = bus_obj_get(bus_obj_get(&o, "spec"), "tasks");
  const msgpack_object *t = &ts->via.array.ptr[0];
  char v[64];
  static const char *const want[][2] = {{"agentType", "ray"},
                                        {"tensorBoardDir", "/tb"},
                                        {"prepareScript", "pip install x"},
                                        {"runScript", "python run.py"}};
  for (int i = 0; i < 4; i++) {
    cr_assert(bus_obj_str(t, want[i][0], v, sizeof v), "%s", want[i][0]);
    cr_expect_str_eq(v, want[i][1]);
  }
  cr_assert(bus_obj_str(bus_obj_get(bus_obj_get(t, "runtime"), "raw"),
                        "artifact", v, sizeof v));
  cr_expect_str_eq(v, "s3://b/a.tgz");
  msgpack_zone_destroy(&z);
  lark_manifest_free(&m);

  char text[1024], name[80];
  memset(name, 'a', 64);
  name[64] = 0;
  snprintf(text, sizeof text, HEAD "    agentType: %s\n    raw: " ENV "\n",
           name);
  parse_ok(&m, text);
  cr_assert_neq(lark_doc_check(&m.docs[0], e, 4, &n), 0);
  cr_expect_str_eq(e[0].path, "spec.tasks[0].agentType");
  lark_manifest_free(&m);
}

Test(reference_shape, a_kubernetes_task_is_refused_naming_task_and_runtime) {
  lark_manifest m;
  parse_ok(&m, HEAD "    kubernetes: {image: trainer}\n");
  bus_field_err e[4];
  int n = 0;
  msgpack_zone z;
  msgpack_object o = checked(&m, e, &n, &z);
  sched_job job;
  cr_assert_eq(sched_job_from_msgpack(&o, &job, e, 4, &n), 0, "%s: %s",
               e[0].path, e[0].reason);
  cr_assert_eq(sched_job_runtimes_check(&job, SCHED_RT_ALL, e, 4, &n),
               BUS_EFIELD);
  cr_expect_str_eq(e[0].path, "spec.tasks[0].runtime");
  cr_expect_str_eq(e[0].reason,
                   "task actor needs runtime kubernetes, which no node offers");
  sched_job_clear(&job);
  msgpack_zone_destroy(&z);
  lark_manifest_free(&m);
}

/* ------------------------------------------------- a real platform */

static lt_platform plat;
static char out[1 << 16], errout[1 << 14];

#define sh(...) lt_sh(out, sizeof out, errout, sizeof errout, __VA_ARGS__)
/* larkctl --data dir ARGS (shell words); stdout and stderr in out */
#define larkctl_run(...)                                                       \
  lt_larkctl(&plat, out, sizeof out, NULL, 0, __VA_ARGS__)

static void
platform_up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_init(&plat, "refshape");
  int rc = lt_platform_start(&plat, nodes, 60);
  cr_assert_gt(plat.pid, 0);
  cr_assert_eq(rc, 0, "larkctl up is not ready (see %s)", plat.up_log);
}

static void
platform_down(void) {
  int st = lt_platform_stop(&plat);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "larkctl up exit status %d",
            st);
  lt_platform_remove(&plat);
}

/* The phase `larkctl get KIND NAME -o json` shows ("" when none). */
static void
phase_of(const char *kind, const char *name, char *phase, size_t cap) {
  phase[0] = 0;
  if (larkctl_run("get %s %s -o json", kind, name) != 0)
    return;
  json_t *j = json_loads(out, 0, NULL);
  json_t *o = json_is_array(j) ? json_array_get(j, 0) : j;
  const char *p = json_string_value(json_object_get(o, "phase"));
  snprintf(phase, cap, "%s", p ? p : "");
  json_decref(j);
}

Test(reference_shape, a_reference_workflow_runs_on_a_real_platform,
     .init = platform_up, .fini = platform_down, .timeout = 240) {
  char path[512], phase[64];
  snprintf(path, sizeof path, "%s/wf.yaml", plat.dir);
  /* second is listed first and needs first's file: it runs after it */
  cr_assert_eq(lt_write_file(
                   path,
                   "apiVersion: rlinf.io/v1alpha1\n"
                   "kind: Workflow\n"
                   "metadata:\n  name: refwf\n"
                   "spec:\n"
                   "  jobTemplates:\n"
                   "  - name: second\n"
                   "    dependencies: [first]\n"
                   "    spec:\n"
                   "      tasks:\n"
                   "      - name: reader\n"
                   "        role: Actor\n"
                   "        replicas: 1\n"
                   "        agentType: ray\n"
                   "        tensorBoardDir: %s/tb\n"
                   "        runScript: echo not run\n"
                   "        raw:\n"
                   "          entrypoint:\n"
                   "          - /bin/sh\n"
                   "          - -c\n"
                   "          - test -s %s/first.out && echo \"$GREETING\" > "
                   "%s/second.out\n"
                   "          environment:\n"
                   "          - name: GREETING\n"
                   "            value: hello from second\n"
                   "  - name: first\n"
                   "    spec:\n"
                   "      tasks:\n"
                   "      - name: writer\n"
                   "        role: Rollout\n"
                   "        agentType: ray\n"
                   "        raw:\n"
                   "          entrypoint: [/bin/sh, -c, 'echo \"$GREETING\" > "
                   "%s/first.out']\n"
                   "          environment: [{name: GREETING, value: hello from "
                   "first}]\n",
                   plat.dir, plat.dir, plat.dir, plat.dir),
               0);
  lt_platform_apply(&plat, path, 10);
  for (int i = 0; i < 1200 && strcmp(phase, "Succeeded"); i++) {
    phase_of("workflow", "refwf", phase, sizeof phase);
    if (!strcmp(phase, "Failed"))
      break;
    lt_sleep_ms(100);
  }
  cr_assert_str_eq(phase, "Succeeded", "workflow refwf is %s (see %s)", phase,
                   plat.up_log);
  cr_assert_eq(sh("cat %s/first.out %s/second.out", plat.dir, plat.dir), 0,
               "%s", errout);
  cr_expect_str_eq(out, "hello from first\nhello from second\n");

  /* a runtime no node offers, in a Workflow (checked by lark-dag) and in
   * a Job (checked by lark-scheduler) */
  cr_assert_eq(lt_write_file(path, "apiVersion: rlinf.io/v1alpha1\nkind: "
                                   "Workflow\nmetadata: {name: kwf}\nspec:\n"
                                   "  jobTemplates:\n  - name: t\n    spec:\n"
                                   "      tasks:\n      - name: sim\n"
                                   "        role: Env\n"
                                   "        kubernetes: {image: sim}\n"
                                   "---\n"
                                   "apiVersion: rlinf.io/v1alpha1\nkind: "
                                   "Job\nmetadata: {name: djob}\nspec:\n"
                                   "  tasks:\n  - name: env\n    role: Env\n"
                                   "    docker: {image: env}\n"),
               0);
  cr_assert_neq(larkctl_run("apply -f %s", path), 0, "%s", out);
  cr_expect(strstr(out, "template t, task sim needs runtime kubernetes, "
                        "which no node offers"),
            "%s", out);
  cr_expect(strstr(out, "task env needs runtime docker, which no node offers"),
            "%s", out);

  /* an artifact the edge cannot fetch, and a task with nothing to run,
   * refused by lark-dag before any Job is made */
  cr_assert_eq(lt_write_file(path, "apiVersion: rlinf.io/v1alpha1\nkind: "
                                   "Workflow\nmetadata: {name: awf}\nspec:\n"
                                   "  jobTemplates:\n  - name: t\n    spec:\n"
                                   "      tasks:\n      - name: get\n"
                                   "        role: Env\n"
                                   "        raw: {artifact: 's3://b/k', "
                                   "entrypoint: [/bin/true]}\n"
                                   "      - name: idle\n"
                                   "        role: Env\n"
                                   "        raw: {artifact: ''}\n"),
               0);
  cr_assert_neq(larkctl_run("apply -f %s", path), 0, "%s", out);
  cr_expect(strstr(out, "jobTemplates[0].spec.tasks[0].runtime.raw.artifact: "
                        "task get: artifact: must be a file://"),
            "%s", out);
  cr_expect(strstr(out, "jobTemplates[0].spec.tasks[1].runtime.raw.entrypoint: "
                        "task idle: no entrypoint and no runScript"),
            "%s", out);
  cr_assert_neq(larkctl_run("get workflow awf"), 0, "awf was stored: %s", out);
  cr_expect(strstr(out, "workflow/awf: not found"), "%s", out);
}

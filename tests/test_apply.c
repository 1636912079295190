/*
 * test_apply.c - larkctl apply, delete, stop, resume, cordon, uncordon,
 * wait and get -w against a real broker, with a fake service inside the
 * test: it serves lark.cmd.*.job.*, node.* and catalog.*, records what
 * arrives and answers created, unchanged or a refusal with details, and a
 * describe whose phase moves on. So larkctl's side of the contract and
 * its exit codes (0 ok, 1 error, 2 usage) are checked without the real
 * services.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "events.h"
#include "natsd.h"
#include "proc.h"
#include "wait.h"

#define MAX_SEEN 64

typedef struct seen_cmd {
  char user[64], kind[64], verb[64], key[128], name[128];
  int ntasks;
} seen_cmd;

static lt_natsd srv;
static bus_conn *conn;
static bus_serve *serves[3];
static char dir[256], larkctl[512];
static char out[1 << 16], err[1 << 14];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static seen_cmd seen[MAX_SEEN];
static int nseen;
static char applied[8][64];
static int napplied;
static int describes;
static int catalog_version = 1, catalog_b;

/* ------------------------------------------------------------ the fake */

static void
reply_extra(bus_conn *c, const bus_cmd *cmd, const char *k, int v) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_str(&b.pk, k);
  if (v)
    msgpack_pack_true(&b.pk);
  else
    msgpack_pack_false(&b.pk);
  bus_cmd_reply_ok(c, cmd, 10, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
}

/* Reply {ok, seq, result: word}. */
static void
reply_word(bus_conn *c, const bus_cmd *cmd, const char *word) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_kv_str(&b.pk, "result", word);
  bus_cmd_reply_ok(c, cmd, 12, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
}

/* Reply {ok, seq, result: <packed by fn>}. */
static void
reply_result(bus_conn *c, const bus_cmd *cmd,
             void (*fn)(msgpack_packer *, const char *), const char *arg) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_str(&b.pk, "result");
  fn(&b.pk, arg);
  bus_cmd_reply_ok(c, cmd, 0, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
}

/* train-1: Pending, Pending, Running, Running, Succeeded; doomed: Running
 * then Failed; stuck: Running forever. */
static void
pack_phase(msgpack_packer *pk, const char *name) {
  int n = describes;
  const char *phase = "Running", *reason = "";
  if (!strcmp(name, "train-1"))
    phase = n < 2 ? "Pending" : n < 4 ? "Running" : "Succeeded";
  else if (!strcmp(name, "doomed") && n >= 1) {
    phase = "Failed";
    reason = "pod doomed-a-0 exited 3";
  }
  msgpack_pack_map(pk, 3);
  bus_pack_kv_str(pk, "name", name);
  bus_pack_kv_str(pk, "phase", phase);
  bus_pack_kv_str(pk, "reason", reason);
}

/* lark-scheduler's shape: {job: {name, phase}, pods: []}. */
static void
pack_nested(msgpack_packer *pk, const char *name) {
  msgpack_pack_map(pk, 2);
  bus_pack_str(pk, "job");
  msgpack_pack_map(pk, 2);
  bus_pack_kv_str(pk, "name", name);
  bus_pack_kv_str(pk, "phase", "Succeeded");
  bus_pack_str(pk, "pods");
  msgpack_pack_array(pk, 0);
}

static void
pack_samples(msgpack_packer *pk, const char *unused) {
  (void)unused;
  msgpack_pack_array(pk, catalog_b ? 2 : 1);
  msgpack_pack_map(pk, 3);
  bus_pack_kv_str(pk, "kind", "sample");
  bus_pack_kv_str(pk, "id", "a");
  bus_pack_kv_int(pk, "version", catalog_version);
  if (catalog_b) {
    msgpack_pack_map(pk, 3);
    bus_pack_kv_str(pk, "kind", "sample");
    bus_pack_kv_str(pk, "id", "b");
    bus_pack_kv_int(pk, "version", 1);
  }
}

static void
record(const bus_cmd *cmd, const char *name, int ntasks) {
  if (nseen >= MAX_SEEN)
    return;
  seen_cmd *s = &seen[nseen++];
  snprintf(s->user, sizeof s->user, "%s", cmd->user);
  snprintf(s->kind, sizeof s->kind, "%s", cmd->kind);
  snprintf(s->verb, sizeof s->verb, "%s", cmd->verb);
  snprintf(s->key, sizeof s->key, "%s", cmd->key);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->ntasks = ntasks;
}

static int
count_named(const char *name) {
  int n = 0;
  for (int i = 0; i < nseen; i++)
    n += !strcmp(seen[i].name, name);
  return n;
}

static void
on_apply(bus_conn *c, const bus_cmd *cmd) {
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  const msgpack_object *meta = res ? bus_obj_get(res, "metadata") : NULL;
  const msgpack_object *spec = res ? bus_obj_get(res, "spec") : NULL;
  const msgpack_object *tasks = spec ? bus_obj_get(spec, "tasks") : NULL;
  char name[64] = "";
  if (meta)
    bus_obj_str(meta, "name", name, sizeof name);
  record(cmd, name,
         tasks && tasks->type == MSGPACK_OBJECT_ARRAY
             ? (int)tasks->via.array.size
             : -1);
  /* "busy": the first two answers say the broker could not store it */
  if (!strcmp(name, "busy") && count_named("busy") <= 2) {
    bus_cmd_reply_error(c, cmd, BUS_ENO_STREAM,
                        "no responders: lark.ev.job.busy not stored", NULL, 0);
    return;
  }
  if (!strcmp(name, "refused")) {
    bus_field_err d[1] = {
        {"spec.tasks[0].replicas", "differs from the submitted spec: 1 -> 2"}};
    bus_cmd_reply_error(c, cmd, BUS_EEXISTS,
                        "job refused exists with another spec", d, 1);
    return;
  }
  for (int i = 0; i < napplied; i++)
    if (!strcmp(applied[i], name)) {
      reply_extra(c, cmd, "unchanged", 1);
      return;
    }
  if (napplied < 8)
    snprintf(applied[napplied++], sizeof applied[0], "%s", name);
  bus_cmd_reply_ok(c, cmd, 10, NULL, 0, 0);
}

static void
handler(bus_conn *c, const bus_cmd *cmd, void *ud) {
  (void)ud;
  char name[128] = "";
  bus_obj_str(&cmd->body, "name", name, sizeof name);
  pthread_mutex_lock(&mu);
  if (!strcmp(cmd->verb, "apply")) {
    on_apply(c, cmd);
  } else if (!strcmp(cmd->verb, "describe")) {
    if (!strcmp(name, "nested")) {
      reply_result(c, cmd, pack_nested, name);
    } else if (!strcmp(name, "train-1") || !strcmp(name, "doomed") ||
               !strcmp(name, "stuck")) {
      reply_result(c, cmd, pack_phase, name);
      describes++;
    } else {
      bus_cmd_reply_error(c, cmd, BUS_ENOT_FOUND, "no such job", NULL, 0);
    }
  } else if (!strcmp(cmd->verb, "list")) {
    reply_result(c, cmd, pack_samples, NULL);
  } else {
    record(cmd, name, -1);
    if (!strcmp(name, "already")) /* lark-scheduler's {result: word} */
      reply_word(c, cmd, "unchanged");
    else if (!strcmp(name, "ghost"))
      bus_cmd_reply_error(c, cmd, BUS_ENOT_FOUND, "job ghost not found", NULL,
                          0);
    else
      bus_cmd_reply_ok(c, cmd, 11, NULL, 0, 0);
  }
  pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------------ fixtures */

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "apply", 1000);
  cr_assert_eq(bus_cmd_serve(conn, "job", handler, NULL, &serves[0]), 0);
  cr_assert_eq(bus_cmd_serve(conn, "node", handler, NULL, &serves[1]), 0);
  cr_assert_eq(bus_cmd_serve(conn, "catalog", handler, NULL, &serves[2]), 0);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  setenv("LARK_URL", srv.url, 1);
  setenv("LARK_DATA", dir, 1);
  setenv("LARK_JS_WAIT_MS", "500", 1);
  unsetenv("LARK_USER");
  unsetenv("LARK_CREDS");
}

static void
teardown(void) {
  for (int i = 0; i < 3; i++)
    bus_conn_unserve(serves[i]);
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(apply, .init = setup, .fini = teardown, .timeout = 120);

/* Run larkctl with the arguments given (NULL-terminated); its exit code,
 * stdout in out and stderr in err. */
#define ctl(...) lt_runl(out, sizeof out, err, sizeof err, larkctl, __VA_ARGS__)

static const char *
example(const char *name) {
  static char path[4][1024];
  static int next;
  char *p = path[next++ % 4];
  const char *src = getenv("LARK_SOURCE_DIR");
  snprintf(p, sizeof path[0], "%s/examples/%s", src ? src : ".", name);
  return p;
}

static const char *
write_file(const char *name, const char *text) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static int
count_seen(void) {
  pthread_mutex_lock(&mu);
  int n = nseen;
  pthread_mutex_unlock(&mu);
  return n;
}

#define JOB(name, replicas)                                                    \
  "apiVersion: rlinf.io/v1alpha1\n"                                            \
  "kind: Job\n"                                                                \
  "metadata:\n"                                                                \
  "  name: " name "\n"                                                         \
  "spec:\n"                                                                    \
  "  tasks:\n"                                                                 \
  "    - name: a\n"                                                            \
  "      role: Actor\n"                                                        \
  "      replicas: " replicas "\n"                                             \
  "      runtime: {raw: {entrypoint: [\"/bin/true\"]}}\n"

/* --------------------------------------------------------------- tests */

Test(apply, creates_then_unchanged) {
  cr_assert_eq(ctl("apply", "-f", example("job.yaml"), NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/train-1 created\n");
  cr_assert_eq(count_seen(), 1);
  cr_expect_str_eq(seen[0].user, "admin");
  cr_expect_str_eq(seen[0].verb, "apply");
  cr_expect_str_eq(seen[0].name, "train-1");
  cr_expect_eq(seen[0].ntasks, 2, "the resource travels whole");
  cr_expect_eq(strlen(seen[0].key), 32, "a fresh key: %s", seen[0].key);

  cr_assert_eq(ctl("apply", "-f", example("job.yaml"), "-v", NULL), 0);
  cr_expect_str_eq(out, "job.rlinf.io/train-1 unchanged\n");
  cr_expect(strstr(err, seen[1].key), "-v shows the key: %s", err);
  cr_expect_str_neq(seen[0].key, seen[1].key);

  cr_assert_eq(ctl("apply", "-f", example("job.yaml"), "-o", "json", NULL), 0);
  cr_expect(strstr(out, "\"result\":\"unchanged\"") &&
                strstr(out, "\"name\":\"train-1\"") &&
                strstr(out, "\"kind\":\"job\""),
            "%s", out);
}

Test(apply, several_documents_and_stdin) {
  const char *f =
      write_file("two.yaml", JOB("one", "1") "---\n" JOB("two", "2"));
  cr_assert_eq(ctl("apply", "-f", f, NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/one created\njob.rlinf.io/two created\n");

  char cmd[2048];
  snprintf(cmd, sizeof cmd, "exec %s apply -f - < %s", larkctl, f);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  cr_assert_eq(lt_run(argv, out, sizeof out, err, sizeof err), 0, "%s", err);
  cr_expect_str_eq(out,
                   "job.rlinf.io/one unchanged\njob.rlinf.io/two unchanged\n");

  const char *j = write_file(
      "one.json", "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\", "
                  "\"metadata\": {\"name\": \"three\"}, \"spec\": {\"tasks\": "
                  "[{\"name\": \"a\", \"role\": \"Env\", \"runtime\": "
                  "{\"raw\": {\"entrypoint\": [\"x\"]}}}]}}");
  cr_assert_eq(ctl("apply", "-f", j, NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/three created\n");
}

Test(apply, an_invalid_document_sends_nothing) {
  const char *f = write_file(
      "bad.yaml", JOB("good", "1") "---\n" JOB("bad", "0") "---\nkind: Pod\n");
  cr_expect_eq(ctl("apply", "-f", f, NULL), 1);
  cr_expect_eq(count_seen(), 0, "nothing sent when a document is invalid");
  cr_expect(strstr(err, "bad.yaml doc 2 line 20: spec.tasks[0].replicas: "),
            "%s", err);
  cr_expect(strstr(err, "bad.yaml doc 3 line 23: kind: "), "%s", err);
  cr_expect(strstr(err, "nothing applied"), "%s", err);
  cr_expect_str_eq(out, "");

  cr_expect_eq(ctl("apply", "-f", f, "-o", "json", NULL), 1);
  cr_expect(strstr(out, "\"result\":\"invalid\""), "%s", out);

  const char *s = write_file("syntax.yaml", "kind: Job\nspec: [1,\n");
  cr_expect_eq(ctl("apply", "-f", s, NULL), 1);
  cr_expect(strstr(err, "syntax.yaml doc 1 line"), "%s", err);
  cr_expect_eq(ctl("apply", "-f", "/nonexistent.yaml", NULL), 1);
  cr_expect(strstr(err, "/nonexistent.yaml"), "%s", err);
}

Test(apply, a_refusal_prints_its_details_and_the_rest_goes_on) {
  const char *f =
      write_file("mixed.yaml", JOB("refused", "1") "---\n" JOB("fine", "1"));
  cr_expect_eq(ctl("apply", "-f", f, NULL), 1);
  cr_expect_str_eq(out, "job.rlinf.io/fine created\n");
  cr_expect(strstr(err, "job.rlinf.io/refused: EXISTS: job refused exists"),
            "%s", err);
  cr_expect(strstr(err, "  spec.tasks[0].replicas: differs from the "
                        "submitted spec: 1 -> 2"),
            "%s", err);
  cr_expect_eq(count_seen(), 2);

  cr_expect_eq(ctl("apply", "-f", f, "-o", "json", NULL), 1);
  cr_expect(strstr(out, "\"result\":\"error\"") && strstr(out, "EXISTS"), "%s",
            out);
}

Test(apply, a_kind_nobody_serves_says_who_should) {
  cr_expect_eq(ctl("apply", "-f", example("rl-workflow.yaml"), NULL), 1);
  cr_expect(strstr(err, "no answer on lark.cmd.admin.workflow.apply: is "
                        "lark-dag running?"),
            "%s", err);
  setenv("LARK_USER", "alice", 1);
  cr_expect_eq(ctl("stop", "workflow", "rl", NULL), 1);
  cr_expect(strstr(err, "lark.cmd.alice.workflow.stop"), "%s", err);
}

Test(apply, usage_errors_exit_2) {
  cr_expect_eq(ctl("apply", NULL), 2);
  cr_expect_eq(ctl("apply", "-f", NULL), 2);
  cr_expect_eq(ctl("apply", "--bogus", NULL), 2);
  cr_expect_eq(ctl("delete", NULL), 2);
  cr_expect_eq(ctl("delete", "job", NULL), 2);
  cr_expect_eq(ctl("stop", "pod", "x", NULL), 2);
  cr_expect_eq(ctl("cordon", "job", "x", NULL), 2);
  cr_expect_eq(ctl("wait", "job", "x", NULL), 2);
  cr_expect_eq(
      ctl("wait", "job", "x", "--for", "Succeeded", "--timeout", "soon", NULL),
      2);
  cr_expect_eq(ctl("get", "jobs", "-w", "--at", "1h", NULL), 2);
  cr_expect_eq(count_seen(), 0);
}

Test(apply, delete_stop_resume_by_name) {
  cr_assert_eq(ctl("stop", "job", "train-1", NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/train-1 stopped\n");
  cr_assert_eq(ctl("resume", "jobs", "train-1", NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/train-1 resumed\n");
  cr_assert_eq(ctl("delete", "job", "train-1", "other", NULL), 0, "%s", err);
  cr_expect_str_eq(
      out, "job.rlinf.io/train-1 deleted\njob.rlinf.io/other deleted\n");
  cr_assert_eq(count_seen(), 4);
  cr_expect_str_eq(seen[0].verb, "stop");
  cr_expect_str_eq(seen[1].verb, "resume");
  cr_expect_str_eq(seen[2].verb, "delete");
  cr_expect_str_eq(seen[3].name, "other");
  for (int i = 0; i < 4; i++)
    cr_expect_eq(strlen(seen[i].key), 32);

  cr_expect_eq(ctl("delete", "job", "ghost", NULL), 1);
  cr_expect(strstr(err, "job.rlinf.io/ghost: NOT_FOUND: job ghost not found"),
            "%s", err);
  cr_expect_eq(ctl("stop", "job", "Not_A_Name", NULL), 1);

  cr_assert_eq(ctl("delete", "-f", example("job.yaml"), "-o", "json", NULL), 0,
               "%s", err);
  cr_expect(strstr(out, "\"result\":\"deleted\"") &&
                strstr(out, "\"name\":\"train-1\""),
            "%s", out);
}

Test(apply, cordon_and_uncordon_a_node) {
  cr_assert_eq(ctl("cordon", "node", "gpu-3", NULL), 0, "%s", err);
  cr_expect_str_eq(out, "node.rlinf.io/gpu-3 cordoned\n");
  cr_assert_eq(ctl("uncordon", "node", "gpu-3", NULL), 0, "%s", err);
  cr_expect_str_eq(out, "node.rlinf.io/gpu-3 uncordoned\n");
  cr_assert_eq(count_seen(), 2);
  cr_expect_str_eq(seen[0].kind, "node");
  cr_expect_str_eq(seen[0].verb, "cordon");
  cr_expect_str_eq(seen[1].verb, "uncordon");
  cr_expect_str_eq(seen[1].name, "gpu-3");

  cr_assert_eq(ctl("cordon", "node", "already", NULL), 0, "%s", err);
  cr_expect_str_eq(out, "node.rlinf.io/already unchanged\n");
}

Test(apply, wait_until_the_phase_is_reached) {
  cr_assert_eq(ctl("wait", "job", "train-1", "--for", "Succeeded", "--interval",
                   "50ms", "--timeout", "20s", NULL),
               0, "%s", err);
  cr_expect_str_eq(out,
                   "job.rlinf.io/train-1 condition met (phase Succeeded)\n");
  cr_expect_geq(describes, 0);

  cr_assert_eq(ctl("wait", "job", "train-1", "--for=phase=succeeded", "-o",
                   "json", NULL),
               0, "%s", err);
  cr_expect(strstr(out, "\"met\":true"), "%s", out);

  cr_assert_eq(ctl("wait", "job", "nested", "--for", "Succeeded", NULL), 0,
               "phase under the kind's key: %s", err);
}

Test(apply, wait_fails_when_the_phase_can_no_longer_be_reached) {
  cr_expect_eq(ctl("wait", "job", "doomed", "--for", "Succeeded", "--interval",
                   "50ms", NULL),
               1);
  cr_expect(strstr(err, "phase is Failed (pod doomed-a-0 exited 3): "
                        "Succeeded can no longer be reached"),
            "%s", err);
}

Test(apply, wait_times_out_with_a_clear_message) {
  cr_expect_eq(ctl("wait", "job", "stuck", "--for", "Succeeded", "--timeout",
                   "300ms", "--interval", "50ms", NULL),
               1);
  cr_expect(strstr(err, "timed out after 0.300s waiting for phase Succeeded "
                        "(phase is Running)"),
            "%s", err);
  cr_expect_eq(ctl("wait", "job", "nobody", "--for", "Running", "--timeout",
                   "200ms", NULL),
               1);
  cr_expect(strstr(err, "not found"), "%s", err);
  cr_expect_eq(ctl("wait", "workflow", "rl", "--for", "Running", "--timeout",
                   "200ms", NULL),
               1);
  cr_expect(strstr(err, "is lark-dag running?"), "%s", err);
}

static void
append_sample(const char *name) {
  char subject[64], id[33];
  snprintf(subject, sizeof subject, "lark.ev.sample.%s", name);
  bus_event ev;
  lt_event(&ev, id, "sample.created", "alice", 1, 0, NULL);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
}

/* What `get -w` sees change, once its table is printed and its reader
 * open: the catalog gains b, and a is written again. */
static void
watched_changes(void) {
  lt_sleep_ms(1200);
  pthread_mutex_lock(&mu);
  catalog_version = 2;
  catalog_b = 1;
  pthread_mutex_unlock(&mu);
  append_sample("a");
  lt_sleep_ms(2000);
}

Test(apply, get_watch_prints_a_row_per_change) {
  char log[512];
  snprintf(log, sizeof log, "%s/watch.log", dir);
  char *argv[] = {larkctl, (char *)"get", (char *)"samples", (char *)"-w",
                  NULL};
  pid_t pid = lt_spawn(argv, log);
  watched_changes();
  int st = lt_kill(pid, SIGINT);
  lt_read_file(log, out, sizeof out);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, out);
  /* the header, the first row, then a and b once each */
  cr_expect(strstr(out, "KIND"), "%s", out);
  const char *first = strstr(out, "sample     a");
  cr_assert_not_null(first, "%s", out);
  const char *again = strstr(first + 1, "sample     a");
  cr_expect_not_null(again, "a changed: %s", out);
  cr_expect_null(again ? strstr(again + 1, "sample     a") : NULL,
                 "one row per change: %s", out);
  cr_expect_not_null(strstr(out, "sample     b"), "b added: %s", out);
}

/* A service whose broker could not store the command now (no responder
 * while a cluster elects a leader) refused nothing: larkctl sends it
 * again, with the same key, and it lands. */
Test(apply, a_command_the_broker_could_not_store_yet_is_sent_again) {
  char path[512];
  snprintf(path, sizeof path, "%s/busy.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs(JOB("busy", "1"), f);
  fclose(f);
  cr_assert_eq(ctl("apply", "-f", path, NULL), 0, "%s", err);
  cr_expect_str_eq(out, "job.rlinf.io/busy created\n");
  cr_assert_eq(count_seen(), 3, "sent %d times", count_seen());
  cr_expect_str_eq(seen[0].key, seen[2].key, "the same key each time");
}

/* -w with -o name prints kind/name per change, with -o yaml a document
 * {event, object} per change. */
Test(apply, get_watch_in_the_name_and_yaml_forms) {
  char log_name[512], log_yaml[512];
  snprintf(log_name, sizeof log_name, "%s/watch-name.log", dir);
  snprintf(log_yaml, sizeof log_yaml, "%s/watch-yaml.log", dir);
  char *by_name[] = {larkctl,      (char *)"get", (char *)"samples",
                     (char *)"-w", (char *)"-o",  (char *)"name",
                     NULL};
  char *by_yaml[] = {larkctl,      (char *)"get", (char *)"samples",
                     (char *)"-w", (char *)"-o",  (char *)"yaml",
                     NULL};
  pid_t pn = lt_spawn(by_name, log_name), py = lt_spawn(by_yaml, log_yaml);
  watched_changes();
  lt_kill(pn, SIGINT);
  lt_kill(py, SIGINT);
  lt_read_file(log_name, out, sizeof out);
  /* the first list, then a changed and b added */
  cr_expect_str_eq(out, "sample/a\nsample/a\nsample/b\n");
  lt_read_file(log_yaml, out, sizeof out);
  cr_expect(strstr(out, "---\nevent: MODIFIED\nobject:\n"), "%s", out);
  cr_expect(strstr(out, "---\nevent: ADDED\nobject:\n"), "%s", out);
  cr_expect(!strstr(out, "KIND"), "a table row in the yaml form: %s", out);
}

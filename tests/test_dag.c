/*
 * test_dag.c - the DAG runner's pure logic without a broker: graph rules
 * (unknown dependencies, duplicates, cycles named), readiness and phases,
 * the spec diff, and the view's apply and decide driven by a small
 * in-process stand-in for the stream (outbox entries are appended back
 * with the broker's prev check, in order).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "cmd.h"
#include "dag.h"
#include "events.h"
#include "natsd.h"
#include "workflow.h"

/* ------------------------------------------------------------ resources */

/* A Workflow resource from "a; b: a; c: a b" (template: dependencies),
 * packed into sb. */
static void
pack_workflow(msgpack_sbuffer *sb, const char *name, const char *dagspec,
              int replicas) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  lt_pack_workflow(&pk, name, dagspec, replicas);
}

/* The resource as an object in zone z. */
static msgpack_object
workflow_obj(msgpack_zone *z, const char *name, const char *dagspec,
             int replicas) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_workflow(&sb, name, dagspec, replicas);
  msgpack_object o;
  cr_assert_eq(lt_unpack_into(z, sb.data, sb.size, &o), MSGPACK_UNPACK_SUCCESS);
  msgpack_sbuffer_destroy(&sb);
  return o;
}

static int
build(msgpack_zone *z, const char *dagspec, dag_graph *g, bus_field_err *errs,
      int *n) {
  msgpack_object wf = workflow_obj(z, "wf", dagspec, 1);
  return dag_graph_build(bus_obj_get(&wf, "spec"), "wf", g, errs, 8, n);
}

/* ---------------------------------------------------------------- graph */

Test(dag_graph, dependencies_in_any_order) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  dag_graph g;
  bus_field_err e[8];
  int n;
  cr_assert_eq(build(&z, "eval: train prep; train: prep; prep", &g, e, &n), 0,
               "%s", bus_last_error());
  cr_expect_eq(n, 0);
  cr_assert_eq(g.n, 3);
  int pos[3];
  for (int k = 0; k < 3; k++)
    pos[g.order[k]] = k;
  int eval = dag_graph_find(&g, "eval"), train = dag_graph_find(&g, "train"),
      prep = dag_graph_find(&g, "prep");
  cr_expect(pos[prep] < pos[train] && pos[train] < pos[eval]);
  cr_expect_eq(g.t[eval].ndeps, 2);
  dag_graph_free(&g);
  dag_graph_free(&g); /* twice is harmless */
  msgpack_zone_destroy(&z);
}

Test(dag_graph, unknown_dependency_and_duplicates_are_named) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  dag_graph g;
  bus_field_err e[8];
  int n;
  cr_expect_eq(build(&z, "a; b: nope", &g, e, &n), BUS_EINVAL);
  cr_assert_eq(n, 1);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates[1].dependencies[0]");
  cr_expect_str_eq(e[0].reason, "unknown template 'nope'");
  cr_expect_eq(build(&z, "a; b; a", &g, e, &n), BUS_EINVAL);
  cr_assert_eq(n, 1);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates[2].name");
  cr_expect(strstr(e[0].reason, "duplicate template name 'a'"));
  cr_expect_eq(g.n, 0, "a refused graph is left empty");
  msgpack_zone_destroy(&z);
}

Test(dag_graph, cycles_are_refused_and_named) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  dag_graph g;
  bus_field_err e[8];
  int n;
  cr_expect_eq(build(&z, "a: c; b: a; c: b; d", &g, e, &n), BUS_EINVAL);
  cr_assert_eq(n, 1);
  cr_expect_str_eq(e[0].reason, "cycle: a -> b -> c -> a");
  cr_expect_eq(build(&z, "x; a: a", &g, e, &n), BUS_EINVAL);
  cr_expect_str_eq(e[0].reason, "cycle: a -> a", "self-dependency");
  cr_expect_eq(build(&z, "train: eval; eval: train", &g, e, &n), BUS_EINVAL);
  cr_expect_str_eq(e[0].reason, "cycle: train -> eval -> train");
  cr_expect_eq(build(&z, "d: b c; b: a; c: a; a", &g, e, &n), 0,
               "a diamond is no cycle");
  dag_graph_free(&g);
  msgpack_zone_destroy(&z);
}

Test(dag_graph, hostile_shapes_are_reported) {
  msgpack_object o = {.type = MSGPACK_OBJECT_NIL};
  dag_graph g;
  bus_field_err e[8];
  int n;
  cr_expect_eq(dag_graph_build(&o, "wf", &g, e, 8, &n), BUS_EINVAL);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates");
  cr_expect_eq(dag_graph_build(NULL, NULL, &g, NULL, 0, NULL), BUS_EINVAL);
  /* {jobTemplates: [1, {name: 7}]} */
  const char mp[] = "\x81\xacjobTemplates\x92\x01\x81\xa4name\x07";
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(msgpack_unpack(mp, sizeof mp - 1, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_expect_eq(dag_graph_build(&o, "wf", &g, e, 8, &n), BUS_EINVAL);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates[0]");
  msgpack_zone_destroy(&z);
}

Test(dag_graph, job_names_are_derived_names) {
  char out[300], wf[64], t[64];
  cr_expect_eq(dag_job_name("train", "eval", out, sizeof out), 0);
  cr_expect_str_eq(out, "train-eval");
  memset(wf, 'a', 63);
  wf[63] = 0;
  memset(t, 'b', 63);
  t[63] = 0;
  cr_expect_eq(dag_job_name(wf, t, out, sizeof out), 0, "127 <= 253");
  cr_expect_eq(dag_job_name(wf, t, out, 100), BUS_ENAME, "does not fit");
  cr_expect_eq(dag_job_name("", "x", out, sizeof out), BUS_ENAME);
}

/* ----------------------------------------------------------- evaluation */

Test(dag_eval, readiness_skips_and_phases) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  dag_graph g;
  bus_field_err e[8];
  int n;
  /* a -> b -> d, a -> c (c independent of b) */
  cr_assert_eq(build(&z, "a; b: a; c: a; d: b", &g, e, &n), 0);
  uint8_t st[4] = {0}, ready[4], skipped[4];
  dag_eval ev;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect(ready[0] && !ready[1] && !ready[2] && !ready[3]);
  cr_expect_eq(ev.phase, DAG_WF_PENDING);
  st[0] = DAG_RUNNING;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect_eq(ev.phase, DAG_WF_RUNNING);
  cr_expect(!ready[1]);
  st[0] = DAG_SUCCEEDED;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect(ready[1] && ready[2] && !ready[3]);
  st[1] = DAG_FAILED;
  st[2] = DAG_RUNNING;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect(skipped[3] && !ready[3]);
  cr_expect_eq(ev.phase, DAG_WF_RUNNING, "c still runs");
  st[2] = DAG_SUCCEEDED;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect_eq(ev.phase, DAG_WF_FAILED);
  cr_expect_str_eq(ev.reason, "failed: b; skipped: d");
  cr_expect_eq(ev.succeeded, 2);
  dag_evaluate(&g, st, 1, ready, skipped, &ev);
  cr_expect_eq(ev.phase, DAG_WF_STOPPED);
  st[1] = st[3] = DAG_SUCCEEDED;
  dag_evaluate(&g, st, 0, ready, skipped, &ev);
  cr_expect_eq(ev.phase, DAG_WF_SUCCEEDED);
  cr_expect_str_eq(dag_phase_name(ev.phase), "Succeeded");
  cr_expect_str_eq(dag_state_name(DAG_NONE, 1), "Skipped");
  dag_graph_free(&g);
  msgpack_zone_destroy(&z);
}

/* ----------------------------------------------------------------- diff */

Test(dag_diff, key_order_does_not_matter_and_paths_are_named) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object a = workflow_obj(&z, "wf", "a; b: a", 1);
  msgpack_object b = workflow_obj(&z, "wf", "a; b: a", 1);
  msgpack_object c = workflow_obj(&z, "wf", "a; b: a; c", 2);
  bus_field_err e[8];
  int n;
  cr_expect(dag_obj_equal(&a, &b, "", e, 8, &n));
  /* the same map with its keys reversed */
  const char m1[] = "\x82\xa1x\x01\xa1y\x02", m2[] = "\x82\xa1y\x02\xa1x\x01";
  msgpack_object o1, o2;
  msgpack_unpack(m1, 7, NULL, &z, &o1);
  msgpack_unpack(m2, 7, NULL, &z, &o2);
  cr_expect(dag_obj_equal(&o1, &o2, "", e, 8, &n));
  cr_expect(!dag_obj_equal(&a, &c, "", e, 8, &n));
  cr_assert_eq(n, 3);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates[0].spec.tasks[0].replicas");
  cr_expect_str_eq(e[2].path, "spec.jobTemplates");
  cr_expect_str_eq(e[2].reason, "3 items, was 2");
  msgpack_zone_destroy(&z);
}

/* ------------------------------------------------ view, without a broker */

static char dir[256];
static bus_view *view;
static uint64_t seq;

static void
view_setup(void) {
  lt_tmpdir(dir, sizeof dir, "dagview");
  bus_view_def def;
  dag_view_def(&def);
  view = lt_must_open_view(&def, dir, 1);
  seq = 0;
}

static void
view_teardown(void) {
  bus_view_close(view);
  lt_rmtree(dir);
}

static uint64_t
version_of(const char *subject, int *deleted) {
  bus_txn *t;
  bus_version v;
  cr_assert_eq(bus_view_read(view, &t), 0);
  cr_assert_eq(bus_txn_version(t, subject, &v), 0);
  bus_txn_end(t);
  if (deleted)
    *deleted = v.deleted;
  return v.seq;
}

/* Append an event as the stream would: next seq, prev checked first (a
 * mismatch is refused, like the broker's check). 1 when appended. */
static int
append(const char *subject, const char *type, const char *actor, uint64_t prev,
       const void *data, size_t len) {
  if (prev != version_of(subject, NULL))
    return 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = 1000 + (int64_t)seq,
                  .actor = actor,
                  .cause = "",
                  .prev = prev,
                  .subject = subject,
                  .seq = ++seq};
  ev.data.type = MSGPACK_OBJECT_MAP;
  if (len)
    cr_assert_eq(msgpack_unpack(data, len, NULL, &z, &ev.data),
                 MSGPACK_UNPACK_SUCCESS);
  const bus_event *evs[1] = {&ev};
  cr_assert_eq(bus_view_apply(view, evs, 1), 0, "%s", bus_last_error());
  msgpack_zone_destroy(&z);
  return 1;
}

static void
user_append(const char *subject, const char *type, const void *data,
            size_t len) {
  cr_assert(
      append(subject, type, "alice", version_of(subject, NULL), data, len));
}

static void
job_phase(const char *job, const char *phase) {
  char subject[300], data[64];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  msgpack_sbuffer sb;
  lt_pack_field(&sb, "phase", phase);
  memcpy(data, sb.data, sb.size);
  cr_assert(append(subject, "job.phase", "lark-scheduler",
                   version_of(subject, NULL), data, sb.size));
  msgpack_sbuffer_destroy(&sb);
}

/* What the outbox published, for the checks below. */
static char published[256][96];
static int npublished;
static unsigned char outbox_done[8];

typedef struct entry {
  unsigned char key[8];
  char subject[300];
  void *body;
  size_t len;
} entry;

typedef struct entries {
  entry e[64];
  int n;
} entries;

static int
take(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  entries *es = ud;
  const unsigned char *p = val;
  cr_assert_eq(klen, 8);
  if (memcmp(key, outbox_done, 8) <= 0)
    return 0;
  entry *e = &es->e[es->n++];
  size_t slen = ((size_t)p[1] << 8) | p[2], idlen = p[3];
  memcpy(e->key, key, 8);
  memcpy(e->subject, p + 4, slen);
  e->subject[slen] = 0;
  e->len = vlen - 4 - slen - idlen;
  e->body = malloc(e->len);
  memcpy(e->body, p + 4 + slen + idlen, e->len);
  return es->n == 64;
}

/* Deliver every new outbox entry back into the stream, in order, until
 * nothing new is decided. Returns how many landed. */
static int
drain(void) {
  int landed = 0;
  for (;;) {
    entries es = {.n = 0};
    bus_txn *t;
    cr_assert_eq(bus_view_read(view, &t), 0);
    cr_assert(bus_txn_scan(t, "_outbox", NULL, 0, take, &es) >= 0);
    bus_txn_end(t);
    if (es.n == 0)
      return landed;
    for (int i = 0; i < es.n; i++) {
      msgpack_zone z;
      msgpack_zone_init(&z, 1024);
      bus_event ev;
      cr_assert_eq(bus_event_decode(es.e[i].body, es.e[i].len, &ev, &z), 0,
                   "%s", bus_last_error());
      cr_expect_str_eq(ev.actor, "lark-dag");
      bus_packbuf b;
      bus_packbuf_init(&b);
      msgpack_pack_object(&b.pk, ev.data);
      if (append(es.e[i].subject, ev.type, ev.actor, ev.prev, b.sb.data,
                 b.sb.size)) {
        snprintf(published[npublished++ % 256], 96, "%s %s", ev.type,
                 es.e[i].subject + 8);
        landed++;
      }
      bus_packbuf_destroy(&b);
      msgpack_zone_destroy(&z);
      memcpy(outbox_done, es.e[i].key, 8);
      free(es.e[i].body);
    }
  }
}

static int
count_published(const char *what) {
  int c = 0;
  for (int i = 0; i < npublished && i < 256; i++)
    c += !strcmp(published[i], what);
  return c;
}

/* The describe map of wf, in z. */
static msgpack_object
describe(msgpack_zone *z, const char *wf) {
  msgpack_sbuffer req, out;
  lt_pack_field(&req, "name", wf);
  msgpack_sbuffer_init(&out);
  msgpack_object r;
  msgpack_unpack(req.data, req.size, NULL, z, &r);
  bus_query_answer(view, dag_query, "workflow", "describe", &r, &out, NULL);
  msgpack_object o;
  lt_unpack_into(z, out.data, out.size, &o);
  msgpack_sbuffer_destroy(&req);
  msgpack_sbuffer_destroy(&out);
  const msgpack_object *res = bus_obj_get(&o, "result");
  cr_assert_not_null(res, "describe %s failed", wf);
  return *res;
}

static const char *
phase_of(const char *wf) {
  static char phase[32];
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object d = describe(&z, wf);
  bus_obj_str(&d, "phase", phase, sizeof phase);
  msgpack_zone_destroy(&z);
  return phase;
}

static void
submit(const char *name, const char *dagspec) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.workflow.%s", name);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_workflow(&sb, name, dagspec, 1);
  user_append(subject, "workflow.submitted", sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

TestSuite(dag_view, .init = view_setup, .fini = view_teardown, .timeout = 30);

Test(dag_view, train_then_eval_succeeds) {
  npublished = 0;
  memset(outbox_done, 0, 8);
  submit("rl", "eval: train; train");
  cr_expect_str_eq(phase_of("rl"), "Pending");
  drain();
  cr_expect_eq(count_published("job.submitted job.rl-train"), 1);
  cr_expect_eq(count_published("job.submitted job.rl-eval"), 0);
  cr_expect_str_eq(phase_of("rl"), "Running", "a Job was submitted");
  cr_expect_eq(count_published("workflow.phase workflow.rl"), 2,
               "Pending, then Running");
  job_phase("rl-train", "Running");
  drain();
  cr_expect_eq(count_published("workflow.phase workflow.rl"), 2);
  job_phase("rl-train", "Succeeded");
  drain();
  cr_expect_eq(count_published("job.submitted job.rl-eval"), 1);
  job_phase("rl-eval", "Running");
  job_phase("rl-eval", "Succeeded");
  drain();
  cr_expect_str_eq(phase_of("rl"), "Succeeded");
  cr_expect_eq(count_published("job.submitted job.rl-train"), 1, "once");
  cr_expect_eq(count_published("job.submitted job.rl-eval"), 1, "once");
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object d = describe(&z, "rl");
  char s[64];
  cr_expect_str_eq(bus_obj_str(&d, "progress", s, sizeof s), "2/2");
  const msgpack_object *jobs = bus_obj_get(&d, "jobs");
  cr_assert_eq(jobs->via.array.size, 2);
  cr_expect_str_eq(bus_obj_str(&jobs->via.array.ptr[0], "name", s, 64),
                   "rl-train", "dependencies first");
  msgpack_zone_destroy(&z);
}

Test(dag_view, failure_skips_dependents_and_fails_the_workflow) {
  npublished = 0;
  memset(outbox_done, 0, 8);
  submit("w", "a; b: a; c: b; d");
  drain();
  cr_expect_eq(count_published("job.submitted job.w-a"), 1);
  cr_expect_eq(count_published("job.submitted job.w-d"), 1);
  job_phase("w-a", "Running");
  job_phase("w-d", "Running");
  job_phase("w-a", "Failed");
  drain();
  cr_expect_str_eq(phase_of("w"), "Running", "d still runs");
  job_phase("w-d", "Succeeded");
  drain();
  cr_expect_str_eq(phase_of("w"), "Failed");
  cr_expect_eq(count_published("job.submitted job.w-b"), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object d = describe(&z, "w");
  char s[128];
  cr_expect_str_eq(bus_obj_str(&d, "reason", s, sizeof s),
                   "failed: a; skipped: b, c");
  msgpack_zone_destroy(&z);

  /* stop then resume retries the failed Job */
  user_append("lark.ev.workflow.w", "workflow.stopped", NULL, 0);
  drain();
  cr_expect_eq(count_published("job.stopped job.w-a"), 1);
  cr_expect_eq(count_published("job.stopped job.w-d"), 0, "d succeeded");
  cr_expect_str_eq(phase_of("w"), "Stopped");
  user_append("lark.ev.workflow.w", "workflow.resumed", NULL, 0);
  drain();
  cr_expect_eq(count_published("job.resumed job.w-a"), 1);
  job_phase("w-a", "Succeeded");
  drain();
  cr_expect_eq(count_published("job.submitted job.w-b"), 1);
}

Test(dag_view, delete_deletes_jobs_and_a_new_generation_starts_clean) {
  npublished = 0;
  memset(outbox_done, 0, 8);
  submit("g", "a; b: a");
  drain();
  job_phase("g-a", "Succeeded");
  drain();
  user_append("lark.ev.workflow.g", "workflow.deleted", NULL, 0);
  drain();
  cr_expect_eq(count_published("job.deleted job.g-a"), 1);
  cr_expect_eq(count_published("job.deleted job.g-b"), 1);
  int deleted;
  uint64_t v = version_of("lark.ev.job.g-a", &deleted);
  cr_expect(deleted && v);
  submit("g", "a; b: a");
  drain();
  cr_expect_eq(count_published("job.submitted job.g-a"), 2, "generation 2");
  cr_expect_eq(count_published("job.submitted job.g-b"), 1);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object d = describe(&z, "g");
  char s[64];
  cr_expect_str_eq(bus_obj_str(&d, "progress", s, sizeof s), "0/2",
                   "the old Succeeded is gone");
  cr_expect_eq(bus_obj_int(&d, "generation", 0), 2);
  msgpack_zone_destroy(&z);
}

Test(dag_view, hostile_events_are_rejected_not_fatal) {
  /* a cycle appended behind the command path's back */
  submit("bad", "a: b; b: a");
  /* a name mismatch between subject and metadata */
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_workflow(&sb, "other", "a", 1);
  user_append("lark.ev.workflow.bad2", "workflow.submitted", sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  /* a stop for a Workflow that does not exist, a phase for an unknown Job */
  user_append("lark.ev.workflow.ghost", "workflow.stopped", NULL, 0);
  job_phase("nobody", "Running");
  bus_view_stats st;
  cr_assert_eq(bus_view_stats_get(view, &st), 0);
  cr_expect_eq(st.rejected, 3);
  cr_expect_eq(st.outbox, 0);
}

Test(dag_view, apply_checks_unchanged_changed_and_collisions) {
  npublished = 0;
  memset(outbox_done, 0, 8);
  submit("a", "b-c");
  drain();
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_field_err e[8];
  int n;
  uint64_t prev;
  bus_txn *t;
  cr_assert_eq(bus_view_read(view, &t), 0);
  msgpack_object same = workflow_obj(&z, "a", "b-c", 1);
  cr_expect_eq(dag_check_apply(t, &same, e, 8, &n, &prev), DAG_APPLY_UNCHANGED);
  cr_expect_eq(prev, version_of("lark.ev.workflow.a", NULL));
  msgpack_object changed = workflow_obj(&z, "a", "b-c", 3);
  cr_expect_eq(dag_check_apply(t, &changed, e, 8, &n, &prev), BUS_EEXISTS);
  cr_assert_eq(n, 1);
  cr_expect_str_eq(e[0].path, "spec.jobTemplates[0].spec.tasks[0].replicas");
  /* a-b + c collides with a + b-c */
  msgpack_object coll = workflow_obj(&z, "a-b", "c", 1);
  cr_expect_eq(dag_check_apply(t, &coll, e, 8, &n, &prev), BUS_EEXISTS);
  cr_assert_eq(n, 1);
  cr_expect(strstr(e[0].reason, "workflow a's Job a-b-c"), "%s", e[0].reason);
  msgpack_object cyc = workflow_obj(&z, "new", "x: y; y: x", 1);
  cr_expect_eq(dag_check_apply(t, &cyc, e, 8, &n, &prev), BUS_EINVAL);
  cr_expect_str_eq(e[0].reason, "cycle: x -> y -> x");
  msgpack_object fresh = workflow_obj(&z, "new", "x", 1);
  cr_expect_eq(dag_check_apply(t, &fresh, e, 8, &n, &prev), DAG_APPLY_NEW);
  cr_expect_eq(prev, 0);
  const char *type;
  cr_expect_eq(dag_check_verb(t, "a", "stop", &type, &prev), 0);
  cr_expect_str_eq(type, "workflow.stopped");
  cr_expect_eq(dag_check_verb(t, "a", "resume", &type, &prev),
               DAG_APPLY_UNCHANGED);
  cr_expect_eq(dag_check_verb(t, "zz", "delete", &type, &prev), BUS_ENOT_FOUND);
  bus_txn_end(t);
  msgpack_zone_destroy(&z);
}

/*
 * test_gateway_view.c - lark-gateway's view (services/gateway/view*.c):
 * events built by hand applied to a real view, one batch each as the
 * service does, then read back through the view's API: which objects an
 * event touched, history and ?at=, continue paging, filters, a watch
 * after a sequence, deletes, revocations, and a replay of the same log
 * (one batch) giving the same digest as the live view.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "gateway.h"
#include "manifest.h"

static bus_view *view;
static char dir[256];
static uint64_t seq;

/* The log so far (for the replay): each event's subject, type, ts, prev
 * and data (JSON). */
typedef struct logged {
  char subject[128], type[32], actor[32];
  uint64_t prev;
  char *json;
} logged;
static logged log_[64];
static int nlog;
static const char *actor = "t"; /* of the events fed next */

/* Versions of subjects: the seq of each one's last event. */
static struct {
  char subject[128];
  uint64_t seq;
} vers[64];
static int nvers;

static uint64_t *
version(const char *subject) {
  for (int i = 0; i < nvers; i++)
    if (!strcmp(vers[i].subject, subject))
      return &vers[i].seq;
  cr_assert_lt(nvers, 64);
  snprintf(vers[nvers].subject, sizeof vers[nvers].subject, "%s", subject);
  vers[nvers].seq = 0;
  return &vers[nvers++].seq;
}

static bus_view *
open_gw(const char *d) {
  bus_view_def def;
  gw_view_def(&def);
  return lt_must_open_view(&def, d, 0);
}

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "gwview");
  view = open_gw(dir);
  seq = 0;
  nlog = nvers = 0;
  actor = "t";
}

static void
teardown(void) {
  bus_view_close(view);
  lt_rmtree(dir);
  for (int i = 0; i < nlog; i++)
    free(log_[i].json);
}

/* The event at seq s of the log as v applies it; its data unpacked in z. */
static void
event_of(int i, msgpack_zone *z, msgpack_sbuffer *sb, bus_event *ev, char *id) {
  json_error_t err;
  json_t *j = json_loads(log_[i].json, 0, &err);
  cr_assert_not_null(j, "%s: %s", log_[i].json, err.text);
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  lark_json_pack(j, &pk);
  json_decref(j);
  msgpack_object o;
  cr_assert(msgpack_unpack(sb->data, sb->size, NULL, z, &o) >= 0);
  snprintf(id, 33, "%032x", i + 1);
  *ev = (bus_event){.v = 1,
                    .type = log_[i].type,
                    .id = id,
                    .ts = (int64_t)(i + 1) * 1000000000,
                    .actor = log_[i].actor,
                    .cause = "",
                    .prev = log_[i].prev,
                    .data = o,
                    .subject = log_[i].subject,
                    .seq = (uint64_t)i + 1};
}

/* Append one event (data as JSON) and apply it as a batch of its own. */
static uint64_t
feed(const char *subject, const char *type, const char *json) {
  cr_assert_lt(nlog, 64);
  logged *l = &log_[nlog++];
  snprintf(l->subject, sizeof l->subject, "%s", subject);
  snprintf(l->type, sizeof l->type, "%s", type);
  snprintf(l->actor, sizeof l->actor, "%s", actor);
  uint64_t *ver = version(subject);
  l->prev = *ver;
  l->json = strdup(json);
  msgpack_zone z;
  msgpack_sbuffer sb;
  bus_event ev;
  char id[33];
  msgpack_zone_init(&z, 4096);
  event_of(nlog - 1, &z, &sb, &ev, id);
  msgpack_sbuffer enc;
  msgpack_sbuffer_init(&enc);
  cr_assert_eq(bus_event_encode(&ev, &enc), 0, "%s %s: %s", subject, type,
               bus_last_error());
  msgpack_sbuffer_destroy(&enc);
  const bus_event *evs[1] = {&ev};
  cr_assert_eq(bus_view_apply(view, evs, 1), 0, "%s %s: %s", subject, type,
               bus_last_error());
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
  *ver = ++seq;
  return seq;
}

static const char node_json[] =
    "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Node\","
    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cluster\":\"c1\","
    "\"addresses\":[\"127.0.0.1\"],\"runtimes\":[\"raw\"],"
    "\"capacity\":{\"cpu\":16,\"memory\":8192}}}";

static const char job_json[] =
    "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Job\","
    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"tasks\":[{\"name\":\"work\","
    "\"role\":\"Actor\","
    "\"replicas\":%d,\"resources\":{\"cpu\":1,\"memory\":64},"
    "\"runtime\":{\"raw\":{\"entrypoint\":[\"/bin/true\"]}}}]}}";

static void
node(const char *name) {
  char subject[128], json[1024];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  snprintf(json, sizeof json, node_json, name);
  feed(subject, "node.registered", json);
}

static uint64_t
submit(const char *job, int replicas) {
  char subject[128], json[1024];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  snprintf(json, sizeof json, job_json, job, replicas);
  return feed(subject, "job.submitted", json);
}

/* Every pod of job on node, as the scheduler places a gang. */
static uint64_t
place(const char *job, int replicas, const char *node) {
  char json[4096];
  int n = snprintf(json, sizeof json,
                   "{\"pool\":\"default\",\"job\":\"%s\",\"generation\":1,"
                   "\"bindings\":[",
                   job);
  for (int i = 0; i < replicas; i++)
    n += snprintf(json + n, sizeof json - (size_t)n,
                  "%s{\"pod\":\"%s-work-%d\",\"task\":\"%s-work\","
                  "\"node\":\"%s\"}",
                  i ? "," : "", job, i, job, node);
  snprintf(json + n, sizeof json - (size_t)n, "]}");
  return feed("lark.ev.placement.default", "job.placed", json);
}

static uint64_t
pod_phase(const char *pod, const char *job, const char *node,
          const char *phase) {
  char subject[128], json[512];
  snprintf(subject, sizeof subject, "lark.ev.pod.%s", pod);
  snprintf(json, sizeof json,
           "{\"phase\":\"%s\",\"job\":\"%s\",\"node\":\"%s\"}", phase, job,
           node);
  return feed(subject, "pod.phase", json);
}

/* ----------------------------------------------------------- reading */

static json_t *
parse(const gw_buf *b) {
  json_error_t err;
  json_t *j = json_loadb(b->p, b->len, 0, &err);
  cr_assert_not_null(j, "not JSON (%s): %.*s", err.text, (int)b->len, b->p);
  return j;
}

static json_t *
list(gw_kind k, const gw_list_opts *o, uint64_t *rv) {
  gw_buf b = {0};
  cr_assert_eq(gw_list(view, k, o, &b, rv), 0, "%s", bus_last_error());
  json_t *j = parse(&b);
  gw_buf_free(&b);
  return j;
}

static json_t *
get(gw_kind k, const char *name, int64_t at) {
  gw_buf b = {0};
  int rc = gw_get(view, k, name, at, &b);
  json_t *j = rc ? NULL : parse(&b);
  gw_buf_free(&b);
  return j;
}

static const char *
field(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* Changes given by a watch, as "TYPE plural/name" lines. */
typedef struct seen {
  char lines[4096];
  int n;
  uint64_t last;
} seen;

static int
on_change(void *ud, uint64_t s, const char *type, const char *json,
          size_t len) {
  seen *w = ud;
  json_error_t err;
  json_t *j = json_loadb(json, len, 0, &err);
  cr_assert_not_null(j, "change not JSON: %.*s", (int)len, json);
  cr_assert_str_eq(json_string_value(json_object_get(j, "type")), type);
  json_t *obj = json_object_get(j, "object");
  json_t *md = json_object_get(obj, "metadata");
  size_t n = strlen(w->lines);
  snprintf(w->lines + n, sizeof w->lines - n, "%s %s/%s\n", type,
           field(obj, "kind"), field(md, "name"));
  cr_assert_geq(s, w->last, "changes in sequence order");
  w->last = s;
  w->n++;
  json_decref(j);
  return 0;
}

TestSuite(gateway_view, .init = setup, .fini = teardown, .timeout = 60);

/* A platform: n1, Job j1 of 3 pods placed on n1, j1-work-0 Running. */
static uint64_t
platform(void) {
  node("n1");
  submit("j1", 3);
  place("j1", 3, "n1");
  return pod_phase("j1-work-0", "j1", "n1", "Running");
}

Test(gateway_view, objects_rendered_from_the_embedded_views) {
  platform();
  json_t *p = get(GW_PODS, "j1-work-0", 0);
  cr_assert_not_null(p, "%s", bus_last_error());
  cr_assert_str_eq(field(p, "apiVersion"), "rlinf.io/v1alpha1");
  cr_assert_str_eq(field(p, "kind"), "Pod");
  cr_assert_str_eq(field(p, "phase"), "Running");
  cr_assert_str_eq(field(p, "node"), "n1");
  cr_assert_str_eq(field(p, "job"), "j1");
  cr_assert_str_eq(field(json_object_get(p, "metadata"), "resourceVersion"),
                   "4");
  json_decref(p);
  json_t *j = get(GW_JOBS, "j1", 0);
  cr_assert_not_null(j);
  cr_assert_str_eq(field(j, "kind"), "Job");
  cr_assert(json_is_object(json_object_get(j, "spec")), "the Job's spec");
  json_decref(j);
  json_t *n = get(GW_NODES, "n1", 0);
  cr_assert_not_null(n);
  cr_assert_str_eq(field(n, "status"), "Ready");
  json_decref(n);
  cr_assert_null(get(GW_PODS, "nope", 0));
  cr_assert_eq(gw_get(view, GW_PODS, "nope", 0, &(gw_buf){0}), BUS_ENOT_FOUND);
}

Test(gateway_view, a_pod_event_touches_its_pod_job_task_and_node_only) {
  uint64_t s = platform();
  seen w = {0};
  uint64_t after = s - 1;
  cr_assert_gt(gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 0), 0);
  cr_assert_str_eq(w.lines, "MODIFIED Pod/j1-work-0\n");
  cr_assert_eq(after, s);
  /* the other pods were not written at that sequence */
  json_t *p1 = get(GW_PODS, "j1-work-1", 0);
  cr_assert_str_neq(field(json_object_get(p1, "metadata"), "resourceVersion"),
                    "4");
  json_decref(p1);
}

Test(gateway_view, list_pages_with_continue_and_filters) {
  platform();
  node("n2");
  submit("j2", 2);
  place("j2", 2, "n2");
  gw_list_opts o;
  gw_list_opts_init(&o);
  o.limit = 2;
  uint64_t rv = 0;
  json_t *l = list(GW_PODS, &o, &rv);
  cr_assert_eq(rv, seq);
  cr_assert_str_eq(field(l, "kind"), "PodList");
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 2);
  const char *cont = field(json_object_get(l, "metadata"), "continue");
  cr_assert_str_eq(cont, "j1-work-1");
  char token[64];
  snprintf(token, sizeof token, "%s", cont);
  json_decref(l);
  int total = 2;
  o.cont = token;
  for (;;) {
    l = list(GW_PODS, &o, NULL);
    total += (int)json_array_size(json_object_get(l, "items"));
    const char *c = field(json_object_get(l, "metadata"), "continue");
    int more = *c;
    snprintf(token, sizeof token, "%s", c);
    json_decref(l);
    if (!more)
      break;
  }
  cr_assert_eq(total, 5);
  gw_list_opts_init(&o);
  o.job = "j2";
  l = list(GW_PODS, &o, NULL);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 2);
  json_decref(l);
  o.job = NULL;
  o.node = "n1";
  l = list(GW_PODS, &o, NULL);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 3);
  json_decref(l);
  gw_list_opts_init(&o);
  o.cont = "../etc";
  gw_buf b = {0};
  cr_assert_eq(gw_list(view, GW_PODS, &o, &b, NULL), BUS_EINVAL);
  cr_assert_eq(b.len, 0, "nothing appended on error");
  gw_buf_free(&b);
}

Test(gateway_view, at_answers_from_history) {
  platform();
  uint64_t done = pod_phase("j1-work-0", "j1", "n1", "Succeeded");
  /* event i has ts i seconds */
  cr_assert_eq(gw_seq_at(view, 4 * 1000000000LL + 5), 4);
  cr_assert_eq(gw_seq_at(view, 500), 0);
  json_t *p = get(GW_PODS, "j1-work-0", (int64_t)done * 1000000000);
  cr_assert_str_eq(field(p, "phase"), "Succeeded");
  json_decref(p);
  p = get(GW_PODS, "j1-work-0", 4 * 1000000000LL);
  cr_assert_str_eq(field(p, "phase"), "Running");
  json_decref(p);
  cr_assert_null(get(GW_PODS, "j1-work-0", 1 * 1000000000LL),
                 "no pods before the Job");
  gw_list_opts o;
  gw_list_opts_init(&o);
  o.at_ns = 4 * 1000000000LL;
  uint64_t rv = 0;
  json_t *l = list(GW_PODS, &o, &rv);
  cr_assert_eq(rv, 4);
  json_t *items = json_object_get(l, "items");
  cr_assert_eq(json_array_size(items), 3);
  cr_assert_str_eq(field(json_array_get(items, 0), "phase"), "Running");
  json_decref(l);
  o.at_ns = 1 * 1000000000LL; /* only the node then */
  l = list(GW_PODS, &o, &rv);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 0);
  json_decref(l);
  l = list(GW_NODES, &o, &rv);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 1);
  json_decref(l);
}

Test(gateway_view, watch_from_zero_then_after_a_sequence) {
  platform();
  seen w = {0};
  uint64_t after = 0;
  cr_assert_eq(gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 0), 3);
  cr_assert_eq(after, seq);
  cr_assert_str_eq(w.lines, "ADDED Pod/j1-work-0\nADDED Pod/j1-work-1\n"
                            "ADDED Pod/j1-work-2\n");
  memset(&w, 0, sizeof w);
  cr_assert_eq(gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 50), 0,
               "nothing new: a timeout");
  uint64_t s = pod_phase("j1-work-2", "j1", "n1", "Running");
  cr_assert_eq(gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 50),
               1);
  cr_assert_str_eq(w.lines, "MODIFIED Pod/j1-work-2\n");
  cr_assert_eq(after, s);
  /* from the start of the log: every change of every pod, in order */
  memset(&w, 0, sizeof w);
  after = 1;
  cr_assert_gt(gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 0), 3);
  cr_assert(!strncmp(w.lines, "ADDED Pod/j1-work-0\n", 20), "%s", w.lines);
}

Test(gateway_view, deletes_are_changes_with_the_last_json) {
  platform();
  uint64_t del = feed("lark.ev.job.j1", "job.deleted", "{\"reason\":\"t\"}");
  cr_assert_null(get(GW_JOBS, "j1", 0));
  seen w = {0};
  uint64_t after = del - 1;
  gw_watch_next(view, GW_JOBS, NULL, &after, on_change, &w, 0);
  cr_assert_str_eq(w.lines, "DELETED Job/j1\n");
  memset(&w, 0, sizeof w);
  after = del - 1;
  gw_watch_next(view, GW_PODS, NULL, &after, on_change, &w, 0);
  cr_assert_eq(w.n, 3, "every pod of the Job: %s", w.lines);
  cr_assert(strstr(w.lines, "DELETED Pod/j1-work-1"), "%s", w.lines);
  json_t *l = list(GW_PODS, NULL, NULL);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 0);
  json_decref(l);
  json_t *old = get(GW_JOBS, "j1", (int64_t)(del - 1) * 1000000000);
  cr_assert_not_null(old, "the Job as it was before");
  json_decref(old);
}

Test(gateway_view, revocations) {
  cr_assert_eq(gw_revocations(view), 0);
  feed("lark.ev.cert.00ab", "cert.issued",
       "{\"serial\":\"00ab\",\"format\":\"x509\",\"role\":\"admin\","
       "\"subject\":\"CN=alice\",\"notBefore\":1,\"notAfter\":2,"
       "\"cert\":\"x\"}");
  cr_assert_eq(gw_cert_revoked(view, "00ab"), 0);
  feed("lark.ev.cert.00ab", "cert.revoked", "{\"serial\":\"00ab\"}");
  cr_assert_eq(gw_cert_revoked(view, "00ab"), 1);
  cr_assert_eq(gw_cert_revoked(view, "00AB"), 1, "hex in either case");
  cr_assert_eq(gw_revocations(view), 1);
}

/* The same log applied in one batch to a new view: the same digest. */
Test(gateway_view, a_replay_gives_the_live_digest) {
  platform();
  pod_phase("j1-work-0", "j1", "n1", "Succeeded");
  feed("lark.ev.job.j1", "job.deleted", "{\"reason\":\"t\"}");
  char dir2[256];
  lt_tmpdir(dir2, sizeof dir2, "gwreplay");
  bus_view *r = open_gw(dir2);
  msgpack_zone z[64];
  msgpack_sbuffer sb[64];
  bus_event evs[64];
  const bus_event *ptrs[64];
  char ids[64][33];
  for (int i = 0; i < nlog; i++) {
    msgpack_zone_init(&z[i], 4096);
    event_of(i, &z[i], &sb[i], &evs[i], ids[i]);
    ptrs[i] = &evs[i];
  }
  cr_assert_eq(bus_view_apply(r, ptrs, (size_t)nlog), 0, "%s",
               bus_last_error());
  uint8_t a[32], b[32];
  uint64_t sa, sb2;
  cr_assert_eq(bus_view_digest(view, a, &sa), 0);
  cr_assert_eq(bus_view_digest(r, b, &sb2), 0);
  cr_assert_eq(sa, sb2);
  cr_assert_arr_eq(a, b, 32, "replay digest differs from the live one");
  for (int i = 0; i < nlog; i++) {
    msgpack_zone_destroy(&z[i]);
    msgpack_sbuffer_destroy(&sb[i]);
  }
  bus_view_close(r);
  lt_rmtree(dir2);
}

/* Embedded views that lost what the gateway view kept: the next start
 * rebuilds both (gw_view_prepare removes the directory). */
Test(gateway_view, disagreeing_embedded_views_are_rebuilt) {
  platform();
  bus_view_close(view);
  view = NULL;
  cr_assert_eq(gw_view_prepare(dir), 0);
  view = open_gw(dir);
  json_t *kept = get(GW_PODS, "j1-work-0", 0);
  cr_assert_not_null(kept, "agreeing: kept");
  json_decref(kept);
  bus_view_close(view);
  char emb[512], other[512];
  snprintf(emb, sizeof emb, "%s/embedded/scheduler", dir);
  lt_rmtree(emb);
  snprintf(other, sizeof other, "%s/keep", dir);
  FILE *f = fopen(other, "w");
  cr_assert_not_null(f);
  fclose(f);
  cr_assert_eq(gw_view_prepare(dir), 0, "%s", bus_last_error());
  cr_assert_eq(access(other, F_OK), 0, "other files of the directory kept");
  view = open_gw(dir);
  cr_assert_null(get(GW_PODS, "j1-work-0", 0), "rebuilt: empty");
  bus_view_stats st;
  cr_assert_eq(bus_view_stats_get(view, &st), 0);
  cr_assert_eq(st.applied_seq, 0);
}

static uint64_t
count_of(const gw_count *v, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(v[i].name, name))
      return v[i].n;
  return 0;
}

/* Events by type, pods by phase, nodes, and the two latencies (events'
 * ts: submitted at 2 s, placed at 3 s, j1-work-0 Running at 4 s). */
Test(gateway_view, counts_for_metrics) {
  platform();
  gw_counts c;
  cr_assert_eq(gw_counts_get(view, &c), 0, "%s", bus_last_error());
  cr_assert_eq(c.applied_seq, 4);
  cr_assert_eq(count_of(c.types, c.ntypes, "pod.phase"), 1);
  cr_assert_eq(count_of(c.types, c.ntypes, "job.submitted"), 1);
  cr_assert_eq(count_of(c.phases, c.nphases, "Running"), 1);
  uint64_t pods = 0;
  for (size_t i = 0; i < c.nphases; i++)
    pods += c.phases[i].n;
  cr_assert_eq(pods, 3);
  cr_assert_eq(c.nodes_ready + c.nodes_notready, 1);
  cr_assert_eq(c.sched_latency.count, 1);
  cr_assert_float_eq(c.sched_latency.sum, 1.0, 1e-9);
  cr_assert_eq(c.sched_latency.bucket[7], 1, "1 s falls in le=1");
  cr_assert_eq(c.pod_start.count, 1);
  cr_assert_float_eq(c.pod_start.sum, 1.0, 1e-9);
  gw_counts_free(&c);
}

/* A Domain, and its allocation giving each pod of the Job its virtualIP
 * (as `larkctl get pods -o wide` shows it). */
Test(gateway_view, domains_and_virtual_ips) {
  node("n1");
  feed("lark.ev.ipam.domains", "domain.created",
       "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Domain\","
       "\"metadata\":{\"name\":\"d1\"},\"spec\":{\"cidr\":\"10.9.0.0/24\"}}");
  json_t *d = get(GW_DOMAINS, "d1", 0);
  cr_assert_not_null(d, "%s", bus_last_error());
  cr_assert_str_eq(field(d, "kind"), "Domain");
  cr_assert_eq(json_integer_value(json_object_get(d, "used")), 0);
  json_decref(d);
  char json[1024];
  snprintf(json, sizeof json, job_json, "j1", 2);
  char *spec = strstr(json, "\"spec\":{");
  cr_assert_not_null(spec);
  memmove(spec + 8 + 14, spec + 8, strlen(spec + 8) + 1);
  memcpy(spec + 8, "\"domain\":\"d1\",", 14);
  feed("lark.ev.job.j1", "job.submitted", json);
  place("j1", 2, "n1");
  feed("lark.ev.domain.d1", "domain.allocated",
       "{\"domain\":\"d1\",\"job\":\"j1\",\"generation\":1,\"addresses\":["
       "{\"pod\":\"j1-work-0\",\"ip\":\"10.9.0.1\"},"
       "{\"pod\":\"j1-work-1\",\"ip\":\"10.9.0.2\"}]}");
  json_t *p = get(GW_PODS, "j1-work-1", 0);
  cr_assert_str_eq(field(p, "virtualIP"), "10.9.0.2");
  json_decref(p);
  d = get(GW_DOMAINS, "d1", 0);
  cr_assert_eq(json_integer_value(json_object_get(d, "used")), 2);
  json_decref(d);
}

/* A Workflow: its object with its spec and its Jobs; a Job it names is
 * listed under ?workflow=, and its phase moves the Workflow's JSON. */
Test(gateway_view, workflows_and_their_jobs) {
  node("n1");
  feed("lark.ev.workflow.w1", "workflow.submitted",
       "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Workflow\","
       "\"metadata\":{\"name\":\"w1\"},\"spec\":{\"jobTemplates\":[{"
       "\"name\":\"train\",\"spec\":{\"tasks\":[{\"name\":\"work\","
       "\"role\":\"Actor\",\"replicas\":1,\"resources\":{\"cpu\":1,"
       "\"memory\":64},\"runtime\":{\"raw\":{\"entrypoint\":"
       "[\"/bin/true\"]}}}]}}]}}");
  json_t *w = get(GW_WORKFLOWS, "w1", 0);
  cr_assert_not_null(w, "%s", bus_last_error());
  cr_assert_str_eq(field(w, "kind"), "Workflow");
  cr_assert(json_is_array(
      json_object_get(json_object_get(w, "spec"), "jobTemplates")));
  json_decref(w);
  actor = "lark-dag"; /* its Job, as lark-dag submits it */
  feed("lark.ev.job.w1-train", "job.submitted",
       "{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":\"Job\","
       "\"metadata\":{\"name\":\"w1-train\",\"labels\":{"
       "\"rlark.io/workflow\":\"w1\"},\"annotations\":{"
       "\"rlark.io/workflow-generation\":\"1\"}},\"spec\":{\"tasks\":[{"
       "\"name\":\"work\",\"role\":\"Actor\",\"replicas\":1,"
       "\"resources\":{\"cpu\":1,\"memory\":64},\"runtime\":{\"raw\":"
       "{\"entrypoint\":[\"/bin/true\"]}}}]}}");
  actor = "t";
  submit("other", 1);
  gw_list_opts o;
  gw_list_opts_init(&o);
  o.workflow = "w1";
  json_t *l = list(GW_JOBS, &o, NULL);
  json_t *items = json_object_get(l, "items");
  cr_assert_eq(json_array_size(items), 1);
  cr_assert_str_eq(field(json_array_get(items, 0), "name"), "w1-train");
  json_decref(l);
  uint64_t s =
      feed("lark.ev.job.w1-train", "job.phase", "{\"phase\":\"Running\"}");
  seen c = {0};
  uint64_t after = s - 1;
  gw_watch_next(view, GW_WORKFLOWS, NULL, &after, on_change, &c, 0);
  cr_assert_str_eq(c.lines, "MODIFIED Workflow/w1\n",
                   "its Job's phase shows in the Workflow");
}

/* ?at= pages with continue too, each page as the platform was then. */
Test(gateway_view, at_pages_with_continue) {
  uint64_t s = platform();
  pod_phase("j1-work-1", "j1", "n1", "Running");
  gw_list_opts o;
  gw_list_opts_init(&o);
  o.at_ns = (int64_t)s * 1000000000;
  o.limit = 2;
  json_t *l = list(GW_PODS, &o, NULL);
  json_t *items = json_object_get(l, "items");
  cr_assert_eq(json_array_size(items), 2);
  char token[64];
  snprintf(token, sizeof token, "%s",
           field(json_object_get(l, "metadata"), "continue"));
  cr_assert_neq(token[0], 0);
  cr_assert_str_eq(field(json_array_get(items, 1), "name"), "j1-work-1");
  cr_assert_str_neq(field(json_array_get(items, 1), "phase"), "Running",
                    "j1-work-1 was not Running yet");
  json_decref(l);
  o.cont = token;
  l = list(GW_PODS, &o, NULL);
  cr_assert_eq(json_array_size(json_object_get(l, "items")), 1);
  cr_assert_str_eq(field(json_object_get(l, "metadata"), "continue"), "");
  json_decref(l);
}

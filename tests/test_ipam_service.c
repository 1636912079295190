/*
 * test_ipam_service.c - lark-ipam and lark-scheduler as real processes
 * against a real broker: Domains applied and refused, a domain Job placed,
 * addressed in one event and only then dispatched, its routes on
 * LARK_ROUTES (and their tombstones), exhaustion, two lark-ipam at once
 * never handing out one address twice, racing overlapping creations, and
 * kill -9 mid-work followed by a replay that matches the live view.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_check.h"
#include "json.h"
#include "natsd.h"
#include "proc.h"
#include "service.h"
#include "bed.h"
#include "replay.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[4];

static pid_t
start(const char *bin_name, const char *name) {
  return lt_must_start_named(bin_name, srv.url, dir, name);
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "ipamsvc", 1000);
  memset(procs, 0, sizeof procs);
  procs[0] = start("lark-scheduler", "scheduler");
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 4);
}

TestSuite(ipam_service, .init = setup, .fini = teardown, .timeout = 150);

/* commands as admin, failing the test when refused */
#define command(kind, verb, json, z) lt_must_command(conn, kind, verb, json, z)

/* ------------------------------------------------------------ helpers */

static void
domain(const char *name, const char *cidr) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":"
           "\"Domain\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cidr\":"
           "\"%s\"}}}",
           name, cidr);
  lt_must_apply(conn, "domain", json);
}

static void
node(const char *name, const char *cluster, int gpus) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"%s\",\"runtimes\":[\"raw\",\"raw+netns\"],"
           "\"capacity\":{\"cpu\":64,\"memory\":65536,\"gpu\":%d}}}}",
           name, cluster, gpus);
  lt_must_apply(conn, "node", json);
}

static void
job(const char *name, const char *dom, int replicas, int gpus) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"domain\":\"%s\",\"tasks\":[{\"name\":\"a\",\"role\":\"Actor\","
           "\"replicas\":%d,\"resources\":{\"cpu\":1,\"memory\":128,"
           "\"gpu\":%d},\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]"
           "}}}",
           name, dom, replicas, gpus);
  lt_must_apply(conn, "job", json);
}

/* A field of kind/name as its owner describes it, as text; and waiting
 * (up to 15 s) for it to be want. */
#define field(kind, sub, name, key, out, cap)                                  \
  lt_field(conn, kind, sub, name, key, out, cap)
#define wait_field(kind, sub, name, key, want)                                 \
  lt_field_becomes(conn, kind, sub, name, key, want, 15)

/* A node reports a pod on its ingress subject (localIP may be NULL). */
static void
report(const char *node_name, const char *pod, const char *phase,
       const char *local_ip) {
  lt_pod_says(conn, node_name, pod, 0, phase, local_ip);
}

/* The last message on a subject of stream (type and a field), or 0. */
static int
last_msg(const char *stream, const char *subject, char *type, size_t tcap,
         const char *key, char *val, size_t vcap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  int rc = bus_last_event(conn, stream, subject, &ev, &z);
  if (!rc) {
    snprintf(type, tcap, "%s", ev.type);
    val[0] = 0;
    if (key)
      bus_obj_str(&ev.data, key, val, vcap);
  }
  msgpack_zone_destroy(&z);
  return rc == 0;
}

static int
wait_msg(const char *stream, const char *subject, const char *type,
         const char *key, const char *want) {
  char t[64] = "", v[256] = "";
  for (int i = 0; i < 100; i++, usleep(100 * 1000))
    if (last_msg(stream, subject, t, sizeof t, key, v, sizeof v) &&
        !strcmp(t, type) && (!want || !strcmp(v, want)))
      return 1;
  cr_log_error("%s: last is %s (%s=%s), not %s", subject, t, key ? key : "", v,
               type);
  return 0;
}

/* Every allocation of domain d as "pod=ip" lines, sorted by address. */
static int
allocations(const char *d, char *out, size_t cap, int *n) {
  char json[128];
  snprintf(json, sizeof json, "{\"name\":\"%s\"}", d);
  msgpack_zone z;
  msgpack_zone_init(&z, 65536);
  msgpack_object r = command("domain", "describe", json, &z);
  const msgpack_object *al =
      bus_obj_get(bus_obj_get(&r, "result"), "allocations");
  out[0] = 0;
  *n = 0;
  size_t len = 0;
  for (uint32_t i = 0; al && al->type == MSGPACK_OBJECT_ARRAY &&
                       i < al->via.array.size && len + 100 < cap;
       i++) {
    char pod[128], ip[64];
    bus_obj_str(&al->via.array.ptr[i], "pod", pod, sizeof pod);
    bus_obj_str(&al->via.array.ptr[i], "ip", ip, sizeof ip);
    len += (size_t)snprintf(out + len, cap - len, "%s=%s\n", pod, ip);
    (*n)++;
  }
  msgpack_zone_destroy(&z);
  return al != NULL;
}

static int
verify(const char *view) {
  bus_status live;
  lark_replay_result res;
  int rc = -1;
  for (int i = 0; i < 25 && rc; i++, usleep(200 * 1000))
    rc = lark_replay_verify(conn, lark_view_find(view), NULL, &live, &res);
  if (rc)
    cr_log_error("%s: %s", view, bus_last_error());
  return rc;
}

/* ------------------------------------------------------------- tests */

Test(ipam_service, domains_refused_with_reasons) {
  procs[1] = start("lark-ipam", "ipam");
  domain("net-a", "10.20.0.0/16");
  domain("net-a", "10.20.0.0/16"); /* the same again: unchanged */
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  const char *bad[][2] = {
      {"net-b", "10.20.7.0/24"}, /* overlaps net-a */
      {"net-c", "10.30.0.1/16"}, /* host bits */
      {"net-d", "300.0.0.0/8"},
      {"net-a", "10.40.0.0/16"}, /* changed cidr */
  };
  const char *why[] = {"overlaps domain net-a", "host bits", "must be a CIDR",
                       "delete it first"};
  for (int i = 0; i < 4; i++) {
    char json[512], msg[512] = "", path[64] = "";
    snprintf(json, sizeof json,
             "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\",\"kind\":"
             "\"Domain\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"cidr\":"
             "\"%s\"}}}",
             bad[i][0], bad[i][1]);
    msgpack_object r = command("domain", "apply", json, &z);
    const msgpack_object *e = bus_obj_get(&r, "error");
    cr_assert_not_null(e, "%s %s accepted", bad[i][0], bad[i][1]);
    bus_obj_str(e, "message", msg, sizeof msg);
    cr_expect(strstr(msg, why[i]), "'%s' lacks '%s'", msg, why[i]);
    const msgpack_object *d = bus_obj_get(e, "details");
    cr_assert(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size == 1);
    cr_expect_str_eq(bus_obj_str(&d->via.array.ptr[0], "path", path, 64),
                     "spec.cidr");
  }
  domain("net-6", "fd00:20::/64");
  char free[64];
  field("domain", "domain", "net-a", "free", free, sizeof free);
  cr_expect_str_eq(free, "65534");
  msgpack_zone_destroy(&z);
}

Test(ipam_service, domain_job_addressed_then_dispatched_and_routed) {
  node("gpu-1", "c1", 1);
  node("gpu-2", "c2", 1);
  job("train", "net", 2, 1); /* one pod per node: both clusters */
  /* no lark-ipam yet: placed, but nothing is dispatched */
  char n0[64] = "";
  for (int i = 0; i < 100 && !n0[0]; i++, usleep(100 * 1000))
    field("pod", NULL, "train-a-0", "node", n0, sizeof n0);
  cr_assert(n0[0], "train-a-0 never placed");
  sleep(1);
  uint64_t sent1 = 0, sent2 = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_NODE_gpu-1", &sent1), 0);
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_NODE_gpu-2", &sent2), 0);
  cr_expect_eq(sent1 + sent2, 0, "dispatched before domain.allocated");
  procs[1] = start("lark-ipam", "ipam");
  domain("net", "10.8.0.0/24");
  char n1[64];
  field("pod", NULL, "train-a-1", "node", n1, sizeof n1);
  char subj[256];
  char stream[BUS_NODE_STREAM_MAX];
  snprintf(subj, sizeof subj, "lark.node.%s.pod.train-a-0", n0);
  bus_node_stream_name(n0, stream, sizeof stream);
  cr_expect(wait_msg(stream, subj, "pod.desired", "desired", "Running"));
  char al[1024];
  int n = 0;
  /* lark-ipam's view takes its own event a moment after the scheduler */
  for (int i = 0; i < 100 && n < 2; i++, usleep(50 * 1000))
    allocations("net", al, sizeof al, &n);
  cr_expect_eq(n, 2);
  cr_expect(strstr(al, "=10.8.0.1\n") && strstr(al, "=10.8.0.2\n"), "%s", al);
  /* routes: every pod in each cluster's table, local or via hub */
  report(n0, "train-a-0", "Running", "192.168.1.10");
  report(n1, "train-a-1", "Running", "192.168.2.10");
  const char *c0 = strcmp(n0, "gpu-1") ? "c2" : "c1";
  const char *c1 = strcmp(c0, "c1") ? "c1" : "c2";
  snprintf(subj, sizeof subj, "lark.route.net.%s.train-a-0", c0);
  cr_expect(
      wait_msg("LARK_ROUTES", subj, "route.set", "realIP", "192.168.1.10"));
  cr_expect(wait_msg("LARK_ROUTES", subj, "route.set", "via", "local"));
  cr_expect(wait_msg("LARK_ROUTES", subj, "route.set", "cidr", "10.8.0.0/24"));
  snprintf(subj, sizeof subj, "lark.route.net.%s.train-a-0", c1);
  cr_expect(wait_msg("LARK_ROUTES", subj, "route.set", "via", "hub"));
  char dp[64];
  field("domainpeer", NULL, "net.c1", "cluster", dp, sizeof dp);
  cr_expect_str_eq(dp, "c1");
  /* the pod ends: tombstones, and (hold 0) its address is free again */
  report(n0, "train-a-0", "Succeeded", NULL);
  snprintf(subj, sizeof subj, "lark.route.net.%s.train-a-0", c1);
  cr_expect(wait_msg("LARK_ROUTES", subj, "route.deleted", NULL, NULL));
  cr_expect(wait_field("domain", "domain", "net", "used", "1"));
  cr_expect_eq(verify("ipam"), 0);
}

Test(ipam_service, exhaustion_sends_the_job_back_to_pending) {
  procs[1] = start("lark-ipam", "ipam");
  domain("tiny", "10.9.0.0/30"); /* two addresses */
  node("gpu-1", "c1", 8);
  job("big", "tiny", 3, 1);
  cr_expect(wait_msg("LARK_EVENTS", "lark.ev.domain.tiny", "domain.exhausted",
                     "job", "big"));
  cr_expect(wait_field("job", "job", "big", "reason", "~DomainExhausted"));
  char phase[64];
  field("job", "job", "big", "phase", phase, sizeof phase);
  cr_expect_str_eq(phase, "Pending");
  uint64_t sent = 0;
  bus_stream_last_seq(conn, "LARK_NODE_gpu-1", &sent);
  cr_expect_eq(sent, 0, "an unaddressed Job was dispatched");
  /* its capacity is given back, and it is not placed again in a loop */
  cr_expect(wait_msg("LARK_EVENTS", "lark.ev.placement.default", "job.unplaced",
                     "job", "big"));
  cr_expect(wait_field("node", NULL, "gpu-1", "pods", "0"));
  job("small", "tiny", 2, 1); /* fits */
  cr_expect(wait_msg("LARK_EVENTS", "lark.ev.domain.tiny", "domain.allocated",
                     "job", "small"));
}

Test(ipam_service, two_allocators_never_double_allocate) {
  procs[1] = start("lark-ipam", "ipam");
  procs[2] = start("lark-ipam", "ipam-b");
  domain("race", "10.7.0.0/26"); /* 62 addresses */
  node("gpu-1", "c1", 0);
  for (int i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof name, "r%d", i);
    job(name, "race", 5, 0);
  }
  char al[8192];
  int n = 0;
  for (int i = 0; i < 100 && n < 40; i++, usleep(100 * 1000))
    allocations("race", al, sizeof al, &n);
  cr_expect_eq(n, 40, "%s", al);
  /* sorted by address and unique: one line per address */
  char ips[64][32];
  int k = 0;
  for (char *line = al; *line && k < 64; k++) {
    char *eq = strchr(line, '='), *nl = strchr(line, '\n');
    snprintf(ips[k], sizeof ips[k], "%.*s", (int)(nl - eq - 1), eq + 1);
    for (int j = 0; j < k; j++)
      cr_expect_str_neq(ips[j], ips[k], "address given twice");
    line = nl + 1;
  }
  cr_expect_eq(verify("ipam"), 0);
  cr_expect_eq(verify("ipam"), 0);
  /* both views agree on every address */
  bus_status a, b;
  sleep(1);
  cr_assert_eq(bus_status_query(conn, "ipam", 2000, &a), 0);
  cr_assert_eq(bus_status_query(conn, "ipam-b", 2000, &b), 0);
  if (a.seq == b.seq)
    cr_expect_str_eq(a.digest, b.digest, "the two views differ");
}

typedef struct racer {
  const char *name, *cidr;
  char code[64];
} racer;

static void *
race_create(void *ud) {
  racer *r = ud;
  char json[512], subject[] = "lark.cmd.admin.domain.apply";
  snprintf(json, sizeof json,
           "{\"key\":\"%s\",\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Domain\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cidr\":\"%s\"}}}",
           r->name, r->name, r->cidr);
  json_t *j = json_loads(json, 0, NULL);
  bus_packbuf b;
  bus_packbuf_init(&b);
  lt_pack_json(&b.pk, j);
  json_decref(j);
  void *reply = NULL;
  size_t len = 0;
  snprintf(r->code, sizeof r->code, "no reply");
  if (bus_conn_request(conn, subject, b.sb.data, b.sb.size, 5000, &reply,
                       &len) == 0) {
    msgpack_zone z;
    msgpack_zone_init(&z, 1024);
    msgpack_object o;
    if (msgpack_unpack(reply, len, NULL, &z, &o) >= 0)
      snprintf(r->code, sizeof r->code, "%s",
               bus_obj_get(&o, "error") ? "refused" : "ok");
    msgpack_zone_destroy(&z);
    free(reply);
  }
  bus_packbuf_destroy(&b);
  return NULL;
}

Test(ipam_service, racing_overlapping_creations_one_lands) {
  procs[1] = start("lark-ipam", "ipam");
  procs[2] = start("lark-ipam", "ipam-b");
  domain("warmup", "172.16.0.0/24"); /* both are up */
  sleep(1);
  for (int round = 0; round < 5; round++) {
    racer r[2] = {{"x", "10.50.0.0/16", ""}, {"y", "10.50.3.0/24", ""}};
    char nx[8], ny[8];
    snprintf(nx, sizeof nx, "x%d", round);
    snprintf(ny, sizeof ny, "y%d", round);
    r[0].name = nx;
    r[1].name = ny;
    char cx[32], cy[32];
    snprintf(cx, sizeof cx, "10.%d.0.0/16", 50 + round);
    snprintf(cy, sizeof cy, "10.%d.3.0/24", 50 + round);
    r[0].cidr = cx;
    r[1].cidr = cy;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
      pthread_create(&th[i], NULL, race_create, &r[i]);
    for (int i = 0; i < 2; i++)
      pthread_join(th[i], NULL);
    int oks = !strcmp(r[0].code, "ok") + !strcmp(r[1].code, "ok");
    cr_expect_eq(oks, 1, "round %d: %s / %s", round, r[0].code, r[1].code);
  }
  cr_expect_eq(verify("ipam"), 0);
}

Test(ipam_service, kill9_midway_and_replay_verify) {
  procs[1] = start("lark-ipam", "ipam");
  domain("k", "fd00:99::/64");
  node("gpu-1", "c1", 0);
  for (int i = 0; i < 6; i++) {
    char name[16];
    snprintf(name, sizeof name, "k%d", i);
    job(name, "k", 4, 0);
    if (i == 2) {
      lt_kill(procs[1], SIGKILL);
      procs[1] = start("lark-ipam", "ipam");
    }
  }
  char al[4096];
  int n = 0;
  for (int i = 0; i < 100 && n < 24; i++, usleep(100 * 1000))
    allocations("k", al, sizeof al, &n);
  cr_expect_eq(n, 24, "%s", al);
  cr_expect(strstr(al, "=fd00:99::1\n"), "%s", al);
  cr_expect(strstr(al, "=fd00:99::18\n"), "%s", al);
  cr_expect_eq(verify("ipam"), 0);
}

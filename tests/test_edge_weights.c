/*
 * test_edge_weights.c - Jobs' weights between nodes (edge/weights.h), with
 * a real broker and three real lark-edge processes, each with a
 * certificate of a test CA made with the openssl CLI as the signer makes
 * them (CN the node, SAN URI urn:larkbus:role:agent). The test plays
 * lark-engine: it reads the nodes' weights.reports from the ingress and
 * writes the Job's engine.peers and engine.weights projections to the
 * nodes' streams. Pods are tests/data/weights_pod.py on LARK_SOCKET.
 *
 *   - a version published on n1 is fetched by n2 once for its four
 *     waiting pods (one transfer in n1's log, one cached report), bytes
 *     equal (sha256 computed by each pod);
 *   - n3, with a valid certificate but no pod of the Job, gets ERR; a
 *     certificate of another CA is refused at the handshake;
 *   - a copy corrupted at the source is refused (sha256 mismatch) and
 *     fetched again once repaired;
 *   - n2 keeps 2 versions: fetching a third drops the oldest, reported.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "wait.h"

#define SIZE (4 << 20)

typedef struct bed {
  lt_natsd srv;
  bus_conn *conn;
  bus_consumer *in;
  char dir[256];
  pid_t edges[3];
  char addr[64]; /* n1's weights server */
  /* weights.reports seen: "n2 cached 1 from n1", ... */
  char seen[64][200];
  int nseen;
} bed;

static const char *const nodes[] = {"n1", "n2", "n3"};

static void
sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* A CA in dir/<ca>, and a node certificate for cn under it in dir/<out>
 * (ca.pem, cert.pem, key.pem), as the signer issues role agent's. */
static void
make_ca(const char *dir, const char *ca) {
  sh("sh %s/tests/data/node_cert.sh ca %s/%s", getenv("LARK_SOURCE_DIR"), dir,
     ca);
}

static void
make_cert(const char *dir, const char *ca, const char *out, const char *cn) {
  sh("sh %s/tests/data/node_cert.sh node %s/%s %s/%s %s",
     getenv("LARK_SOURCE_DIR"), dir, ca, dir, out, cn);
}

static void
take(const bus_event *ev, void *ud) {
  bed *b = ud;
  char node[64] = "", event[32] = "", from[64] = "";
  if (strcmp(ev->type, "weights.report") || b->nseen == 64)
    return;
  sscanf(ev->subject, "lark.in.%63[^.]", node);
  bus_obj_str(&ev->data, "event", event, sizeof event);
  bus_obj_str(&ev->data, "from", from, sizeof from);
  snprintf(b->seen[b->nseen++], sizeof b->seen[0], "%s %s %lld%s%s", node,
           event, (long long)bus_obj_int(&ev->data, "version", 0),
           *from ? " from " : "", from);
  if (!strcmp(node, "n1") && !strcmp(event, "published"))
    bus_obj_str(&ev->data, "address", b->addr, sizeof b->addr);
}

/* How many reports read so far are what; read more up to seconds until
 * there are at least want. */
static int
seen(bed *b, const char *what, int want, int seconds) {
  int n = 0;
  for (int t = 0; t <= seconds * 4; t++) {
    n = 0;
    for (int i = 0; i < b->nseen; i++)
      n += !strcmp(b->seen[i], what);
    if (n >= want)
      break;
    lt_drain(b->in, 64, 250, take, b);
  }
  return n;
}

static void
bed_up(bed *b) {
  char tls[300];
  memset(b, 0, sizeof *b);
  lt_bed_up(&b->srv, &b->conn, b->dir, sizeof b->dir, "weights", 2000);
  bus_consumer_opts o;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_INGRESS";
  o.durable = "engine";
  o.filter = "lark.in.*.engine.>";
  cr_assert_eq(bus_consumer_open(b->conn, &o, &b->in), 0, "%s",
               bus_last_error());
  make_ca(b->dir, "ca");
  make_ca(b->dir, "other-ca");
  make_cert(b->dir, "other-ca", "tls-rogue", "n2");
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(bus_node_stream_ensure(b->conn, nodes[i], NULL), 0);
    snprintf(tls, sizeof tls, "tls-%s", nodes[i]);
    make_cert(b->dir, "ca", tls, nodes[i]);
    snprintf(tls, sizeof tls, "%s/tls-%s", b->dir, nodes[i]);
    const char *extra[] = {
        "--tls-dir", tls, "--weights-listen", "127.0.0.1:0", "--weights-keep",
        "2",         NULL};
    b->edges[i] = lt_must_start_edge(b->srv.url, b->dir, nodes[i], 0, extra);
  }
}

static void
bed_down(bed *b) {
  lt_node_bed_down(&b->srv, b->conn, b->in, b->dir, b->edges, 3);
}

/* engine.peers of job j on node: pods j-a-0 on n1, j-b-<i> on n2. */
static void
write_peers(bed *b, const char *node) {
  bus_peer peers[6];
  char names[6][32];
  for (int i = 0; i < 6; i++) {
    snprintf(names[i], sizeof names[i], i ? "j-b-%d" : "j-a-0", i - 1);
    peers[i] = (bus_peer){.pod = bus_str_of(names[i]),
                          .task = bus_str_of(i ? "j-b" : "j-a"),
                          .node = bus_str_of(i ? "n2" : "n1")};
  }
  bus_ev_engine_peers d = {.job = BUS_STR("j"),
                           .has_version = 1,
                           .version = 1,
                           .has_peers = 1,
                           .peers = {peers, 6}};
  msgpack_sbuffer sb;
  char id[33], subject[BUS_SUBJECT_MAX];
  bus_event ev;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_peers_pack(&sb, &d), 0, "%s", bus_last_error());
  lt_event(&ev, id, "engine.peers", "lark-engine", bus_wall_ns(), 0, &sb);
  cr_assert_eq(bus_subj_engine_peers(subject, sizeof subject, node, "j"), 0);
  cr_assert_eq(
      bus_append(b->conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0,
      "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

/* engine.weights of j on node: versions 1..n (newest first), each from
 * n1 only, with their sha256 (shas[v]). */
static void
write_weights(bed *b, const char *node, int n, char shas[][65], uint64_t seq) {
  bus_weights_source src = {.node = BUS_STR("n1"),
                            .has_cluster = 1,
                            .cluster = BUS_STR("local"),
                            .address = bus_str_of(b->addr)};
  bus_weights_ref refs[8];
  for (int v = n; v >= 1; v--)
    refs[n - v] = (bus_weights_ref){.version = (uint64_t)v,
                                    .size = SIZE,
                                    .sha256 = bus_str_of(shas[v]),
                                    .has_sources = 1,
                                    .sources = {&src, 1}};
  bus_ev_engine_weights d = {.job = BUS_STR("j"),
                             .has_version = 1,
                             .version = seq,
                             .has_versions = 1,
                             .versions = {refs, (uint32_t)n}};
  msgpack_sbuffer sb;
  char id[33], subject[BUS_SUBJECT_MAX];
  bus_event ev;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_weights_pack(&sb, &d), 0, "%s", bus_last_error());
  lt_event(&ev, id, "engine.weights", "lark-engine", bus_wall_ns(), 0, &sb);
  cr_assert_eq(bus_subj_engine_weights(subject, sizeof subject, node, "j"), 0);
  cr_assert_eq(
      bus_append(b->conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL), 0,
      "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

static void
pod(bed *b, const char *node, const char *name, const char *args) {
  char script[2048];
  snprintf(script, sizeof script,
           "exec python3 %s/tests/data/weights_pod.py %s %s/res-%s.json",
           getenv("LARK_SOURCE_DIR"), args, b->dir, name);
  lt_pod_running(b->conn, node, name, script, NULL);
}

/* The pod's answer; its sha256 (and, for a wait, the file's) into sha. */
static void
result(bed *b, const char *name, uint64_t version, char sha[65]) {
  char path[400];
  snprintf(path, sizeof path, "%s/res-%s.json", b->dir, name);
  json_t *r = lt_pod_result(path, 90), *a = json_object_get(r, "answer");
  cr_assert(json_is_true(json_object_get(a, "ok")), "%s: %s", name,
            json_string_value(json_object_get(a, "error")));
  cr_assert_eq(json_integer_value(json_object_get(a, "version")),
               (json_int_t)version, "%s", name);
  const char *h = json_string_value(json_object_get(a, "sha256"));
  const char *f = json_string_value(json_object_get(r, "file_sha256"));
  cr_assert(h && strlen(h) == 64);
  if (f)
    cr_assert_str_eq(f, h, "%s: the file handed is not the version", name);
  if (sha[0])
    cr_assert_str_eq(h, sha, "%s", name);
  snprintf(sha, 65, "%s", h);
  json_decref(r);
}

/* Lines of dir/<node>.log holding what. */
static int
log_count(bed *b, const char *node, const char *what) {
  char path[400], line[4096];
  int n = 0;
  snprintf(path, sizeof path, "%s/%s.log", b->dir, node);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f))
    n += strstr(line, what) != NULL;
  if (f)
    fclose(f);
  return n;
}

static int
log_becomes(bed *b, const char *node, const char *what, int want) {
  for (int i = 0; i < 600 && log_count(b, node, what) < want; i++)
    lt_sleep_ms(100);
  return log_count(b, node, what) >= want;
}

/* One request line to n1's server with the certificate in dir/<tls>: what
 * it answered (or "" when the handshake failed). */
static void
client(bed *b, const char *tls, const char *line, char *out, size_t cap) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "(printf '%s\\n'; sleep 1) | timeout 10 openssl s_client -quiet "
           "-tls1_3 -connect %s -cert %s/%s/cert.pem -key %s/%s/key.pem "
           "-CAfile %s/%s/ca.pem 2>/dev/null",
           line, b->addr, b->dir, tls, b->dir, tls, b->dir, tls);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  out[0] = 0;
  if (!fgets(out, (int)cap, p))
    out[0] = 0;
  pclose(p);
}

/* Flip (or flip back) one byte of n1's cached copy of sha, same size. */
static void
corrupt(bed *b, const char *sha) {
  char path[400];
  snprintf(path, sizeof path, "%s/n1/weights/%s", b->dir, sha);
  cr_assert_eq(lt_flip_byte(path, 1000, 0x5a), 0, "%s", path);
  chmod(path, 0444);
}

/* Version v published on n1 by pod j-a-<v-1>: its sha256 into shas[v]. */
static void
publish(bed *b, int v, char shas[][65]) {
  char name[32], args[64];
  snprintf(name, sizeof name, "j-a-%d", v - 1);
  snprintf(args, sizeof args, "publish %d %d %d", v, SIZE, v);
  pod(b, "n1", name, args);
  shas[v][0] = 0;
  result(b, name, (uint64_t)v, shas[v]);
  char what[32];
  snprintf(what, sizeof what, "n1 published %d", v);
  cr_assert_eq(seen(b, what, 1, 10), 1, "no report: %s", what);
  cr_assert(b->addr[0], "the report names no address");
}

Test(edge_weights, fetch_once_refuse_repair_drop, .timeout = 280) {
  bed b;
  char shas[4][65], sha[65], line[256], ans[256], name[32];
  bed_up(&b);
  for (int i = 0; i < 2; i++)
    write_peers(&b, nodes[i]);
  publish(&b, 1, shas);

  /* four pods of n2 wait before the projection lists the version */
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "j-b-%d", i);
    pod(&b, "n2", name, "wait 1");
  }
  lt_sleep_ms(1000);
  write_weights(&b, "n2", 1, shas, 10);
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "j-b-%d", i);
    snprintf(sha, sizeof sha, "%s", shas[1]);
    result(&b, name, 1, sha);
  }
  cr_expect_eq(log_count(&b, "n1", "sent j 1 to n2"), 1,
               "one transfer for four waits");
  cr_expect_eq(seen(&b, "n2 cached 1 from n1", 1, 10), 1);

  /* n3 is no node of the Job; another CA is no platform's */
  snprintf(line, sizeof line, "GET j 1 %s", shas[1]);
  client(&b, "tls-n3", line, ans, sizeof ans);
  cr_expect(strstr(ans, "ERR node n3 hosts no pod of job j"), "n3: %s", ans);
  client(&b, "tls-rogue", line, ans, sizeof ans);
  cr_expect(!strstr(ans, "OK") && !strstr(ans, "ERR"), "rogue: %s", ans);
  cr_expect(log_becomes(&b, "n1", "refused at the handshake", 1));
  client(&b, "tls-n2", line, ans, sizeof ans);
  cr_expect(!strncmp(ans, "OK 4194304", 10), "n2: %s", ans);

  /* version 2, corrupted at the source: refused, fetched once repaired */
  publish(&b, 2, shas);
  corrupt(&b, shas[2]);
  pod(&b, "n2", "j-b-4", "wait 2");
  write_weights(&b, "n2", 2, shas, 20);
  cr_assert(log_becomes(&b, "n2", "sha256 mismatch", 1), "no mismatch seen");
  corrupt(&b, shas[2]); /* flipped back */
  sha[0] = 0;
  result(&b, "j-b-4", 2, sha);
  cr_expect_str_eq(sha, shas[2]);
  cr_expect_eq(seen(&b, "n2 cached 2 from n1", 1, 10), 1);

  /* n2 keeps 2: version 3 drops version 1 */
  publish(&b, 3, shas);
  pod(&b, "n2", "j-b-5", "wait 3");
  write_weights(&b, "n2", 3, shas, 30);
  sha[0] = 0;
  result(&b, "j-b-5", 3, sha);
  cr_expect_eq(seen(&b, "n2 dropped 1", 1, 10), 1, "version 1 dropped");
  cr_expect_eq(seen(&b, "n2 dropped 2", 0, 0), 0);
  bed_down(&b);
}

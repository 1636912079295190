/*
 * site_catchup.c - an edge site's catch-up after a cut: how long from the
 * moment its leaf link returns until every report that waited at the site
 * is in the log (LARK_INGRESS).
 *
 * A hub (the config larkctl renders, TLS leaf listener) and one site
 * rendered by lark_site_add, its leaf server dialling the hub through a
 * relay the benchmark can cut (tests/support/cutlink.c). Each of --nodes
 * simulated nodes at the site sends --reports run reports the way
 * lark-edge's sender does (async appends in batches of 256, acks awaited
 * together; a failed batch tried again after 50 ms doubling to 1 s). Per
 * round, back to back:
 *
 *   direct   the nodes connected to the hub itself, no cut: the raw
 *            baseline of the same appends
 *   leaf     through the site's live link, no cut
 *   cut      the link cut, the nodes sending into it for --cut-ms, then
 *            mended: from the mend until the last report is stored
 *            (and until the first batch of 256 is acked)
 *
 * usage: bench_site_catchup [--nodes 20] [--reports 500] [--cut-ms 3000]
 *                           [--rounds 2]
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cutlink.h"
#include "deploy.h"
#include "proc.h"
#include "sitehub.h"

enum { BATCH = 256 };

typedef struct bed {
  char data[256], site_url[64];
  lt_natsd hub;
  lt_cutlink *link;
  pid_t leaf;
  bus_conn *admin;
  int nodes, reports;
  int phase; /* in every report's id, so each phase's reports are new */
} bed;

typedef struct sender {
  bed *b;
  int node;
  int direct;
  double first_ok; /* bench_now_s of its first stored batch */
} sender;

/* Credentials, certificates, the site and the hub's config (the site
 * dials the hub through the link the benchmark cuts). */
static void
render(bed *b, char *conf, size_t cap) {
  char dial[64];
  const char **names = calloc((size_t)b->nodes, sizeof *names);
  char(*buf)[16] = calloc((size_t)b->nodes, sizeof *buf);
  for (int i = 0; i < b->nodes; i++) {
    snprintf(buf[i], sizeof buf[i], "b-%d", i + 1);
    names[i] = buf[i];
  }
  int leaf_port = lark_free_port(), site_port = lark_free_port();
  b->link = lt_cutlink_start(leaf_port);
  if (!b->link)
    bench_die("relay", "cannot listen");
  snprintf(dial, sizeof dial, "nats-leaf://127.0.0.1:%d",
           lt_cutlink_port(b->link));
  snprintf(b->site_url, sizeof b->site_url, "nats://127.0.0.1:%d", site_port);
  if (lt_hub_render(b->data, leaf_port, conf, cap) < 0 ||
      lt_site_render(b->data, "bench", names, (size_t)b->nodes, dial,
                     site_port) < 0)
    bench_die("render", bus_last_error());
  free(names);
  free(buf);
}

static bus_conn *
node_conn(bed *b, int node, int direct) {
  char name[16];
  bus_conn *c = NULL;
  snprintf(name, sizeof name, "b-%d", node);
  for (int t = 0;
       t < 100 &&
       lt_site_node_connect(b->data, "bench", name,
                            direct ? b->hub.url : b->site_url, 1000, &c) < 0;
       t++)
    bus_sleep_ms(100);
  if (!c)
    bench_die("connect", bus_last_error());
  return c;
}

/* One node's reports, as lark-edge's sender sends its outbox. */
static void *
send_reports(void *arg) {
  sender *s = arg;
  bus_conn *c = node_conn(s->b, s->node, s->direct);
  char subject[64], id[33];
  msgpack_sbuffer data;
  bus_event ev;
  snprintf(subject, sizeof subject, "lark.in.b-%d.reports.run", s->node);
  msgpack_sbuffer_init(&data);
  bench_sample_data(&data, 64);
  for (int sent = 0, backoff = 50; sent < s->b->reports;) {
    int n = s->b->reports - sent < BATCH ? s->b->reports - sent : BATCH;
    for (int i = 0; i < n; i++) {
      bench_event_init(&ev, id, "sample.created", "bench", &data);
      snprintf(id, sizeof id, "%08x%08x%016x", (unsigned)s->b->phase,
               (unsigned)s->node, (unsigned)(sent + i));
      bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK);
    }
    if (bus_append_flush(c, 2000, NULL) < 0) {
      bus_sleep_ms(backoff); /* the same ids again: dedupe keeps one */
      backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
      continue;
    }
    if (!s->first_ok)
      s->first_ok = bench_now_s();
    sent += n;
    backoff = 50;
  }
  msgpack_sbuffer_destroy(&data);
  bus_conn_close(c);
  return NULL;
}

static uint64_t
ingress_msgs(bed *b) {
  uint64_t n = 0;
  if (bus_stream_last_seq(b->admin, "LARK_INGRESS", &n) < 0)
    bench_die("LARK_INGRESS", bus_last_error());
  return n;
}

typedef struct phase {
  double all_s, relink_s;
} phase;

/* Every node sends its reports (direct or through the site); with cut_ms,
 * into a cut link mended after cut_ms. Times from start, or the mend. */
static phase
run_phase(bed *b, int direct, int cut_ms) {
  pthread_t *t = calloc((size_t)b->nodes, sizeof *t);
  sender *s = calloc((size_t)b->nodes, sizeof *s);
  uint64_t want = ingress_msgs(b) + (uint64_t)b->nodes * (uint64_t)b->reports;
  b->phase++;
  if (cut_ms)
    lt_cutlink_cut(b->link);
  double t0 = bench_now_s();
  for (int i = 0; i < b->nodes; i++) {
    s[i] = (sender){.b = b, .node = i + 1, .direct = direct};
    pthread_create(&t[i], NULL, send_reports, &s[i]);
  }
  if (cut_ms) {
    bus_sleep_ms(cut_ms);
    t0 = bench_now_s();
    lt_cutlink_mend(b->link);
  }
  while (ingress_msgs(b) < want)
    bus_sleep_ms(5);
  phase p = {.all_s = bench_now_s() - t0, .relink_s = 1e9};
  for (int i = 0; i < b->nodes; i++) {
    pthread_join(t[i], NULL);
    if (s[i].first_ok && s[i].first_ok - t0 < p.relink_s)
      p.relink_s = s[i].first_ok - t0;
  }
  free(t);
  free(s);
  return p;
}

static void
start(bed *b) {
  char conf[400], log[400];
  lt_tmpdir(b->data, sizeof b->data, "sitecatch");
  render(b, conf, sizeof conf);
  if (lt_hub_start(b->data, conf, &b->hub, &b->admin, 0, 120000) < 0)
    bench_die("hub", bus_last_error());
  snprintf(log, sizeof log, "%s/leaf.log", b->data);
  if ((b->leaf = lt_site_leaf_start(b->data, "bench", log)) <= 0)
    bench_die("leaf", bus_last_error());
}

static void
load(char *out, size_t cap) {
  FILE *f = fopen("/proc/loadavg", "r");
  double a = 0, b = 0, c = 0;
  if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) != 3)
    a = b = c = 0;
  if (f)
    fclose(f);
  snprintf(out, cap, "load %.2f %.2f %.2f", a, b, c);
}

int
main(int argc, char **argv) {
  bed b = {.nodes = 20, .reports = 500};
  int cut_ms = 3000, rounds = 2;
  bench_opt opts[] = {{"--nodes", &b.nodes, NULL, NULL},
                      {"--reports", &b.reports, NULL, NULL},
                      {"--cut-ms", &cut_ms, NULL, NULL},
                      {"--rounds", &rounds, NULL, NULL},
                      {NULL, NULL, NULL, NULL}};
  if (bench_opts(argc, argv, opts) < 0 || b.nodes < 1 || b.reports < 1)
    bench_die("usage", "[--nodes N] [--reports R] [--cut-ms MS] [--rounds R]");
  start(&b);
  run_phase(&b, 0, 0); /* the link up and every consumer path warm */
  printf("site catch-up: %d nodes x %d reports waited at the site through "
         "a %d ms cut\n",
         b.nodes, b.reports, cut_ms);
  for (int r = 1; r <= rounds; r++) {
    char l[64];
    phase d = run_phase(&b, 1, 0), f = run_phase(&b, 0, 0);
    phase c = run_phase(&b, 0, cut_ms);
    load(l, sizeof l);
    printf("round %d (%s): after the cut all in the log %.0f ms after the "
           "link returned (first batch acked %.0f ms); baseline: the same "
           "reports direct to the hub %.0f ms, through the live leaf "
           "%.0f ms\n",
           r, l, c.all_s * 1e3, c.relink_s * 1e3, d.all_s * 1e3, f.all_s * 1e3);
  }
  bus_conn_close(b.admin);
  lt_kill(b.leaf, SIGTERM);
  lt_natsd_stop(&b.hub);
  lt_cutlink_stop(b.link);
  lt_rmtree(b.data);
  return 0;
}

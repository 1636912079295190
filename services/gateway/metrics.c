/*
 * metrics.c - /metrics: the platform in the Prometheus text exposition
 * format (version 0.0.4), every name prefixed lark_.
 *
 * Three sources, each read fresh at every scrape, nothing kept between:
 *   - the services' status records, gathered with one request on
 *     lark.sys.status (every service answers it; the window is the
 *     caller's timeout); a service `larkctl up` would run (its binary sits
 *     beside this one's) that does not answer is shown down;
 *   - the gateway view's counts (gw_counts_get): events applied by type,
 *     pods by phase, nodes, and the two latency histograms, all derived
 *     from events, so they are the same after a replay;
 *   - each platform stream's messages and bytes ($JS.API.STREAM.INFO).
 * Every family is written whole, HELP and TYPE first, each series once:
 * `promtool check metrics` reads it without a lint problem (counters end
 * in _total, units are base units, label values escaped).
 */
#include <stdlib.h>
#include <string.h>

#include "deploy.h"
#include "gateway.h"

enum { MAX_SERVICES = 64 };

typedef struct svc_rows {
  bus_status st[MAX_SERVICES];
  int up[MAX_SERVICES];
  size_t n;
} svc_rows;

static bus_status *
row_for(svc_rows *x, const char *name) {
  for (size_t i = 0; i < x->n; i++)
    if (!strcmp(x->st[i].name, name))
      return &x->st[i];
  if (x->n == MAX_SERVICES)
    return NULL;
  bus_status *st = &x->st[x->n++];
  memset(st, 0, sizeof *st);
  snprintf(st->name, sizeof st->name, "%s", name);
  return st;
}

static void
on_status(const void *data, size_t len, void *ud) {
  svc_rows *x = ud;
  bus_status st;
  if (bus_status_decode(data, len, &st) < 0 || !st.name[0])
    return;
  bus_status *row = row_for(x, st.name);
  if (row) {
    *row = st;
    x->up[row - x->st] = 1;
  }
}

/* The services `larkctl up` runs from this binary's directory, as
 * `larkctl status` expects them: a service answers with its view's name
 * (lark-catalog is catalog). */
static void
expect_services(svc_rows *x) {
  char dir[1024];
  if (lark_bin_dir(dir, sizeof dir) < 0)
    return;
  for (size_t i = 0; lark_up_services[i]; i++) {
    const char *name = lark_up_services[i];
    if (lark_bin_exists(dir, name))
      row_for(x, strncmp(name, "lark-", 5) ? name : name + 5);
  }
}

/* ------------------------------------------------------------ writing */

static int
family(gw_buf *out, const char *name, const char *type, const char *help) {
  return gw_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
                       type);
}

/* A label value: backslash, double quote and newline escaped. */
static int
label_value(gw_buf *out, const char *v) {
  int rc = 0;
  for (const char *p = v; *p && !rc; p++) {
    if (*p == '\\' || *p == '"')
      rc = gw_buf_printf(out, "\\%c", *p);
    else if (*p == '\n')
      rc = gw_buf_add(out, "\\n", 2);
    else
      rc = gw_buf_add(out, p, 1);
  }
  return rc;
}

/* name{label="value"} n */
static int
sample(gw_buf *out, const char *name, const char *label, const char *value,
       uint64_t n) {
  int rc = gw_buf_printf(out, "%s{%s=\"", name, label);
  if (!rc)
    rc = label_value(out, value);
  return rc ? rc : gw_buf_printf(out, "\"} %llu\n", (unsigned long long)n);
}

/* ----------------------------------------------------------- services */

typedef uint64_t (*status_field)(const bus_status *st, int up);

static uint64_t
f_up(const bus_status *st, int up) {
  return up && !strcmp(st->state, "up");
}
static uint64_t
f_seq(const bus_status *st, int up) {
  (void)up;
  return st->seq;
}
static uint64_t
f_lag(const bus_status *st, int up) {
  (void)up;
  return st->lag;
}
static uint64_t
f_applied(const bus_status *st, int up) {
  (void)up;
  return st->applied;
}
static uint64_t
f_outbox(const bus_status *st, int up) {
  (void)up;
  return st->outbox;
}
static uint64_t
f_repositions(const bus_status *st, int up) {
  (void)up;
  return st->repositions;
}

static const struct {
  const char *name, *type, *help;
  status_field get;
  int all; /* 1: every expected service; 0: those that answered */
} svc_families[] = {
    {"lark_service_up", "gauge",
     "1 when the service answered lark.sys.status and its state is up.", f_up,
     1},
    {"lark_service_applied_seq", "gauge",
     "The last stream sequence the service's view applied.", f_seq, 0},
    {"lark_service_lag_events", "gauge",
     "Events stored that the service has not applied yet.", f_lag, 0},
    {"lark_service_applied_events_total", "counter",
     "Events the service applied since it started.", f_applied, 0},
    {"lark_service_outbox_events", "gauge",
     "Decisions waiting in the service's outbox.", f_outbox, 0},
    {"lark_service_repositions_total", "counter",
     "Times the service made its consumer again after a hole in delivery.",
     f_repositions, 0},
};

static int
refused(gw_buf *out, const svc_rows *x) {
  static const char *const reasons[2] = {"stale", "rejected"};
  const char *name = "lark_service_refused_events_total";
  int rc = family(out, name, "counter",
                  "Events the service refused, by reason: stale (written "
                  "against an older version) or rejected (invalid).");
  for (size_t i = 0; i < x->n && !rc; i++)
    for (int r = 0; r < 2 && x->up[i] && !rc; r++) {
      rc = gw_buf_printf(out, "%s{service=\"", name);
      if (!rc)
        rc = label_value(out, x->st[i].name);
      if (!rc)
        rc = gw_buf_printf(
            out, "\",reason=\"%s\"} %llu\n", reasons[r],
            (unsigned long long)(r ? x->st[i].rejected : x->st[i].stale));
    }
  return rc;
}

static int
services(bus_conn *c, int timeout_ms, gw_buf *out) {
  svc_rows *x = calloc(1, sizeof *x);
  if (!x)
    return -12;
  expect_services(x);
  bus_conn_gather(c, "lark.sys.status", "", 0, timeout_ms, on_status, x);
  int rc = 0;
  for (size_t f = 0; f < sizeof svc_families / sizeof *svc_families && !rc;
       f++) {
    rc = family(out, svc_families[f].name, svc_families[f].type,
                svc_families[f].help);
    for (size_t i = 0; i < x->n && !rc; i++)
      if (svc_families[f].all || x->up[i])
        rc = sample(out, svc_families[f].name, "service", x->st[i].name,
                    svc_families[f].get(&x->st[i], x->up[i]));
  }
  if (!rc)
    rc = refused(out, x);
  free(x);
  return rc;
}

/* ------------------------------------------------------------- counts */

static int
counted(gw_buf *out, const char *name, const char *type, const char *help,
        const char *label, const gw_count *v, size_t n) {
  int rc = family(out, name, type, help);
  for (size_t i = 0; i < n && !rc; i++)
    rc = sample(out, name, label, v[i].name, v[i].n);
  return rc;
}

static int
histogram(gw_buf *out, const char *name, const char *help, const gw_hist *h) {
  static const double le[GW_HIST_N] = GW_HIST_BOUNDS;
  uint64_t sum = 0;
  int rc = family(out, name, "histogram", help);
  for (int i = 0; i < GW_HIST_N && !rc; i++) {
    sum += h->bucket[i];
    rc = gw_buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", name, le[i],
                       (unsigned long long)sum);
  }
  if (!rc)
    rc = gw_buf_printf(out,
                       "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n"
                       "%s_count %llu\n",
                       name, (unsigned long long)h->count, name, h->sum, name,
                       (unsigned long long)h->count);
  return rc;
}

static int
counts(bus_view *v, gw_buf *out) {
  gw_counts k;
  memset(&k, 0, sizeof k);
  int rc = gw_counts_get(v, &k);
  if (!rc)
    rc = counted(out, "lark_events_total", "counter",
                 "Events in LARK_EVENTS the gateway applied, by type.", "type",
                 k.types, k.ntypes);
  if (!rc)
    rc = counted(out, "lark_pods", "gauge", "Pods by phase.", "phase", k.phases,
                 k.nphases);
  if (!rc)
    rc = family(out, "lark_nodes", "gauge", "Nodes by readiness.");
  if (!rc)
    rc = gw_buf_printf(out,
                       "lark_nodes{state=\"Ready\"} %llu\n"
                       "lark_nodes{state=\"NotReady\"} %llu\n",
                       (unsigned long long)k.nodes_ready,
                       (unsigned long long)k.nodes_notready);
  if (!rc)
    rc = histogram(out, "lark_scheduling_latency_seconds",
                   "From a Job's job.submitted to the job.placed that bound "
                   "it (event times).",
                   &k.sched_latency);
  if (!rc)
    rc = histogram(out, "lark_pod_start_seconds",
                   "From a pod's binding to its first Running of that "
                   "attempt (event times).",
                   &k.pod_start);
  if (!rc)
    rc = family(out, "lark_gateway_applied_seq", "gauge",
                "The LARK_EVENTS sequence the gateway's view has applied.");
  if (!rc)
    rc = gw_buf_printf(out, "lark_gateway_applied_seq %llu\n",
                       (unsigned long long)k.applied_seq);
  gw_counts_free(&k);
  return rc;
}

/* ------------------------------------------------------------ streams */

static int
streams(bus_conn *c, gw_buf *out) {
  size_t n = 0;
  while (bus_stream_names[n])
    n++;
  unsigned long long *msgs = calloc(n + 1, 2 * sizeof *msgs);
  if (!msgs)
    return -12;
  unsigned long long *bytes = msgs + n + 1;
  int *there = calloc(n + 1, sizeof *there);
  for (size_t i = 0; i < n && there; i++)
    there[i] = lark_stream_info(c, bus_stream_names[i], &msgs[i], NULL, NULL,
                                &bytes[i]) == 0;
  int rc = there ? 0 : -12;
  static const struct {
    const char *name, *help;
  } fam[2] = {{"lark_stream_messages", "Messages held by the stream."},
              {"lark_stream_bytes", "Bytes held by the stream."}};
  for (int f = 0; f < 2 && !rc; f++) {
    rc = family(out, fam[f].name, "gauge", fam[f].help);
    for (size_t i = 0; i < n && !rc; i++)
      if (there[i])
        rc = sample(out, fam[f].name, "stream", bus_stream_names[i],
                    f ? bytes[i] : msgs[i]);
  }
  free(there);
  free(msgs);
  return rc;
}

int
gw_metrics_render(bus_conn *c, bus_view *v, int timeout_ms, gw_buf *out) {
  int rc = services(c, timeout_ms, out);
  if (!rc && v)
    rc = counts(v, out);
  if (!rc)
    rc = streams(c, out);
  return rc;
}

/*
 * test_gateway_metrics.c - /metrics (services/gateway/metrics.c) against a
 * real platform (`larkctl up --nodes 1`): after a Job of two pods ran, the
 * gateway's view rebuilt from the log renders the exposition, which
 *   - the real Prometheus parser reads without an error or a lint problem
 *     (`promtool check metrics`, Debian's prometheus package);
 *   - names every family and series lark_*, each series once;
 *   - holds what the platform says: pods by phase, the node Ready, the
 *     services up with their applied sequences, events by type, the two
 *     latency histograms counting the Job's binding and its pods' starts,
 *     the streams' sizes.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "files.h"
#include "gateway.h"
#include "platform.h"
#include "proc.h"
#include "replay.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 17], errout[1 << 14];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, errout, sizeof errout, __VA_ARGS__)

static void
platform_up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_ready(&plat, "gwmetrics", nodes);
}

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(gateway_metrics, .init = platform_up, .fini = platform_down,
          .timeout = 240);

static void
run_job(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/mj.yaml", plat.dir);
  cr_assert_eq(lt_write_file(path, "%s",
                             "apiVersion: rlinf.io/v1alpha1\nkind: Job\n"
                             "metadata: {name: mj}\nspec:\n  tasks:\n"
                             "  - name: a\n    role: Actor\n    replicas: 2\n"
                             "    resources: {cpu: 1, memory: 64}\n"
                             "    raw: {entrypoint: [/bin/sh, -c, 'sleep "
                             "0.3']}\n"),
               0);
  lt_platform_apply(&plat, path, 20);
  int done = 0;
  for (int i = 0; i < 900 && !done; i++) {
    done = ctl("get job mj -o json") == 0 &&
           strstr(out, "\"phase\":\"Succeeded\"") != NULL;
    if (!done)
      lt_sleep_ms(100);
  }
  cr_assert(done, "mj never succeeded: %s %s", out, errout);
}

/* The gateway's view as of now, rebuilt from the log into dir/name. */
static bus_view *
gateway_view(bus_conn *c, const char *name) {
  char vdir[512];
  snprintf(vdir, sizeof vdir, "%s/%s", plat.dir, name);
  const lark_view_entry *ve = lark_view_find("gateway");
  cr_assert_not_null(ve, "replay knows no gateway view");
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = vdir;
  lark_replay_result res;
  int rc = lark_replay_run(c, ve, &o, &res);
  cr_assert_eq(rc, 0, "replay gateway: %s", bus_last_error());
  bus_view_def def;
  gw_view_def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = vdir;
  bus_view *v = NULL;
  cr_assert_eq(bus_view_open(&v, &def, &vo), 0, "%s", bus_last_error());
  return v;
}

/* The value of the series written exactly as series (name{labels}), or -1
 * when it is not there. */
static double
value(const char *text, const char *series) {
  size_t n = strlen(series);
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (!strncmp(p, series, n) && p[n] == ' ')
      return strtod(p + n + 1, NULL);
  return -1;
}

/* Every family and sample named lark_*, each sample line once. */
static void
all_lark_once(const char *text) {
  char *copy = strdup(text), *save = NULL;
  size_t nlines = 0;
  char **seen = calloc(4096, sizeof *seen);
  for (char *l = strtok_r(copy, "\n", &save); l;
       l = strtok_r(NULL, "\n", &save)) {
    const char *name = l;
    if (!strncmp(l, "# HELP ", 7) || !strncmp(l, "# TYPE ", 7))
      name = l + 7;
    else
      cr_assert_neq(l[0], '#', "a comment other than HELP/TYPE: %s", l);
    cr_assert(!strncmp(name, "lark_", 5), "not lark_: %s", l);
    if (l[0] == '#')
      continue;
    size_t key = strcspn(l, " ");
    for (size_t i = 0; i < nlines; i++)
      cr_assert(strncmp(seen[i], l, key) || seen[i][key] != ' ', "twice: %.*s",
                (int)key, l);
    cr_assert_lt(nlines, 4096);
    seen[nlines++] = l;
  }
  cr_assert_gt(nlines, 20, "too few samples: %zu", nlines);
  free(seen);
  free(copy);
}

Test(gateway_metrics, promtool_reads_it_and_it_holds_the_platform) {
  run_job();
  bus_conn *c = lt_platform_admin(&plat);
  cr_assert_not_null(c, "%s", bus_last_error());
  bus_view *v = gateway_view(c, "gwview");
  gw_buf m = {0};
  int rc = gw_metrics_render(c, v, 1500, &m);
  cr_assert_eq(rc, 0, "render: %s", bus_last_error());
  char path[512];
  snprintf(path, sizeof path, "%s/metrics.prom", plat.dir);
  cr_assert_eq(lt_write_file(path, "%s", m.p), 0);

  rc = lt_sh(out, sizeof out, errout, sizeof errout,
             "promtool check metrics < '%s'", path);
  cr_assert_eq(rc, 0, "promtool check metrics: exit %d: %s %s\n%s", rc, out,
               errout, m.p);
  cr_assert_str_eq(out, "", "promtool found problems: %s", out);
  cr_assert_str_eq(errout, "", "promtool found problems: %s", errout);
  all_lark_once(m.p);

  cr_assert_eq(value(m.p, "lark_pods{phase=\"Succeeded\"}"), 2, "%s", m.p);
  cr_assert_eq(value(m.p, "lark_nodes{state=\"Ready\"}"), 1);
  cr_assert_eq(value(m.p, "lark_nodes{state=\"NotReady\"}"), 0);
  cr_assert_eq(value(m.p, "lark_service_up{service=\"scheduler\"}"), 1);
  cr_assert_eq(value(m.p, "lark_service_up{service=\"catalog\"}"), 1);
  cr_assert_gt(value(m.p, "lark_service_applied_seq{service=\"scheduler\"}"),
               0);
  cr_assert_eq(value(m.p, "lark_events_total{type=\"job.submitted\"}"), 1);
  cr_assert_geq(value(m.p, "lark_events_total{type=\"pod.phase\"}"), 4);
  cr_assert_eq(value(m.p, "lark_scheduling_latency_seconds_count"), 1,
               "the Job bound once");
  cr_assert_eq(
      value(m.p, "lark_scheduling_latency_seconds_bucket{le=\"+Inf\"}"), 1);
  cr_assert_eq(value(m.p, "lark_pod_start_seconds_count"), 2,
               "two pods started");
  uint64_t last = 0;
  cr_assert_eq(bus_stream_last_seq(c, "LARK_EVENTS", &last), 0);
  double applied = value(m.p, "lark_gateway_applied_seq");
  cr_assert_gt(applied, 0);
  cr_assert_geq(value(m.p, "lark_stream_messages{stream=\"LARK_EVENTS\"}"),
                applied);
  cr_assert_leq(applied, (double)last);
  cr_assert_gt(value(m.p, "lark_stream_bytes{stream=\"LARK_EVENTS\"}"), 0);
  cr_assert_geq(value(m.p, "lark_stream_messages{stream=\"LARK_LOGS\"}"), 0);

  gw_buf_free(&m);
  bus_view_close(v);
  bus_conn_close(c);
}

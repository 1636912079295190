/*
 * test_sites_cut.c - `larkctl up --sites`, end to end: a node behind an
 * edge site (its own leaf server) runs pods through the leaf link; the
 * link is cut while they run and mended later.
 *
 * - Through the site: the node registers and is Ready, its pods run.
 * - While the site is away its pods keep running and their output waits
 *   at the site. A cut shorter than the scheduler's NotReady timeout
 *   changes nothing; a desired state written meanwhile (a Job stopped)
 *   reaches the node on return. A longer cut is a node lost, as for any
 *   node (docs/design.md, "Edge sites"): NotReady, its running pods failed
 *   (NodeLost) and placed again as their retries allow; on return the
 *   stop written for the lost attempt reaches the node and ends it there.
 * - Afterwards nothing is lost or doubled: every line the lost attempt
 *   printed is in its log once, and the scheduler's and the logs' views
 *   replay to what they hold (`larkctl replay --verify`).
 *
 * The link is cut by a relay the test owns (support/cutlink.c) between
 * the site's server and the hub's leaf listener: the site dials through
 * it after `larkctl site add --hub` points it there (a reload).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "bed.h"
#include "cutlink.h"
#include "files.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 18], err[1 << 14];

#define larkctl_run(...)                                                       \
  lt_larkctl(&plat, out, sizeof out, NULL, 0, __VA_ARGS__)
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* A string field of the object named name in `larkctl get KIND -o json`
 * ("" when absent); how many objects there are into *count. */
static void
field_of(const char *kind, const char *name, const char *field, char *val,
         size_t cap, int *count) {
  val[0] = 0;
  if (count)
    *count = 0;
  if (larkctl_run("get %s -o json", kind) != 0)
    return;
  json_t *j = json_loads(out, 0, NULL);
  for (size_t i = 0; json_is_array(j) && i < json_array_size(j); i++) {
    json_t *o = json_array_get(j, i);
    const char *n = json_string_value(json_object_get(o, "name"));
    const char *job = json_string_value(json_object_get(o, "job"));
    if (!(n && !strcmp(n, name)) && !(job && !strcmp(job, name)))
      continue;
    if (count)
      (*count)++;
    const char *v = json_string_value(json_object_get(o, field));
    snprintf(val, cap, "%s", v ? v : "");
  }
  json_decref(j);
}

/* Wait up to seconds for field of kind/name to read want. */
static int
wait_field(const char *kind, const char *name, const char *field,
           const char *want, int seconds) {
  char v[64] = "";
  for (int i = 0; i < seconds * 5; i++) {
    field_of(kind, name, field, v, sizeof v, NULL);
    if (!strcmp(v, want))
      return 1;
    lt_sleep_ms(200);
  }
  fprintf(stderr, "%s %s: %s is %s, not %s\n", kind, name, field, v, want);
  return 0;
}

static void
job(const char *name, const char *script, int retries) {
  lt_platform_sh_job(&plat, name, script, retries);
}

/* Lines "tick 0 N" (attempt 0) in the ticker's log: 1 when they are
 * 1..last, each once (last the highest seen); their count into *seen. */
static int
ticks_once(int *seen, int *last) {
  enum { MAX = 600 };
  char count[MAX + 1] = {0};
  int ok = larkctl_run("logs job ticker") == 0;
  *seen = *last = 0;
  for (char *p = out; ok && (p = strstr(p, "tick 0 ")); p += 7) {
    int k = atoi(p + 7);
    if (k < 1 || k > MAX || count[k]++)
      ok = 0;
    else if (k > *last)
      *last = k;
    (*seen)++;
  }
  for (int k = 1; ok && k <= *last; k++)
    ok = count[k] == 1;
  return ok;
}

Test(sites_cut, a_site_cut_off_catches_up_on_return, .timeout = 300) {
  static const char *const extra[] = {"--nodes",      "1", "--sites", "1",
                                      "--no-gateway", NULL};
  setenv("LARK_NODE_TIMEOUT_MS", "8000", 1); /* a cut of 3 s stays under */
  setenv("LARK_HEARTBEAT", "1", 1);          /* the agents' beat, to match */
  /* a short pull: a pull held at the hub is dropped with the leaf link,
   * and the node would see changes made meanwhile only when it ends */
  setenv("LARK_SLICE_WAIT", "1", 1);
  lt_platform_init(&plat, "sitecut");
  cr_assert_eq(lt_platform_start(&plat, extra, 90), 0,
               "larkctl up --sites is not ready (see %s)", plat.up_log);
  cr_assert(wait_field("nodes", "node-1", "status", "Ready", 60),
            "node-1 never Ready through its site (see %s)", plat.up_log);
  cr_assert_eq(larkctl_run("site list"), 0, "%s", out);
  cr_assert(strstr(out, "site-1") && strstr(out, "node-1"), "%s", out);
  cr_assert_eq(sh("grep -q 'nats://127.0.0.1' %s/logs/node-1.log; grep -c "
                  "'cert_file' %s/broker/lark-1.conf",
                  plat.dir, plat.dir),
               0, "the hub's leaf listener has no TLS: %s", out);

  /* The site dials the hub through a link the test can cut. */
  char port[32], path[400];
  snprintf(path, sizeof path, "%s/broker/leaf.port", plat.dir);
  cr_assert(lt_read_file(path, port, sizeof port), "no %s", path);
  lt_cutlink *link = lt_cutlink_start(atoi(port));
  cr_assert(link);
  cr_assert_eq(larkctl_run("site add site-1 --hub nats-leaf://127.0.0.1:%d",
                           lt_cutlink_port(link)),
               0, "%s", out);
  snprintf(path, sizeof path, "%s/tls/leaf-hub/hosts", plat.dir);
  cr_assert(lt_read_file(path, port, sizeof port), "no %s", path);
  cr_expect_str_eq(port, "127.0.0.1", "the hub's certificate names");
  for (int i = 0; i < 100 && !lt_cutlink_accepted(link); i++)
    lt_sleep_ms(100);
  cr_assert_gt(lt_cutlink_accepted(link), 0, "the site did not redial");
  char node[64];
  int pods = 0;

  /* A short cut (under the NotReady timeout): nothing changes but time. */
  job("ticker",
      "i=0; while [ $i -lt 600 ]; do i=$((i+1)); echo tick "
      "$LARK_ATTEMPT $i; sleep 0.05; done; sleep 300",
      1);
  job("sleeper", "sleep 600", 0);
  cr_assert(wait_field("pods", "ticker", "phase", "Running", 60));
  cr_assert(wait_field("pods", "sleeper", "phase", "Running", 60));
  lt_cutlink_cut(link);
  cr_assert_eq(larkctl_run("stop job sleeper"), 0, "%s", out);
  lt_sleep_ms(3000);
  cr_assert_eq(
      sh("pgrep -f '%s/views/node-1/pods/sleepe[r]-' >/dev/null", plat.dir), 0,
      "the stop reached the node through a cut link");
  cr_assert(wait_field("nodes", "node-1", "status", "Ready", 1));
  /* The pull the node had waiting died with the link (the hub found no
   * one behind it); the next comes when that pull's wait ends. */
  lt_cutlink_mend(link);
  int gone = 0;
  for (int i = 0; i < 600 && !gone; i++) /* 60 s: ample for any pull wait */
    if (!(gone = sh("pgrep -f '%s/views/node-1/pods/sleepe[r]-' >/dev/null",
                    plat.dir) != 0))
      lt_sleep_ms(100);
  cr_assert(gone, "the stop written during the cut never reached the node");
  field_of("pods", "ticker", "phase", node, sizeof node, NULL);
  cr_assert_str_eq(node, "Running", "a short cut changed the ticker");

  /* A long cut: NotReady after the timeout, the pod lost (NodeLost) and,
   * as its one retry allows, to be placed again - here on node-1 itself
   * once back, the only node; the attempt at the site runs on meanwhile. */
  lt_cutlink_cut(link);
  cr_assert(wait_field("nodes", "node-1", "status", "NotReady", 30));
  cr_assert(wait_field("pods", "ticker", "phase", "Pending", 10));
  field_of("pods", "ticker", "reason", node, sizeof node, &pods);
  cr_assert(strstr(node, "NodeLost"), "%s", node);
  cr_assert_eq(pods, 1);
  char pids[256];
  cr_assert_eq(sh("pgrep -d ' ' -f '%s/views/node-1/pods/ticke[r]-'", plat.dir),
               0, "the pod stopped with its link");
  snprintf(pids, sizeof pids, "%.200s", out);
  pids[strcspn(pids, "\n")] = 0;

  /* Mend: the node is back; the stop written while it was away ends the
   * lost attempt there, the retry runs; every line the lost attempt
   * printed arrives, once. */
  lt_cutlink_mend(link);
  cr_assert(wait_field("nodes", "node-1", "status", "Ready", 60));
  gone = 0;
  for (int i = 0; i < 600 && !gone; i++) /* 60 s: ample for any pull wait */
    if (!(gone = sh("kill -0 %s 2>/dev/null", pids) != 0))
      lt_sleep_ms(100);
  cr_assert(gone, "the lost attempt runs on after its node returned");
  cr_assert(wait_field("pods", "ticker", "phase", "Running", 60));
  int seen = 0, last = 0, ok = 0;
  for (int i = 0; i < 100; i++) {
    int n = seen;
    ok = ticks_once(&seen, &last);
    if (ok && seen == n && seen > 0)
      break; /* stable: everything that waited is in */
    lt_sleep_ms(300);
  }
  cr_assert(ok, "%d tick lines of attempt 0, not each of 1..%d once", seen,
            last);
  cr_assert_gt(last, 50, "the ticker printed too little to count");

  static const char *const views[] = {"scheduler", "logs", NULL};
  for (size_t i = 0; views[i]; i++)
    cr_assert_eq(larkctl_run("replay %s --verify", views[i]), 0, "%s: %s",
                 views[i], out);

  /* Decommissioned, the node leaves its site too: its user and seed are
   * gone from the site's files, and the site's server (reloaded) refuses
   * its key. */
  char site_acc[400], seed[400], keep[400], buf[8192], url[64];
  snprintf(seed, sizeof seed, "%s/sites/site-1/creds/node-1.nk", plat.dir);
  snprintf(keep, sizeof keep, "%s/node-1.nk.kept", plat.dir);
  cr_assert_eq(sh("cp %s %s", seed, keep), 0);
  snprintf(site_acc, sizeof site_acc, "%s/sites/site-1/site", plat.dir);
  cr_assert(lt_read_file(site_acc, buf, sizeof buf));
  char *p = strstr(buf, "port ");
  cr_assert(p, "%s", buf);
  snprintf(url, sizeof url, "nats://127.0.0.1:%d", atoi(p + 5));
  cr_assert_eq(larkctl_run("delete node node-1"), 0, "%s", out);
  snprintf(site_acc, sizeof site_acc, "%s/sites/site-1/accounts.conf",
           plat.dir);
  cr_assert(lt_read_file(site_acc, buf, sizeof buf));
  cr_assert(!strstr(buf, "node-1"), "%s", buf);
  cr_assert(!lt_read_file(seed, buf, sizeof buf), "the seed stays at the site");
  bus_conn *c = NULL;
  bus_conn_opts co;
  bus_conn_opts_init(&co);
  co.url = url;
  co.creds = keep;
  int rc = 0;
  for (int i = 0; i < 50 && (rc = bus_conn_open(&c, &co)) == 0; i++) {
    bus_conn_close(c); /* until the site's server has reloaded */
    c = NULL;
    lt_sleep_ms(100);
  }
  cr_assert_eq(rc, BUS_EAUTH, "the site's server takes node-1's key: %s",
               bus_strerror(rc));
  lt_cutlink_stop(link);
  int st = lt_platform_stop(&plat);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "up exit status %d", st);
  lt_platform_remove(&plat);
}

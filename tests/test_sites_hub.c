/*
 * test_sites_hub.c - `larkctl up --cluster --sites 1`: an edge site
 * behind a hub of three servers, end to end.
 *
 * - Every hub server has its own leaf listener with TLS, and the site's
 *   leaf server dials all three (its leaf.conf lists them).
 * - A node behind the site registers, is Ready, and runs a Job.
 * - The hub server the site is connected to is killed (SIGKILL): the site
 *   dials again, and the node stays Ready and runs the next Job; the
 *   first Job's pod is still Succeeded (nothing the scheduler held was
 *   lost with the server).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "files.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 16], err[1 << 14];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(sites_hub, .fini = platform_down, .timeout = 300);

/* What larkctl up, the node, its site and the scheduler said, for a
 * failure. */
static void
tell_logs(void) {
  char logs[512];
  lt_log_tail(plat.dir, "up.log", 15);
  snprintf(logs, sizeof logs, "%s/logs", plat.dir);
  static const char *const files[] = {"node-1.log", "leaf-site-1.log",
                                      "sites.log", "lark-scheduler.log", NULL};
  for (int i = 0; files[i]; i++)
    lt_log_tail(logs, files[i], 15);
}

static void
job(const char *name) {
  char script[128];
  snprintf(script, sizeof script, "echo %s ran", name);
  lt_platform_sh_job(&plat, name, script, 0);
  if (ctl("wait job %s --for Succeeded --timeout 90s", name)) {
    tell_logs();
    cr_assert_fail("%s: %s%s", name, out, err);
  }
}

/* The hub port the site's leaf server was connected to last, from its
 * log ("... - lid:N - Leafnode connection created ..." on the address
 * it dialled), and how many connections it made into *made (may be
 * NULL); 0 when none. */
static int
connected_port_n(int *made) {
  char path[512];
  static char log[1 << 20];
  snprintf(path, sizeof path, "%s/logs/leaf-site-1.log", plat.dir);
  if (!lt_read_file(path, log, sizeof log))
    return 0;
  int port = 0;
  for (char *p = log; (p = strstr(p, "Leafnode connection created")); p++) {
    char *line = p;
    while (line > log && line[-1] != '\n')
      line--;
    char *colon = strstr(line, "127.0.0.1:");
    if (colon && colon < p)
      port = atoi(colon + 10);
    if (made)
      (*made)++;
  }
  return port;
}

/* Which hub server (1-based) listens for leaf connections on port. */
static int
server_of_port(int port) {
  char path[512], buf[32];
  for (int k = 1; k <= 3; k++) {
    if (k == 1)
      snprintf(path, sizeof path, "%s/broker/leaf.port", plat.dir);
    else
      snprintf(path, sizeof path, "%s/broker/leaf-%d.port", plat.dir, k);
    if (lt_read_file(path, buf, sizeof buf) && atoi(buf) == port)
      return k;
  }
  return 0;
}

Test(sites_hub, a_site_dials_every_hub_server_and_outlives_one) {
  static const char *const extra[] = {
      "--cluster", "--nodes", "1", "--sites", "1", "--no-gateway", NULL};
  lt_platform_init(&plat, "sitehub");
  if (lt_platform_start(&plat, extra, 150)) {
    static char up[1 << 16];
    const char *tail = lt_read_file(plat.up_log, up, sizeof up) ? up : "";
    size_t n = strlen(tail);
    cr_assert_fail("larkctl up --cluster --sites is not ready; the end of "
                   "its log:\n%s",
                   tail + (n > 4000 ? n - 4000 : 0));
  }
  char path[512], text[8192];
  for (int k = 1; k <= 3; k++) {
    snprintf(path, sizeof path, "%s/broker/lark-%d.conf", plat.dir, k);
    cr_assert_not_null(lt_read_file(path, text, sizeof text));
    cr_expect(strstr(text, "leafnodes {") && strstr(text, "cert_file"),
              "lark-%d has no leaf listener with TLS", k);
  }
  snprintf(path, sizeof path, "%s/sites/site-1/leaf.conf", plat.dir);
  cr_assert_not_null(lt_read_file(path, text, sizeof text));
  int urls = 0;
  char *line = strstr(text, "urls: [");
  cr_assert_not_null(line, "no urls in %s", path);
  line[strcspn(line, "\n")] = 0;
  for (char *p = line; (p = strstr(p, "\"nats-leaf://")); p++)
    urls++;
  cr_expect_eq(urls, 3, "the site dials %d hub servers: %s", urls, line);

  if (!lt_larkctl_until(&plat, out, sizeof out, err, sizeof err, "Ready", 60,
                        "get node node-1")) {
    tell_logs();
    cr_assert_fail("node-1 never Ready through its site: %s%s", out, err);
  }
  job("before");

  int port = 0;
  for (int i = 0; i < 100 && !port; i++, lt_sleep_ms(100))
    port = connected_port_n(NULL);
  int k = server_of_port(port);
  cr_assert_gt(k, 0, "which hub server the site is on (port %d)?", port);
  snprintf(path, sizeof path, "%s/run/lark-%d.pid", plat.dir, k);
  pid_t pid = lt_pid_in(path, 5);
  cr_assert_gt(pid, 0, "no pid in %s", path);
  int before = 0, after = 0;
  connected_port_n(&before);
  cr_assert_eq(kill(pid, SIGKILL), 0);

  job("after");
  int now = connected_port_n(&after);
  cr_expect_gt(after, before, "the site never dialled again");
  cr_log_info("the site was on lark-%d, now on lark-%d", k,
              server_of_port(now));
  cr_expect(lt_larkctl_until(&plat, out, sizeof out, err, sizeof err, "Ready",
                             30, "get node node-1"),
            "%s%s", out, err);
  cr_expect(lt_larkctl_until(&plat, out, sizeof out, err, sizeof err,
                             "Succeeded", 10, "get job before"),
            "%s%s", out, err);
  cr_expect(lt_larkctl_until(&plat, out, sizeof out, err, sizeof err,
                             "after ran", 20, "logs job after"),
            "%s%s", out, err);
}

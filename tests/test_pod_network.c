/*
 * test_pod_network.c - the pod network as an operator runs it, end to
 * end, as root: `larkctl up --relay --nodes 2 --domain pn` (nats-server,
 * the services with lark-scheduler, lark-ipam and lark-signer, two
 * lark-edge nodes with pod ranges in clusters c1 and c2, the relay hub
 * and one lark-relay node per node, with domain certificates from the
 * signer), then `larkctl apply` of a Domain and a Job with that domain
 * whose server task is placed in c2 and whose client task in c1.
 *
 * The server pod echoes with socat; the client pod, an unmodified socat
 * too, connects to the server's virtual IP (which the test reads with
 * `larkctl get routes` and hands over in a file) and sends a random file;
 * the test checks the echo byte for byte and that it went through the
 * hub: c1's relay routed it via the hub, the hub opened the channel, and
 * c2's relay delivered it.
 *
 * The test first moves itself into a network namespace it made, so the
 * broker, the hub, the nodes' ends of the pods' veths and every address
 * live in namespaces of its own with no route out of the machine. Pod
 * namespaces carry the pods' names, which carry the test's pid.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "natsd.h"
#include "platform.h"
#include "podnet.h"
#include "proc.h"
#include "relaybed.h"
#include "wait.h"

#define DOMAIN "pn"
#define BYTES (1024 * 1024)

static lt_relaybed bed;
static char out[1 << 16], err[1 << 14];

/* a shell command line; stdout into out, stderr into err */
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* larkctl --data dir ARGS (one shell word list); its output in out. */
#define larkctl_run(...)                                                       \
  lt_larkctl(&bed.plat, out, sizeof out, err, sizeof err, __VA_ARGS__)

/* ------------------------------------------------------------- fixture */

static const char *const pods[] = {"server-0", "client-0"};

static void
setup(void) {
  lt_relaybed_init(&bed, "network namespaces, nftables", "podnet", "pn", pods,
                   2);
  cr_assert_eq(sh("head -c %d /dev/urandom > %s/in", BYTES, bed.plat.dir), 0,
               "%s", err);
  lt_relaybed_up(&bed, DOMAIN);
}

static void
teardown(void) {
  int st = lt_relaybed_down(&bed);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "larkctl up exit status %d",
            st);
}

TestSuite(pod_network, .init = setup, .fini = teardown, .timeout = 150);

/* ---------------------------------------------------------------- test */

static void
apply_domain_and_job(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/pn.yaml", bed.plat.dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fprintf(f,
          "apiVersion: rlinf.io/v1alpha1\n"
          "kind: Domain\n"
          "metadata:\n  name: " DOMAIN "\n"
          "spec:\n  cidr: 10.2.0.0/24\n"
          "---\n"
          "apiVersion: rlinf.io/v1alpha1\n"
          "kind: Job\n"
          "metadata:\n  name: %s\n"
          "spec:\n"
          "  domain: " DOMAIN "\n"
          "  tasks:\n"
          "    - name: server\n"
          "      role: Env\n"
          "      nodeSelector:\n        rlark.io/cluster: c2\n"
          "      runtime:\n        raw:\n"
          "          entrypoint: [\"timeout\", \"120\", \"socat\","
          " \"TCP-LISTEN:8080,fork,reuseaddr\", \"EXEC:cat\"]\n"
          "    - name: client\n"
          "      role: Rollout\n"
          "      nodeSelector:\n        rlark.io/cluster: c1\n"
          "      runtime:\n        raw:\n"
          "          entrypoint:\n"
          "            - /bin/sh\n"
          "            - -c\n"
          "            - |\n"
          "              cd %s\n"
          "              for i in $(seq 1 200); do\n"
          "                if [ -s vip ] && timeout 20 socat -t 5 -T 10 -"
          " TCP:$(cat vip):8080,connect-timeout=2 < in > echo.tmp"
          " 2>> client.err && cmp -s in echo.tmp; then\n"
          "                  mv echo.tmp echo; echo ok > client.done;"
          " exit 0\n"
          "                fi\n"
          "                sleep 0.3\n"
          "              done\n"
          "              exit 1\n",
          bed.job, bed.plat.dir);
  fclose(f);
  lt_platform_apply(&bed.plat, path, 30);
}

/* The server pod's row as c1's relay sees it: its virtual IP once it has
 * a real address, "" until then. */
static int
server_vip(char *vip, size_t cap) {
  char pod[128], ip[64], real[64], via[16];
  snprintf(pod, sizeof pod, "%s-server-0", bed.job);
  if (!lt_route_of(&bed.plat, DOMAIN, "c1", pod, ip, real, via) || !real[0] ||
      strcmp(via, "hub"))
    return 0;
  snprintf(vip, cap, "%s", ip);
  return 1;
}

Test(pod_network, a_pod_in_c1_reaches_a_pod_in_c2_through_the_hub) {
  char vip[64] = "", path[512], log[512];
  apply_domain_and_job();
  for (int i = 0; i < 600 && !server_vip(vip, sizeof vip); i++)
    lt_sleep_ms(100);
  if (!vip[0]) { /* say what the platform shows */
    char routes[8192];
    larkctl_run("get routes " DOMAIN " --cluster c1 -o json");
    snprintf(routes, sizeof routes, "%.4000s%.4000s", out, err);
    larkctl_run("get pods -o wide");
    cr_assert(vip[0], "no route to the server pod for c1: %s\npods:\n%s%s",
              routes, out, err);
  }
  cr_assert_eq(strncmp(vip, "10.2.0.", 7), 0, "%s", vip);
  snprintf(path, sizeof path, "%s/vip", bed.plat.dir);
  cr_assert_eq(sh("echo %s > %s.tmp && mv %s.tmp %s", vip, path, path, path),
               0);

  snprintf(path, sizeof path, "%s/client.done", bed.plat.dir);
  int done = 0;
  for (int i = 0; i < 600 && !done; i++, lt_sleep_ms(100))
    done = access(path, F_OK) == 0;
  cr_assert(done, "the client pod got no echo through %s (see %s/logs)", vip,
            bed.plat.dir);
  cr_expect_eq(sh("cmp %s/in %s/echo", bed.plat.dir, bed.plat.dir), 0,
               "bytes differ: %s", out);

  /* the connection went c1 relay -> hub -> c2 relay -> the server pod */
  char want[128];
  snprintf(log, sizeof log, "%s/logs/relay-node-1.log", bed.plat.dir);
  cr_expect(lt_file_says(log, "via hub", 5), "c1's relay did not use the hub");
  snprintf(log, sizeof log, "%s/logs/relay-hub.log", bed.plat.dir);
  snprintf(want, sizeof want, "domain " DOMAIN " to %s:8080", vip);
  cr_expect(lt_file_says(log, want, 5), "the hub carried no channel to %s",
            vip);
  snprintf(log, sizeof log, "%s/logs/relay-node-2.log", bed.plat.dir);
  cr_expect(lt_file_says(log, "delivered", 5), "c2's relay delivered nothing");
  /* every byte each way, counted by both relays when the channel closed */
  snprintf(want, sizeof want, "closed (%d bytes in, %d out)", BYTES, BYTES);
  cr_expect(lt_file_says(log, want, 5), "c2's relay: no '%s'", want);
  snprintf(log, sizeof log, "%s/logs/relay-node-1.log", bed.plat.dir);
  cr_expect(lt_file_says(log, want, 5), "c1's relay: no '%s'", want);
}

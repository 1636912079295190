/*
 * test_sched_ray_domain.c - a Domain Job's Ray head, end to end, as root:
 * `larkctl up --relay --nodes 2 --domain rd` (the scheduler, lark-ipam,
 * two lark-edge nodes in clusters c1 and c2, the relay hub and a relay per
 * node), then a Job in that Domain whose head task runs in c2 (an echo
 * server, socat, on the Job's rayPort) and whose two workers run in c1.
 *
 * Each pod writes the RAY_ADDRESS it was given; every one must be the
 * head's virtual IP (as `larkctl get routes` shows it) and the rayPort,
 * the workers must start after the head's Running report, and each
 * worker, an unmodified socat, reaches the head at that address (through
 * the hub: the clusters cannot reach each other otherwise).
 *
 * The test moves itself into a network namespace of its own first, as
 * test_pod_network does; pod namespaces carry the Job's name, which
 * carries the test's pid.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "platform.h"
#include "podnet.h"
#include "proc.h"
#include "relaybed.h"
#include "wait.h"

#define DOMAIN "rd"
#define PORT "6390"

static lt_relaybed bed;
static const char *const pods[] = {"head-0", "worker-0", "worker-1"};

static void
setup(void) {
  lt_relaybed_init(&bed, "network namespaces for a Domain's pods", "rayd", "rd",
                   pods, 3);
  lt_relaybed_up(&bed, DOMAIN);
}

static void
teardown(void) {
  lt_relaybed_down(&bed);
}

TestSuite(sched_ray_domain, .init = setup, .fini = teardown, .timeout = 150);

static void
apply(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/rd.yaml", bed.plat.dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fprintf(f,
          "apiVersion: rlinf.io/v1alpha1\n"
          "kind: Domain\n"
          "metadata:\n  name: " DOMAIN "\n"
          "spec:\n  cidr: 10.3.0.0/24\n"
          "---\n"
          "apiVersion: rlinf.io/v1alpha1\n"
          "kind: Job\n"
          "metadata:\n  name: %s\n"
          "spec:\n"
          "  domain: " DOMAIN "\n"
          "  rayPort: " PORT "\n"
          "  tasks:\n"
          "    - name: head\n"
          "      head: true\n"
          "      role: Actor\n"
          "      nodeSelector:\n        rlark.io/cluster: c2\n"
          "      runtime:\n        raw:\n"
          "          entrypoint:\n"
          "            - /bin/sh\n"
          "            - -c\n"
          "            - |\n"
          "              echo $RAY_ADDRESS > %s/$LARK_POD.ray\n"
          "              exec timeout 120 socat TCP-LISTEN:" PORT
          ",fork,reuseaddr EXEC:cat\n"
          "    - name: worker\n"
          "      role: Rollout\n"
          "      replicas: 2\n"
          "      nodeSelector:\n        rlark.io/cluster: c1\n"
          "      runtime:\n        raw:\n"
          "          entrypoint:\n"
          "            - /bin/sh\n"
          "            - -c\n"
          "            - |\n"
          "              cd %s\n"
          "              date +%%s%%N > $LARK_POD.start\n"
          "              echo $RAY_ADDRESS > $LARK_POD.ray\n"
          "              for i in $(seq 1 200); do\n"
          "                if echo $LARK_POD | timeout 20 socat -t 5 -T 10 -"
          " TCP:$RAY_ADDRESS,connect-timeout=2 > $LARK_POD.tmp"
          " 2>> $LARK_POD.err && grep -q $LARK_POD $LARK_POD.tmp; then\n"
          "                  mv $LARK_POD.tmp $LARK_POD.echo; exit 0\n"
          "                fi\n"
          "                sleep 0.3\n"
          "              done\n"
          "              exit 1\n",
          bed.job, bed.plat.dir, bed.plat.dir);
  fclose(f);
  lt_platform_apply(&bed.plat, path, 30);
}

/* The head pod's virtual IP in `larkctl get routes`; "" until it has one. */
static int
head_vip(char vip[64]) {
  char pod[128], real[64], via[16];
  snprintf(pod, sizeof pod, "%s-head-0", bed.job);
  return lt_route_of(&bed.plat, DOMAIN, "c1", pod, vip, real, via);
}

static void
file_line(const char *pod, const char *ext, char *buf, size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s-%s.%s", bed.plat.dir, bed.job, pod, ext);
  buf[0] = 0;
  if (lt_read_file(path, buf, cap))
    buf[strcspn(buf, "\n")] = 0;
}

Test(sched_ray_domain, workers_reach_the_head_at_its_virtual_ip) {
  char vip[64] = "", want[96], got[96], path[512];
  apply();
  for (int i = 0; i < 600 && !head_vip(vip); i++)
    lt_sleep_ms(100);
  cr_assert(vip[0], "no route to the head pod (see %s/logs)", bed.plat.dir);
  cr_assert_eq(strncmp(vip, "10.3.0.", 7), 0, "%s", vip);
  snprintf(want, sizeof want, "%s:" PORT, vip);
  for (int w = 1; w < 3; w++) {
    int done = 0;
    snprintf(path, sizeof path, "%s/%s-%s.echo", bed.plat.dir, bed.job,
             pods[w]);
    for (int i = 0; i < 600 && !done; i++, lt_sleep_ms(100))
      done = access(path, F_OK) == 0;
    file_line(pods[w], "ray", got, sizeof got);
    cr_expect_str_eq(got, want, "%s's RAY_ADDRESS", pods[w]);
    cr_expect(done, "%s reached no head at %s (see %s/logs)", pods[w], got,
              bed.plat.dir);
  }
  file_line(pods[0], "ray", got, sizeof got);
  cr_expect_str_eq(got, want, "the head's own RAY_ADDRESS");

  bus_conn *c = lt_platform_admin(&bed.plat);
  cr_assert_not_null(c, "%s", bus_last_error());
  char head[128];
  snprintf(head, sizeof head, "%s-head-0", bed.job);
  int64_t up = lt_pod_running_ts(c, head);
  cr_assert_gt(up, 0, "no Running report of the head");
  for (int w = 1; w < 3; w++) {
    file_line(pods[w], "start", got, sizeof got);
    cr_expect_gt(atoll(got), up, "%s started before its head ran", pods[w]);
  }
  bus_conn_close(c);
}

/*
 * test_rl_engine_relay.c - weights across clusters, end to end, as root:
 * `larkctl up --relay --nodes 2 --domain rw` (every service with
 * lark-engine, two lark-edge nodes in clusters c1 and c2, the relay hub
 * and a relay per node, each relay's certificate naming its cluster),
 * then an RL Job whose learner runs in c1 and whose two samplers run in
 * c2 (examples/rl_learner.py and rl_sampler.py, sequential, 2 steps).
 *
 * A node fetches from another cluster only through its cluster's relay
 * and the hub, on the weights channel the hub authorises by the Job's
 * engine.nodes: the Job must reach Succeeded (the samplers check every
 * version's sha256 against the learner's bytes and exit non-zero
 * otherwise), node-2 must report each version cached from node-1, the hub
 * must log the weights channels it joined for the Job, and c2's relay the
 * requests it carried; none refused but while the hub had not yet read
 * the Job's events.
 *
 * The test moves itself into a network namespace of its own first, as
 * test_sched_ray_domain does.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "platform.h"
#include "podnet.h"
#include "proc.h"
#include "relaybed.h"
#include "wait.h"

static lt_relaybed bed;
static char out[1 << 16], err[1 << 14];

#define larkctl_run(...)                                                       \
  lt_larkctl(&bed.plat, out, sizeof out, err, sizeof err, __VA_ARGS__)

static const char *const pods[] = {"learner-0", "sampler-0", "sampler-1"};

static void
setup(void) {
  lt_relaybed_init(&bed, "relays capture in network namespaces", "rlrel", "rw",
                   pods, 3);
  setenv("LARKBUS_HOME", lt_source_dir(), 1); /* the pods find the scripts */
  lt_relaybed_up(&bed, "rw");
}

static void
teardown(void) {
  lt_relaybed_down(&bed);
}

TestSuite(rl_engine_relay, .init = setup, .fini = teardown, .timeout = 200);

/* The learner in c1, the samplers in c2. */
static void
apply(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/rw.yaml", bed.plat.dir);
  cr_assert_eq(
      lt_write_file(path,
                    "apiVersion: rlinf.io/v1alpha1\n"
                    "kind: Job\n"
                    "metadata: {name: %s}\n"
                    "spec:\n"
                    "  engine: {mode: sequential}\n"
                    "  tasks:\n"
                    "    - name: sampler\n"
                    "      role: Rollout\n"
                    "      replicas: 2\n"
                    "      nodeSelector: {rlark.io/cluster: c2}\n"
                    "      runtime:\n"
                    "        raw:\n"
                    "          entrypoint: [/bin/sh, -c,\n"
                    "            'exec python3 "
                    "\"$LARKBUS_HOME/examples/rl_sampler.py\"']\n"
                    "          environment: [{name: RL_STEPS, value: \"2\"}]\n"
                    "    - name: learner\n"
                    "      role: Actor\n"
                    "      nodeSelector: {rlark.io/cluster: c1}\n"
                    "      runtime:\n"
                    "        raw:\n"
                    "          entrypoint: [/bin/sh, -c,\n"
                    "            'exec python3 "
                    "\"$LARKBUS_HOME/examples/rl_learner.py\"']\n"
                    "          environment: [{name: RL_STEPS, value: \"2\"}]\n",
                    bed.job),
      0);
  lt_platform_apply(&bed.plat, path, 30);
}

/* The lines of the platform's logs (every process's) holding both a and
 * b, into got; how many. */
static char got[1 << 14];

static int
log_lines(const char *a, const char *b) {
  char e[1024];
  got[0] = 0;
  lt_sh(got, sizeof got, e, sizeof e,
        "cat %s/logs/*.log | grep -F -- '%s' | grep -F -- '%s'", bed.plat.dir,
        a, b);
  int n = 0;
  for (const char *l = got; (l = strchr(l, '\n')); l++)
    n++;
  return n;
}

Test(rl_engine_relay, weights_cross_clusters_through_the_hub) {
  char want[128];
  apply();
  cr_assert_eq(
      larkctl_run("wait job %s --for Succeeded --timeout 150s", bed.job), 0,
      "%s%s (see %s/logs)", out, err, bed.plat.dir);
  /* node-2 (c2) cached each version, from node-1 (c1) */
  cr_assert_eq(
      larkctl_run("tail lark.ev.engine.%s --type weights.cached -o json",
                  bed.job),
      0, "%s", err);
  int cached = 0;
  for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
    cached += strstr(l, "\"node-2\"") && strstr(l, "\"node-1\"");
  cr_expect_geq(cached, 2, "versions cached by node-2 from node-1: %d", cached);
  /* ... through c2's relay and the hub, by the Job's rule */
  snprintf(want, sizeof want, "job %s node-2 -> node-1", bed.job);
  cr_expect_gt(log_lines("node: weights", want), 0,
               "c2's relay carried no weights request (see %s/logs)",
               bed.plat.dir);
  snprintf(want, sizeof want, "job %s node-2 (c2) -> node-1", bed.job);
  cr_expect_gt(log_lines("hub: weights channel", want), 0,
               "the hub joined no weights channel (see %s/logs)", bed.plat.dir);
  /* The hub follows the log, so it may be asked before it has read the
   * Job's engine.nodes or the weights event naming the address: it then
   * refuses, and the fetcher tries again after its backoff. No other
   * refusal is right. */
  log_lines("refused weights", bed.job);
  for (char *l = strtok(got, "\n"); l; l = strtok(NULL, "\n"))
    cr_expect(strstr(l, "(unknown job)") || strstr(l, "gave no address"),
              "refused: %s", l);
  cr_expect_eq(larkctl_run("replay engine --verify"), 0, "%s%s", out, err);
}

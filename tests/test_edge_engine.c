/*
 * test_edge_engine.c - the node's side of the RL engine: lark-edge as a
 * real process beside a real broker, the test playing lark-engine (its
 * projections written to the node's stream, engine_bed.h) and the
 * scheduler (pod.desired), reading the node's ingress.
 *
 * The projections kept in the node's store (the highest version) and
 * forgotten with the Job's last pod.
 */
#include "engine_bed.h"

static void
setup(void) {
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "engine", "n1", &ingress);
}

static void
teardown(void) {
  if (edge_pid > 0)
    lt_kill(edge_pid, SIGTERM);
  lt_node_bed_down(&srv, conn, ingress, dir, NULL, 0);
}

TestSuite(edge_engine, .init = setup, .fini = teardown, .timeout = 120);

Test(edge_engine, projections_are_kept_and_forgotten_with_the_last_pod) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  lt_pod_running(conn, "n1", "j-a-0", "sleep 600", NULL);
  eb_stage st[] = {{"rollout", 0, 0}};
  eb_stages(50, st, 1, NULL, 0);
  eb_stages(40, st, 1, NULL, 1); /* older: not kept */
  eb_peers((const char *[]){"j-a-0", NULL});
  cr_assert(eb_stored("stages", 1, 30), "engine.stages never stored");
  cr_assert(eb_stored("peers", 1, 30), "engine.peers never stored");
  /* stages 40 said ended, but 50 is kept: nothing is forgotten */
  sleep(1);
  cr_expect(eb_stored("stages", 1, 1));
  /* the run ended, a pod is still here: kept */
  eb_stages(0, st, 1, NULL, 1);
  sleep(1);
  cr_expect(eb_stored("stages", 1, 1), "kept while a pod of the Job is here");
  /* the pod deleted and forgotten: the Job's rows go */
  const char *argv[] = {"sleep", "600", NULL};
  lt_pod_desire(conn, "n1", "j-a-0", 0, "Deleted", "raw", argv, NULL);
  cr_expect(eb_stored("stages", 0, 30), "engine.stages never forgotten");
  cr_expect(eb_stored("peers", 0, 5), "engine.peers never forgotten");
}

/*
 * test_edge_engine.c - the node's side of the RL engine: lark-edge as a
 * real process beside a real broker, the test playing lark-engine (its
 * projections written to the node's stream, engine_bed.h) and the
 * scheduler (pod.desired), reading the node's ingress.
 *
 * The projections kept in the node's store (the highest version) and
 * forgotten with the Job's last pod; a pod's done as stage.report,
 * stamped from its socket whatever the line says; waits (the latest
 * step, timeouts, the run's end) and peers; the loaders' rule with the
 * weights part; the agent killed (-9) and restarted: the Python Run
 * reconnects, projections are answered from the store, a done is sent
 * once; lines behind a waiting request; a replacement attempt joining at
 * the current step.
 */
#include "engine_bed.h"

static void
setup(void) {
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "edge-engine", "n1", &ingress);
}

static void
teardown(void) {
  if (edge_pid > 0)
    lt_kill(edge_pid, SIGTERM);
  eb_kill_pods("j-a-0");
  eb_kill_pods("j-a-1");
  lt_node_bed_down(&srv, conn, ingress, dir, NULL, 0);
}

TestSuite(edge_engine, .init = setup, .fini = teardown, .timeout = 120);

Test(edge_engine, projections_are_kept_and_forgotten_with_the_last_pod) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  char script[400];
  snprintf(script, sizeof script, "echo $$ > %s/j-a-0.pid; exec sleep 600",
           dir);
  lt_pod_running(conn, "n1", "j-a-0", script, NULL);
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

Test(edge_engine, a_pods_done_arrives_as_its_stage_report) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_pod(
      "j-a-0", 0,
      "call(lambda: run.peers())\n"
      "mark('waiting')\n"
      "w = run.wait('rollout', 0)\n"
      "out.append(w)\n"
      "call(lambda: run.done('rollout', w['step'], reward=0.5) or {})\n"
      "call(lambda: run.done('rollout', w['step'], reward=0.5) or {})\n"
      "out.append(raw('{\"op\":\"done\",\"stage\":\"train\",\"step\":7,"
      "\"pod\":\"j-a-1\",\"job\":\"other\",\"attempt\":9}'))\n"
      "call(lambda: run.done('nope', 0))\n"
      "out.append(raw('{\"op\":\"fly\"}'))\n"
      "out.append(raw('{\"op\":\"wait\",\"stage\":\"train\",\"step\":-1}'))");
  cr_assert(eb_marked("j-a-0", "waiting", 30), "the pod never started");
  usleep(300 * 1000); /* it waits: nothing has started yet */
  eb_stage st[] = {{"rollout", 0, 0}};
  eb_stages(0, st, 1, NULL, 0);
  json_t *out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  cr_expect_eq(json_array_size(ANS(out, 0)), 0, "no peers before engine.peers");
  cr_expect_str_eq(STR(ANS(out, 1), "stage"), "rollout");
  cr_expect_eq(INT(ANS(out, 1), "step"), 0);
  cr_expect_str_eq(STR(ANS(out, 1), "mode"), "sequential");
  cr_expect_null(STR(ANS(out, 2), "error"));
  cr_expect_null(STR(ANS(out, 3), "error"), "the same done again is ok");
  cr_expect(json_is_true(json_object_get(ANS(out, 4), "ok")));
  cr_expect_str_eq(STR(ANS(out, 5), "error"), "unknown stage nope");
  cr_expect_str_eq(STR(ANS(out, 6), "error"), "unknown op fly");
  cr_expect_str_eq(STR(ANS(out, 7), "error"), "step must be an integer >= 0");
  json_decref(out);
  cr_expect_eq(eb_reports("j-a-0", "rollout", 0, 1, 10), 1, "queued once");
  const eb_report *r = eb_report_of("j-a-0", "rollout", 0);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->job, "j");
  cr_expect_eq(r->attempt, 0);
  cr_expect_eq(r->weights, 0);
  cr_expect(r->reward > 0.49 && r->reward < 0.51, "reward %f", r->reward);
  /* the hostile line: stamped with the socket's pod, Job and attempt */
  cr_expect_eq(eb_reports("j-a-0", "train", 7, 1, 5), 1);
  r = eb_report_of("j-a-0", "train", 7);
  cr_assert_not_null(r);
  cr_expect_str_eq(r->job, "j");
  cr_expect_eq(r->attempt, 0);
  cr_expect_eq(eb_reports("j-a-1", "train", 7, 1, 1), 0, "never another's");
}

Test(edge_engine, wait_answers_the_latest_step_and_fails_once_ended) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_stage st[] = {{"rollout", 3, 2}, {"train", 2, 1}};
  eb_stages(0, st, 2, NULL, 0);
  eb_peers((const char *[]){"j-a-0", "j-a-1", NULL});
  cr_assert(eb_stored("peers", 1, 30));
  eb_pod("j-a-0", 0,
         "call(lambda: run.wait('rollout', 1))\n"
         "call(lambda: run.wait('update_dataset', 0, timeout=0))\n"
         "call(lambda: run.wait('rollout', 5, timeout=0.3))\n"
         "call(lambda: run.peers())\n"
         "mark('waiting')\n"
         "call(lambda: run.wait('rollout', 4))\n"
         "call(lambda: run.wait('train', 9))\n"
         "call(lambda: run.wait('rollout', 0))\n"
         "call(lambda: run.done('rollout', 4))");
  cr_assert(eb_marked("j-a-0", "waiting", 30), "the pod never got there");
  eb_stage next[] = {{"rollout", 4, 2}, {"train", 2, 1}};
  eb_stages(0, next, 2, NULL, 0);
  usleep(500 * 1000); /* train 9 waits */
  eb_stages(0, next, 2, NULL, 1);
  json_t *out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  cr_expect_eq(INT(ANS(out, 0), "step"), 3,
               "the latest step, not the one asked");
  cr_expect_eq(INT(ANS(out, 0), "weights"), 2);
  cr_expect_str_eq(STR(ANS(out, 1), "error"), "timeout", "not started: poll");
  cr_expect_str_eq(STR(ANS(out, 2), "error"), "timeout");
  json_t *peers = ANS(out, 3);
  cr_expect_eq(json_array_size(peers), 2);
  cr_expect_str_eq(STR(json_array_get(peers, 1), "pod"), "j-a-1");
  cr_expect_str_eq(STR(json_array_get(peers, 1), "address"), "10.0.0.2");
  cr_expect_str_eq(STR(json_array_get(peers, 1), "role"), "Rollout");
  cr_expect_str_eq(STR(json_array_get(peers, 1), "cluster"), "local");
  cr_expect_str_eq(STR(json_array_get(peers, 1), "phase"), "Running");
  cr_expect_eq(INT(ANS(out, 4), "step"), 4, "woken by the new step");
  cr_expect_str_eq(STR(ANS(out, 5), "error"), "the run ended");
  cr_expect_str_eq(STR(ANS(out, 6), "error"), "the run ended");
  cr_expect_null(STR(ANS(out, 7), "error"), "done is taken after the end");
  json_decref(out);
}

Test(edge_engine, a_loaders_sync_weights_done_needs_the_weights_loaded) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_stage st[] = {{"rollout", 0, 0}, {"sync_weights", 0, 1}};
  eb_stages(0, st, 2, (const char *[]){"j-a", NULL}, 0);
  cr_assert(eb_stored("stages", 1, 30));
  eb_pod("j-a-0", 0,
         "open('w.bin', 'wb').write(bytes(range(256)) * 16)\n"
         "call(lambda: run.done('sync_weights', 0))\n"
         "call(lambda: run.publish_weights(1, 'w.bin'))\n"
         "call(lambda: run.done('sync_weights', 0))\n"
         "call(lambda: run.wait_weights(1) and run.last_weights)\n"
         "call(lambda: run.done('sync_weights', 0, loss=0.25) or {})\n"
         "call(lambda: run.wait_weights(2, timeout=0.3))\n"
         "call(lambda: run.wait('sync_weights', 1))\n"
         "call(lambda: run.done('sync_weights', 1) or {})");
  /* sync_weights 1 with version 5, and j-a no longer a loader */
  cr_assert_eq(eb_reports("j-a-0", "sync_weights", 0, 1, 30), 1);
  eb_stage next[] = {{"rollout", 1, 1}, {"sync_weights", 1, 5}};
  eb_stages(0, next, 2, (const char *[]){"j-b", NULL}, 0);
  json_t *out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  const char *refusal = "load weights version 1 first (wait_weights)";
  cr_expect_str_eq(STR(ANS(out, 0), "error"), refusal);
  cr_expect_eq(INT(ANS(out, 1), "version"), 1);
  cr_expect_eq(INT(ANS(out, 1), "size"), 4096);
  const char *sha = STR(ANS(out, 1), "sha256");
  cr_assert(sha && strlen(sha) == 64, "%s", sha ? sha : "(none)");
  cr_expect_str_eq(STR(ANS(out, 2), "error"), refusal,
                   "publishing is not loading");
  cr_expect_eq(INT(ANS(out, 3), "version"), 1);
  cr_expect_str_eq(STR(ANS(out, 3), "sha256"), sha);
  char want[700];
  snprintf(want, sizeof want, "%s/n1/weights/%s", dir, sha);
  cr_expect_str_eq(STR(ANS(out, 3), "path"), want);
  cr_expect_null(STR(ANS(out, 4), "error"), "loaded: taken");
  cr_expect_str_eq(STR(ANS(out, 5), "error"), "timeout");
  cr_expect_eq(INT(ANS(out, 6), "weights"), 5);
  cr_expect_null(STR(ANS(out, 7), "error"), "not a loader any more");
  json_decref(out);
  const eb_report *r = eb_report_of("j-a-0", "sync_weights", 0);
  cr_assert_not_null(r);
  cr_expect_eq(r->weights, 1, "stamped with the version handed");
  cr_expect_eq(eb_reports("j-a-0", "sync_weights", 1, 1, 10), 1);
}

Test(edge_engine, an_agent_killed_and_restarted_answers_from_its_store) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_stage st[] = {{"rollout", 0, 0}};
  eb_stages(0, st, 1, NULL, 0);
  eb_peers((const char *[]){"j-a-0", NULL});
  cr_assert(eb_stored("peers", 1, 30));
  eb_pod("j-a-0", 0,
         "w = run.wait('rollout', 0)\n"
         "run.done('rollout', w['step'], reward=1)\n"
         "mark('done0')\n"
         "call(lambda: run.wait('rollout', 1))\n"
         "call(lambda: run.peers())\n"
         "call(lambda: run.done('rollout', 1) or {})");
  cr_assert(eb_marked("j-a-0", "done0", 30), "the pod never reported");
  lt_kill(edge_pid, SIGKILL);
  edge_pid = 0;
  /* the dead agent's last fetch expires first: a message the broker
   * hands to it comes again only after the consumer's AckWait (30 s) */
  usleep(1500 * 1000);
  eb_stage next[] = {{"rollout", 1, 0}};
  eb_stages(0, next, 1, NULL, 0); /* while no agent reads */
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  json_t *out = eb_results("j-a-0", 60);
  cr_assert_not_null(out);
  cr_expect_eq(INT(ANS(out, 0), "step"), 1, "the wait sent again, answered");
  cr_expect_eq(json_array_size(ANS(out, 1)), 1, "peers from the store");
  cr_expect_null(STR(ANS(out, 2), "error"));
  json_decref(out);
  cr_expect_eq(eb_reports("j-a-0", "rollout", 1, 1, 20), 1);
  eb_drain(1500); /* anything sent twice would be here by now */
  cr_expect_eq(eb_reports("j-a-0", "rollout", 0, 1, 1), 1, "sent once");
  cr_expect_eq(eb_reports("j-a-0", "rollout", 1, 1, 1), 1, "sent once");
}

Test(edge_engine, lines_behind_a_wait_are_answered_after_it_in_order) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_stage st[] = {{"rollout", 0, 0}};
  eb_stages(0, st, 1, NULL, 0);
  cr_assert(eb_stored("stages", 1, 30));
  eb_pod("j-a-0", 0,
         "raw_drop('{\"op\":\"wait\",\"stage\":\"train\",\"step\":0}')\n"
         "out.append(raw_lines('{\"op\":\"wait\",\"stage\":\"rollout\","
         "\"step\":1,\"timeout\":0.5}\\n{\"kind\":\"metric\",\"values\":"
         "{\"x\":1}}\\n{\"op\":\"peers\"}\\nnot json\\n', 4))\n"
         "mark('waiting')\n"
         "out.append(raw_lines('{\"op\":\"wait\",\"stage\":\"rollout\","
         "\"step\":1}\\n{\"op\":\"wait\",\"stage\":\"rollout\","
         "\"step\":0}\\n', 2))");
  cr_assert(eb_marked("j-a-0", "waiting", 30), "the pod never got there");
  usleep(300 * 1000);
  eb_stage next[] = {{"rollout", 1, 0}, {"train", 0, 0}};
  eb_stages(0, next, 2, NULL, 0); /* also wakes the dropped connection's */
  json_t *out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  json_t *a = ANS(out, 0), *b = ANS(out, 1);
  cr_assert_eq(json_array_size(a), 4);
  cr_expect_str_eq(json_string_value(json_array_get(a, 0)),
                   "{\"ok\":false,\"error\":\"timeout\"}");
  cr_expect_str_eq(json_string_value(json_array_get(a, 1)), "ok");
  cr_expect_str_eq(json_string_value(json_array_get(a, 2)),
                   "{\"ok\":true,\"peers\":[]}");
  cr_expect_str_eq(json_string_value(json_array_get(a, 3)),
                   "error: not a JSON object");
  cr_assert_eq(json_array_size(b), 2);
  cr_expect(strstr(json_string_value(json_array_get(b, 0)), "\"step\":1"));
  cr_expect(strstr(json_string_value(json_array_get(b, 1)), "\"step\":1"),
            "the latest step: %s", json_string_value(json_array_get(b, 1)));
  json_decref(out);
  /* the agent is still there, and took the metric */
  cr_expect_eq(kill(edge_pid, 0), 0);
}

Test(edge_engine, a_replacement_attempt_joins_at_the_current_step) {
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
  eb_stage st[] = {{"rollout", 0, 0}};
  eb_stages(0, st, 1, NULL, 0);
  eb_pod("j-a-0", 0, "call(lambda: run.done('rollout', 0) or {})");
  json_t *out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  json_decref(out);
  char path[512];
  snprintf(path, sizeof path, "%s/j-a-0.json", dir);
  unlink(path);
  eb_stage now[] = {{"rollout", 2, 1}};
  eb_stages(0, now, 1, NULL, 0);
  eb_pod("j-a-0", 1,
         "w = run.wait('rollout', 0)\n"
         "out.append(w)\n"
         "call(lambda: run.done('rollout', 0) or {})\n"
         "call(lambda: run.done('rollout', w['step']) or {})");
  out = eb_results("j-a-0", 30);
  cr_assert_not_null(out);
  cr_expect_eq(INT(ANS(out, 0), "step"), 2, "the current step");
  json_decref(out);
  cr_expect_eq(eb_reports("j-a-0", "rollout", 2, 1, 10), 1);
  const eb_report *r = eb_report_of("j-a-0", "rollout", 2);
  cr_assert_not_null(r);
  cr_expect_eq(r->attempt, 1, "stamped with the new attempt");
  eb_drain(500);
  /* step 0 again from the new attempt: queued (the engine ignores it) */
  cr_expect_eq(eb_reports("j-a-0", "rollout", 0, 2, 2), 2);
}

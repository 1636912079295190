/*
 * test_sched_placement.c - placement without a broker: each filter, each
 * strategy's choice, gang all-or-nothing, GPU indices, devices,
 * determinism, the Pending reasons, and the job.placed codec.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "placement.h"
#include "test_sched_util.h"

TS_PLACEMENT_SUITE(sched_place);

/* How many of the placement's pods are on node. */
static int
on(const char *node) {
  int k = 0;
  for (size_t i = 0; i < p.n; i++)
    k += !strcmp(p.bindings[i].node, node);
  return k;
}

/* A copy of every node's allocations. */
typedef struct snap {
  uint64_t cpu, mem, gpu;
  uint32_t pods, dev[4];
} snap;

static void
take(snap *s) {
  for (size_t i = 0; i < nodes.n; i++) {
    const sched_node *n = nodes.v[i];
    memset(&s[i], 0, sizeof s[i]);
    s[i].cpu = n->cpu_used_m;
    s[i].mem = n->memory_used_mib;
    s[i].gpu = n->gpu_taken;
    s[i].pods = n->pods;
    for (int d = 0; d < n->capacity.ndevices && d < 4; d++)
      s[i].dev[d] = n->dev_used[d];
  }
}

static void
same(const snap *a, const snap *b) {
  for (size_t i = 0; i < nodes.n; i++)
    cr_assert(!memcmp(&a[i], &b[i], sizeof a[i]), "node %s changed",
              nodes.v[i]->name);
}

Test(sched_place, selector_comma_list) {
  ts_node(&nodes, "n1", 8, 8192, 0, "a");
  ts_node(&nodes, "n2", 8, 8192, 0, "b");
  ts_node(&nodes, "n3", 8, 8192, 0, "c");
  ts_node(&nodes, "n4", 8, 8192, 0, NULL);
  sched_template *t = ts_task(&job, "t", SCHED_ACTOR, 4, 1, 1, 0);
  sched_template_set_selector(t, "zone", "c,a");
  cr_assert(sched_selector_match(t, nodes.v[0]));
  cr_assert(!sched_selector_match(t, nodes.v[1]));
  cr_assert(!sched_selector_match(t, nodes.v[3]), "a missing label fails");
  place_ok();
  cr_assert_eq(on("n1") + on("n3"), 4);
  cr_assert_eq(on("n1"), 2, "spread over the two that match");
  cr_assert_eq(p.why.nodes, 4);
  cr_assert_eq(p.why.selector, 2);
  /* "a" is not a prefix match of "ab" */
  sched_template_set_selector(t, "zone", "ab,x");
  sched_placement_clear(&p);
  place_nofit();
  cr_assert(strstr(p.reason, "4 fail the selector"), "%s", p.reason);
}

Test(sched_place, runtime_filter) {
  ts_node(&nodes, "n1", 8, 8192, 0, NULL);
  sched_node *n2 = ts_node(&nodes, "n2", 8, 8192, 0, NULL);
  n2->runtimes = SCHED_RT_ALL;
  sched_template *t = ts_task(&job, "t", SCHED_ENV, 2, 1, 1, 0);
  snprintf(t->runtime, sizeof t->runtime, "raw+netns");
  place_ok();
  cr_assert_eq(on("n2"), 2);
  cr_assert_eq(p.bindings[0].runtime, SCHED_RT_RAW_NETNS);
  cr_assert_eq(p.why.runtime, 1);
  n2->runtimes = SCHED_RT_RAW;
  sched_release(&nodes, &job, &p);
  place_nofit();
  cr_assert(strstr(p.reason, "2 lack runtime raw+netns"), "%s", p.reason);
}

Test(sched_place, ready_and_cordoned) {
  ts_node(&nodes, "n1", 8, 8192, 0, NULL)->ready = 0;
  ts_node(&nodes, "n2", 8, 8192, 0, NULL)->cordoned = 1;
  ts_node(&nodes, "n3", 8, 8192, 0, NULL);
  ts_task(&job, "t", SCHED_ACTOR, 3, 1, 1, 0);
  place_ok();
  cr_assert_eq(on("n3"), 3);
  cr_assert_eq(p.why.ready, 1);
  nodes.v[2]->cordoned = 1;
  sched_release(&nodes, &job, &p);
  place_nofit();
  cr_assert(strstr(p.reason, "1 not ready") && strstr(p.reason, "2 cordoned"),
            "%s", p.reason);
}

Test(sched_place, cpu_and_memory) {
  ts_node(&nodes, "big", 16, 4096, 0, NULL);
  ts_node(&nodes, "cpu-small", 2, 65536, 0, NULL);
  ts_node(&nodes, "mem-small", 64, 512, 0, NULL);
  ts_task(&job, "t", SCHED_ACTOR, 4, 4, 1024, 0);
  place_ok();
  cr_assert_eq(on("big"), 4, "only big has both");
  cr_assert_eq(nodes.v[0]->cpu_used_m, 16000);
  cr_assert_eq(nodes.v[0]->memory_used_mib, 4096);
  sched_placement q = p;
  sched_placement_init(&p);
  place_nofit();
  cr_assert(strstr(p.reason, "2 lack cpu, 1 lack memory"), "%s", p.reason);
  p.ok = 0;
  sched_release(&nodes, &job, &q);
  cr_assert_eq(nodes.v[0]->cpu_used_m, 0);
  sched_placement_clear(&q);
}

Test(sched_place, gpus_by_lowest_free_index) {
  sched_node *n = ts_node(&nodes, "g", 64, 65536, 8, NULL);
  n->gpu_taken = 0x1; /* GPU 0 is bound already */
  ts_task(&job, "a", SCHED_ACTOR, 1, 1, 1, 2);
  ts_task(&job, "b", SCHED_ROLLOUT, 2, 1, 1, 1);
  place_ok();
  cr_assert_eq(p.bindings[0].ngpus, 2);
  cr_assert_eq(p.bindings[0].gpus[0], 1);
  cr_assert_eq(p.bindings[0].gpus[1], 2);
  cr_assert_eq(p.bindings[1].gpus[0], 3);
  cr_assert_eq(p.bindings[2].gpus[0], 4);
  cr_assert_eq(n->gpu_taken, 0x1f);
  sched_release(&nodes, &job, &p);
  cr_assert_eq(n->gpu_taken, 0x1, "release gives back exactly those");
}

Test(sched_place, gpus_reason) {
  for (int i = 0; i < 12; i++) {
    char name[8];
    snprintf(name, sizeof name, "n%02d", i);
    sched_node *n = ts_node(&nodes, name, 64, 65536, 4, NULL);
    n->gpu_taken = 0x1;
    n->cordoned = i < 3;
  }
  ts_task(&job, "t", SCHED_ACTOR, 1, 1, 1, 4);
  place_nofit();
  cr_assert_str_eq(p.reason,
                   "task j-t: 0/12 nodes can take pod j-t-0 (1 cpu, 1 MiB, "
                   "4 GPUs): 3 cordoned, 9 have fewer than 4 free GPUs");
}

Test(sched_place, devices) {
  sched_node *a = ts_node(&nodes, "a", 8, 8192, 0, NULL);
  sched_node *b = ts_node(&nodes, "b", 8, 8192, 0, NULL);
  ts_node(&nodes, "c", 8, 8192, 0, NULL); /* no device */
  sched_node_set_device(a, "rlinf.io/device", 2);
  sched_node_set_device(b, "rlinf.io/device", 1);
  sched_template *t = ts_task(&job, "t", SCHED_ENV, 3, 1, 1, 0);
  sched_resources_set_device(&t->req, "rlinf.io/device", 1);
  place_ok();
  cr_assert_eq(on("a"), 2);
  cr_assert_eq(on("b"), 1);
  cr_assert_eq(on("c"), 0);
  cr_assert_eq(a->dev_used[0], 2);
  cr_assert_eq(b->dev_used[0], 1);
  sched_release(&nodes, &job, &p);
  t->replicas = 4;
  place_nofit();
  cr_assert(strstr(p.reason, "1 lack a device") &&
                strstr(p.reason, "2 lack free devices"),
            "%s", p.reason);
  cr_assert_eq(a->dev_used[0], 0, "no partial booking");
}

Test(sched_place, spread_least_allocated) {
  ts_node(&nodes, "a", 8, 8192, 0, NULL);
  ts_node(&nodes, "b", 8, 8192, 0, NULL)->cpu_used_m = 4000;
  ts_node(&nodes, "c", 8, 8192, 0, NULL);
  ts_task(&job, "t", SCHED_ACTOR, 3, 1, 1024, 0);
  place_ok();
  /* a and c are empty: one each; then c's and a's share equals b's? no:
   * a, c at 1/8 cpu + 1/8 mem; b at 5/8 + 1/8: the third goes to a */
  cr_assert_str_eq(p.bindings[0].node, "a");
  cr_assert_str_eq(p.bindings[1].node, "c");
  cr_assert_str_eq(p.bindings[2].node, "a");
  cr_assert_eq(on("b"), 0);
  cr_assert_eq(p.why.strategy, SCHED_SPREAD);
  cr_assert_eq(p.why.nscores, 2);
  cr_assert_str_eq(p.why.scores[0].node, "a");
  cr_assert_eq(p.why.scores[0].score, 88, "100 - 12.5%% allocated");
}

Test(sched_place, pack_most_allocated) {
  ts_node(&nodes, "a", 8, 8192, 0, NULL);
  ts_node(&nodes, "b", 8, 8192, 0, NULL)->cpu_used_m = 2000;
  ts_node(&nodes, "c", 8, 8192, 0, NULL);
  job.strategy = SCHED_PACK;
  ts_task(&job, "t", SCHED_ACTOR, 8, 1, 1, 0);
  place_ok();
  cr_assert_eq(on("b"), 6, "the fullest node first, until full");
  cr_assert_eq(on("a"), 2, "then the first in name order");
  cr_assert_eq(on("c"), 0);
  cr_assert_eq(p.why.strategy, SCHED_PACK);
}

Test(sched_place, colocate_one_node) {
  ts_node(&nodes, "a", 64, 65536, 8, NULL);
  ts_node(&nodes, "b", 16, 16384, 4, NULL);
  ts_node(&nodes, "c", 4, 4096, 0, NULL);
  job.strategy = SCHED_COLOCATE;
  ts_task(&job, "actor", SCHED_ACTOR, 2, 2, 1024, 1);
  ts_task(&job, "env", SCHED_ENV, 3, 2, 1024, 0);
  place_ok();
  cr_assert_eq(on("b"), 5, "the fullest node that holds the whole Job");
  cr_assert_eq(p.why.nscores, 1);
  cr_assert_str_eq(p.why.scores[0].node, "b");
}

Test(sched_place, colocate_fewest_nodes) {
  ts_node(&nodes, "a", 4, 8192, 0, NULL);
  ts_node(&nodes, "b", 6, 8192, 0, NULL);
  ts_node(&nodes, "c", 4, 8192, 0, NULL);
  job.strategy = SCHED_COLOCATE;
  ts_task(&job, "t", SCHED_ACTOR, 9, 1, 1, 0);
  place_ok();
  /* no node holds 9: fill the emptiest (b: 6), then a by name */
  cr_assert_eq(on("b"), 6);
  cr_assert_eq(on("a"), 3);
  cr_assert_eq(on("c"), 0);
}

Test(sched_place, disaggregate_actors_apart) {
  ts_node(&nodes, "a", 16, 16384, 0, NULL);
  ts_node(&nodes, "b", 16, 16384, 0, NULL);
  ts_node(&nodes, "c", 16, 16384, 0, NULL);
  job.strategy = SCHED_DISAGGREGATE;
  ts_task(&job, "actor", SCHED_ACTOR, 2, 1, 1, 0);
  ts_task(&job, "rollout", SCHED_ROLLOUT, 3, 1, 1, 0);
  ts_task(&job, "env", SCHED_ENV, 2, 1, 1, 0);
  place_ok();
  cr_assert_eq(on("a"), 2, "actors packed on a");
  for (size_t i = 2; i < p.n; i++)
    cr_assert_str_neq(p.bindings[i].node, "a", "%s shares a with actors",
                      p.bindings[i].pod);
  cr_assert_eq(on("b"), 5, "rollout and env together, packed");
  /* the same without strategy would share */
  sched_release(&nodes, &job, &p);
  job.strategy = SCHED_PACK;
  place_ok();
  cr_assert_eq(on("a"), 7);
}

Test(sched_place, disaggregate_needs_two_nodes) {
  ts_node(&nodes, "a", 16, 16384, 0, NULL);
  job.strategy = SCHED_DISAGGREGATE;
  ts_task(&job, "actor", SCHED_ACTOR, 1, 1, 1, 0);
  ts_task(&job, "env", SCHED_ENV, 1, 1, 1, 0);
  place_nofit();
  cr_assert(strstr(p.reason, "1 host the Job's Actor pods"), "%s", p.reason);
  cr_assert_eq(nodes.v[0]->pods, 0);
}

Test(sched_place, gang_all_or_nothing) {
  snap before[4], after[4];
  sched_node *a = ts_node(&nodes, "a", 8, 8192, 4, NULL);
  ts_node(&nodes, "b", 8, 8192, 4, NULL);
  ts_node(&nodes, "c", 8, 8192, 0, NULL);
  sched_node_set_device(a, "rlinf.io/device", 2);
  a->gpu_taken = 0x2;
  a->cpu_used_m = 1000;
  sched_template *t = ts_task(&job, "gpu", SCHED_ACTOR, 3, 1, 100, 2);
  sched_resources_set_device(&t->req, "rlinf.io/device", 1);
  ts_task(&job, "cpu", SCHED_ENV, 5, 4, 100, 0);
  take(before);
  place_nofit();
  take(after);
  same(before, after);
  cr_assert(strstr(p.reason, "task j-gpu: 0/3 nodes can take pod j-gpu-1") &&
                strstr(p.reason, "; 1 of 8 pods fit before"),
            "%s", p.reason);
  /* once it fits, every pod is bound; released, the nodes are as before */
  t = &job.tasks[0]; /* adding a task moved the array */
  sched_resources_set_device(&t->req, "rlinf.io/device", 0);
  job.tasks[1].replicas = 3;
  place_ok();
  cr_assert_eq(p.n, 6);
  sched_release(&nodes, &job, &p);
  take(after);
  same(before, after);
}

Test(sched_place, deterministic) {
  sched_nodes other;
  sched_placement q;
  sched_nodes_init(&other);
  sched_placement_init(&q);
  /* the same nodes put in another order */
  for (int i = 0; i < 20; i++) {
    char name[8];
    snprintf(name, sizeof name, "n%02d", i);
    ts_node(&nodes, name, 8, 8192, 2, NULL);
    snprintf(name, sizeof name, "n%02d", 19 - i);
    ts_node(&other, name, 8, 8192, 2, NULL);
  }
  ts_task(&job, "a", SCHED_ACTOR, 7, 1, 100, 1);
  ts_task(&job, "b", SCHED_ENV, 9, 3, 100, 0);
  for (int s = SCHED_SPREAD; s <= SCHED_DISAGGREGATE; s++) {
    job.strategy = (sched_strategy)s;
    place_ok();
    cr_assert_eq(sched_place(&other, &job, NULL, &q), 0);
    cr_assert_eq(q.ok, 1);
    cr_assert_eq(p.n, q.n);
    for (size_t i = 0; i < p.n; i++)
      cr_assert(!memcmp(&p.bindings[i], &q.bindings[i], sizeof p.bindings[i]),
                "strategy %d pod %zu differs", s, i);
    sched_release(&nodes, &job, &p);
    sched_release(&other, &job, &q);
  }
  sched_placement_clear(&q);
  sched_nodes_clear(&other);
}

/*
 * A template of one pod is placed without the heap (place_single): it
 * must pick the node the heap picks for a gang's first pod, over nodes
 * used unevenly, some full, ties broken by name, for every strategy
 * that places pod by pod (colocate first looks for one node with room
 * for the whole Job, which differs between one pod and two).
 */
Test(sched_place, one_pod_goes_where_the_heap_puts_the_first) {
  sched_nodes other;
  sched_job two;
  sched_placement q;
  sched_nodes_init(&other);
  sched_job_init(&two, "j");
  sched_placement_init(&q);
  for (int i = 0; i < 60; i++) {
    char name[8];
    snprintf(name, sizeof name, "n%02d", i);
    sched_node *a = ts_node(&nodes, name, 8, 8192, 2, NULL);
    sched_node *b = ts_node(&other, name, 8, 8192, 2, NULL);
    a->cpu_used_m = b->cpu_used_m = (uint64_t)(i * 7 % 9) * 1000;
    a->pods = b->pods = (uint32_t)(i % 5);
  }
  ts_task(&job, "a", SCHED_ACTOR, 1, 2, 100, 1);
  ts_task(&two, "a", SCHED_ACTOR, 2, 2, 100, 1);
  for (int s = SCHED_SPREAD; s <= SCHED_DISAGGREGATE; s++) {
    if (s == SCHED_COLOCATE)
      continue;
    job.strategy = two.strategy = (sched_strategy)s;
    place_ok();
    cr_assert_eq(sched_place(&other, &two, NULL, &q), 0);
    cr_assert_eq(q.ok, 1);
    cr_expect_str_eq(p.bindings[0].node, q.bindings[0].node, "strategy %d", s);
    cr_expect_eq(p.bindings[0].ngpus, 1);
    cr_expect_eq(p.bindings[0].gpus[0], q.bindings[0].gpus[0]);
    sched_release(&nodes, &job, &p);
    sched_release(&other, &two, &q);
  }
  sched_placement_clear(&q);
  sched_job_clear(&two);
  sched_nodes_clear(&other);
}

Test(sched_place, attempts_and_limits) {
  uint32_t attempts[3] = {0, 4, 1};
  ts_node(&nodes, "a", 8, 8192, 0, NULL);
  ts_task(&job, "t", SCHED_ACTOR, 3, 1, 1, 0);
  cr_assert_eq(sched_place(&nodes, &job, attempts, &p), 0);
  cr_assert_eq(p.bindings[1].attempt, 4);
  cr_assert_eq(p.bindings[2].attempt, 1);
  sched_job empty;
  sched_job_init(&empty, "e");
  cr_assert_eq(sched_place(&nodes, &empty, NULL, &p), BUS_EINVAL);
  sched_job_clear(&empty);
  sched_nodes none;
  sched_nodes_init(&none);
  cr_assert_eq(sched_place(&none, &job, NULL, &p), 0);
  cr_assert_eq(p.ok, 0);
  cr_assert(strstr(p.reason, "0/0 nodes"), "%s", p.reason);
}

Test(sched_place, placed_event_round_trip) {
  bus_packbuf pb;
  msgpack_unpacked up;
  sched_node *a = ts_node(&nodes, "a", 8, 8192, 4, NULL);
  ts_node(&nodes, "b", 8, 8192, 4, NULL);
  sched_node_set_device(a, "rlinf.io/device", 1);
  sched_template *t = ts_task(&job, "t", SCHED_ACTOR, 3, 1, 100, 1);
  ts_task(&job, "d", SCHED_ENV, 1, 1, 1, 0);
  sched_resources_set_device(&job.tasks[1].req, "rlinf.io/device", 1);
  (void)t;
  place_ok();
  ts_placed(&p, 2, &pb, &up);
  cr_assert_eq(bus_obj_int(&up.data, "generation", -1), 2);

  /* another scheduler's model books the same event */
  sched_nodes other;
  sched_placement q;
  sched_nodes_init(&other);
  sched_placement_init(&q);
  ts_node(&other, "a", 8, 8192, 4, NULL);
  sched_node_set_device(sched_nodes_find(&other, "a"), "rlinf.io/device", 1);
  ts_node(&other, "b", 8, 8192, 4, NULL);
  cr_assert_eq(sched_placement_from_msgpack(&up.data, &job, &q), 0, "%s",
               bus_last_error());
  cr_assert_eq(q.n, p.n);
  cr_assert_eq(sched_book(&other, &job, &q), 0, "%s", bus_last_error());
  for (size_t i = 0; i < nodes.n; i++) {
    cr_assert_eq(other.v[i]->gpu_taken, nodes.v[i]->gpu_taken);
    cr_assert_eq(other.v[i]->cpu_used_m, nodes.v[i]->cpu_used_m);
    cr_assert_eq(other.v[i]->pods, nodes.v[i]->pods);
  }
  cr_assert_eq(sched_nodes_find(&other, "a")->dev_used[0], 1);
  /* booking it twice would double-book GPUs: refused, nothing booked */
  uint64_t taken = other.v[0]->gpu_taken;
  uint64_t cpu = other.v[1]->cpu_used_m;
  cr_assert_eq(sched_book(&other, &job, &q), BUS_ECONFLICT);
  cr_assert_eq(other.v[0]->gpu_taken, taken);
  cr_assert_eq(other.v[1]->cpu_used_m, cpu);
  sched_release(&other, &job, &q);
  cr_assert_eq(other.v[0]->gpu_taken, 0);
  cr_assert_eq(other.v[0]->pods + other.v[1]->pods, 0);

  /* a binding for another job's task is refused */
  sched_job j2;
  sched_job_init(&j2, "k");
  ts_task(&j2, "t", SCHED_ACTOR, 3, 1, 1, 0);
  cr_assert_eq(sched_placement_from_msgpack(&up.data, &j2, &q), BUS_EINVAL);
  cr_assert_eq(q.n, 0);
  cr_assert_eq(
      sched_placement_from_msgpack(&up.data.via.map.ptr[0].val, &job, &q),
      BUS_EMALFORMED);
  sched_job_clear(&j2);
  sched_placement_clear(&q);
  sched_nodes_clear(&other);
  msgpack_unpacked_destroy(&up);
  bus_packbuf_destroy(&pb);
  sched_placement failed;
  sched_placement_init(&failed);
  cr_assert_eq(sched_pack_placed(&pb.pk, "default", "j", 1, &failed),
               BUS_EINVAL);
}

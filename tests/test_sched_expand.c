/*
 * test_sched_expand.c - the scheduler's model and expansion without a
 * broker: reading Job and Node resources, Tasks and Pods with their Ray
 * annotations, the derived-name collision rule, runtimes no node offers.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "expand.h"
#include "test_sched_util.h"

#define RAW "\"runtime\": {\"raw\": {\"entrypoint\": [\"python\"]}}"
/* what a resource starts with */
#define JOB "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\", "
#define NODE "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Node\", "

static const char *job_json =
    "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\","
    " \"metadata\": {\"name\": \"train\"},"
    " \"spec\": {\"strategy\": \"disaggregate\", \"tasks\": ["
    "  {\"name\": \"actor\", \"role\": \"Actor\", \"replicas\": 2,"
    "   \"maxRetries\": 3, \"nodeSelector\": {\"zone\": \"a,b\"},"
    "   \"resources\": {\"cpu\": 4, \"memory\": 2048, \"gpu\": 2,"
    "   \"devices\": {\"rlinf.io/device\": 1}}, " RAW "},"
    "  {\"name\": \"rollout\", \"role\": \"Rollout\", \"head\": true,"
    "   \"replicas\": 3, " RAW "},"
    "  {\"name\": \"env\", \"role\": \"Env\", " RAW "}]}}";

static void
load_job(const char *json, sched_job *job, int expect_rc) {
  msgpack_unpacked up;
  bus_field_err errs[8];
  int n = 0;
  cr_assert_eq(ts_msgpack(json, &up), 0, "bad test JSON");
  int rc = sched_job_from_msgpack(&up.data, job, errs, 8, &n);
  cr_assert_eq(rc, expect_rc, "rc %d (%s: %s)", rc, n ? errs[0].path : "",
               n ? errs[0].reason : "");
  msgpack_unpacked_destroy(&up);
}

Test(sched_model, job_from_msgpack) {
  sched_job job;
  load_job(job_json, &job, 0);
  cr_assert_str_eq(job.name, "train");
  cr_assert_eq(job.strategy, SCHED_DISAGGREGATE);
  cr_assert_eq(job.ntasks, 3);
  sched_template *a = &job.tasks[0];
  cr_assert_str_eq(a->name, "actor");
  cr_assert_eq(a->role, SCHED_ACTOR);
  cr_assert_eq(a->replicas, 2);
  cr_assert_eq(a->max_retries, 3);
  cr_assert_eq(a->req.cpu_m, 4000, "cpu is read in cores, kept in millicores");
  cr_assert_eq(a->req.memory_mib, 2048);
  cr_assert_eq(a->req.gpu, 2);
  cr_assert_eq(sched_resources_device(&a->req, "rlinf.io/device"), 1);
  cr_assert_eq(a->nselector, 1);
  cr_assert_str_eq(a->selector[0].value, "a,b");
  cr_assert_str_eq(a->runtime, "raw");
  cr_assert_eq(job.tasks[1].head, 1);
  cr_assert_eq(job.tasks[1].role, SCHED_ROLLOUT);
  cr_assert_eq(job.tasks[2].replicas, 1, "replicas default to 1");
  cr_assert_eq(job.tasks[2].max_retries, 0);
  cr_assert_eq(sched_job_pods(&job), 6);
  sched_job_clear(&job);
  sched_job_clear(&job); /* twice is harmless */
  sched_job_clear(NULL);
}

Test(sched_model, domain_needs_netns) {
  sched_job job;
  load_job(JOB
           "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"domain\": \"net\","
           " \"tasks\": [{\"name\": \"t\", \"role\": \"Env\", " RAW "}]}}",
           &job, 0);
  cr_assert_str_eq(job.domain, "net");
  cr_assert_str_eq(job.tasks[0].runtime, "raw+netns");
  cr_assert_eq(sched_job_runtimes(&job), SCHED_RT_RAW_NETNS);
  sched_job_clear(&job);
}

static int
job_errors(const char *json, bus_field_err *errs, int max) {
  msgpack_unpacked up;
  sched_job job;
  int n = -1;
  cr_assert_eq(ts_msgpack(json, &up), 0);
  int rc = sched_job_from_msgpack(&up.data, &job, errs, max, &n);
  cr_assert_neq(rc, 0, "%s was accepted", json);
  sched_job_clear(&job);
  msgpack_unpacked_destroy(&up);
  return n;
}

Test(sched_model, job_errors_name_their_paths) {
  bus_field_err e[8];
  /* the schema's problems: a role it does not know, no replicas */
  int n =
      job_errors(JOB "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": ["
                     " {\"name\": \"t\", \"role\": \"Boss\", " RAW "},"
                     " {\"name\": \"u\", \"role\": \"Env\", \"replicas\": 0,"
                     "  " RAW "}]}}",
                 e, 8);
  cr_assert_eq(n, 2, "got %d", n);
  cr_assert_str_eq(e[0].path, "spec.tasks[0].role");
  cr_assert_str_eq(e[1].path, "spec.tasks[1].replicas");
  /* then what it cannot say: a name twice, a second head */
  n = job_errors(
      JOB "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": ["
          " {\"name\": \"t\", \"role\": \"Env\", \"head\": true, " RAW "},"
          " {\"name\": \"t\", \"role\": \"Env\", \"head\": true, " RAW "}]}}",
      e, 8);
  cr_assert_eq(n, 2, "got %d", n);
  cr_assert_str_eq(e[0].path, "spec.tasks[1].name");
  cr_assert(strstr(e[0].reason, "twice"));
  cr_assert_str_eq(e[1].path, "spec.tasks[1].head");
}

Test(sched_model, job_hostile_shapes) {
  bus_field_err e[4];
  job_errors("[1, 2]", e, 4);
  job_errors("{\"metadata\": {\"name\": \"Bad_Name\"}, \"spec\": {}}", e, 4);
  job_errors("{\"metadata\": 7, \"spec\": {\"tasks\": 3}}", e, 4);
  job_errors("{\"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": [7,"
             " {\"name\": 1, \"resources\": {\"cpu\": -1, \"devices\": [1]},"
             "  \"nodeSelector\": {\"a\": 1}, \"runtime\": 5}]}}",
             e, 4);
  job_errors(JOB
             "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"strategy\": "
             "\"random\", \"tasks\": [{\"name\": \"t\", \"role\": \"Env\", " RAW
             "}]}}",
             e, 4);
  cr_assert_str_eq(e[0].path, "spec.strategy");
  /* 5 x 1024 pods exceed what one job.placed carries */
  job_errors(JOB
             "\"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": ["
             "{\"name\": \"a\", \"role\": \"Env\", \"replicas\": 1024, " RAW
             "}, {\"name\": \"b\", \"role\": \"Env\", \"replicas\": 1024, " RAW
             "}, {\"name\": \"c\", \"role\": \"Env\", \"replicas\": 1024, " RAW
             "}, {\"name\": \"d\", \"role\": \"Env\", \"replicas\": 1024, " RAW
             "}, {\"name\": \"e\", \"role\": \"Env\", \"replicas\": 1, " RAW
             "}]}}",
             e, 4);
  cr_assert_str_eq(e[0].path, "spec.tasks");
}

Test(sched_model, node_from_msgpack) {
  msgpack_unpacked up;
  sched_node node;
  int n;
  cr_assert_eq(ts_msgpack(NODE
                          "\"metadata\": {\"name\": \"gpu-1\"}, \"spec\": {"
                          " \"cluster\": \"east\", \"labels\": {\"zone\": "
                          "\"a\"}, \"runtimes\": [\"raw\", \"raw+netns\"],"
                          " \"capacity\": {\"cpu\": 64, \"memory\": 262144,"
                          " \"gpu\": 8, \"devices\": {\"rlinf.io/device\": "
                          "2}}}}",
                          &up),
               0);
  cr_assert_eq(sched_node_from_msgpack(&up.data, &node, NULL, 0, &n), 0);
  cr_assert_str_eq(node.name, "gpu-1");
  cr_assert_str_eq(node.cluster, "east");
  cr_assert_str_eq(sched_node_label(&node, "zone"), "a");
  cr_assert_eq(node.runtimes, SCHED_RT_ALL);
  cr_assert_eq(node.capacity.cpu_m, 64000);
  cr_assert_eq(node.capacity.gpu, 8);
  cr_assert_eq(sched_resources_device(&node.capacity, "rlinf.io/device"), 2);
  cr_assert_eq(node.ready, 1);
  sched_node_clear(&node);
  msgpack_unpacked_destroy(&up);

  cr_assert_eq(ts_msgpack(NODE "\"metadata\": {\"name\": \"e\"}, \"spec\": {"
                               "\"cluster\": \"x\", \"capacity\": {}}}",
                          &up),
               0);
  cr_assert_eq(sched_node_from_msgpack(&up.data, &node, NULL, 0, &n), 0);
  cr_assert_eq(node.runtimes, SCHED_RT_RAW, "a node offers raw by default");
  sched_node_clear(&node);
  msgpack_unpacked_destroy(&up);

  cr_assert_eq(ts_msgpack(NODE "\"metadata\": {\"name\": \"e\"}, \"spec\": {"
                               "\"runtimes\": [\"docker\"], \"capacity\": 3}}",
                          &up),
               0);
  cr_assert_neq(sched_node_from_msgpack(&up.data, &node, NULL, 0, &n), 0);
  cr_assert_eq(n, 3, "cluster missing, docker, capacity: got %d", n);
  sched_node_clear(&node);
  msgpack_unpacked_destroy(&up);
}

Test(sched_model, nodes_sorted_and_state_kept) {
  sched_nodes s;
  sched_nodes_init(&s);
  ts_node(&s, "n-b", 8, 1024, 4, NULL);
  ts_node(&s, "n-c", 8, 1024, 4, NULL);
  sched_node *a = ts_node(&s, "n-a", 8, 1024, 4, NULL);
  cr_assert_eq(s.n, 3);
  cr_assert_str_eq(s.v[0]->name, "n-a");
  cr_assert_str_eq(s.v[2]->name, "n-c");
  a->cpu_used_m = 3000;
  a->gpu_taken = 0x5;
  a->cordoned = 1;
  sched_node_set_device(a, "rlinf.io/device", 2);
  a->dev_used[0] = 1;
  /* re-registration: new facts, same allocations */
  sched_node fresh;
  sched_node_init(&fresh, "n-a");
  fresh.capacity.cpu_m = 16000;
  fresh.capacity.gpu = 8;
  sched_node_set_device(&fresh, "other", 1);
  sched_node_set_device(&fresh, "rlinf.io/device", 4);
  cr_assert_eq(sched_nodes_put(&s, &fresh), 0);
  cr_assert_eq(s.n, 3);
  a = sched_nodes_find(&s, "n-a");
  cr_assert_eq(a->capacity.cpu_m, 16000);
  cr_assert_eq(a->cpu_used_m, 3000);
  cr_assert_eq(a->gpu_taken, 0x5);
  cr_assert_eq(a->cordoned, 1);
  cr_assert_eq(a->dev_used[0], 0);
  cr_assert_eq(a->dev_used[1], 1);
  cr_assert_eq(sched_node_free_gpus(a), 6);
  cr_assert_null(sched_nodes_find(&s, "n-d"));
  cr_assert_eq(sched_nodes_remove(&s, "n-b"), 0);
  cr_assert_eq(sched_nodes_remove(&s, "n-b"), BUS_ENOT_FOUND);
  cr_assert_str_eq(s.v[1]->name, "n-c");
  sched_node bad;
  sched_node_init(&bad, "Bad");
  cr_assert_eq(sched_nodes_put(&s, &bad), BUS_ENAME);
  sched_node_clear(&bad);
  sched_nodes_clear(&s);
  sched_nodes_clear(NULL);
}

Test(sched_expand, tasks_pods_and_ray_annotations) {
  sched_job job;
  sched_expansion x;
  load_job(job_json, &job, 0);
  cr_assert_eq(sched_expand(&job, &x), 0);
  cr_assert_eq(x.ntasks, 3);
  cr_assert_str_eq(x.tasks[0].name, "train-actor");
  cr_assert_str_eq(x.tasks[2].name, "train-env");
  cr_assert_eq(x.total_nodes, 6);
  cr_assert_str_eq(x.head_task, "train-rollout", "head: true wins");
  cr_assert_eq(x.tasks[0].head, 0);
  cr_assert_eq(x.tasks[1].head, 1);
  cr_assert_eq(x.tasks[0].rank_start, 0);
  cr_assert_eq(x.tasks[1].rank_start, 2);
  cr_assert_eq(x.tasks[2].rank_start, 5);
  cr_assert_eq(x.npods, 6);
  cr_assert_str_eq(x.pods[0].name, "train-actor-0");
  cr_assert_str_eq(x.pods[1].name, "train-actor-1");
  cr_assert_str_eq(x.pods[4].name, "train-rollout-2");
  cr_assert_eq(x.pods[4].task, 1);
  cr_assert_eq(x.pods[4].replica, 2);
  cr_assert_str_eq(x.pods[5].name, "train-env-0");
  cr_assert_eq(x.pods[5].phase, SCHED_PH_PENDING);

  bus_packbuf b;
  msgpack_unpacked up;
  char v[64];
  bus_packbuf_init(&b);
  cr_assert_eq(sched_pack_ray_annotations(&b.pk, &x, 2), 0);
  cr_assert_eq(sched_pack_ray_annotations(&b.pk, &x, 3), BUS_EINVAL);
  msgpack_unpacked_init(&up);
  cr_assert_eq(msgpack_unpack_next(&up, b.sb.data, b.sb.size, NULL),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_str_eq(bus_obj_str(&up.data, "ray-role", v, sizeof v), "worker");
  cr_assert_str_eq(bus_obj_str(&up.data, "ray-total-nodes", v, sizeof v), "6");
  cr_assert_str_eq(bus_obj_str(&up.data, "ray-node-rank-start", v, sizeof v),
                   "5");
  cr_assert_str_eq(bus_obj_str(&up.data, "ray-head-task-name", v, sizeof v),
                   "train-rollout");
  msgpack_unpacked_destroy(&up);
  bus_packbuf_destroy(&b);
  sched_expansion_clear(&x);
  sched_job_clear(&job);
}

Test(sched_expand, head_defaults_to_first) {
  sched_job job;
  sched_expansion x;
  sched_job_init(&job, "j");
  ts_task(&job, "b", SCHED_ENV, 2, 1, 1, 0);
  ts_task(&job, "a", SCHED_ACTOR, 1, 1, 1, 0);
  cr_assert_eq(sched_expand(&job, &x), 0);
  cr_assert_str_eq(x.head_task, "j-b");
  cr_assert_eq(x.tasks[0].head, 1);
  cr_assert_eq(x.tasks[1].head, 0);
  cr_assert_eq(x.tasks[1].rank_start, 2);
  sched_expansion_clear(&x);
  sched_job_clear(&job);
  sched_job_init(&job, "empty");
  cr_assert_eq(sched_expand(&job, &x), BUS_EINVAL);
  sched_job_clear(&job);
}

/* The view of existing objects: task "a-b-c" of job "a". */
static const char *
existing(const char *kind, const char *name, void *ud) {
  (void)ud;
  if (!strcmp(kind, "task") && !strcmp(name, "a-b-c"))
    return "a";
  if (!strcmp(kind, "pod") && !strcmp(name, "a-b-c-0"))
    return "a";
  if (!strcmp(kind, "job") && !strcmp(name, "a"))
    return "a";
  return NULL;
}

Test(sched_expand, derived_name_collision_names_both) {
  sched_job job;
  bus_field_err err;
  sched_job_init(&job, "a-b");
  ts_task(&job, "x", SCHED_ACTOR, 1, 0, 0, 0);
  ts_task(&job, "c", SCHED_ACTOR, 1, 0, 0, 0);
  cr_assert_eq(sched_names_check(&job, existing, NULL, &err), BUS_EEXISTS);
  cr_assert_str_eq(err.path, "spec.tasks[1].name");
  cr_assert(strstr(err.reason, "task a-b-c (job a-b, template c)") &&
                strstr(err.reason, "of job a"),
            "%s", err.reason);
  cr_assert_eq(sched_names_check(&job, NULL, NULL, &err), 0);
  sched_job_clear(&job);

  /* the owner itself (job a: a + b-c) is no collision */
  sched_job_init(&job, "a");
  ts_task(&job, "b-c", SCHED_ACTOR, 1, 0, 0, 0);
  cr_assert_eq(sched_names_check(&job, existing, NULL, &err), 0);
  sched_job_clear(&job);
}

Test(sched_expand, names_twice_or_too_long) {
  sched_job job;
  bus_field_err err;
  char longname[64];
  sched_job_init(&job, "j");
  ts_task(&job, "t", SCHED_ACTOR, 1, 0, 0, 0);
  ts_task(&job, "t", SCHED_ENV, 1, 0, 0, 0);
  cr_assert_eq(sched_names_check(&job, NULL, NULL, &err), BUS_EEXISTS);
  cr_assert_str_eq(err.path, "spec.tasks[1].name");
  sched_job_clear(&job);

  char task[SCHED_DNAME_SZ], more[SCHED_DNAME_SZ];
  memset(longname, 'a', 63);
  longname[63] = 0;
  cr_assert_eq(sched_task_name(longname, longname, task, sizeof task), 0);
  cr_assert_eq(sched_task_name(task, task, more, sizeof more), BUS_ENAME);
  cr_assert_eq(sched_task_name(task, longname, more, sizeof more), 0);
  cr_assert_eq(strlen(more), 191);
  cr_assert_eq(sched_pod_name(task, 7, more, 10), BUS_ENAME);
}

Test(sched_expand, runtimes_no_node_offers) {
  sched_job job;
  sched_nodes s;
  bus_field_err e[4];
  int n;
  sched_nodes_init(&s);
  ts_node(&s, "n1", 8, 1024, 0, NULL); /* raw only */
  sched_job_init(&job, "j");
  ts_task(&job, "ok", SCHED_ACTOR, 1, 0, 0, 0);
  sched_template *t = ts_task(&job, "sim", SCHED_ENV, 1, 0, 0, 0);
  snprintf(t->runtime, sizeof t->runtime, "docker");
  t = ts_task(&job, "net", SCHED_ENV, 1, 0, 0, 0);
  snprintf(t->runtime, sizeof t->runtime, "raw+netns");
  cr_assert_eq(sched_job_runtimes(&job), SCHED_RT_ALL);
  cr_assert_eq(
      sched_job_runtimes_check(&job, sched_nodes_runtimes(&s), e, 4, &n),
      BUS_EFIELD);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(e[0].path, "spec.tasks[1].runtime");
  cr_assert_str_eq(e[0].reason,
                   "task sim needs runtime docker, which no node offers");
  cr_assert_str_eq(e[1].path, "spec.tasks[2].runtime");
  cr_assert_eq(sched_job_runtimes_check(&job, SCHED_RT_ALL, e, 4, &n),
               BUS_EFIELD);
  cr_assert_eq(n, 1, "docker is refused even with every runtime offered");
  sched_job_clear(&job);
  sched_nodes_clear(&s);
}

/*
 * test_sched_ray.c - the Ray head of a Job (docs/scheduler.md, "The Ray
 * head"), with a real broker and a real lark-scheduler:
 *
 *  - sched_ray_edge: real lark-edge nodes. The head node's agent is
 *    stopped (SIGSTOP) for 2 s after the Job is placed, a node slow to act
 *    (well within the scheduler's 15 s of silence), so the head is
 *    reported Running late; the workers, bound on nodes whose agents run,
 *    are not started before (describe pod says why), start after the
 *    head's Running report (their start times against the event's), and
 *    see RAY_ADDRESS = the head node's first address and the Job's
 *    rayPort, as the head does.
 *  - sched_ray: nodes played on the ingress, lark-ipam and lark-dag: a
 *    Domain Job's pods get the head's virtual IP; a retried head leaves
 *    the running workers alone and a worker started later gets its new
 *    address; `larkctl apply` and workflow.apply refuse stages naming no
 *    task, and rayPort out of range; replay --verify holds.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd_check.h"
#include "files.h"
#include "natsd.h"
#include "platform.h"
#include "proc.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[5];

#define RES "\"resources\":{\"cpu\":1,\"memory\":64}"

/* ------------------------------------------------------------ helpers */

/* The pod.desired last written for pod on node (its env's RAY_ADDRESS into
 * ray, "" when absent) and its stream seq; 0 when there is none. */
static uint64_t
desired_of(const char *node, const char *pod, char *ray, size_t cap) {
  char subject[256], stream[BUS_NODE_STREAM_MAX];
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node, pod);
  bus_node_stream_name(node, stream, sizeof stream);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  uint64_t seq = 0;
  ray[0] = 0;
  if (bus_last_event(conn, stream, subject, &ev, &z) == 0) {
    seq = ev.seq ? ev.seq : 1;
    bus_obj_str(bus_obj_get(&ev.data, "env"), "RAY_ADDRESS", ray, cap);
  }
  msgpack_zone_destroy(&z);
  return seq;
}

/* Wait up to 10 s for pod's desired state on node, RAY_ADDRESS into ray. */
static uint64_t
wait_desired(const char *node, const char *pod, char *ray, size_t cap) {
  uint64_t seq = 0;
  for (int i = 0; i < 100 && !seq; i++, usleep(100 * 1000))
    seq = desired_of(node, pod, ray, cap);
  if (!seq)
    cr_log_error("no desired state for %s on %s", pod, node);
  return seq;
}

/* The node pod is bound to, waited for up to 10 s. */
static void
node_of(const char *pod, char *node, size_t cap) {
  node[0] = 0;
  for (int i = 0; i < 100 && !node[0]; i++, usleep(100 * 1000))
    lt_field(conn, "pod", NULL, pod, "node", node, cap);
  cr_assert(node[0], "%s was never placed", pod);
}

/* A Node registered by command (no agent): cluster c1, label ray=<role>. */
static void
node(const char *name, const char *role, const char *addr) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"c1\",\"labels\":{\"ray\":\"%s\"},"
           "\"addresses\":[\"%s\"],\"runtimes\":[\"raw\",\"raw+netns\"],"
           "\"capacity\":{\"cpu\":16,\"memory\":16384}}}}",
           name, role, addr);
  lt_must_apply(conn, "node", json);
}

/* The spec of a Job with a head task (1 pod, on ray=head) and a worker
 * task (2 pods, on ray=worker); extra: more spec fields ("" or ",..."). */
static void
ray_spec(char *buf, size_t cap, const char *head_cmd, const char *work_cmd,
         int retries, const char *extra) {
  snprintf(buf, cap,
           "{\"tasks\":["
           "{\"name\":\"head\",\"role\":\"Actor\",\"head\":true,"
           "\"maxRetries\":%d,\"nodeSelector\":{\"ray\":\"head\"}," RES ","
           "\"runtime\":{\"raw\":{\"entrypoint\":[\"sh\",\"-c\",\"%s\"]}}},"
           "{\"name\":\"worker\",\"role\":\"Rollout\",\"replicas\":2,"
           "\"maxRetries\":%d,\"nodeSelector\":{\"ray\":\"worker\"}," RES ","
           "\"runtime\":{\"raw\":{\"entrypoint\":[\"sh\",\"-c\",\"%s\"]}}}"
           "]%s}",
           retries, head_cmd, retries, work_cmd, extra);
}

static void
apply_job(const char *name, const char *spec) {
  char json[8192];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":%s}}",
           name, spec);
  lt_must_apply(conn, "job", json);
}

static void
expect_waiting(const char *pod, const char *head) {
  char reason[512] = "", want[256];
  snprintf(want, sizeof want, "waiting for the Ray head %s to be Running",
           head);
  lt_field(conn, "pod", NULL, pod, "reason", reason, sizeof reason);
  cr_expect_str_eq(reason, want, "describe pod %s", pod);
}

/* ------------------------------------------------- real lark-edge nodes */

static void
edge_setup(void) {
  const char *nodes[] = {"ray-h", "ray-w1", "ray-w2", NULL};
  memset(procs, 0, sizeof procs);
  lt_tmpdir(dir, sizeof dir, "schedray");
  procs[0] = lt_edge_bed_up(&srv, &conn, dir, nodes);
}

static void
edge_teardown(void) {
  if (procs[3] > 0)
    kill(procs[3], SIGCONT); /* a test that failed while it was stopped */
  lt_bed_down(&srv, conn, dir, procs, 5);
}

static pid_t
start_edge(const char *name, const char *role) {
  char labels[64];
  snprintf(labels, sizeof labels, "ray=%s", role);
  const char *extra[] = {
      "--cluster", "c1",   "--capacity", "cpu=16,memory=16Gi",
      "--labels",  labels, NULL};
  return lt_must_start_edge(srv.url, dir, name, 1, extra);
}

TestSuite(sched_ray_edge, .init = edge_setup, .fini = edge_teardown,
          .timeout = 150);

/* The first address of node's registration, as the scheduler keeps it. */
static void
first_address(const char *name, char *out, size_t cap) {
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  char json[128];
  snprintf(json, sizeof json, "{\"name\":\"%s\"}", name);
  msgpack_object r = lt_must_command(conn, "node", "describe", json, &z);
  const msgpack_object *a = bus_obj_get(
      bus_obj_get(bus_obj_get(bus_obj_get(&r, "result"), "resource"), "spec"),
      "addresses");
  out[0] = 0;
  if (a && a->type == MSGPACK_OBJECT_ARRAY && a->via.array.size &&
      a->via.array.ptr[0].type == MSGPACK_OBJECT_STR)
    snprintf(out, cap, "%.*s", (int)a->via.array.ptr[0].via.str.size,
             a->via.array.ptr[0].via.str.ptr);
  msgpack_zone_destroy(&z);
}

static int64_t
file_ns(const char *name) {
  char path[512], buf[64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return lt_read_file(path, buf, sizeof buf) ? atoll(buf) : 0;
}

static void
file_line(const char *name, char *out, size_t cap) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  out[0] = 0;
  if (lt_read_file(path, out, cap))
    out[strcspn(out, "\n")] = 0;
}

Test(sched_ray_edge, workers_start_after_the_head_runs_and_find_it) {
  char spec[4096], head_cmd[1024], work_cmd[1024], reason[256];
  procs[1] = start_edge("ray-w1", "worker");
  procs[2] = start_edge("ray-w2", "worker");
  procs[3] = start_edge("ray-h", "head");
  char got[64] = "";
  for (int i = 0; i < 3; i++) {
    const char *names[] = {"ray-h", "ray-w1", "ray-w2"};
    cr_assert(lt_wait_field(conn, "node", NULL, names[i], "status", "Ready", 20,
                            got, sizeof got),
              "%s is %s", names[i], got);
  }
  cr_assert_eq(kill(procs[3], SIGSTOP), 0); /* the head's node lags */
  snprintf(head_cmd, sizeof head_cmd,
           "echo $RAY_ADDRESS > %s/$LARK_POD.ray; sleep 2", dir);
  snprintf(work_cmd, sizeof work_cmd,
           "date +%%s%%N > %s/$LARK_POD.start; echo $RAY_ADDRESS > "
           "%s/$LARK_POD.ray",
           dir, dir);
  ray_spec(spec, sizeof spec, head_cmd, work_cmd, 0, ",\"rayPort\":6390");
  apply_job("rj", spec);
  char n[64];
  node_of("rj-worker-0", n, sizeof n);
  node_of("rj-worker-1", n, sizeof n);
  node_of("rj-head-0", n, sizeof n);
  cr_assert_str_eq(n, "ray-h");
  sleep(2); /* the workers' agents run: nothing may start them */
  cr_expect_eq(file_ns("rj-worker-0.start"), 0, "a worker started early");
  cr_expect_eq(file_ns("rj-worker-1.start"), 0, "a worker started early");
  expect_waiting("rj-worker-0", "rj-head-0");
  expect_waiting("rj-worker-1", "rj-head-0");
  lt_field(conn, "pod", NULL, "rj-head-0", "reason", reason, sizeof reason);
  cr_expect_str_empty(reason, "the head waits for nothing");

  cr_assert_eq(kill(procs[3], SIGCONT), 0);
  for (int i = 0; i < 2; i++) {
    char pod[32];
    snprintf(pod, sizeof pod, "rj-worker-%d", i);
    if (!lt_wait_field(conn, "pod", NULL, pod, "phase", "Succeeded", 40, got,
                       sizeof got)) {
      lt_log_tail(dir, "scheduler.log", 20);
      lt_log_tail(dir, "ray-h.log", 20);
      cr_assert_fail("%s is %s", pod, got);
    }
  }
  cr_assert(lt_wait_field(conn, "pod", NULL, "rj-head-0", "phase", "Succeeded",
                          40, got, sizeof got),
            "head is %s", got);
  int64_t up = lt_pod_running_ts(conn, "rj-head-0");
  cr_assert_gt(up, 0, "no Running report of the head");
  char addr[64], want[96], ray[96];
  first_address("ray-h", addr, sizeof addr);
  cr_assert(addr[0], "ray-h registered no address: no RAY_ADDRESS to check");
  snprintf(want, sizeof want, "%s:6390", addr);
  for (int i = 0; i < 2; i++) {
    char f[64];
    snprintf(f, sizeof f, "rj-worker-%d.start", i);
    int64_t started = file_ns(f);
    cr_expect_gt(started, up,
                 "worker %d started at %lld, before the head's Running "
                 "report at %lld",
                 i, (long long)started, (long long)up);
    snprintf(f, sizeof f, "rj-worker-%d.ray", i);
    file_line(f, ray, sizeof ray);
    cr_expect_str_eq(ray, want, "worker %d's RAY_ADDRESS", i);
  }
  file_line("rj-head-0.ray", ray, sizeof ray);
  cr_expect_str_eq(ray, want, "the head's own RAY_ADDRESS");
  lt_expect_replay(conn, "scheduler", 25, 0);
}

/* ---------------------------------------- played nodes, ipam, dag, CLI */

static void
setup(void) {
  memset(procs, 0, sizeof procs);
  lt_bed_up(&srv, &conn, dir, sizeof dir, "schedray", 1000);
  procs[0] = lt_must_start_named("lark-scheduler", srv.url, dir, "scheduler");
  node("rn-h", "head", "192.168.7.1");
  node("rn-w", "worker", "192.168.7.2");
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 5);
}

TestSuite(sched_ray, .init = setup, .fini = teardown, .timeout = 120);

Test(sched_ray, a_domain_jobs_pods_get_the_heads_virtual_ip) {
  char spec[4096], ray[96], head_ray[96];
  procs[1] = lt_must_start_named("lark-ipam", srv.url, dir, "ipam");
  lt_must_apply(conn, "domain",
                "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
                "\"kind\":\"Domain\",\"metadata\":{\"name\":\"rnet\"},"
                "\"spec\":{\"cidr\":\"10.9.0.0/24\"}}}");
  ray_spec(spec, sizeof spec, "true", "true", 0, ",\"domain\":\"rnet\"");
  apply_job("dj", spec);
  cr_assert(wait_desired("rn-h", "dj-head-0", head_ray, sizeof head_ray));
  cr_expect_str_eq(head_ray, "10.9.0.1:6379", "the head's own, virtual");
  usleep(500 * 1000);
  cr_expect_eq(desired_of("rn-w", "dj-worker-0", ray, sizeof ray), 0,
               "a worker was dispatched before its head ran");
  expect_waiting("dj-worker-1", "dj-head-0");
  lt_pod_says(conn, "rn-h", "dj-head-0", 0, "Running", "172.16.0.2");
  for (int i = 0; i < 2; i++) {
    char pod[32];
    snprintf(pod, sizeof pod, "dj-worker-%d", i);
    cr_assert(wait_desired("rn-w", pod, ray, sizeof ray));
    cr_expect_str_eq(ray, "10.9.0.1:6379", "%s: the head's virtual IP", pod);
  }
  lt_expect_replay(conn, "scheduler", 25, 0);
}

Test(sched_ray, a_retried_head_leaves_running_workers_alone) {
  char spec[4096], ray[96];
  ray_spec(spec, sizeof spec, "true", "true", 2, ",\"rayPort\":7001");
  apply_job("rt", spec);
  cr_assert(wait_desired("rn-h", "rt-head-0", ray, sizeof ray));
  cr_expect_str_eq(ray, "192.168.7.1:7001", "the head's node, before it ran");
  lt_pod_says(conn, "rn-h", "rt-head-0", 0, "Running", "172.16.0.2");
  uint64_t w1 = wait_desired("rn-w", "rt-worker-1", ray, sizeof ray);
  cr_assert(w1);
  cr_expect_str_eq(ray, "172.16.0.2:7001", "the head's reported localIP");
  lt_pod_says(conn, "rn-w", "rt-worker-0", 0, "Running", NULL);
  lt_pod_says(conn, "rn-w", "rt-worker-1", 0, "Running", NULL);
  /* the head fails and is retried; it runs again elsewhere on its node */
  lt_pod_says(conn, "rn-h", "rt-head-0", 0, "Failed", NULL);
  char got[32] = "";
  cr_assert(lt_wait_field(conn, "pod", NULL, "rt-head-0", "attempt", "1", 10,
                          got, sizeof got));
  cr_assert(lt_wait_field(conn, "pod", NULL, "rt-head-0", "node", "rn-h", 10,
                          got, sizeof got));
  lt_pod_says(conn, "rn-h", "rt-head-0", 1, "Running", "172.16.0.6");
  /* a worker failing now is started again with the new address */
  lt_pod_says(conn, "rn-w", "rt-worker-0", 0, "Failed", NULL);
  cr_assert(lt_wait_field(conn, "pod", NULL, "rt-worker-0", "attempt", "1", 10,
                          got, sizeof got));
  for (int i = 0; i < 100; i++, usleep(100 * 1000))
    if (desired_of("rn-w", "rt-worker-0", ray, sizeof ray) &&
        !strcmp(ray, "172.16.0.6:7001"))
      break;
  cr_expect_str_eq(ray, "172.16.0.6:7001", "a later worker: the new address");
  cr_expect_eq(desired_of("rn-w", "rt-worker-1", ray, sizeof ray), w1,
               "the running worker was told again");
  cr_expect_str_eq(ray, "172.16.0.2:7001");
  lt_expect_replay(conn, "scheduler", 25, 0);
}

/* larkctl apply of a file holding text: its exit code, output in out. */
static int
larkctl_apply(const char *text, char *out, size_t cap) {
  char path[512], bin[512], err[4096];
  snprintf(path, sizeof path, "%s/job.yaml", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  lt_bin("larkctl", bin, sizeof bin);
  lt_larkctl_env(srv.url, dir);
  int rc = lt_runl(out, cap, err, sizeof err, bin, "apply", "-f", path,
                   (char *)NULL);
  size_t n = strlen(out);
  snprintf(out + n, cap - n, "%s", err);
  return rc;
}

#define YAML_JOB                                                               \
  "apiVersion: rlinf.io/v1alpha1\nkind: Job\nmetadata: {name: bad}\n"          \
  "spec:\n  tasks:\n  - {name: learner, role: Actor, head: true,\n"            \
  "     resources: {cpu: 1, memory: 64},\n"                                    \
  "     runtime: {raw: {entrypoint: [\"true\"]}}}\n"

Test(sched_ray, stages_naming_no_task_are_refused_at_submit) {
  char out[8192];
  int rc = larkctl_apply(YAML_JOB "  engine:\n    mode: pipeline\n"
                                  "    stages: {train: [x], sync_weights: "
                                  "[learner]}\n",
                         out, sizeof out);
  cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
  cr_expect(strstr(out, "spec.engine.stages.train[0]") &&
                strstr(out, "no task named \"x\""),
            "%s", out);
  rc = larkctl_apply(YAML_JOB "  rayPort: 70000\n", out, sizeof out);
  cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
  cr_expect(strstr(out, "spec.rayPort"), "%s", out);
  rc = larkctl_apply(YAML_JOB "  engine:\n    mode: pipeline\n"
                              "    stages: {train: [learner]}\n",
                     out, sizeof out);
  cr_expect_eq(rc, 0, "pipeline without rollout: %s", out);

  procs[2] = lt_must_start_named("lark-dag", srv.url, dir, "dag");
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = lt_must_command(
      conn, "workflow", "apply",
      "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
      "\"kind\":\"Workflow\",\"metadata\":{\"name\":\"wf\"},\"spec\":{"
      "\"jobTemplates\":[{\"name\":\"t\",\"spec\":{\"tasks\":[{\"name\":"
      "\"learner\",\"role\":\"Actor\"," RES ",\"runtime\":{\"raw\":{"
      "\"entrypoint\":[\"true\"]}}}],\"engine\":{\"stages\":{\"rollout\":"
      "[\"sampler\"]}}}}]}}}",
      &z);
  const msgpack_object *e = bus_obj_get(&r, "error");
  cr_assert_not_null(e, "lark-dag took a stage naming no task");
  const msgpack_object *d = bus_obj_get(e, "details");
  char path[160] = "", why[160] = "";
  cr_assert(d && d->type == MSGPACK_OBJECT_ARRAY && d->via.array.size);
  bus_obj_str(&d->via.array.ptr[0], "path", path, sizeof path);
  bus_obj_str(&d->via.array.ptr[0], "reason", why, sizeof why);
  cr_expect_str_eq(path, "spec.jobTemplates[0].spec.engine.stages.rollout[0]");
  cr_expect_str_eq(why, "no task named \"sampler\"");
  msgpack_zone_destroy(&z);
}

/*
 * test_sched_ray_unit.c - without a broker: which template is a Job's Ray
 * head, the RAY_ADDRESS its pods get (virtual address, else reported
 * localIP, else the node's first address; the port; IPv6 in brackets),
 * and the check shared by job.apply and workflow.apply that
 * spec.engine.stages names only tasks of the Job.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "expand.h"
#include "jobcheck.h"
#include "test_sched_util.h"

#define RAW                                                                    \
  "\"role\": \"Actor\", \"runtime\": {\"raw\": {\"entrypoint\": "              \
  "[\"python\"]}}"

/* The JobSpec of json (a Job resource) unpacked into *res from z. */
static void
job_res(const char *json, msgpack_unpacked *up, msgpack_zone *z,
        bus_job_res *res) {
  cr_assert_eq(ts_msgpack(json, up), 0, "bad test JSON");
  cr_assert(msgpack_zone_init(z, 4096));
  cr_assert_eq(bus_data_unpack(BUS_T_JOB_SUBMITTED, &up->data, z, res), 0, "%s",
               bus_last_error());
}

static int
head_of(const char *tasks) {
  char json[2048];
  snprintf(json, sizeof json,
           "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\","
           " \"metadata\": {\"name\": \"j\"}, \"spec\": {\"tasks\": [%s]}}",
           tasks);
  msgpack_unpacked up;
  msgpack_zone z;
  bus_job_res res;
  job_res(json, &up, &z, &res);
  int h = sched_spec_ray_head(&res.spec);
  msgpack_zone_destroy(&z);
  msgpack_unpacked_destroy(&up);
  return h;
}

Test(sched_ray, only_head_true_makes_a_ray_head) {
  cr_expect_eq(
      head_of("{\"name\": \"a\", " RAW "}, {\"name\": \"b\", " RAW "}"), -1,
      "no template says head: no Ray head (pods start at once)");
  cr_expect_eq(head_of("{\"name\": \"a\", " RAW "}, {\"name\": \"b\", "
                       "\"head\": true, " RAW "}"),
               1);
  cr_expect_eq(head_of("{\"name\": \"a\", \"head\": false, " RAW "}"), -1);
}

Test(sched_ray, address_prefers_vip_then_local_ip_then_node) {
  char out[SCHED_RAY_ADDR_SZ];
  cr_assert_eq(sched_ray_address("10.9.0.4", "172.16.0.2", "192.168.1.5", 6379,
                                 out, sizeof out),
               0);
  cr_expect_str_eq(out, "10.9.0.4:6379");
  cr_assert_eq(
      sched_ray_address("", "172.16.0.2", "192.168.1.5", 7000, out, sizeof out),
      0);
  cr_expect_str_eq(out, "172.16.0.2:7000");
  cr_assert_eq(
      sched_ray_address(NULL, NULL, "192.168.1.5", 6379, out, sizeof out), 0);
  cr_expect_str_eq(out, "192.168.1.5:6379");
  cr_assert_eq(sched_ray_address(NULL, "", "fd00::7", 1, out, sizeof out), 0);
  cr_expect_str_eq(out, "[fd00::7]:1", "IPv6 in brackets");
  cr_expect_eq(sched_ray_address("", NULL, "", 6379, out, sizeof out),
               BUS_ENOT_FOUND);
  cr_expect_str_empty(out);
  char small[8];
  cr_expect_eq(
      sched_ray_address("10.9.0.4", NULL, NULL, 6379, small, sizeof small),
      BUS_ENOT_FOUND, "does not fit: none rather than cut");
}

/* lark_job_engine_check of the spec of a Job whose spec JSON is spec. */
static int
check(const char *spec, const char *at, bus_field_err *errs, int max, int *n) {
  char json[4096];
  snprintf(json, sizeof json,
           "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\","
           " \"metadata\": {\"name\": \"j\"}, \"spec\": %s}",
           spec);
  msgpack_unpacked up;
  cr_assert_eq(ts_msgpack(json, &up), 0, "bad test JSON");
  bus_field_err serr[4];
  int sn = 0;
  cr_assert_eq(bus_schema_check("Job", &up.data, serr, 4, &sn), 0,
               "schema: %s: %s", sn ? serr[0].path : "",
               sn ? serr[0].reason : "");
  *n = 0;
  int rc =
      lark_job_engine_check(bus_obj_get(&up.data, "spec"), at, errs, max, n);
  msgpack_unpacked_destroy(&up);
  return rc;
}

#define TASKS                                                                  \
  "\"tasks\": [{\"name\": \"sampler\", " RAW "},"                              \
  " {\"name\": \"learner\", " RAW "}]"

Test(sched_ray, engine_stages_name_tasks_of_the_job) {
  bus_field_err errs[4];
  int n = 0;
  cr_expect_eq(check("{" TASKS "}", "spec", errs, 4, &n), 0, "no engine");
  cr_expect_eq(check("{" TASKS ", \"engine\": {\"mode\": \"pipeline\","
                     " \"stages\": {\"train\": [\"learner\"],"
                     " \"sync_weights\": [\"learner\", \"sampler\"],"
                     " \"rollout\": []}}}",
                     "spec", errs, 4, &n),
               0, "pipeline without rollout participants is fine");
  cr_assert_eq(check("{" TASKS ", \"engine\": {\"stages\": {"
                     "\"rollout\": [\"sampler\"], \"train\": [\"x\", "
                     "\"learner\", \"y\"]}}}",
                     "spec", errs, 4, &n),
               BUS_EFIELD);
  cr_assert_eq(n, 2);
  cr_expect_str_eq(errs[0].path, "spec.engine.stages.train[0]");
  cr_expect_str_eq(errs[0].reason, "no task named \"x\"");
  cr_expect_str_eq(errs[1].path, "spec.engine.stages.train[2]");
  cr_assert_eq(check("{" TASKS ", \"engine\": {\"stages\": {"
                     "\"update_dataset\": [\"learner-0\"]}}}",
                     "spec.jobTemplates[3].spec", errs, 1, &n),
               BUS_EFIELD, "a pod's name is not a task's");
  cr_expect_str_eq(errs[0].path,
                   "spec.jobTemplates[3].spec.engine.stages.update_dataset[0]");
}

Test(sched_ray, engine_stages_count_past_max) {
  bus_field_err errs[1];
  int n = 0;
  cr_assert_eq(check("{" TASKS ", \"engine\": {\"stages\": {"
                     "\"rollout\": [\"a\", \"b\", \"c\"]}}}",
                     "spec", errs, 1, &n),
               BUS_EFIELD);
  cr_expect_eq(n, 3, "all counted, one written");
}

Test(sched_ray, schema_bounds_ray_port_and_engine) {
  const char *bad[] = {
      "{" TASKS ", \"rayPort\": 0}",
      "{" TASKS ", \"rayPort\": 65536}",
      "{" TASKS ", \"engine\": {\"mode\": \"async\"}}",
      "{" TASKS ", \"engine\": {\"maxStaleness\": 1001}}",
      "{" TASKS ", \"engine\": {\"stages\": {\"eval\": [\"sampler\"]}}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char json[4096];
    snprintf(json, sizeof json,
             "{\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": \"Job\","
             " \"metadata\": {\"name\": \"j\"}, \"spec\": %s}",
             bad[i]);
    msgpack_unpacked up;
    bus_field_err e[4];
    int n = 0;
    cr_assert_eq(ts_msgpack(json, &up), 0);
    cr_expect_neq(bus_schema_check("Job", &up.data, e, 4, &n), 0,
                  "the schema takes %s", bad[i]);
    msgpack_unpacked_destroy(&up);
  }
}

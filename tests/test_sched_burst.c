/*
 * test_sched_burst.c - many commands to a real lark-scheduler at once:
 * Jobs applied together are checked and appended as groups and placed
 * several in one pass, and nothing of that shows: one job.placed per
 * Job, each on top of the one before on the placement log (no event of
 * it stale in the view), the replay equal to the live view; the same Job
 * applied by many at once is created once; two Jobs applied together
 * whose pods would share names are not both created.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd_check.h"
#include "natsd.h"
#include "stream.h"
#include "test_sched_util.h"

LT_SCHED_SUITE(sched_burst, "burst");

static void
node(const char *name) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"c1\",\"runtimes\":[\"raw\"],\"capacity\":{"
           "\"cpu\":8,\"memory\":16384}}}}",
           name);
  lt_must_apply(conn, "node", json);
}

/* One client's job.apply: Job name, one task of replicas pods; the
 * reply's result ("created", "unchanged") or error code into out. */
typedef struct client {
  char job[64], task[64], out[64];
  int replicas;
  pthread_t th;
} client;

static void *
apply_job(void *arg) {
  client *c = arg;
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"tasks\":[{\"name\":\"%s\",\"role\":\"Actor\",\"replicas\":%d,"
           "\"resources\":{\"cpu\":1,\"memory\":128},"
           "\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]}}}",
           c->job, c->task, c->replicas);
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object r;
  if (lt_command(conn, "job", "apply", json_loads(json, 0, NULL), &z, &r))
    snprintf(c->out, sizeof c->out, "request failed");
  else if (bus_obj_get(&r, "error"))
    bus_obj_str(bus_obj_get(&r, "error"), "code", c->out, sizeof c->out);
  else
    bus_obj_str(&r, "result", c->out, sizeof c->out);
  msgpack_zone_destroy(&z);
  return NULL;
}

static void
apply_all(client *c, int n) {
  for (int i = 0; i < n; i++)
    cr_assert_eq(pthread_create(&c[i].th, NULL, apply_job, &c[i]), 0);
  for (int i = 0; i < n; i++)
    pthread_join(c[i].th, NULL);
}

#define JOBS 24

Test(sched_burst, jobs_applied_at_once_are_placed_one_event_each_chained) {
  node("n1");
  node("n2");
  node("n3");
  client c[JOBS];
  memset(c, 0, sizeof c);
  for (int i = 0; i < JOBS; i++) {
    snprintf(c[i].job, sizeof c[i].job, "burst%02d", i);
    snprintf(c[i].task, sizeof c[i].task, "w");
    c[i].replicas = 1;
  }
  apply_all(c, JOBS);
  for (int i = 0; i < JOBS; i++) {
    char pod[96];
    cr_expect_str_eq(c[i].out, "created", "%s: %s", c[i].job, c[i].out);
    snprintf(pod, sizeof pod, "%s-w-0", c[i].job);
    cr_expect(lt_field_becomes(conn, "pod", lt_sub_of("pod"), pod, "phase",
                               "Pending", 15));
    for (int k = 0; k < 150; k++) { /* bound: a node named */
      char bound[64] = "";
      lt_field(conn, "pod", lt_sub_of("pod"), pod, "node", bound, sizeof bound);
      if (bound[0])
        break;
      cr_assert_lt(k, 149, "%s was never placed", pod);
      usleep(100 * 1000);
    }
  }
  /* each placement-log event is on top of the one before it */
  ts_placement_log p = {0};
  ts_read_placement(conn, &p);
  cr_expect_eq(p.placed, JOBS, "one job.placed per Job, %d found", p.placed);
  cr_expect_eq(p.chained, p.placed, "%d of %d events on top of the one before",
               p.chained, p.placed);
  bus_status st;
  cr_assert_eq(bus_status_query(conn, "scheduler", 2000, &st), 0, "%s",
               bus_last_error());
  cr_expect_eq(st.stale, 0, "%llu events stale in the view",
               (unsigned long long)st.stale);
  lt_expect_replay(conn, "scheduler", 25, 0);
}

Test(sched_burst, one_job_applied_by_many_at_once_is_created_once) {
  node("n1");
  client c[12];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 12; i++) {
    snprintf(c[i].job, sizeof c[i].job, "same");
    snprintf(c[i].task, sizeof c[i].task, "w");
    c[i].replicas = 2;
  }
  apply_all(c, 12);
  int created = 0, unchanged = 0;
  for (int i = 0; i < 12; i++) {
    created += !strcmp(c[i].out, "created");
    unchanged += !strcmp(c[i].out, "unchanged");
  }
  cr_expect_eq(created, 1, "created %d times", created);
  cr_expect_eq(unchanged, 11, "%d unchanged", unchanged);
  cr_expect_eq(lt_count_events(conn, "LARK_EVENTS", "lark.ev.job.>",
                               "job.submitted", NULL),
               1);
}

Test(sched_burst, jobs_whose_pods_share_names_are_not_both_created) {
  node("n1");
  client c[2];
  memset(c, 0, sizeof c);
  /* ov + task x-y and ov-x + task y both make pod ov-x-y-0 */
  snprintf(c[0].job, sizeof c[0].job, "ov");
  snprintf(c[0].task, sizeof c[0].task, "x-y");
  snprintf(c[1].job, sizeof c[1].job, "ov-x");
  snprintf(c[1].task, sizeof c[1].task, "y");
  c[0].replicas = c[1].replicas = 1;
  apply_all(c, 2);
  int created = !strcmp(c[0].out, "created") + !strcmp(c[1].out, "created");
  cr_expect_eq(created, 1, "%s: %s, %s: %s", c[0].job, c[0].out, c[1].job,
               c[1].out);
  cr_expect_eq(lt_count_events(conn, "LARK_EVENTS", "lark.ev.job.>",
                               "job.submitted", NULL),
               1);
}

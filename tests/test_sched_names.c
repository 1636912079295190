/*
 * test_sched_names.c - lark-scheduler against a real broker: a Job whose
 * derived names meet another Job's is refused with both Jobs named, even
 * when it comes right after the other (before the view has seen it); and
 * a Job that cannot be placed says so once, not at every decide.
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
#include "natsd.h"
#include "proc.h"
#include "stream.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t sched;

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "schednames", 1000);
  sched = lt_must_start("lark-scheduler", srv.url, dir, "scheduler",
                        "scheduler.log", NULL);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, &sched, 1);
}

TestSuite(sched_names, .init = setup, .fini = teardown, .timeout = 120);

static void
node(const char *name, int cpu) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"cluster\":\"c1\",\"runtimes\":[\"raw\"],\"capacity\":{"
           "\"cpu\":%d,\"memory\":16384}}}}",
           name, cpu);
  lt_must_apply(conn, "node", json);
}

/* Send job.apply for Job name with one template; the reply in z. */
static msgpack_object
job(const char *name, const char *tmpl, int cpu, msgpack_zone *z) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"resource\":{\"apiVersion\":\"rlinf.io/v1alpha1\","
           "\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"},\"spec\":{"
           "\"tasks\":[{\"name\":\"%s\",\"role\":\"Actor\",\"replicas\":1,"
           "\"resources\":{\"cpu\":%d,\"memory\":128},"
           "\"runtime\":{\"raw\":{\"entrypoint\":[\"true\"]}}}]}}}",
           name, tmpl, cpu);
  return lt_must_command(conn, "job", "apply", json, z);
}

/* job(), failing the test unless it was taken. */
static void
job_ok(const char *name, const char *tmpl, int cpu) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = job(name, tmpl, cpu, &z);
  lt_expect_ok(&r);
  msgpack_zone_destroy(&z);
}

/* How many events of type are stored on subject. */
static int
count(const char *subject, const char *type) {
  long n = lt_count_events(conn, "LARK_EVENTS", subject, type, NULL);
  cr_assert_geq(n, 0, "%s", bus_last_error());
  return (int)n;
}

Test(sched_names, meeting_derived_names_refuse_the_second_job) {
  node("n1", 8);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  /* col-a + b-c and col-a-b + c both derive task col-a-b-c, pod
   * col-a-b-c-0; sent back to back as `larkctl apply` does */
  job_ok("col-a", "b-c", 1);
  msgpack_object r2 = job("col-a-b", "c", 1, &z);
  const msgpack_object *e = bus_obj_get(&r2, "error");
  cr_assert_not_null(e, "the second Job was accepted");
  char code[64] = "", msg[512] = "";
  bus_obj_str(e, "code", code, sizeof code);
  bus_obj_str(e, "message", msg, sizeof msg);
  cr_expect_str_eq(code, "EXISTS");
  cr_expect(strstr(msg, "col-a-b-c") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "(job col-a-b,") != NULL, "message: %s", msg);
  cr_expect(strstr(msg, "of job col-a") != NULL, "message: %s", msg);
  msgpack_zone_destroy(&z);
  char got[256] = "";
  cr_expect(lt_wait_field(conn, "pod", NULL, "col-a-b-c-0", "node", "n1", 15,
                          got, sizeof got),
            "pod col-a-b-c-0 is on '%s'", got);
  lt_field(conn, "pod", NULL, "col-a-b-c-0", "job", got, sizeof got);
  cr_expect_str_eq(got, "col-a");
  sleep(2);
  cr_expect_eq(count("lark.ev.placement.default", "job.placed"), 1);
}

Test(sched_names, a_job_that_cannot_be_placed_says_so_once) {
  node("n1", 1);
  job_ok("big", "a", 4);
  char got[512] = "";
  cr_assert(lt_wait_field(conn, "job", "job", "big", "reason", "~lack cpu", 15,
                          got, sizeof got),
            "reason: %s", got);
  sleep(6); /* six ticks of decide, and the batches in between */
  cr_expect_eq(count("lark.ev.job.big", "job.phase"), 1);
  cr_expect_eq(count("lark.ev.task.big-a", "task.phase"), 0);
  /* something changes: a node that fits; the Job is placed and runs */
  node("n2", 8);
  cr_expect(lt_wait_field(conn, "pod", NULL, "big-a-0", "node", "n2", 15, got,
                          sizeof got),
            "pod big-a-0 is on '%s'", got);
  sleep(3);
  cr_expect_eq(count("lark.ev.placement.default", "job.placed"), 1);
  cr_expect_eq(count("lark.ev.job.big", "job.phase"), 1);
}

Test(sched_names, a_pending_reason_is_written_again_only_when_blockers_change) {
  node("n1", 1);
  job_ok("big", "a", 4);
  char got[512] = "";
  cr_assert(lt_wait_field(conn, "job", "job", "big", "reason", "~1 lack cpu",
                          15, got, sizeof got),
            "reason: %s", got);
  /* more nodes that are too small: the counts move, the blocker does not */
  node("n2", 1);
  node("n3", 2);
  sleep(4);
  cr_expect_eq(count("lark.ev.job.big", "job.phase"), 1);
  /* a cordoned node is another blocker: said once more */
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object c =
      lt_must_command(conn, "node", "cordon", "{\"name\":\"n1\"}", &z);
  lt_expect_ok(&c);
  cr_expect(lt_wait_field(conn, "job", "job", "big", "reason", "~cordoned", 15,
                          got, sizeof got),
            "reason: %s", got);
  sleep(3);
  cr_expect_eq(count("lark.ev.job.big", "job.phase"), 2);
  msgpack_zone_destroy(&z);
}

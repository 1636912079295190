/*
 * test_edge_attempts.c - a real lark-edge beside a real broker, the test
 * writing desired states to the node's stream as the scheduler would: a
 * desired state naming an older attempt than the one running (a stop of
 * a lost attempt that reaches the node after its retry was placed there)
 * leaves the running attempt alone, and the running attempt's own stop
 * still stops it.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *reports;
static char dir[256];
static pid_t edge_pid;
static lt_pod_reports reps;

static void
setup(void) {
  memset(&reps, 0, sizeof reps);
  lt_node_bed_up(&srv, &conn, dir, sizeof dir, "edgeatt", "n1", &reports);
  edge_pid = lt_must_start_edge(srv.url, dir, "n1", 0, NULL);
}

static void
teardown(void) {
  lt_node_bed_down(&srv, conn, reports, dir, &edge_pid, 1);
}

TestSuite(edge_attempts, .init = setup, .fini = teardown, .timeout = 120);

static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  lt_pod_report_take(&reps, ev);
}

static void
drain(int timeout_ms) {
  lt_drain(reports, 64, timeout_ms, take, NULL);
}

/* Every phase reported for pod, with its attempt ("Running/1 ..."). */
static const char *
phases(const char *pod) {
  static char out[1024];
  out[0] = 0;
  drain(200);
  for (int i = 0; i < reps.n; i++)
    if (!strcmp(reps.seen[i].pod, pod)) {
      size_t n = strlen(out);
      snprintf(out + n, sizeof out - n, "%s%s/%u", n ? " " : "",
               reps.seen[i].phase, reps.seen[i].attempt);
    }
  return out;
}

/* The pid pod wrote into dir/<pod>.pid, waiting up to 10 s; 0 if none. */
static pid_t
pod_pid(const char *pod) {
  char path[512], buf[64];
  snprintf(path, sizeof path, "%s/%s.pid", dir, pod);
  for (int w = 0; w < 100; w++, lt_sleep_ms(100)) {
    char *s = lt_read_file(path, buf, sizeof buf);
    if (s && atoi(s) > 0)
      return atoi(s);
  }
  return 0;
}

Test(edge_attempts, an_older_attempts_stop_leaves_the_newer_running) {
  char script[600];
  snprintf(script, sizeof script, "echo $$ > %s/p1.pid; exec sleep 1000", dir);
  const char *const argv[] = {"sh", "-c", script, NULL};
  lt_pod_desire(conn, "n1", "p1", 1, "Running", "raw", argv, NULL);
  const lt_pod_report *r =
      lt_pod_report_wait(&reps, drain, "p1", "Running", 20);
  cr_assert_not_null(r, "attempt 1 never ran");
  cr_assert_eq(r->attempt, 1);
  pid_t pid = pod_pid("p1");
  cr_assert_gt(pid, 0, "p1 wrote no pid");

  /* attempt 0's stop, decided before attempt 1 was placed, comes late */
  lt_pod_desire(conn, "n1", "p1", 0, "Stopped", "raw", NULL, NULL);
  /* a pod desired after it: once that runs, the stop was taken too */
  lt_pod_running(conn, "n1", "p2", "exec sleep 1000", NULL);
  cr_assert_not_null(lt_pod_report_wait(&reps, drain, "p2", "Running", 20));
  lt_sleep_ms(1500); /* a SIGTERM'd sleep is gone by then */
  cr_expect_eq(kill(pid, 0), 0, "attempt 0's stop ended attempt 1");
  cr_expect_str_eq(phases("p1"), "Running/1");

  /* attempt 1's own stop stops it, and says so */
  lt_pod_desire(conn, "n1", "p1", 1, "Stopped", "raw", NULL, NULL);
  r = lt_pod_report_wait(&reps, drain, "p1", "Stopped", 20);
  cr_assert_not_null(r, "attempt 1's stop did not stop it");
  cr_expect_eq(r->attempt, 1);
  for (int w = 0; w < 50 && kill(pid, 0) == 0; w++)
    lt_sleep_ms(100);
  cr_expect_neq(kill(pid, 0), 0, "attempt 1 still runs after its stop");
}

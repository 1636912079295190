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
#include <string.h>

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

#define await(pod, phase) lt_pod_report_await(&reps, reports, pod, phase, 20)

Test(edge_attempts, an_older_attempts_stop_leaves_the_newer_running) {
  char script[600], path[512], seen[256];
  snprintf(path, sizeof path, "%s/p1.pid", dir);
  snprintf(script, sizeof script, "echo $$ > %s; exec sleep 1000", path);
  const char *const argv[] = {"sh", "-c", script, NULL};
  lt_pod_desire(conn, "n1", "p1", 1, "Running", "raw", argv, NULL);
  const lt_pod_report *r = await("p1", "Running");
  cr_assert_not_null(r, "attempt 1 never ran");
  cr_assert_eq(r->attempt, 1);
  pid_t pid = lt_pid_in(path, 10);
  cr_assert_gt(pid, 0, "p1 wrote no pid");

  /* attempt 0's stop, decided before attempt 1 was placed, comes late */
  lt_pod_desire(conn, "n1", "p1", 0, "Stopped", "raw", NULL, NULL);
  /* a pod desired after it: once that runs, the stop was taken too */
  lt_pod_running(conn, "n1", "p2", "exec sleep 1000", NULL);
  cr_assert_not_null(await("p2", "Running"));
  lt_sleep_ms(1500); /* a SIGTERM'd sleep is gone by then */
  cr_expect_eq(kill(pid, 0), 0, "attempt 0's stop ended attempt 1");
  lt_pod_reports_read(&reps, reports, 200);
  cr_expect_str_eq(lt_pod_phases(&reps, "p1", seen, sizeof seen), "Running");

  /* attempt 1's own stop stops it, and says so */
  lt_pod_desire(conn, "n1", "p1", 1, "Stopped", "raw", NULL, NULL);
  r = await("p1", "Stopped");
  cr_assert_not_null(r, "attempt 1's stop did not stop it");
  cr_expect_eq(r->attempt, 1);
  for (int w = 0; w < 50 && kill(pid, 0) == 0; w++)
    lt_sleep_ms(100);
  cr_expect_neq(kill(pid, 0), 0, "attempt 1 still runs after its stop");
}

/* A retry started while the failed attempt's handles still close (the
 * output's drain, a second) keeps its pod socket: the failed attempt's
 * teardown must not remove the retry's socket file. */
Test(edge_attempts,
     a_retry_keeps_its_socket_after_the_failed_attempts_teardown) {
  char script[2000], mark[512], buf[64];
  lt_pod_running(conn, "n1", "p3", "exit 3", NULL);
  const lt_pod_report *r = await("p3", "Failed");
  cr_assert_not_null(r, "attempt 0 did not fail");
  snprintf(mark, sizeof mark, "%s/p3.sock", dir);
  snprintf(script, sizeof script,
           "sleep 2.5; if [ -S \"$LARK_SOCKET\" ]; then echo there; "
           "else echo gone; fi > %s.tmp; mv %s.tmp %s; exec sleep 1000",
           mark, mark, mark);
  const char *const argv[] = {"sh", "-c", script, NULL};
  lt_pod_desire(conn, "n1", "p3", 1, "Running", "raw", argv, NULL);
  cr_assert_not_null(await("p3", "Running"), "attempt 1 never ran");
  cr_assert_eq(lt_wait_file(mark, 20), 1, "attempt 1 wrote nothing");
  cr_assert_not_null(lt_read_file(mark, buf, sizeof buf));
  cr_expect_str_eq(buf, "there\n", "attempt 1's socket was removed: %s", buf);
}

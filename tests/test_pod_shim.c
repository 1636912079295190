/*
 * test_pod_shim.c - `lark-edge pod-shim` under a stop that comes at any
 * moment of its start, as the agent sends it: SIGTERM to the shim's
 * process group (its own session, as the agent spawns it), while the
 * shim may still be starting, forking its child, or resetting the
 * child's signals. Whenever the stop comes, the launch ends at once (no
 * grace period, no SIGKILL needed) and the status file says how.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "files.h"
#include "natsd.h"
#include "proc.h"

static char dir[256];

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "shim");
}

static void
teardown(void) {
  lt_rmtree(dir);
}

TestSuite(pod_shim, .init = setup, .fini = teardown, .timeout = 240);

/* Spawn the shim in its own session and return once it is exec'd, as
 * uv_spawn does for the agent (a pipe closed on exec says when). */
static pid_t
shim(const char *status) {
  char bin[512], c;
  int fds[2];
  lt_bin("lark-edge", bin, sizeof bin);
  cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    execl(bin, bin, "pod-shim", status, "--", "/bin/sh", "-c", "exec sleep 60",
          (char *)NULL);
    _exit(127);
  }
  cr_assert_gt(pid, 0);
  close(fds[1]);
  while (read(fds[0], &c, 1) < 0 && errno == EINTR)
    ;
  close(fds[0]);
  return pid;
}

static void
sleep_us(long us) {
  struct timespec t = {.tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000};
  while (nanosleep(&t, &t) < 0 && errno == EINTR)
    ;
}

/* Wait up to ms for pid to end; its wait status, or -1 (then killed). */
static int
ended_within(pid_t pid, int ms) {
  int st;
  for (int i = 0; i < ms; i++, sleep_us(1000))
    if (waitpid(pid, &st, WNOHANG) == pid)
      return st;
  kill(-pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/* SIGTERM to the group delay_us after the spawn: the launch must end. */
static void
stop_after(int i, long delay_us) {
  char status[512], body[256] = "";
  snprintf(status, sizeof status, "%s/exit-%d", dir, i);
  pid_t pid = shim(status);
  sleep_us(delay_us);
  kill(-pid, SIGTERM);
  int st = ended_within(pid, 5000);
  cr_assert_neq(st, -1,
                "stop %d, %ld us after the spawn, was lost: the launch "
                "was still running 5 s later",
                i, delay_us);
  /* the shim wrote how it ended, unless the stop came before it set its
   * handler (then it died of it, as nothing of the pod had run) */
  if (!lt_read_file(status, body, sizeof body)) {
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
              "stop %d: no status file, and status %d", i, st);
    return;
  }
  cr_expect(!strncmp(body, "-1 15\n", 6), "stop %d (%ld us): status %s", i,
            delay_us, body);
}

Test(pod_shim, a_stop_at_any_moment_of_the_start_ends_the_launch) {
  /* the start (exec of the shim, its fork, the child's exec) takes a few
   * ms here: spread the stops over it, each delay a few times */
  for (int i = 0; i < 240; i++)
    stop_after(i, (i % 60) * 250L);
}

Test(pod_shim, a_stop_after_the_start_ends_the_launch_with_its_signal) {
  char status[512], body[256] = "";
  snprintf(status, sizeof status, "%s/exit-late", dir);
  pid_t pid = shim(status);
  sleep_us(500 * 1000);
  cr_assert_eq(kill(-pid, SIGTERM), 0);
  int st = ended_within(pid, 5000);
  cr_assert(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM,
            "the shim ends as its child did: status %d", st);
  cr_assert_not_null(lt_read_file(status, body, sizeof body));
  cr_expect_str_eq(body, "-1 15\n");
}

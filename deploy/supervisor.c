/*
 * supervisor.c - the processes `larkctl up` keeps running: each started
 * in its own process group with its output appended to
 * <data>/logs/<log name>.log, restarted with backoff when it exits, and
 * stopped in order at the end.
 *
 * Invariants:
 * - Children run in their own process group (a ^C reaches only the
 *   supervisor, which stops them in order: services first, then the
 *   broker) and get SIGTERM if it dies (PR_SET_PDEATHSIG), so no
 *   nats-server is left behind.
 * - A child that exits is restarted with a backoff that doubles from 1 s
 *   to 30 s (back to 1 s after a minute of good running), and the restart
 *   is printed. Nothing is restarted once a stop was asked for.
 * - Between fork and exec the child calls only async-signal-safe
 *   functions: every string is prepared before the fork.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deploy-int.h"

enum { BACKOFF_MIN_MS = 1000, BACKOFF_MAX_MS = 30000, GRACE_MS = 5000 };

/* Set by SIGINT or SIGTERM (lark_sup_catch_signals) and by stop_all. */
static atomic_int stop_flag;

void
lark_sup_catch_signals(void) {
  bus_stop_on_signals(&stop_flag);
}

int
lark_sup_stopping(void) {
  return stop_flag;
}

lark_proc *
lark_sup_add(lark_sup *s, const char *name, const char *log_name) {
  if (s->n == LARK_SUP_MAX)
    return NULL;
  lark_proc *k = &s->procs[s->n++];
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  char log[sizeof k->log]; /* k lives inside s: no overlapping snprintf */
  snprintf(log, sizeof log, "%s/logs/%s.log", s->data, log_name);
  memcpy(k->log, log, sizeof log);
  k->backoff_ms = BACKOFF_MIN_MS;
  return k;
}

void
lark_proc_arg(lark_proc *k, const char *a) {
  if (k->argc >= LARK_PROC_ARGS)
    return;
  size_t n = strnlen(a, PATH_MAX - 1);
  memcpy(k->args[k->argc], a, n);
  k->args[k->argc][n] = 0;
  k->argv[k->argc] = k->args[k->argc];
  k->argc++;
  k->argv[k->argc] = NULL;
}

int
lark_proc_start(lark_proc *k) {
  int fd = open(k->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0)
    return -errno;
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return -errno;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (null >= 0)
      dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(k->argv[0], k->argv);
    _exit(127);
  }
  close(fd);
  k->pid = pid;
  k->started_ms = bus_mono_ms();
  k->due_ms = 0;
  return 0;
}

static void
describe_exit(int status, char *out, size_t cap) {
  if (WIFEXITED(status))
    snprintf(out, cap, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(out, cap, "killed by signal %d", WTERMSIG(status));
  else
    snprintf(out, cap, "status %d", status);
}

void
lark_proc_died(lark_proc *k, int status) {
  char how[64];
  int64_t now = bus_mono_ms();
  describe_exit(status, how, sizeof how);
  if (now - k->started_ms > 60000)
    k->backoff_ms = BACKOFF_MIN_MS;
  k->pid = 0;
  k->due_ms = now + k->backoff_ms;
  k->restarts++;
  printf("larkctl up: %s exited (%s); restart %d in %d.%d s (log %s)\n",
         k->name, how, k->restarts, k->backoff_ms / 1000,
         k->backoff_ms % 1000 / 100, k->log);
  fflush(stdout);
  k->backoff_ms =
      k->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : k->backoff_ms * 2;
}

int
lark_proc_gone(lark_proc *k) {
  int status;
  if (waitpid(k->pid, &status, WNOHANG) != k->pid)
    return 0;
  lark_proc_died(k, status);
  return 1;
}

void
lark_sup_reap(lark_sup *s) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
    for (size_t i = 0; i < s->n; i++)
      if (s->procs[i].pid == pid) {
        if (stop_flag)
          s->procs[i].pid = 0;
        else
          lark_proc_died(&s->procs[i], status);
      }
}

void
lark_sup_restart_due(lark_sup *s) {
  int64_t now = bus_mono_ms();
  for (size_t i = 0; i < s->n; i++) {
    lark_proc *k = &s->procs[i];
    if (k->pid || !k->due_ms || now < k->due_ms)
      continue;
    if (lark_proc_start(k) < 0) {
      k->due_ms = now + k->backoff_ms;
      continue;
    }
    printf("larkctl up: %s restarted (pid %d)\n", k->name, (int)k->pid);
    fflush(stdout);
  }
}

/* Signal every running child of one kind, then wait up to grace_ms for
 * them and SIGKILL what is left. */
static void
stop_kind(lark_sup *s, int broker, int sig, int grace_ms) {
  int64_t end = bus_mono_ms() + grace_ms;
  for (size_t i = 0; i < s->n; i++)
    if (s->procs[i].broker == broker && s->procs[i].pid > 0)
      kill(s->procs[i].pid, sig);
  for (;;) {
    int left = 0;
    for (size_t i = 0; i < s->n; i++) {
      lark_proc *k = &s->procs[i];
      if (k->broker != broker || k->pid <= 0)
        continue;
      if (waitpid(k->pid, NULL, WNOHANG) == k->pid)
        k->pid = 0;
      else if (bus_mono_ms() >= end) {
        kill(k->pid, SIGKILL);
        waitpid(k->pid, NULL, 0);
        k->pid = 0;
      } else
        left++;
    }
    if (!left)
      return;
    bus_sleep_ms(50);
  }
}

void
lark_sup_stop_all(lark_sup *s) {
  stop_flag = 1;
  stop_kind(s, 0, SIGTERM, GRACE_MS);
  stop_kind(s, 1, SIGTERM, 2 * GRACE_MS);
}

int
lark_wait_file(const char *path, lark_proc *k, int ms) {
  for (int t = 0; t < ms / 100 && !stop_flag; t++) {
    if (access(path, R_OK) == 0)
      return 0;
    if (k && k->pid && lark_proc_gone(k))
      return -1;
    bus_sleep_ms(100);
  }
  return access(path, R_OK) == 0 ? 0 : -1;
}

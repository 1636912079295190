/*
 * proc.c - run binaries under test and collect what they print.
 */
#include "proc.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

const char *
lt_bin(const char *name, char *out, size_t cap) {
  const char *dir = getenv("LARK_BIN_DIR");
  snprintf(out, cap, "%s/%s", dir ? dir : ".", name);
  return out;
}

/* Read fd to EOF into buf (truncating); returns bytes kept. */
static size_t
slurp(int fd, char *buf, size_t cap) {
  size_t n = 0;
  char scratch[4096];
  for (;;) {
    ssize_t r = read(fd, scratch, sizeof scratch);
    if (r <= 0)
      break;
    for (ssize_t i = 0; i < r; i++)
      if (buf && n + 1 < cap)
        buf[n++] = scratch[i];
  }
  if (buf && cap)
    buf[n] = 0;
  return n;
}

int
lt_run(char *const argv[], char *out, size_t cap, char *err, size_t errcap) {
  char errpath[] = "/tmp/lark-test-err-XXXXXX";
  int errfd = mkstemp(errpath);
  int p[2];
  if (pipe(p) < 0 || errfd < 0)
    return -1;
  unlink(errpath);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(errfd, 2);
    close(p[0]);
    close(p[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  slurp(p[0], out, cap);
  close(p[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  lseek(errfd, 0, SEEK_SET);
  slurp(errfd, err, errcap);
  close(errfd);
  if (WIFSIGNALED(st))
    return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
}

int
lt_runl(char *out, size_t cap, char *err, size_t errcap, const char *a0, ...) {
  char *argv[32];
  int n = 0;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
    argv[n++] = (char *)a;
  va_end(ap);
  argv[n] = NULL;
  return lt_run(argv, out, cap, err, errcap);
}

pid_t
lt_spawn(char *const argv[], const char *log) {
  pid_t pid = fork();
  if (pid == 0) {
    /* a failed test exits without its teardown: stop what it started */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

int
lt_kill(pid_t pid, int sig) {
  int st = 0;
  if (pid <= 0)
    return -1;
  kill(pid, sig);
  waitpid(pid, &st, 0);
  return st;
}

int
lt_vsh(char *out, size_t cap, char *err, size_t errcap, const char *fmt,
       va_list ap) {
  char cmd[8192];
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  return lt_run(argv, out, cap, err, errcap);
}

int
lt_sh(char *out, size_t cap, char *err, size_t errcap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = lt_vsh(out, cap, err, errcap, fmt, ap);
  va_end(ap);
  return rc;
}

pid_t
lt_start_service(const char *bin_name, const char *url, const char *data,
                 const char *log, const char *const extra[]) {
  char bin[512];
  char *argv[40] = {lt_bin(bin_name, bin, sizeof bin) ? bin : NULL,
                    (char *)"--url", (char *)url, (char *)"--data",
                    (char *)data};
  int n = 5;
  for (int i = 0; extra && extra[i] && n < 39; i++)
    argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  return lt_spawn(argv, log);
}

void
lt_kill_groups(const char *path) {
  char buf[8192];
  int fd = open(path, O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  buf[n > 0 ? n : 0] = 0;
  for (const char *l = buf; l && *l; l = strchr(l, '\n')) {
    l += *l == '\n';
    pid_t pid = atoi(l), g = pid > 0 ? getpgid(pid) : -1;
    if (g > 0)
      kill(-g, SIGKILL);
  }
}

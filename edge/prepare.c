/*
 * prepare.c - a pod's prepareScript, run by its shim with /bin/sh -c in
 * the pod's working directory, environment and namespace, after the
 * artifact is fetched and before the entrypoint. Its stdout is the
 * pod's; its stderr passes through the shim to the pod's, and the shim
 * keeps the last line of it for the reason a failure gives.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edge.h"
#include "fetch.h"
#include "utf8.h"

enum { TAIL = 512 };

/* Keep the last TAIL bytes written to stderr in tail (len *n). */
static void
keep_tail(char *tail, size_t *n, const char *buf, size_t len) {
  if (len >= TAIL) {
    memcpy(tail, buf + len - TAIL, TAIL);
    *n = TAIL;
    return;
  }
  if (*n + len > TAIL) {
    size_t drop = *n + len - TAIL;
    memmove(tail, tail + drop, *n - drop);
    *n -= drop;
  }
  memcpy(tail + *n, buf, len);
  *n += len;
}

/* Pass the child's stderr (fd) on to ours until it closes. */
static void
relay(int fd, char *tail, size_t *n) {
  char buf[4096];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return;
    for (ssize_t off = 0; off < r;) {
      ssize_t w = write(2, buf + off, (size_t)(r - off));
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break;
      off += w;
    }
    keep_tail(tail, n, buf, (size_t)r);
  }
}

/* The last non-empty line of tail, made one valid line, into out. */
static void
last_line(char *tail, size_t n, char *out, size_t cap) {
  while (n && (tail[n - 1] == '\n' || tail[n - 1] == '\r'))
    n--;
  size_t start = n;
  while (start && tail[start - 1] != '\n')
    start--;
  size_t len = n - start < cap - 1 ? n - start : cap - 1;
  memcpy(out, tail + start, len);
  out[len] = 0;
  edge_utf8_fix(out, len);
}

int
edge_prepare(const char *script, int *code, int *sig, char *why, size_t cap) {
  int fds[2];
  *code = -1;
  *sig = 0;
  if (pipe(fds) < 0) {
    snprintf(why, cap, "prepareScript: pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, cap, "prepareScript: fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    fprintf(stderr, "lark-edge: cannot run /bin/sh: %s\n", strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  char tail[TAIL], line[200];
  size_t n = 0;
  relay(fds[0], tail, &n);
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
    return 0;
  last_line(tail, n, line, sizeof line);
  char what[48];
  if (WIFSIGNALED(st)) {
    *sig = WTERMSIG(st);
    snprintf(what, sizeof what, "killed by signal %d", *sig);
  } else {
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    snprintf(what, sizeof what, "exit status %d", *code);
  }
  snprintf(why, cap, "prepareScript failed: %s%s%s", what, line[0] ? ": " : "",
           line);
  return -1;
}

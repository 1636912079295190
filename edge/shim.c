/*
 * shim.c - `lark-edge pod-shim STATUSFILE -- ARGV...`: what the agent
 * spawns for a pod. It runs ARGV as its child, waits for it, writes
 * "<exit code> <signal>" to STATUSFILE (atomically: a temporary file,
 * then rename) and ends the same way the child did.
 *
 * The status file is how an agent that restarted learns how a pod it
 * could not wait for ended. The shim ignores SIGTERM, SIGINT and SIGHUP
 * (the agent signals the whole process group: the child gets them) and
 * its child dies with it (PR_SET_PDEATHSIG), so a SIGKILL to the group
 * leaves nothing behind.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edge.h"

static void
write_status(const char *path, int code, int sig) {
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "we");
  if (!f)
    return;
  fprintf(f, "%d %d\n", code, sig);
  if (fclose(f) == 0)
    rename(tmp, path);
}

int
edge_shim_main(int argc, char **argv) {
  if (argc < 5 || strcmp(argv[3], "--")) {
    fprintf(stderr, "usage: lark-edge pod-shim STATUSFILE -- ARGV...\n");
    return 2;
  }
  const char *status = argv[2];
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  pid_t pid = fork();
  if (pid < 0) {
    perror("lark-edge pod-shim: fork");
    write_status(status, 127, 0);
    return 127;
  }
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execvp(argv[4], argv + 4);
    fprintf(stderr, "lark-edge: cannot run %s: %s\n", argv[4], strerror(errno));
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    write_status(status, -1, sig);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  write_status(status, code, 0);
  return code;
}

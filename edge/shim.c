/*
 * shim.c - `lark-edge pod-shim STATUSFILE [--netns NS] -- ARGV...`:
 * what the agent spawns for a pod. It runs ARGV as its child, waits for
 * it, writes "<exit code> <signal>" to STATUSFILE (atomically: a
 * temporary file, then rename) and ends the same way the child did.
 *
 * With --netns (a raw+netns pod) the shim enters the network namespace
 * NS (a name under podnet_rundir(), or the path of a namespace file)
 * before it forks, so the pod and everything it starts live there. A
 * shim that cannot enter it runs nothing: status 127, the reason on
 * stderr (the pod's log).
 *
 * The status file is how an agent that restarted learns how a pod it
 * could not wait for ended. The shim ignores SIGTERM, SIGINT and SIGHUP
 * (the agent signals the whole process group: the child gets them) and
 * its child dies with it (PR_SET_PDEATHSIG), so a SIGKILL to the group
 * leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edge.h"
#include "podnet.h"

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

/* Enter network namespace ns (a name or a file's path); 0 or -1 with the
 * reason on stderr. */
static int
enter_netns(const char *ns) {
  int fd =
      strchr(ns, '/') ? open(ns, O_RDONLY | O_CLOEXEC) : podnet_ns_open(ns);
  if (fd < 0) {
    fprintf(stderr, "lark-edge: cannot open network namespace %s: %s\n", ns,
            strchr(ns, '/') ? strerror(errno) : bus_last_error());
    return -1;
  }
  int rc = setns(fd, CLONE_NEWNET);
  if (rc < 0)
    fprintf(stderr, "lark-edge: cannot enter network namespace %s: %s\n", ns,
            strerror(errno));
  close(fd);
  return rc;
}

int
edge_shim_main(int argc, char **argv) {
  const char *netns = NULL, *status = argc > 2 ? argv[2] : NULL;
  if (argc >= 5 && !strcmp(argv[3], "--netns")) {
    netns = argv[4];
    argv += 2; /* ARGV at argv + 4 again, the status file before it */
    argc -= 2;
  }
  if (argc < 5 || strcmp(argv[3], "--")) {
    fprintf(stderr,
            "usage: lark-edge pod-shim STATUSFILE [--netns NS] -- ARGV...\n");
    return 2;
  }
  if (netns && enter_netns(netns) < 0) {
    write_status(status, 127, 0);
    return 127;
  }
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

/*
 * shim.c - `lark-edge pod-shim STATUSFILE [OPTIONS] -- ARGV...`: what
 * the agent spawns for a pod, in the pod's working directory and with its
 * environment. In order it
 *
 *   1. fetches the artifact (--artifact URL, checked against its
 *      #sha256= when given; --ca FILE trusted beside the system's CAs,
 *      --max BYTES, --timeout SECONDS), on the node's network;
 *   2. enters the pod's network namespace (--netns NS, a name under
 *      podnet_rundir() or the path of a namespace file);
 *   3. runs the prepareScript (--prepare SCRIPT) with /bin/sh -c;
 *   4. runs ARGV (the entrypoint, or /bin/sh -c runScript) as its child,
 *      as user --user NAME when given (a robot's launch: initgroups,
 *      setgid, setuid before the exec), waits for it, and ends the same
 *      way the child did.
 *
 * It writes "<exit code> <signal>\n" to STATUSFILE (atomically: a
 * temporary file, then rename), followed by a line with the reason when a
 * step before ARGV failed; then the exit code is the failed step's (-1
 * when it has none, as for a fetch). The status file is how the agent,
 * or an agent that restarted, learns how a pod ended and why. A failed
 * step runs nothing after it; its reason is on stderr too (the pod's
 * log).
 *
 * The shim itself outlives SIGTERM, SIGINT and SIGHUP (the agent signals
 * the whole process group: the child gets them); one that comes before
 * ARGV started stops it there, a fetch included. Its children die with
 * it (PR_SET_PDEATHSIG), so a SIGKILL to the group leaves nothing behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edge.h"
#include "fetch.h"
#include "podnet.h"

static volatile sig_atomic_t stopped;

static void
on_stop(int sig) {
  stopped = sig;
}

typedef struct shim_args {
  const char *status, *netns, *artifact, *prepare, *user;
  edge_fetch_opts fetch;
  char **argv; /* ARGV, NULL-terminated */
} shim_args;

static void
write_status(const char *path, int code, int sig, const char *reason) {
  char body[1100];
  int n = snprintf(body, sizeof body, "%d %d\n%s%s", code, sig,
                   reason ? reason : "", reason && *reason ? "\n" : "");
  bus_file_write(path, body, n < (int)sizeof body ? (size_t)n : strlen(body),
                 0644);
}

/* A step failed: say why (status file and the pod's stderr) and end. */
static int
fail(const shim_args *a, int code, int sig, const char *why) {
  fprintf(stderr, "lark-edge: %s\n", why);
  write_status(a->status, code, sig, why);
  return code >= 0 ? (code ? code : 1) : sig ? 128 + sig : 127;
}

/* Enter network namespace ns (a name or a file's path); 0 or -1 with the
 * reason in why. */
static int
enter_netns(const char *ns, char *why, size_t cap) {
  int fd =
      strchr(ns, '/') ? open(ns, O_RDONLY | O_CLOEXEC) : podnet_ns_open(ns);
  if (fd < 0) {
    snprintf(why, cap, "cannot open network namespace %.300s: %s", ns,
             strchr(ns, '/') ? strerror(errno) : bus_last_error());
    return -1;
  }
  int rc = setns(fd, CLONE_NEWNET);
  if (rc < 0)
    snprintf(why, cap, "cannot enter network namespace %.300s: %s", ns,
             strerror(errno));
  close(fd);
  return rc;
}

static int
parse_args(int argc, char **argv, shim_args *a) {
  memset(a, 0, sizeof *a);
  a->fetch.max_bytes = EDGE_ARTIFACT_MAX_DEFAULT;
  a->fetch.timeout_s = EDGE_ARTIFACT_TIMEOUT_DEFAULT;
  a->fetch.stop = &stopped;
  if (argc < 3)
    return -1;
  a->status = argv[2];
  int i = 3;
  for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
    const char *o = argv[i], *v = argv[i + 1];
    if (!strcmp(o, "--netns"))
      a->netns = v;
    else if (!strcmp(o, "--artifact"))
      a->artifact = v;
    else if (!strcmp(o, "--ca"))
      a->fetch.ca_file = v;
    else if (!strcmp(o, "--max"))
      a->fetch.max_bytes = strtoull(v, NULL, 10);
    else if (!strcmp(o, "--timeout"))
      a->fetch.timeout_s = strtol(v, NULL, 10);
    else if (!strcmp(o, "--prepare"))
      a->prepare = v;
    else if (!strcmp(o, "--user"))
      a->user = v;
    else
      return -1;
  }
  if (i + 1 >= argc || strcmp(argv[i], "--"))
    return -1;
  a->argv = argv + i + 1;
  return 0;
}

/* Steps 1 to 3; 0, or the shim's exit code after fail(). */
static int
prepare_pod(const shim_args *a) {
  char why[EDGE_REASON_MAX];
  if (a->artifact && *a->artifact) {
    lark_artifact art;
    char r[200];
    if (lark_artifact_parse(a->artifact, strlen(a->artifact), &art, r,
                            sizeof r)) {
      snprintf(why, sizeof why, "artifact: %s (%.300s)", r, a->artifact);
      return fail(a, -1, 0, why);
    }
    if (edge_fetch(&art, &a->fetch, why, sizeof why))
      return fail(a, -1, stopped, why);
  }
  if (a->netns && enter_netns(a->netns, why, sizeof why) < 0)
    return fail(a, -1, 0, why);
  if (!stopped && a->prepare && *a->prepare) {
    int code, sig;
    if (edge_prepare(a->prepare, &code, &sig, why, sizeof why))
      return fail(a, code, sig, why);
  }
  if (stopped) {
    snprintf(why, sizeof why, "stopped before it started");
    return fail(a, -1, stopped, why);
  }
  return 0;
}

/* Step 4: ARGV as the child; ends as it did. */
static int
run_pod(const shim_args *a) {
  struct passwd *pw = NULL;
  if (a->user && *a->user && !(pw = getpwnam(a->user))) {
    char why[200];
    snprintf(why, sizeof why, "no user %.100s on this node", a->user);
    return fail(a, -1, 0, why);
  }
  /* A stop must reach ARGV whenever it comes: one before the fork would
   * reach the shim only, and one between the fork and the child's
   * SIG_DFL would run on_stop in the child and be lost. So the stops wait
   * (blocked) across the fork: the child takes them with the default
   * action, and the shim forwards one that came to it alone. */
  sigset_t stops, old;
  sigemptyset(&stops);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGHUP);
  sigprocmask(SIG_BLOCK, &stops, &old);
  pid_t shim = getpid(), pid = stopped ? -1 : fork();
  if (pid < 0) {
    char why[128];
    int e = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (stopped)
      snprintf(why, sizeof why, "stopped before it started");
    else
      snprintf(why, sizeof why, "fork: %s", strerror(e));
    return fail(a, -1, stopped, why);
  }
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != shim) /* the shim died before the line above */
      _exit(137);
    if (pw && (initgroups(pw->pw_name, pw->pw_gid) < 0 ||
               setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)) {
      fprintf(stderr, "lark-edge: cannot become user %s: %s\n", a->user,
              strerror(errno));
      _exit(126);
    }
    execvp(a->argv[0], a->argv);
    fprintf(stderr, "lark-edge: cannot run %s: %s\n", a->argv[0],
            strerror(errno));
    _exit(127);
  }
  sigprocmask(SIG_SETMASK, &old, NULL); /* on_stop runs now for one */
  if (stopped)                          /* that came to the shim alone */
    kill(pid, stopped);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  if (WIFSIGNALED(st)) {
    int sig = WTERMSIG(st);
    write_status(a->status, -1, sig, NULL);
    signal(sig, SIG_DFL);
    kill(getpid(), sig);
    return 128 + sig;
  }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  write_status(a->status, code, 0, NULL);
  return code;
}

int
edge_shim_main(int argc, char **argv) {
  shim_args a;
  if (parse_args(argc, argv, &a) < 0) {
    fprintf(stderr,
            "usage: lark-edge pod-shim STATUSFILE [--netns NS] [--artifact "
            "URL [--ca FILE] [--max BYTES] [--timeout S]] [--prepare SCRIPT] "
            "[--user NAME] -- ARGV...\n");
    return 2;
  }
  struct sigaction sa = {.sa_handler = on_stop, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  int rc = prepare_pod(&a);
  return rc ? rc : run_pod(&a);
}

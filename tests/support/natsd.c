/*
 * natsd.c - start and stop a real nats-server per test.
 *
 * The server picks its own port; we learn it from the ports file, so tests
 * run in parallel without ever sharing a port.
 */
#include "natsd.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void
sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

void
lt_tmpdir(char *out, size_t cap, const char *tag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base)
    base = "/tmp";
  snprintf(out, cap, "%s/lark-%s-XXXXXX", base, tag ? tag : "t");
  if (!mkdtemp(out)) {
    perror("mkdtemp");
    abort();
  }
}

/* 1 when pid's command line names path in one of its words. */
static int
names_path(pid_t pid, const char *path) {
  char f[64], buf[8192];
  snprintf(f, sizeof f, "/proc/%d/cmdline", (int)pid);
  FILE *in = fopen(f, "r");
  if (!in)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, in);
  fclose(in);
  buf[n] = 0;
  for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
    if (strstr(buf + i, path))
      return 1;
  return 0;
}

/*
 * What a test leaves running under its directory: pods and robots
 * outlive their agent by design (the next agent adopts them), so a test
 * that ends with some running would leave them for good. Each process
 * whose command line names path is killed with its process group (a
 * shim leads its own session); the test's own group is spared.
 */
static void
kill_strays(const char *path) {
  DIR *d = opendir("/proc");
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    pid_t pid = (pid_t)atoi(e->d_name);
    if (pid <= 1 || pid == getpid() || !names_path(pid, path))
      continue;
    pid_t g = getpgid(pid);
    if (g == pid && g != getpgrp())
      kill(-g, SIGKILL);
    kill(pid, SIGKILL);
  }
  closedir(d);
}

void
lt_rmtree(const char *path) {
  if (!path || !*path)
    return;
  kill_strays(path);
  pid_t pid = fork();
  if (pid == 0) {
    execlp("rm", "rm", "-rf", path, (char *)NULL);
    _exit(127);
  }
  if (pid > 0)
    waitpid(pid, NULL, 0);
}

/* The ports file is JSON: {"nats":["nats://127.0.0.1:PORT"],...}. */
static int
read_port(const char *dir, pid_t pid) {
  char path[512];
  snprintf(path, sizeof path, "%s/nats-server_%d.ports", dir, (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  /* 2.9.10 names the client listener "nats"; later versions "client" */
  char *p = strstr(buf, "\"nats\"");
  if (!p)
    p = strstr(buf, "\"client\"");
  if (!p || !(p = strstr(p, "127.0.0.1:")))
    return -1;
  return atoi(p + strlen("127.0.0.1:"));
}

static pid_t
spawn(lt_natsd *s, const char *const *extra, int port) {
  char store[300], portbuf[16];
  snprintf(store, sizeof store, "%s/store", s->dir);
  snprintf(portbuf, sizeof portbuf, "%d", port);
  const char *argv[64];
  int n = 0;
  argv[n++] = "nats-server";
  if (s->conf[0]) {
    argv[n++] = "-c";
    argv[n++] = s->conf;
  }
  argv[n++] = "-a";
  argv[n++] = "127.0.0.1";
  argv[n++] = "-p";
  argv[n++] = portbuf;
  argv[n++] = "-js";
  argv[n++] = "-sd";
  argv[n++] = store;
  argv[n++] = "--ports_file_dir";
  argv[n++] = s->dir;
  for (int i = 0; extra && extra[i] && n < 62; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    char log[300];
    /* a test that fails an assertion exits without its teardown: the
     * server goes with it (forked from the test's own thread) */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    snprintf(log, sizeof log, "%s/server.log", s->dir);
    if (!freopen(log, "a", stdout) || !freopen(log, "a", stderr))
      _exit(126);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

/* 30 s: a broker given the accounts of ten thousand nodes takes several
 * seconds to read them on a busy machine. */
static int
wait_port(lt_natsd *s) {
  for (int i = 0; i < 1200; i++) {
    int st;
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
      fprintf(stderr, "natsd: nats-server exited (see %s/server.log)\n",
              s->dir);
      s->pid = 0;
      return -1;
    }
    int port = read_port(s->dir, s->pid);
    if (port > 0) {
      s->port = port;
      snprintf(s->url, sizeof s->url, "nats://127.0.0.1:%d", port);
      return 0;
    }
    sleep_ms(25);
  }
  fprintf(stderr, "natsd: no ports file after 30 s in %s\n", s->dir);
  return -1;
}

int
lt_natsd_start(lt_natsd *s, const char *conf, const char *const *extra) {
  memset(s, 0, sizeof *s);
  lt_tmpdir(s->dir, sizeof s->dir, "natsd");
  if (conf)
    snprintf(s->conf, sizeof s->conf, "%s", conf);
  s->pid = spawn(s, extra, -1);
  if (s->pid < 0)
    return -1;
  return wait_port(s);
}

int
lt_stop(pid_t pid, int sig, int wait_ms) {
  if (pid <= 0)
    return -1;
  kill(pid, sig);
  for (int i = 0; i < wait_ms / 25; i++) {
    if (waitpid(pid, NULL, WNOHANG) == pid)
      return 0;
    sleep_ms(25);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 1;
}

void
lt_natsd_stop(lt_natsd *s) {
  lt_stop(s->pid, SIGINT, 10000);
  s->pid = 0;
  if (getenv("LARK_KEEP")) /* the server's log, for a failure's cause */
    fprintf(stderr, "natsd: kept %s\n", s->dir);
  else
    lt_rmtree(s->dir);
}

int
lt_natsd_kill_restart(lt_natsd *s) {
  return lt_natsd_restart(s, SIGKILL);
}

int
lt_natsd_restart(lt_natsd *s, int sig) {
  lt_stop(s->pid, sig, 10000);
  char path[512];
  snprintf(path, sizeof path, "%s/nats-server_%d.ports", s->dir, (int)s->pid);
  unlink(path);
  s->pid = spawn(s, NULL, s->port);
  return s->pid < 0 ? -1 : wait_port(s);
}

int
lt_connect(const lt_natsd *s, bus_conn **out) {
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = s->url;
  o.js_wait_ms = 500;
  o.name = "test";
  return bus_conn_open(out, &o);
}

int
lt_streams(bus_conn *c, int dedupe_ms) {
  bus_streams_opts o;
  bus_streams_opts_init(&o);
  o.dedupe_ns = (int64_t)dedupe_ms * 1000000;
  return bus_streams_ensure(c, &o);
}

int
lt_broker_up(lt_natsd *s, bus_conn **c, int dedupe_ms) {
  if (lt_natsd_start(s, NULL, NULL) || lt_connect(s, c))
    return -1;
  return lt_streams(*c, dedupe_ms) ? -1 : 0;
}

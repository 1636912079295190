/*
 * platform.c - the platform under test, as an operator runs it: `larkctl
 * up` in the background, `larkctl` commands with a deadline each, and the
 * processes `up` supervises, found by their parent.
 *
 * `up` restarts a child that dies (nats-server included, on the port it
 * first got), so the harness never starts a broker or service itself: a
 * second broker on the same store would be a fault of the harness's own.
 * Children are found in /proc by parent pid and program name, read fresh
 * each time, since every restart gives a new pid.
 */
#include "fault.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "files.h"
#include "proc.h"

int64_t
fh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
fh_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0)
    ;
}

void
fh_log(fh *h, const char *fmt, ...) {
  static int64_t t0;
  if (!t0)
    t0 = fh_now_ms();
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&h->mu);
  int64_t t = fh_now_ms() - t0;
  printf("[%4lld.%01lld] %s\n", (long long)(t / 1000),
         (long long)(t % 1000 / 100), line);
  fflush(stdout);
  pthread_mutex_unlock(&h->mu);
}

int
fh_larkctl(fh *h, int timeout_s, char *out, size_t cap, ...) {
  char secs[16];
  char *argv[32] = {(char *)"/usr/bin/timeout",
                    (char *)"-s",
                    (char *)"KILL",
                    secs,
                    h->larkctl,
                    (char *)"--data",
                    h->data};
  int n = 7;
  snprintf(secs, sizeof secs, "%d", timeout_s);
  va_list ap;
  va_start(ap, cap);
  for (const char *a; n < 31 && (a = va_arg(ap, const char *));)
    argv[n++] = (char *)a;
  va_end(ap);
  argv[n] = NULL;
  char err[2048];
  int rc = lt_run(argv, out, cap, err, sizeof err);
  if (rc && h->verbose) {
    err[strcspn(err, "\n")] = 0;
    fh_log(h, "larkctl %s %s: exit %d: %s", argv[7], n > 8 ? argv[8] : "", rc,
           err);
  }
  return rc;
}

/* Read /proc/<pid>/stat's ppid and /proc/<pid>/cmdline (NULs made
 * spaces, argv[0]'s base name into prog). */
static int
proc_info(const char *pid, pid_t *ppid, char *prog, size_t pcap, char *cmd,
          size_t ccap) {
  char path[320], buf[4096];
  snprintf(path, sizeof path, "/proc/%s/stat", pid);
  if (!lt_read_file(path, buf, sizeof buf))
    return -1;
  char *p = strrchr(buf, ')'); /* the name may hold spaces */
  int pp = 0;
  if (!p || sscanf(p + 2, "%*c %d", &pp) != 1)
    return -1;
  *ppid = (pid_t)pp;
  snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t r = read(fd, cmd, ccap - 1);
  close(fd);
  if (r <= 0)
    return -1;
  cmd[r] = 0;
  const char *slash = strrchr(cmd, '/');
  const char *base = slash ? slash + 1 : cmd;
  size_t bl = strnlen(base, pcap - 1);
  memcpy(prog, base, bl);
  prog[bl] = 0;
  for (ssize_t i = 0; i < r; i++)
    if (!cmd[i])
      cmd[i] = ' ';
  return 0;
}

int
fh_children(fh *h, const char *prog, const char *arg, pid_t *out, int cap) {
  DIR *d = opendir("/proc");
  if (!d)
    return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < cap) {
    char name[256], cmd[4096];
    pid_t ppid;
    if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
        proc_info(e->d_name, &ppid, name, sizeof name, cmd, sizeof cmd) < 0)
      continue;
    if (ppid != h->up || strcmp(name, prog) || (arg && !strstr(cmd, arg)))
      continue;
    out[n++] = (pid_t)atoi(e->d_name);
  }
  closedir(d);
  return n;
}

/* Wait for `up`'s "ready" line in its log; 0, or -1 when it exited. */
static int
wait_ready(fh *h, const char *log, int seconds) {
  char buf[65536];
  for (int t = 0; t < seconds * 10; t++) {
    if (waitpid(h->up, NULL, WNOHANG) == h->up) {
      h->up = 0;
      return -1;
    }
    FILE *f = fopen(log, "re");
    if (f) {
      size_t n = fread(buf, 1, sizeof buf - 1, f);
      fclose(f);
      buf[n] = 0;
      if (strstr(buf, "larkbus ready"))
        return 0;
    }
    fh_sleep_ms(100);
  }
  return -1;
}

int
fh_up_start(fh *h) {
  char log[PATH_MAX + 16], nodes[16];
  snprintf(log, sizeof log, "%s/up.log", h->work);
  snprintf(nodes, sizeof nodes, "%d", h->nodes);
  char *argv[] = {h->larkctl,
                  (char *)"--data",
                  h->data,
                  (char *)"up",
                  (char *)"--port",
                  (char *)"0",
                  (char *)"--nodes",
                  nodes,
                  h->cluster ? (char *)"--cluster" : NULL,
                  NULL};
  h->up = lt_spawn(argv, log);
  if (h->up <= 0 || wait_ready(h, log, 120) < 0) {
    fprintf(stderr, "fault: larkctl up did not say ready: see %s\n", log);
    return -1;
  }
  fh_log(h, "larkctl up ready (pid %d, log %s)", (int)h->up, log);
  return 0;
}

void
fh_up_stop(fh *h) {
  if (h->up <= 0)
    return;
  kill(h->up, SIGINT);
  for (int t = 0; t < 300; t++) {
    if (waitpid(h->up, NULL, WNOHANG) == h->up) {
      h->up = 0;
      return;
    }
    fh_sleep_ms(100);
  }
  kill(h->up, SIGKILL);
  waitpid(h->up, NULL, 0);
  h->up = 0;
}

int
fh_wait_up(fh *h, int seconds) {
  char out[16384];
  int64_t end = fh_now_ms() + (int64_t)seconds * 1000;
  do {
    if (fh_larkctl(h, 20, out, sizeof out, "status", "-o", "json", NULL) == 0)
      return 0;
    fh_sleep_ms(1000);
  } while (fh_now_ms() < end);
  return -1;
}

bus_conn *
fh_connect(fh *h, const char *name, const char *inbox, int own) {
  char path[PATH_MAX + 16], url[1024] = "", creds[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/url", h->data);
  FILE *f = fopen(path, "re");
  if (!f)
    return NULL;
  if (!fgets(url, sizeof url, f))
    url[0] = 0;
  fclose(f);
  url[strcspn(url, "\n")] = 0;
  snprintf(creds, sizeof creds, "%s/creds/%s.nk", h->data, name);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  o.inbox_prefix = inbox;
  o.inbox_own = own;
  o.name = "fault-harness";
  bus_conn *c = NULL;
  return bus_conn_open(&c, &o) == 0 ? c : NULL;
}

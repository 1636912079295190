/*
 * svc.c - service plumbing. Settings come from one table; precedence is
 * default < environment < flag. Logs go to stderr, one line each, so a
 * supervisor (larkctl up, systemd) keeps them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "svc.h"

typedef struct setting {
  const char *flag;
  const char *env;
  const char *def;
  size_t offset; /* of the const char * in svc */
} setting;

static const setting settings[] = {
    {"--url", "LARK_URL", "nats://127.0.0.1:4222", offsetof(svc, url)},
    {"--creds", "LARK_CREDS", NULL, offsetof(svc, creds)},
    {"--data", "LARK_DATA", NULL, offsetof(svc, data)},
    {"--name", "LARK_SERVICE_NAME", NULL, offsetof(svc, instance)},
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static int
parse_level(const char *v) {
  for (int i = 0; i < 4; i++)
    if (!strcmp(v, level_names[i]))
      return i;
  return -1;
}

static int
usage(const char *name) {
  fprintf(stderr,
          "usage: lark-%s [--url URL] [--creds FILE] [--data DIR] "
          "[--name INSTANCE] [--log-level error|warn|info|debug]\n",
          name);
  return 2;
}

static const char **
slot(svc *s, const setting *st) {
  return (const char **)((char *)s + st->offset);
}

int
svc_init(svc *s, const char *name, int argc, char **argv) {
  memset(s, 0, sizeof *s);
  s->name = name;
  s->log_level = SVC_INFO;
  size_t n = sizeof settings / sizeof settings[0];
  for (size_t i = 0; i < n; i++) {
    const char *env = getenv(settings[i].env);
    *slot(s, &settings[i]) = env && *env ? env : settings[i].def;
  }
  const char *lvl = getenv("LARK_LOG_LEVEL");
  if (lvl && parse_level(lvl) >= 0)
    s->log_level = parse_level(lvl);
  for (int a = 1; a < argc; a++) {
    size_t i = 0;
    while (i < n && strcmp(argv[a], settings[i].flag))
      i++;
    if (a + 1 >= argc)
      return usage(name);
    if (i < n)
      *slot(s, &settings[i]) = argv[++a];
    else if (!strcmp(argv[a], "--log-level") && parse_level(argv[a + 1]) >= 0)
      s->log_level = parse_level(argv[++a]);
    else
      return usage(name);
  }
  if (!s->data) {
    fprintf(stderr, "lark-%s: --data DIR (or LARK_DATA) is required\n", name);
    return 2;
  }
  return 0;
}

static svc *signalled;

static void
on_signal(int sig) {
  (void)sig;
  if (signalled)
    signalled->stop = 1;
}

void
svc_signals(svc *s) {
  signalled = s;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

int
svc_connect(svc *s, const char *const *streams) {
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = s->url;
  o.creds = s->creds;
  char name[96];
  snprintf(name, sizeof name, "lark-%s", s->name);
  o.name = name;
  int rc, warned = 0;
  while ((rc = bus_conn_open(&s->conn, &o)) < 0 && !s->stop) {
    if (rc == BUS_EAUTH || (rc < 0 && rc > -4000)) {
      SVC_LOG(s, SVC_ERROR, "-", 0, "connect %s: %s (%s)", s->url,
              bus_strerror(rc), bus_last_error());
      return rc;
    }
    if (!warned++)
      SVC_LOG(s, SVC_WARN, "-", 0, "connect %s: %s; retrying", s->url,
              bus_strerror(rc));
    sleep(1);
  }
  if (rc < 0)
    return rc;
  if (streams && (rc = bus_streams_require(s->conn, streams)) < 0) {
    SVC_LOG(s, SVC_ERROR, "-", 0, "%s", bus_last_error());
    return rc;
  }
  SVC_LOG(s, SVC_INFO, "-", 0, "connected to %s", s->url);
  return 0;
}

void
svc_close(svc *s) {
  bus_conn_close(s->conn);
  s->conn = NULL;
}

void
svc_logf(const svc *s, int level, const char *subject, uint64_t seq,
         const char *fmt, ...) {
  char when[32], msg[768];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s.%03ldZ %-5s service=%s subject=%s seq=%llu %s\n", when,
          ts.tv_nsec / 1000000, level_names[level], s->name,
          subject ? subject : "-", (unsigned long long)seq, msg);
}

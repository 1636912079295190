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

static int
take(const svc_flag *f, const char *v) {
  return v && f->parse(v, f->out) < 0 ? -1 : 0;
}

int
svc_own_flags(int *argc, char **argv, const svc_flag *flags) {
  for (const svc_flag *f = flags; f->flag; f++)
    if (f->env && take(f, getenv(f->env)))
      return -1;
  int out = 1;
  for (int i = 1; i < *argc; i++) {
    const svc_flag *f = flags;
    while (f->flag && strcmp(argv[i], f->flag))
      f++;
    if (!f->flag || i + 1 >= *argc)
      argv[out++] = argv[i];
    else if (take(f, argv[++i]))
      return -1;
  }
  *argc = out;
  argv[out] = NULL;
  return 0;
}

void
svc_signals(svc *s) {
  bus_stop_on_signals(&s->stop);
}

int
svc_connect(svc *s, const char *const *streams) {
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = s->url;
  o.creds = s->creds;
  o.inbox_prefix = s->inbox;
  char name[96];
  snprintf(name, sizeof name, "lark-%s", s->name);
  o.name = name;
  int rc, warned = 0;
  while ((rc = bus_conn_open(&s->conn, &o)) < 0 && !atomic_load(&s->stop)) {
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

void
svc_log_applied(const svc *s, const bus_view_stats *st, uint64_t *logged) {
  if (st->applied_seq == *logged)
    return;
  *logged = st->applied_seq;
  SVC_LOG(s, SVC_DEBUG, "lark.ev.>", st->applied_seq,
          "applied %llu stale %llu rejected %llu outbox %llu",
          (unsigned long long)st->applied, (unsigned long long)st->stale,
          (unsigned long long)st->rejected, (unsigned long long)st->outbox);
}

void
svc_on_state(int state, const char *why, void *ud) {
  svc *s = ud;
  SVC_LOG(s, SVC_ERROR, "lark.ev.>", 0,
          "view %s: %s; it applies and decides nothing more until rebuilt: "
          "stop %s, move its view directory (%s) away and start it again "
          "(it replays the stream from sequence 1)",
          bus_service_state_name(state), why, s->name, s->data);
}

void
svc_service_input(bus_service_opts *so, const bus_view_def *def) {
  if (def->stream)
    so->stream = def->stream;
  if (def->filter)
    so->filter = def->filter;
}

#define SVC_MAX_KINDS 8

static int
serve_kinds(svc *s, const svc_view_opts *o, bus_serve **serves) {
  int rc = 0;
  for (int i = 0; !rc && o->kinds && o->kinds[i] && i < SVC_MAX_KINDS; i++)
    rc = bus_cmd_serve(s->conn, o->kinds[i], o->on_command, o->ud, &serves[i]);
  return rc;
}

typedef struct loop_ctx {
  svc *s;
  bus_view *v;
  const svc_view_opts *o;
} loop_ctx;

static void
log_batch(const bus_view_stats *st, void *ud) {
  loop_ctx *r = ud;
  svc_log_applied(r->s, st, &r->s->logged_seq);
  if (r->o->after_batch)
    r->o->after_batch(r->s, r->v, st, r->o->ud);
}

static int
repair(bus_conn *c, void *ud) {
  (void)c;
  loop_ctx *r = ud;
  int rc = r->o->repair(r->s, r->v, r->o->ud);
  if (rc)
    SVC_LOG(r->s, SVC_WARN, "-", 0, "a stream is missing: %s (%s)",
            bus_strerror(rc), bus_last_error());
  return rc;
}

void
svc_service_opts(svc *s, bus_service_opts *so, const bus_view_def *def) {
  bus_service_opts_init(so);
  so->name = s->instance ? s->instance : s->name;
  svc_service_input(so, def);
  so->stop_flag = &s->stop;
  so->on_state = svc_on_state;
  so->state_ud = s;
}

static int
loop(svc *s, bus_view *v, const svc_view_opts *o) {
  loop_ctx r = {s, v, o};
  bus_service_opts so;
  svc_service_opts(s, &so, &o->def);
  so.tick_ms = o->tick_ms;
  so.on_batch = log_batch;
  so.ud = &r;
  if (o->repair) {
    so.repair = repair;
    so.repair_ud = &r;
  }
  SVC_LOG(s, SVC_INFO, "lark.ev.>", 0, "running as %s, version %s", so.name,
          so.version);
  return bus_service_run(s->conn, v, &so);
}

int
svc_run_view(svc *s, const svc_view_opts *o) {
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = s->data;
  bus_view *v = NULL;
  bus_serve *serves[SVC_MAX_KINDS] = {NULL};
  bus_cmd_server *verbs = NULL;
  int rc = bus_view_open(&v, &o->def, &vo), started = 0;
  if (rc) {
    SVC_LOG(s, SVC_ERROR, "-", 0, "open view %s: %s (%s)", s->data,
            bus_strerror(rc), bus_last_error());
    return rc;
  }
  if (bus_view_relaid(v))
    SVC_LOG(s, SVC_WARN, "-", 0,
            "view %s was written under another layout: emptied, rebuilt "
            "from the log from sequence 1",
            s->data);
  if (o->view)
    *o->view = v;
  rc = serve_kinds(s, o, serves);
  if (!rc && o->verbs)
    rc = bus_verbs_serve(s->conn, o->verbs, v, o->ud, o->workers, &verbs);
  if (!rc && o->start)
    started = !(rc = o->start(s, v, o->ud));
  if (!rc)
    rc = loop(s, v, o);
  if (rc)
    SVC_LOG(s, SVC_ERROR, "lark.ev.>", 0, "%s (%s)", bus_strerror(rc),
            bus_last_error());
  if (started && o->stop)
    o->stop(s, v, o->ud);
  for (int i = 0; i < SVC_MAX_KINDS; i++)
    bus_conn_unserve(serves[i]);
  bus_cmd_server_stop(verbs);
  bus_view_close(v);
  return rc;
}

int
svc_main_run(svc *s, const char *name, int argc, char **argv,
             const char *const *streams, svc_run_fn run, void *ud) {
  int rc = svc_init(s, name, argc, argv);
  if (rc)
    return rc;
  svc_signals(s);
  if (svc_connect(s, streams) < 0) {
    svc_close(s);
    return 1;
  }
  rc = run(s, ud);
  svc_close(s);
  SVC_LOG(s, SVC_INFO, "-", 0, "stopped");
  return rc ? 1 : 0;
}

void
svc_on_cmd_done(const bus_cmd *cmd, int rc, void *ud) {
  const svc *s = ud;
  SVC_LOG(s, rc ? SVC_INFO : SVC_DEBUG, "lark.cmd", 0, "%s.%s by %s: %s",
          cmd->kind, cmd->verb, cmd->user, rc ? bus_last_error() : "ok");
}

void
svc_on_ingress_log(const char *subject, const char *msg, void *ud) {
  const svc *s = ud;
  SVC_LOG(s, SVC_WARN, subject, 0, "%s", msg);
}

int
svc_node_streams_repair(svc *s, bus_view *v, const char *what) {
  int made = 0, anew = 0;
  int rc = bus_view_node_streams_repair(s->conn, v, "nodes", SVC_SENDQ_NOTE,
                                        &made, &anew);
  if (made || anew)
    SVC_LOG(s, SVC_WARN, "lark.node.>", 0,
            "made %d missing node stream%s for %s; %d found made anew: "
            "sending %s again",
            made, made == 1 ? "" : "s", what, anew, what);
  return rc;
}

static int
run_view(svc *s, void *ud) {
  return svc_run_view(s, ud);
}

int
svc_main(svc *s, const char *name, int argc, char **argv,
         const char *const *streams, const svc_view_opts *o) {
  return svc_main_run(s, name, argc, argv, streams, run_view, (void *)o);
}

/*
 * cmd_tail.c - larkctl tail: the audit trail over LARK_EVENTS and
 * LARK_RUNS.
 *
 *   larkctl tail [SUBJECT-FILTER] [--from-seq N | --since TIME] [--type T]
 *                [--follow] [-o json]
 *
 * Without a filter both streams are read and merged in stored-time order;
 * a filter under lark.ev. or lark.run. reads one. One line per event (seq,
 * time, subject, type, actor, via when the command came through another
 * principal such as lark-gateway, cause, data); with -o json one object
 * per line with those keys ("via" only when set). --follow keeps reading
 * until Ctrl-C.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* what cli_parse_time takes, for the usage error */
#define CLI_TIME_FORMS                                                         \
  "a time (2026-11-29T10:00:00Z, 2026-11-29, unix seconds, or a duration "     \
  "back from now: 30s, 5m, 2h, 1d)"
#define USAGE                                                                  \
  "larkctl tail [SUBJECT-FILTER] [--from-seq N | --since TIME] [--type T] "    \
  "[--follow] [-o json]"

typedef struct source {
  const char *stream;
  bus_reader *r;
  bus_batch *b;
  size_t i;
  int eof;
} source;

typedef struct tail {
  source src[2];
  int nsrc;
  const char *type;
  int follow, json;
  uint64_t printed;
} tail;

static int
type_matches(const char *want, const char *type) {
  if (!want)
    return 1;
  if (!type)
    return 0;
  size_t n = strlen(want);
  if (n >= 2 && !strcmp(want + n - 2, ".*")) /* "job.*" */
    return !strncmp(type, want, n - 1);
  return !strcmp(want, type);
}

static void
print_json(const source *s, const bus_event *ev, const char *subject,
           uint64_t seq, int64_t stored, int status) {
  json_t *o = json_object();
  char when[40];
  cli_format_time(stored, when, sizeof when);
  json_object_set_new(o, "stream", json_string(s->stream));
  json_object_set_new(o, "seq", json_integer((json_int_t)seq));
  json_object_set_new(o, "time", json_string(when));
  json_object_set_new(o, "subject", json_string(subject));
  if (ev) {
    char *data = cli_obj_to_json(&ev->data);
    json_object_set_new(o, "type", json_string(ev->type));
    json_object_set_new(o, "id", json_string(ev->id));
    json_object_set_new(o, "actor", json_string(ev->actor));
    json_object_set_new(o, "cause", json_string(ev->cause));
    json_object_set_new(o, "prev", json_integer((json_int_t)ev->prev));
    json_object_set_new(
        o, "data", json_loads(data ? data : "null", JSON_DECODE_ANY, NULL));
    if (ev->via && ev->via[0])
      json_object_set_new(o, "via", json_string(ev->via));
    free(data);
  } else {
    json_object_set_new(o, "error", json_string(bus_err_name(status)));
  }
  cli_put_json(o, "null");
  json_decref(o);
}

static void
print_text(const bus_event *ev, const char *subject, uint64_t seq,
           int64_t stored, int status) {
  char when[40];
  cli_format_time(stored, when, sizeof when);
  if (!ev) {
    printf("%-8llu %s %s <undecodable: %s>\n", (unsigned long long)seq, when,
           subject, bus_strerror(status));
    return;
  }
  char *data = cli_obj_to_json(&ev->data), via[BUS_NAME_MAX + 8] = "";
  if (ev->via && ev->via[0])
    snprintf(via, sizeof via, " via=%s", ev->via);
  printf("%-8llu %s %s %s actor=%s%s cause=%s %s\n", (unsigned long long)seq,
         when, subject, ev->type, ev->actor[0] ? ev->actor : "-", via,
         ev->cause[0] ? ev->cause : "-", data ? data : "{}");
  free(data);
}

static void
print_one(tail *t, source *s) {
  const char *subject;
  uint64_t seq;
  int64_t stored;
  bus_batch_meta(s->b, s->i, &subject, &seq, &stored);
  const bus_event *ev = bus_batch_event(s->b, s->i);
  int status = bus_batch_status(s->b, s->i);
  s->i++;
  if (!type_matches(t->type, ev ? ev->type : NULL))
    return;
  if (t->json)
    print_json(s, ev, subject, seq, stored, status);
  else
    print_text(ev, subject, seq, stored, status);
  t->printed++;
}

/* Make sure s has a message at s->i, unless it has ended. */
static int
refill(tail *t, source *s, int timeout_ms) {
  if (s->eof || s->i < bus_batch_len(s->b))
    return 0;
  s->i = 0;
  int rc = bus_reader_next(s->r, s->b, timeout_ms);
  if (rc == BUS_EEOF && !t->follow)
    s->eof = bus_batch_len(s->b) == 0;
  else if (rc < 0 && rc != BUS_EEOF && rc != BUS_ETIMEOUT)
    return rc;
  return 0;
}

static int64_t
head_time(source *s) {
  int64_t stored;
  bus_batch_meta(s->b, s->i, NULL, NULL, &stored);
  return stored;
}

/* Pick the source whose next message was stored first; NULL when none
 * has one. */
static source *
next_source(tail *t) {
  source *best = NULL;
  for (int k = 0; k < t->nsrc; k++) {
    source *s = &t->src[k];
    if (s->i >= bus_batch_len(s->b))
      continue;
    if (!best || head_time(s) < head_time(best))
      best = s;
  }
  return best;
}

static int
run(tail *t) {
  while (!cli_interrupted()) {
    int live = 0;
    for (int k = 0; k < t->nsrc; k++) {
      int rc = refill(t, &t->src[k], t->follow ? 200 : 5000);
      if (rc)
        return cli_fail("tail", rc, "read %s", t->src[k].stream);
      live += !t->src[k].eof;
    }
    source *s = next_source(t);
    if (s) {
      print_one(t, s);
      fflush(stdout);
    } else if (!live) {
      break;
    }
  }
  return CLI_OK;
}

static int
open_source(bus_conn *c, source *s, const char *stream, const char *filter,
            const bus_reader_opts *base) {
  bus_reader_opts o = *base;
  o.stream = stream;
  o.filter = filter;
  o.direct = 1; /* a user may make no consumer (deploy/policy.c) */
  s->stream = stream;
  int rc = bus_batch_new(&s->b);
  if (!rc)
    rc = bus_reader_open(c, &o, &s->r);
  if (rc)
    return cli_fail("tail", rc, "open %s", stream);
  return 0;
}

/* Which streams a filter reads: both when none is given. */
static int
open_sources(bus_conn *c, tail *t, const char *filter,
             const bus_reader_opts *base) {
  int rc = 0;
  if (!filter) {
    rc = open_source(c, &t->src[t->nsrc++], "LARK_EVENTS", "lark.ev.>", base);
    if (!rc)
      rc = open_source(c, &t->src[t->nsrc++], "LARK_RUNS", "lark.run.>", base);
  } else if (!strncmp(filter, "lark.ev.", 8)) {
    rc = open_source(c, &t->src[t->nsrc++], "LARK_EVENTS", filter, base);
  } else if (!strncmp(filter, "lark.run.", 9)) {
    rc = open_source(c, &t->src[t->nsrc++], "LARK_RUNS", filter, base);
  } else {
    fprintf(stderr, "larkctl tail: a filter starts with lark.ev. or "
                    "lark.run. (e.g. lark.ev.job.>, lark.run.train-1)\n");
    return CLI_USAGE;
  }
  return rc;
}

/* A sequence: digits only, 1 or more, within 64 bits ("-5", "0" and
 * "12abc" are not sequences; strtoull would take them). */
static int
parse_seq(const char *s, uint64_t *seq) {
  uint64_t v = 0;
  if (!*s)
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *seq = v;
  return v ? 0 : -1;
}

static int
bad_value(const char *flag, const char *value, const char *want) {
  fprintf(stderr, "larkctl tail: %s %s: not %s\n", flag, value, want);
  return cli_usage(USAGE);
}

static int
parse_args(int argc, char **argv, bus_reader_opts *o, tail *t,
           const char **filter) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(a, "--from-seq") && has) {
      if (parse_seq(argv[++i], &o->from_seq))
        return bad_value(a, argv[i], "a stream sequence, 1 or more");
    } else if (!strcmp(a, "--since") && has) {
      if (cli_parse_time(argv[++i], &o->since_ns) < 0)
        return bad_value(a, argv[i], CLI_TIME_FORMS);
    } else if (!strcmp(a, "--type") && has)
      t->type = argv[++i];
    else if (!strcmp(a, "--follow") || !strcmp(a, "-f"))
      t->follow = 1;
    else if (a[0] != '-' && !*filter)
      *filter = a;
    else
      return cli_usage(USAGE);
  }
  if (o->from_seq == 0)
    o->from_seq = 1;
  o->follow = t->follow;
  return 0;
}

int
cmd_tail(int argc, char **argv, lark_cli *cli) {
  tail t;
  memset(&t, 0, sizeof t);
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  const char *filter = NULL;
  int rc = parse_args(argc, argv, &o, &t, &filter);
  if (rc)
    return rc;
  t.json = cli->output == CLI_OUT_JSON;
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  cli_catch_interrupt(0);
  rc = open_sources(c, &t, filter, &o);
  if (!rc)
    rc = run(&t);
  for (int k = 0; k < t.nsrc; k++) {
    bus_reader_close(t.src[k].r);
    bus_batch_free(t.src[k].b);
  }
  bus_conn_close(c);
  return rc;
}

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
 * until Ctrl-C. The reading, merging and type filter are libbus's
 * (bus_tail), which the gateway's events feed reads through too.
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

static void
print_json(const bus_tail_msg *m) {
  json_t *o = cli_event_json(m);
  cli_put_json(o, "null");
  json_decref(o);
}

static void
print_text(const bus_tail_msg *m) {
  char when[40];
  const bus_event *ev = m->ev;
  cli_format_time(m->stored_ns, when, sizeof when);
  if (!ev) {
    printf("%-8llu %s %s <undecodable: %s>\n", (unsigned long long)m->seq, when,
           m->subject, bus_strerror(m->status));
    return;
  }
  char *data = cli_obj_to_json(&ev->data), via[BUS_NAME_MAX + 8] = "";
  if (ev->via && ev->via[0])
    snprintf(via, sizeof via, " via=%s", ev->via);
  printf("%-8llu %s %s %s actor=%s%s cause=%s %s\n", (unsigned long long)m->seq,
         when, m->subject, ev->type, ev->actor[0] ? ev->actor : "-", via,
         ev->cause[0] ? ev->cause : "-", data ? data : "{}");
  free(data);
}

static int
run(bus_tail *bt, int follow, int json) {
  while (!cli_interrupted()) {
    bus_tail_msg m;
    int rc = bus_tail_next(bt, &m, follow ? 200 : 5000);
    if (rc == BUS_EEOF)
      break;
    if (rc < 0)
      return cli_fail("tail", rc, "read");
    if (rc == 0)
      continue;
    json ? print_json(&m) : print_text(&m);
    fflush(stdout);
  }
  return CLI_OK;
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
parse_args(int argc, char **argv, bus_tail_opts *o) {
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
      o->type = argv[++i];
    else if (!strcmp(a, "--follow") || !strcmp(a, "-f"))
      o->follow = 1;
    else if (a[0] != '-' && !o->filter)
      o->filter = a;
    else
      return cli_usage(USAGE);
  }
  return 0;
}

int
cmd_tail(int argc, char **argv, lark_cli *cli) {
  bus_tail_opts o;
  bus_tail_opts_init(&o);
  o.direct = 1; /* a user may make no consumer (deploy/policy.c) */
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc;
  if (o.filter && strncmp(o.filter, "lark.ev.", 8) &&
      strncmp(o.filter, "lark.run.", 9)) {
    fprintf(stderr, "larkctl tail: a filter starts with lark.ev. or "
                    "lark.run. (e.g. lark.ev.job.>, lark.run.train-1)\n");
    return CLI_USAGE;
  }
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  cli_catch_interrupt(0);
  bus_tail *bt = NULL;
  rc = bus_tail_open(c, &o, &bt);
  rc = rc ? cli_fail("tail", rc, "open %s", o.filter ? o.filter : "the log")
          : run(bt, o.follow, cli->output == CLI_OUT_JSON);
  bus_tail_close(bt);
  bus_conn_close(c);
  return rc;
}

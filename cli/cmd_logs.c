/*
 * cmd_logs.c - larkctl logs: what a Job's, a Task's or a Pod's processes
 * printed, from LARK_LOGS.
 *
 *   larkctl logs job|task|pod NAME [-f] [--since TIME] [--tail N]
 *                [--timestamps] [-o json]
 *
 * lark-logs stores each batch of a pod's lines on
 * lark.log.<job>.<task>.<pod>, so one filter selects what is asked:
 * lark.log.<job>.>, lark.log.*.<task>.* or lark.log.*.*.<pod>. A stream
 * holds batches in arrival order, which interleaves pods arbitrarily, so
 * the lines read are sorted by each line's own ts (the node's read time;
 * ties keep arrival order) before printing; lines of a Job or Task carry
 * their pod as a prefix, "[pod] text". --tail N keeps the last N lines of
 * that order; --since drops lines (and skips batches stored) before TIME.
 *
 * Before reading, lark-logs is asked to take what the nodes' ingress
 * holds (sync_ingress), so what was printed before the read is there.
 *
 * -f prints what is stored, then follows new batches (each fetch sorted)
 * and ends when the pod's Job reaches a terminal phase (Succeeded, Failed,
 * Stopped, Skipped) or is deleted, read from its events on lark.ev.job.
 * <job>, once no more lines came for a short grace: the last lines and the
 * phase travel on different paths. The Job of a Task or Pod is taken from
 * the subjects of its batches, else asked of lark-scheduler.
 *
 * Exit codes: 0, 1 on errors, 2 on usage.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "command_send.h"

#define USAGE                                                                  \
  "larkctl logs job|task|pod NAME [-f] [--since TIME] [--tail N] "             \
  "[--timestamps] [-o json]"
#define GRACE_MS 1500

typedef struct logs {
  const char *kind, *name;
  char filter[BUS_SUBJECT_MAX];
  char job[BUS_NAME_MAX + 1]; /* the Job whose end ends -f; "" unknown */
  int follow, json, timestamps, prefix;
  long tail;        /* -1: all */
  bus_log_lines ll; /* its since_ns is the --since */
} logs;

/* ------------------------------------------------------------ collect */

/* The lines of every log.batch in b (bus_log_lines); the first batch's Job
 * is the one whose end ends -f. */
static int
collect(logs *l, const bus_batch *b) {
  int rc = bus_log_lines_collect(&l->ll, b);
  if (!rc && !l->job[0] && l->ll.nsrc)
    snprintf(l->job, sizeof l->job, "%s", l->ll.srcs[0].job);
  return rc;
}

/* -------------------------------------------------------------- print */

static void
print_json(const logs *l, const bus_log_entry *ln) {
  const bus_log_src *s = &l->ll.srcs[ln->src];
  char when[40];
  cli_format_time(ln->ts, when, sizeof when);
  json_t *o = json_object();
  json_object_set_new(o, "time", json_string(when));
  json_object_set_new(o, "ts", json_integer((json_int_t)ln->ts));
  json_object_set_new(o, "job", json_string(s->job));
  json_object_set_new(o, "task", json_string(s->task));
  json_object_set_new(o, "pod", json_string(s->pod));
  json_object_set_new(o, "node", json_string(s->node));
  json_object_set_new(o, "attempt", json_integer(s->attempt));
  json_object_set_new(o, "stream", json_string(ln->err ? "stderr" : "stdout"));
  json_object_set_new(o, "text", cli_json_text(ln->text, ln->len));
  cli_put_json(o, NULL);
  json_decref(o);
}

static void
print_text(const logs *l, const bus_log_entry *ln) {
  if (l->prefix)
    printf("[%s] ", l->ll.srcs[ln->src].pod);
  if (l->timestamps) {
    char when[40];
    cli_format_time(ln->ts, when, sizeof when);
    printf("%s ", when);
  }
  fwrite(ln->text, 1, ln->len, stdout);
  putchar('\n');
}

/* Sort what was collected, print the last `keep` (-1: all), and drop it. */
static void
flush_lines(logs *l, long keep) {
  bus_log_lines *ll = &l->ll;
  bus_log_lines_sort(ll);
  size_t from = keep >= 0 && ll->n > (size_t)keep ? ll->n - (size_t)keep : 0;
  for (size_t i = from; i < ll->n; i++)
    l->json ? print_json(l, &ll->lines[i]) : print_text(l, &ll->lines[i]);
  bus_log_lines_clear(ll);
  fflush(stdout);
}

/* ------------------------------------------------------------- follow */

static int
terminal(const char *phase) {
  static const char *const ends[] = {"Succeeded", "Failed", "Stopped",
                                     "Skipped", NULL};
  for (int i = 0; ends[i]; i++)
    if (!strcmp(phase, ends[i]))
      return 1;
  return 0;
}

/* Track the Job's phase from the events of one fetch; 1 once ended. */
static int
job_ended(const bus_batch *b, int ended) {
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const bus_event *ev = bus_batch_event(b, i);
    char phase[32] = "";
    if (!ev)
      continue;
    if (!strcmp(ev->type, "job.deleted"))
      ended = 1;
    else if (!strcmp(ev->type, "job.submitted") ||
             !strcmp(ev->type, "job.resumed"))
      ended = 0;
    else if (!strcmp(ev->type, "job.phase") &&
             bus_obj_str(&ev->data, "phase", phase, sizeof phase))
      ended = terminal(phase);
  }
  return ended;
}

/* The Job of a Task or Pod that printed nothing yet: ask the scheduler. */
static void
lookup_job(lark_cli *cli, bus_conn *c, logs *l) {
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object reply;
  if (cli_describe_cmd(cli, c, l->kind, l->name, &z, &reply) == 0)
    bus_obj_str(bus_obj_get(&reply, "result"), "job", l->job, sizeof l->job);
  msgpack_zone_destroy(&z);
}

typedef struct follower {
  bus_reader *lr, *jr; /* logs, the Job's events */
  bus_batch *b;
  int ended;
  int64_t quiet_since; /* last lines, or the end, whichever is later */
} follower;

static int
open_job_reader(bus_conn *c, logs *l, follower *f) {
  char filter[BUS_SUBJECT_MAX];
  snprintf(filter, sizeof filter, "lark.ev.job.%s", l->job);
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = filter;
  o.follow = 1;
  return bus_reader_open(c, &o, &f->jr);
}

static int
follow_step(logs *l, follower *f) {
  int rc;
  if (f->jr) {
    rc = bus_reader_next(f->jr, f->b, 20);
    if (rc < 0 && rc != BUS_ETIMEOUT && rc != BUS_EEOF)
      return rc;
    int was = f->ended;
    f->ended = job_ended(f->b, f->ended);
    if (f->ended && !was)
      f->quiet_since = bus_mono_ms();
  }
  rc = bus_reader_next(f->lr, f->b, 200);
  if (rc < 0 && rc != BUS_ETIMEOUT && rc != BUS_EEOF)
    return rc;
  if (bus_batch_len(f->b)) {
    if ((rc = collect(l, f->b)) < 0)
      return rc;
    flush_lines(l, -1);
    f->quiet_since = bus_mono_ms();
  }
  return 0;
}

static int
follow(lark_cli *cli, bus_conn *c, logs *l, uint64_t from_seq) {
  follower f;
  memset(&f, 0, sizeof f);
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_LOGS";
  o.filter = l->filter;
  o.from_seq = from_seq;
  o.follow = 1;
  if (!l->job[0] && strcmp(l->kind, "job"))
    lookup_job(cli, c, l);
  int rc = bus_batch_new(&f.b);
  if (!rc)
    rc = bus_reader_open(c, &o, &f.lr);
  if (!rc && l->job[0])
    rc = open_job_reader(c, l, &f);
  else if (!rc)
    fprintf(stderr,
            "larkctl logs: the job of %s %s is not known yet; "
            "following until Ctrl-C\n",
            l->kind, l->name);
  while (!rc && !cli_interrupted() &&
         !(f.ended && bus_mono_ms() - f.quiet_since > GRACE_MS)) {
    rc = follow_step(l, &f);
    if (!rc && !f.jr && l->job[0])
      rc = open_job_reader(c, l, &f);
  }
  bus_reader_close(f.jr);
  bus_reader_close(f.lr);
  bus_batch_free(f.b);
  return rc ? cli_fail("logs", rc, "follow %s", l->filter) : CLI_OK;
}

/* ----------------------------------------------------------------- run */

/*
 * A pod's lines reach LARK_LOGS through its node's ingress and lark-logs,
 * apart from the phase the scheduler records: ask lark-logs to take what
 * the ingress holds now (logs.sync, up to 3 s while it is behind), so the
 * lines printed before this read, a finished pod's last ones included,
 * are stored when it starts. A lark-logs that does not answer leaves the
 * read as it was, said on stderr.
 */
static void
sync_ingress(lark_cli *cli, bus_conn *c) {
  if (lark_logs_sync(c, cli_user(cli)))
    fprintf(stderr,
            "larkctl logs: lark-logs did not say it took the lines on their "
            "way (%s): the last ones may be missing\n",
            bus_last_error());
}

/* Everything stored now; *end is the bound the read stopped at. */
static int
read_stored(bus_conn *c, logs *l, uint64_t *end) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_LOGS";
  o.filter = l->filter;
  o.since_ns = l->ll.since_ns;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  int rc = bus_batch_new(&b);
  if (!rc)
    rc = bus_reader_open(c, &o, &r);
  while (!rc && !cli_interrupted()) {
    rc = bus_reader_next(r, b, 5000);
    int crc = collect(l, b);
    if (crc < 0)
      rc = crc;
    if (rc == BUS_EEOF) {
      rc = 0;
      break;
    }
  }
  *end = r ? bus_reader_end_seq(r) : 0;
  bus_reader_close(r);
  bus_batch_free(b);
  return rc;
}

static int
parse_args(int argc, char **argv, logs *l) {
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    char *end;
    if (!strcmp(a, "-f") || !strcmp(a, "--follow"))
      l->follow = 1;
    else if (!strcmp(a, "--timestamps"))
      l->timestamps = 1;
    else if (!strcmp(a, "--since") && has) {
      if (cli_parse_time(argv[++i], &l->ll.since_ns) < 0)
        return cli_usage(USAGE);
    } else if (!strcmp(a, "--tail") && has) {
      l->tail = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || l->tail < 0)
        return cli_usage(USAGE);
    } else if (a[0] != '-' && npos < 2)
      (npos++ ? &l->name : &l->kind)[0] = a;
    else
      return cli_usage(USAGE);
  }
  if (npos != 2)
    return cli_usage(USAGE);
  return 0;
}

static int
make_filter(logs *l) {
  size_t max = strcmp(l->kind, "job") ? BUS_DERIVED_NAME_MAX : BUS_NAME_MAX;
  const char *fmt = !strcmp(l->kind, "job")    ? "lark.log.%s.>"
                    : !strcmp(l->kind, "task") ? "lark.log.*.%s.*"
                    : !strcmp(l->kind, "pod")  ? "lark.log.*.*.%s"
                                               : NULL;
  if (!fmt)
    return cli_usage(USAGE);
  if (!bus_name_valid(l->name, max))
    return cli_fail("logs", 0,
                    "'%s' is not a %s name (lowercase letters, digits "
                    "and '-')",
                    l->name, l->kind);
  snprintf(l->filter, sizeof l->filter, fmt, l->name);
  if (!strcmp(l->kind, "job"))
    snprintf(l->job, sizeof l->job, "%s", l->name);
  l->prefix = strcmp(l->kind, "pod") != 0;
  return 0;
}

int
cmd_logs(int argc, char **argv, lark_cli *cli) {
  logs l;
  memset(&l, 0, sizeof l);
  l.tail = -1;
  int rc = parse_args(argc, argv, &l);
  if (!rc)
    rc = make_filter(&l);
  if (rc)
    return rc;
  l.json = cli->output == CLI_OUT_JSON;
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  cli_catch_interrupt(0);
  uint64_t end = 0;
  sync_ingress(cli, c);
  rc = read_stored(c, &l, &end);
  if (rc)
    rc = cli_fail("logs", rc, "read LARK_LOGS %s", l.filter);
  else
    flush_lines(&l, l.tail);
  if (!rc && l.follow)
    rc = follow(cli, c, &l, end + 1);
  bus_log_lines_free(&l.ll);
  bus_conn_close(c);
  return rc;
}

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

#define USAGE                                                                  \
  "larkctl logs job|task|pod NAME [-f] [--since TIME] [--tail N] "             \
  "[--timestamps] [-o json]"
#define GRACE_MS 1500

typedef struct src {
  char job[BUS_NAME_MAX + 1];
  char task[BUS_DERIVED_NAME_MAX + 1];
  char pod[BUS_DERIVED_NAME_MAX + 1];
  char node[BUS_NAME_MAX + 1];
  uint32_t attempt;
} src;

typedef struct line {
  int64_t ts;
  uint64_t order; /* arrival: ties keep it */
  uint32_t src;
  int err; /* stderr */
  char *text;
  size_t len;
} line;

typedef struct logs {
  const char *kind, *name;
  char filter[BUS_SUBJECT_MAX];
  char job[BUS_NAME_MAX + 1]; /* the Job whose end ends -f; "" unknown */
  int follow, json, timestamps, prefix;
  int64_t since_ns;
  long tail; /* -1: all */
  line *lines;
  size_t n, cap;
  uint64_t order;
  src *srcs;
  size_t nsrc, srccap;
} logs;

/* ------------------------------------------------------------ collect */

static long
src_of(logs *l, const msgpack_object *d) {
  src s;
  memset(&s, 0, sizeof s);
  bus_obj_str(d, "job", s.job, sizeof s.job);
  bus_obj_str(d, "task", s.task, sizeof s.task);
  bus_obj_str(d, "pod", s.pod, sizeof s.pod);
  bus_obj_str(d, "node", s.node, sizeof s.node);
  s.attempt = (uint32_t)bus_obj_int(d, "attempt", 0);
  for (size_t i = l->nsrc; i-- > 0;)
    if (!memcmp(&l->srcs[i], &s, sizeof s))
      return (long)i;
  if (bus_grow(&l->srcs, l->nsrc, &l->srccap, sizeof *l->srcs, 16))
    return -1;
  l->srcs[l->nsrc] = s;
  return (long)l->nsrc++;
}

static int
add_line(logs *l, uint32_t s, const msgpack_object *o) {
  const msgpack_object *text = bus_obj_get(o, "text");
  char stream[8] = "";
  int64_t ts = bus_obj_int(o, "ts", 0);
  if (!text || text->type != MSGPACK_OBJECT_STR ||
      (l->since_ns && ts < l->since_ns))
    return 0;
  if (bus_grow(&l->lines, l->n, &l->cap, sizeof *l->lines, 1024))
    return -1;
  line *ln = &l->lines[l->n];
  ln->len = text->via.str.size;
  ln->text = malloc(ln->len + 1);
  if (!ln->text)
    return -1;
  memcpy(ln->text, text->via.str.ptr, ln->len);
  ln->text[ln->len] = 0;
  ln->ts = ts;
  ln->order = l->order++;
  ln->src = s;
  ln->err = bus_obj_str(o, "stream", stream, sizeof stream) &&
            !strcmp(stream, "stderr");
  l->n++;
  return 0;
}

/* The lines of every log.batch in b; other messages are skipped. */
static int
collect(logs *l, const bus_batch *b) {
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const bus_event *ev = bus_batch_event(b, i);
    if (!ev || strcmp(ev->type, "log.batch"))
      continue;
    const msgpack_object *ls = bus_obj_get(&ev->data, "lines");
    long s = src_of(l, &ev->data);
    if (s < 0)
      return -1;
    if (!l->job[0])
      snprintf(l->job, sizeof l->job, "%s", l->srcs[s].job);
    for (uint32_t k = 0;
         ls && ls->type == MSGPACK_OBJECT_ARRAY && k < ls->via.array.size; k++)
      if (add_line(l, (uint32_t)s, &ls->via.array.ptr[k]) < 0)
        return -1;
  }
  return 0;
}

/* -------------------------------------------------------------- print */

static int
by_time(const void *a, const void *b) {
  const line *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* JSON wants UTF-8: anything else in a line becomes '?'. */
static json_t *
json_text(const line *ln) {
  json_t *j = json_stringn(ln->text, ln->len);
  if (j)
    return j;
  char *copy = malloc(ln->len + 1);
  if (!copy)
    return json_null();
  for (size_t i = 0; i < ln->len; i++) {
    unsigned char ch = (unsigned char)ln->text[i];
    copy[i] = ch >= 0x80 || ch == 0 ? '?' : (char)ch;
  }
  j = json_stringn(copy, ln->len);
  free(copy);
  return j ? j : json_null();
}

static void
print_json(const logs *l, const line *ln) {
  const src *s = &l->srcs[ln->src];
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
  json_object_set_new(o, "text", json_text(ln));
  cli_put_json(o, NULL);
  json_decref(o);
}

static void
print_text(const logs *l, const line *ln) {
  if (l->prefix)
    printf("[%s] ", l->srcs[ln->src].pod);
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
  if (l->n > 1)
    qsort(l->lines, l->n, sizeof *l->lines, by_time);
  size_t from = keep >= 0 && l->n > (size_t)keep ? l->n - (size_t)keep : 0;
  for (size_t i = 0; i < l->n; i++) {
    if (i >= from)
      l->json ? print_json(l, &l->lines[i]) : print_text(l, &l->lines[i]);
    free(l->lines[i].text);
  }
  l->n = 0;
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
    if (collect(l, f->b) < 0)
      return bus_error(-12, "out of memory");
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

/* Everything stored now; *end is the bound the read stopped at. */
static int
read_stored(bus_conn *c, logs *l, uint64_t *end) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_LOGS";
  o.filter = l->filter;
  o.since_ns = l->since_ns;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  int rc = bus_batch_new(&b);
  if (!rc)
    rc = bus_reader_open(c, &o, &r);
  while (!rc && !cli_interrupted()) {
    rc = bus_reader_next(r, b, 5000);
    if (collect(l, b) < 0)
      rc = bus_error(-12, "out of memory");
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
      if (cli_parse_time(argv[++i], &l->since_ns) < 0)
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
  rc = read_stored(c, &l, &end);
  if (rc)
    rc = cli_fail("logs", rc, "read LARK_LOGS %s", l.filter);
  else
    flush_lines(&l, l.tail);
  if (!rc && l.follow)
    rc = follow(cli, c, &l, end + 1);
  for (size_t i = 0; i < l.n; i++)
    free(l.lines[i].text);
  free(l.lines);
  free(l.srcs);
  bus_conn_close(c);
  return rc;
}

/*
 * cmd_stages.c - larkctl get stages [JOB] and get peers JOB: what
 * lark-engine knows of a Job's RL loop.
 *
 *   larkctl get stages                   every Job's current stage
 *   larkctl get stages JOB [-w] [--limit N] [--at TIME] [-o json|yaml|wide]
 *   larkctl get peers JOB [--at TIME] [-o json|yaml|name]
 *
 * The answers are lark-engine's queries (stages.list, stages.get,
 * peers.get), live or, with --at, from a replay of the view "engine"
 * (query.c). -w prints the timeline, then follows lark.ev.engine.<JOB>
 * (cli_follow_events, as get -w follows): on its events it asks again and
 * prints each step that started or ended since. A step prints at most
 * twice: when it starts and when it ends.
 */
#include <stdlib.h>
#include <string.h>

#include "stages.h"

#define USAGE                                                                  \
  "larkctl get stages [JOB] [-w] [--limit N] [--at TIME] "                     \
  "[-o json|yaml|wide|name]\n"                                                 \
  "       larkctl get peers JOB [--at TIME] [-o json|yaml|wide|name]"

static const cli_col list_cols[] = {
    {"JOB", "job", COL_STR, 24},     {"MODE", "mode", COL_STR, 10},
    {"PHASE", "phase", COL_STR, 10}, {"STAGE", "stage", COL_STR, 15},
    {"STEP", "step", COL_INT, 6},    {"WEIGHTS", "weights", COL_INT, 8},
    {"ENDED", "ended", COL_JSON, 5}, {NULL, NULL, 0, 0}};
static const cli_kind stages_kind = {"stages",  "stages", "stage", "engine",
                                     list_cols, NULL,     "job"};

static const cli_col peer_cols[] = {{"POD", "pod", COL_STR, 30},
                                    {"TASK", "task", COL_STR, 24},
                                    {"ROLE", "role", COL_STR, 8},
                                    {"NODE", "node", COL_STR, 14},
                                    {"CLUSTER", "cluster", COL_STR, 10},
                                    {"ADDRESS", "address", COL_STR, 16},
                                    {"ATTEMPT", "attempt", COL_INT, 7},
                                    {"PHASE", "phase", COL_STR, 10},
                                    {NULL, NULL, 0, 0}};
static const cli_kind peers_kind = {"peers",   "peers", "peer", "engine",
                                    peer_cols, NULL,    "pod"};

int
cli_engine_kind(const char *typed) {
  return typed && (!strcmp(typed, "stages") || !strcmp(typed, "stage") ||
                   !strcmp(typed, "peers") || !strcmp(typed, "peer"));
}

static void
pack_name(bus_packbuf *b, const char *job, uint64_t limit) {
  bus_packbuf_init(b);
  msgpack_pack_map(&b->pk, job ? (limit ? 2 : 1) : 0);
  if (job)
    bus_pack_kv_str(&b->pk, "name", job);
  if (job && limit) {
    msgpack_pack_str_with_body(&b->pk, "limit", 5);
    msgpack_pack_uint64(&b->pk, limit);
  }
}

int
cli_stages_get(lark_cli *cli, const char *job, uint64_t limit, int64_t at_ns,
               int quiet, msgpack_zone *zone, msgpack_object *out) {
  bus_packbuf b;
  pack_name(&b, job, limit);
  cli_quiet(quiet);
  int rc = cli_query(cli, "engine", "stages", "get", &b.sb, at_ns, zone, out);
  cli_quiet(0);
  if (rc == CLI_OK && out->type != MSGPACK_OBJECT_MAP)
    rc = quiet ? CLI_ERR : cli_fail("get", 0, "stages.get: not a map");
  bus_packbuf_destroy(&b);
  return rc;
}

/* -o json|yaml: the answer itself; -o name: kind/JOB. */
static int
print_doc(const lark_cli *cli, const char *kind, const char *job,
          const msgpack_object *r) {
  if (cli->output == CLI_OUT_NAME) {
    printf("%s/%s\n", kind, job);
    return CLI_OK;
  }
  json_t *j = cli_obj_json(r);
  int rc = cli_print_doc(j, cli->output);
  json_decref(j);
  return rc;
}

/* ------------------------------------------------------------------ -w */

typedef struct follow {
  lark_cli *cli;
  const char *job;
  uint64_t limit;
  json_t *seen; /* "run/stage/step/ended" of every step printed */
} follow;

/* Print the steps of r not printed yet (all quiet: only remember). */
static void
print_new(follow *f, const msgpack_object *r, int quiet) {
  const msgpack_object *steps = bus_obj_get(r, "steps");
  for (uint32_t i = 0; steps && steps->type == MSGPACK_OBJECT_ARRAY &&
                       i < steps->via.array.size;
       i++) {
    const msgpack_object *s = &steps->via.array.ptr[i];
    char stage[32] = "", key[64];
    bus_obj_str(s, "stage", stage, sizeof stage);
    int ended = bus_obj_int(s, "ended", 0) != 0;
    snprintf(key, sizeof key, "%lld/%s/%lld/%d",
             (long long)bus_obj_int(s, "run", 0), stage,
             (long long)bus_obj_int(s, "step", 0), ended);
    if (json_object_get(f->seen, key))
      continue;
    json_object_set_new(f->seen, key, json_true());
    if (quiet)
      continue;
    if (f->cli->output == CLI_OUT_JSON || f->cli->output == CLI_OUT_YAML) {
      json_t *o = json_pack("{s:s, s:o}", "event", ended ? "ENDED" : "STARTED",
                            "object", cli_obj_json(s));
      cli_print_doc(o, f->cli->output);
      json_decref(o);
    } else {
      cli_stages_row(s, f->cli->output == CLI_OUT_WIDE);
    }
  }
  fflush(stdout);
}

/* Ask again; a failure is printed and the watch goes on. */
static void
requery(void *ud) {
  follow *f = ud;
  msgpack_zone zone;
  msgpack_zone_init(&zone, 8192);
  msgpack_object r;
  if (cli_stages_get(f->cli, f->job, f->limit, 0, 0, &zone, &r) == CLI_OK)
    print_new(f, &r, 0);
  msgpack_zone_destroy(&zone);
}

static int
watch_stages(follow *f, const msgpack_object *first) {
  char filter[BUS_SUBJECT_MAX];
  snprintf(filter, sizeof filter, "lark.ev.engine.%s", f->job);
  print_new(f, first, 1);
  return cli_follow_events(f->cli, filter, requery, f);
}

/* ------------------------------------------------------------- the gets */

static int
get_timeline(lark_cli *cli, const char *job, int64_t at, int watch,
             uint64_t limit) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 8192);
  msgpack_object r;
  int rc = cli_stages_get(cli, job, limit, at, 0, &zone, &r);
  if (rc == CLI_OK && cli->output != CLI_OUT_TEXT &&
      cli->output != CLI_OUT_WIDE)
    rc = print_doc(cli, "stages", job, &r);
  else if (rc == CLI_OK)
    cli_stages_print(&r, cli->output == CLI_OUT_WIDE);
  fflush(stdout);
  if (rc == CLI_OK && watch) {
    follow f = {.cli = cli, .job = job, .limit = limit, .seen = json_object()};
    rc = watch_stages(&f, &r);
    json_decref(f.seen);
  }
  msgpack_zone_destroy(&zone);
  return rc;
}

/* stages.list or peers.get: a table of the answer's items or peers. */
static int
get_table(lark_cli *cli, const cli_kind *k, const char *verb, const char *job,
          int64_t at) {
  bus_packbuf b;
  pack_name(&b, job, 0);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 8192);
  msgpack_object r;
  int rc = cli_query(cli, k->view, k->kind, verb, &b.sb, at, &zone, &r);
  const msgpack_object *rows =
      rc ? NULL : bus_obj_get(&r, job ? "peers" : "items");
  if (rc == CLI_OK && !rows)
    rc = cli_fail("get", 0, "%s.%s: an answer without %s", k->kind, verb,
                  job ? "peers" : "items");
  if (rc == CLI_OK)
    cli_print_table(rows, k, cli->output);
  msgpack_zone_destroy(&zone);
  bus_packbuf_destroy(&b);
  return rc;
}

int
cli_get_engine(lark_cli *cli, const char *typed, const char *job, int64_t at,
               int watch, uint64_t limit) {
  int peers = typed[0] == 'p';
  if ((peers && !job) || (watch && !job) || (watch && at))
    return cli_usage(USAGE);
  if (job && !bus_name_valid(job, BUS_NAME_MAX)) {
    fprintf(stderr, "larkctl get: %s: not a valid Job name ([a-z0-9-])\n", job);
    return CLI_USAGE;
  }
  if (peers)
    return get_table(cli, &peers_kind, "get", job, at);
  if (!job)
    return get_table(cli, &stages_kind, "list", NULL, at);
  return get_timeline(cli, job, at, watch, limit);
}

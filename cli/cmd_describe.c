/*
 * cmd_describe.c - larkctl describe: one object and its event history.
 *
 *   larkctl describe KIND NAME [--at TIME] [--limit N] [-o json|yaml|name]
 *
 * The object comes from the service that owns its kind (or the catalog),
 * printed as kubectl prints one (objprint.c): times as times, lists of
 * maps as tables. The Events, oldest first (the newest N with --limit),
 * are the catalog's history of the aggregate; a pod's are its whole story
 * from the subjects that carry it (podstory.c), a device's (NAME is
 * NODE/NAME) the events on its subject. A Job's RL loop, when
 * lark-engine answers for it, is a Stages section (stages_print.c).
 * -o json and -o yaml print {object, history[, events][, stages]}.
 */
#include <stdlib.h>
#include <string.h>

#include "stages.h"

#define USAGE                                                                  \
  "larkctl describe KIND NAME [--at TIME] [--limit N] [-o json|yaml|name]"

typedef struct args {
  const char *kind, *name;
  int64_t at;
  uint64_t limit;
} args;

static void
print_history(const msgpack_object *h) {
  printf("\nEvents:\n");
  if (!h || h->type != MSGPACK_OBJECT_ARRAY || !h->via.array.size) {
    printf("  <none>\n");
    return;
  }
  printf("  %-24s %-5s %-22s %-16s %-8s %-4s %s\n", "TIME", "AGE", "TYPE",
         "FROM", "SEQ", "GEN", "CAUSE");
  for (uint32_t i = 0; i < h->via.array.size; i++) {
    const msgpack_object *e = &h->via.array.ptr[i];
    char type[96], actor[96], cause[160], when[40], age[16];
    bus_obj_str(e, "type", type, sizeof type);
    bus_obj_str(e, "actor", actor, sizeof actor);
    bus_obj_str(e, "cause", cause, sizeof cause);
    cli_format_time(bus_obj_int(e, "ts", 0), when, sizeof when);
    cli_age(bus_obj_int(e, "ts", 0), age, sizeof age);
    printf("  %-24s %-5s %-22s %-16s %-8lld %-4lld %s\n", when, age, type,
           actor[0] ? actor : "-", (long long)bus_obj_int(e, "seq", 0),
           (long long)bus_obj_int(e, "generation", 0), cause[0] ? cause : "-");
  }
}

static void
pack_req(msgpack_sbuffer *sb, const char *k1, const char *v1, const char *k2,
         const char *v2, uint64_t limit) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, k1, strlen(k1));
  msgpack_pack_str_with_body(&pk, v1, strlen(v1));
  msgpack_pack_str_with_body(&pk, k2, strlen(k2));
  msgpack_pack_str_with_body(&pk, v2, strlen(v2));
  msgpack_pack_str_with_body(&pk, "limit", 5);
  msgpack_pack_uint64(&pk, limit);
}

/* The catalog's {aggregate, history} for kind/name; 0 when it has one.
 * A device NODE/NAME is the aggregate lark.ev.device.<node>.<name>. */
static int
catalog_entry(lark_cli *cli, const char *kind, const args *a,
              msgpack_zone *zone, msgpack_object *out) {
  char id[2 * BUS_DERIVED_NAME_MAX + 2];
  snprintf(id, sizeof id, "%s", a->name);
  if (!strcmp(kind, "device") && strchr(id, '/'))
    *strchr(id, '/') = '.';
  msgpack_sbuffer req;
  msgpack_sbuffer_init(&req);
  pack_req(&req, "kind", kind, "id", id, a->limit);
  int rc =
      cli_query(cli, "catalog", "catalog", "describe", &req, a->at, zone, out);
  msgpack_sbuffer_destroy(&req);
  return rc;
}

/* A pod's story (podstory.c), from its Job's submission: the Job says
 * when that was and which Domain its pods are in. */
static int
pod_story(lark_cli *cli, const args *a, const msgpack_object *pod,
          json_t **events) {
  char job[BUS_NAME_MAX + 1] = "", domain[BUS_NAME_MAX + 1] = "";
  bus_obj_str(pod, "job", job, sizeof job);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_sbuffer req;
  msgpack_sbuffer_init(&req);
  pack_req(&req, "name", job, "kind", "job", 0);
  msgpack_object res;
  int64_t since = 1;
  cli_quiet(1); /* a pod whose Job is gone still has a story */
  if (cli_query(cli, "scheduler", "job", "describe", &req, a->at, &zone,
                &res) == CLI_OK) {
    const msgpack_object *j = bus_obj_get(&res, "job");
    bus_obj_str(j, "domain", domain, sizeof domain);
    since = bus_obj_int(j, "ts", 0) > 1000000000
                ? bus_obj_int(j, "ts", 0) - 1000000000
                : 1;
  }
  cli_quiet(0);
  msgpack_sbuffer_destroy(&req);
  msgpack_zone_destroy(&zone);
  return cli_pod_story(cli, a->name, job, domain, since, a->at, events);
}

/* A device's story: the events on its own subject. */
static int
device_story(lark_cli *cli, const args *a, const msgpack_object *dev,
             json_t **events) {
  char node[BUS_NAME_MAX + 1] = "", name[BUS_NAME_MAX + 1] = "";
  bus_obj_str(dev, "node", node, sizeof node);
  bus_obj_str(dev, "name", name, sizeof name);
  return cli_device_story(cli, node, name, a->at, events);
}

static int
print(const char *kind, const args *a, const msgpack_object *object,
      const msgpack_object *history, json_t *events,
      const msgpack_object *stages, int output) {
  if (output == CLI_OUT_NAME) {
    printf("%s/%s\n", kind, a->name);
    return CLI_OK;
  }
  if (output == CLI_OUT_JSON || output == CLI_OUT_YAML) {
    json_t *all = json_pack(
        "{s:o, s:o}", "object", object ? cli_obj_json(object) : json_null(),
        "history", history ? cli_obj_json(history) : json_array());
    if (events)
      json_object_set(all, "events", events);
    if (stages)
      json_object_set_new(all, "stages", cli_obj_json(stages));
    int rc = cli_print_doc(all, output);
    json_decref(all);
    return rc;
  }
  if (object)
    cli_describe_print(object, 0);
  if (stages)
    cli_stages_section(stages);
  if (events)
    cli_print_story(events);
  else
    print_history(history);
  return CLI_OK;
}

static int
describe(lark_cli *cli, const args *a) {
  const cli_kind *k = cli_kind_find(a->kind);
  char single[BUS_NAME_MAX + 2];
  const char *kind =
      k ? k->kind : cli_kind_singular(a->kind, single, sizeof single);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object owned, cat;
  int rc = CLI_OK, have_cat;
  if (k) {
    msgpack_sbuffer req;
    msgpack_sbuffer_init(&req);
    pack_req(&req, "name", a->name, "kind", k->kind, 0);
    rc = cli_query(cli, k->view, k->kind, "describe", &req, a->at, &zone,
                   &owned);
    msgpack_sbuffer_destroy(&req);
  }
  if (rc == CLI_OK) {
    /* derived objects (a pod) may have no history of their own */
    cli_quiet(k != NULL); /* derived objects may have no history */
    have_cat = catalog_entry(cli, kind, a, &zone, &cat) == CLI_OK;
    cli_quiet(0);
    json_t *events = NULL;
    msgpack_object stages;
    /* lark-engine may not run, or know nothing of the Job: no section */
    int have_stages =
        k && !strcmp(k->kind, "job") &&
        cli_stages_get(cli, a->name, 0, a->at, 1, &zone, &stages) == CLI_OK;
    if (!k && !have_cat)
      rc = CLI_ERR;
    else if (k && !strcmp(k->kind, "pod"))
      rc = pod_story(cli, a, &owned, &events);
    else if (k && !strcmp(k->kind, "device"))
      rc = device_story(cli, a, &owned, &events);
    if (rc == CLI_OK)
      rc = print(kind, a, k ? &owned : bus_obj_get(&cat, "aggregate"),
                 have_cat ? bus_obj_get(&cat, "history") : NULL, events,
                 have_stages ? &stages : NULL, cli->output);
    json_decref(events);
  }
  msgpack_zone_destroy(&zone);
  return rc;
}

int
cmd_describe(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"--at", "--limit", NULL};
  const char *vals[2] = {NULL, NULL}, *pos[2];
  args a = {0};
  if (cli_take_args(argc, argv, 1, flags, vals, pos, 2) != 2 ||
      (vals[0] && cli_parse_time(vals[0], &a.at) < 0))
    return cli_usage(USAGE);
  a.kind = pos[0];
  a.name = pos[1];
  if (vals[1])
    a.limit = strtoull(vals[1], NULL, 10);
  return describe(cli, &a);
}

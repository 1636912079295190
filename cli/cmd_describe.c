/*
 * cmd_describe.c - larkctl describe: one object and its event history.
 *
 *   larkctl describe KIND NAME [--at TIME] [--limit N] [-o json]
 *
 * The object comes from the service that owns its kind (or the catalog);
 * the history, oldest first (the newest N with --limit), from the catalog.
 */
#include <stdlib.h>
#include <string.h>

#include "kinds.h"

#define USAGE "larkctl describe KIND NAME [--at TIME] [--limit N] [-o json]"

typedef struct args {
  const char *kind, *name;
  int64_t at;
  uint64_t limit;
} args;

static void
print_history(const msgpack_object *h) {
  printf("\nEvents:\n  %-8s %-24s %-22s %-4s %-16s %s\n", "SEQ", "TIME", "TYPE",
         "GEN", "ACTOR", "CAUSE");
  for (uint32_t i = 0;
       h && h->type == MSGPACK_OBJECT_ARRAY && i < h->via.array.size; i++) {
    const msgpack_object *e = &h->via.array.ptr[i];
    char type[96], actor[96], cause[160], when[40];
    bus_obj_str(e, "type", type, sizeof type);
    bus_obj_str(e, "actor", actor, sizeof actor);
    bus_obj_str(e, "cause", cause, sizeof cause);
    cli_format_time(bus_obj_int(e, "ts", 0), when, sizeof when);
    printf("  %-8lld %-24s %-22s %-4lld %-16s %s\n",
           (long long)bus_obj_int(e, "seq", 0), when, type,
           (long long)bus_obj_int(e, "generation", 0), actor[0] ? actor : "-",
           cause[0] ? cause : "-");
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

/* The catalog's {aggregate, history} for kind/name; 0 when it has one. */
static int
catalog_entry(lark_cli *cli, const char *kind, const args *a,
              msgpack_zone *zone, msgpack_object *out) {
  msgpack_sbuffer req;
  msgpack_sbuffer_init(&req);
  pack_req(&req, "kind", kind, "id", a->name, a->limit);
  int rc =
      cli_query(cli, "catalog", "catalog", "describe", &req, a->at, zone, out);
  msgpack_sbuffer_destroy(&req);
  return rc;
}

static int
print(const msgpack_object *object, const msgpack_object *history, int output) {
  if (output == CLI_OUT_JSON) {
    char *o = object ? cli_obj_to_json(object) : NULL;
    char *h = history ? cli_obj_to_json(history) : NULL;
    printf("{\"object\":%s,\"history\":%s}\n", o ? o : "null", h ? h : "[]");
    free(o);
    free(h);
    return CLI_OK;
  }
  if (object)
    cli_print_object(object, 0);
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
    if (!k && !have_cat)
      rc = CLI_ERR;
    else
      rc = print(k ? &owned : bus_obj_get(&cat, "aggregate"),
                 have_cat ? bus_obj_get(&cat, "history") : NULL, cli->output);
  }
  msgpack_zone_destroy(&zone);
  return rc;
}

int
cmd_describe(int argc, char **argv, lark_cli *cli) {
  args a = {0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--at") && i + 1 < argc) {
      if (cli_parse_time(argv[++i], &a.at) < 0)
        return cli_usage(USAGE);
    } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      a.limit = strtoull(argv[++i], NULL, 10);
    } else if (argv[i][0] != '-' && !a.kind) {
      a.kind = argv[i];
    } else if (argv[i][0] != '-' && !a.name) {
      a.name = argv[i];
    } else {
      return cli_usage(USAGE);
    }
  }
  if (!a.kind || !a.name)
    return cli_usage(USAGE);
  return describe(cli, &a);
}

/*
 * cmd_describe.c - larkctl describe: one aggregate and its history.
 *
 *   larkctl describe KIND NAME [--at TIME] [--limit N] [-o json]
 *
 * Shows what the catalog holds (version, generation, events, last event)
 * and the accepted events, oldest first (the newest N with --limit).
 */
#include <stdlib.h>
#include <string.h>

#include "catalog_read.h"

#define USAGE "larkctl describe KIND NAME [--at TIME] [--limit N] [-o json]"

static void
print_field(const char *label, const msgpack_object *a, const char *key) {
  const msgpack_object *v = bus_obj_get(a, key);
  char *j = v ? cli_obj_to_json(v) : NULL;
  printf("%-12s %s\n", label, j ? j : "-");
  free(j);
}

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

static int
print_result(const msgpack_object *r, int output) {
  if (output == CLI_OUT_JSON) {
    char *j = cli_obj_to_json(r);
    puts(j ? j : "{}");
    free(j);
    return CLI_OK;
  }
  const msgpack_object *a = bus_obj_get(r, "aggregate");
  if (!a)
    return cli_fail("describe", 0, "catalog reply without the aggregate");
  char when[40];
  cli_format_time(bus_obj_int(a, "ts", 0), when, sizeof when);
  print_field("Kind:", a, "kind");
  print_field("Name:", a, "id");
  print_field("Version:", a, "version");
  print_field("Generation:", a, "generation");
  print_field("Events:", a, "events");
  print_field("Last:", a, "type");
  printf("%-12s %s\n", "Time:", when);
  print_field("Actor:", a, "actor");
  print_field("Deleted:", a, "deleted");
  print_history(bus_obj_get(r, "history"));
  return CLI_OK;
}

int
cmd_describe(int argc, char **argv, lark_cli *cli) {
  cli_catalog_q q = {0};
  char kind[BUS_NAME_MAX + 2];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--at") && i + 1 < argc) {
      if (cli_parse_time(argv[++i], &q.at_ns) < 0)
        return cli_usage(USAGE);
    } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      q.limit = strtoull(argv[++i], NULL, 10);
    } else if (argv[i][0] != '-' && !q.kind) {
      q.kind = cli_kind_singular(argv[i], kind, sizeof kind);
    } else if (argv[i][0] != '-' && !q.id) {
      q.id = argv[i];
    } else {
      return cli_usage(USAGE);
    }
  }
  if (!q.kind || !q.id)
    return cli_usage(USAGE);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object r;
  int rc = cli_catalog_fetch(cli, "describe", &q, &zone, &r);
  if (rc == CLI_OK)
    rc = print_result(&r, cli->output);
  msgpack_zone_destroy(&zone);
  return rc;
}

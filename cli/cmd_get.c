/*
 * cmd_get.c - larkctl get: aggregates from the catalog.
 *
 *   larkctl get [KIND] [--at TIME] [--limit N] [-o json|wide]
 *
 * KIND is singular or plural (job, jobs). --at shows the platform as it
 * was at TIME (a replay of the catalog up to then).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog_read.h"

#define USAGE "larkctl get [KIND] [--at TIME] [--limit N] [-o json|wide]"

static void
age(int64_t ts, char *out, size_t cap) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t s = (now.tv_sec * 1000000000LL + now.tv_nsec - ts) / 1000000000LL;
  if (s < 0)
    s = 0;
  if (s < 120)
    snprintf(out, cap, "%llds", (long long)s);
  else if (s < 7200)
    snprintf(out, cap, "%lldm", (long long)(s / 60));
  else if (s < 172800)
    snprintf(out, cap, "%lldh", (long long)(s / 3600));
  else
    snprintf(out, cap, "%lldd", (long long)(s / 86400));
}

static void
print_row(const msgpack_object *a, int wide) {
  char kind[64], id[256], type[96], actor[96], when[40], ago[16];
  bus_obj_str(a, "kind", kind, sizeof kind);
  bus_obj_str(a, "id", id, sizeof id);
  bus_obj_str(a, "type", type, sizeof type);
  bus_obj_str(a, "actor", actor, sizeof actor);
  int64_t ts = bus_obj_int(a, "ts", 0);
  age(ts, ago, sizeof ago);
  printf("%-10s %-28s %-8lld %-4lld %-7lld %-22s %-6s", kind, id,
         (long long)bus_obj_int(a, "version", 0),
         (long long)bus_obj_int(a, "generation", 0),
         (long long)bus_obj_int(a, "events", 0), type, ago);
  if (wide) {
    cli_format_time(ts, when, sizeof when);
    printf(" %-16s %s", actor, when);
  }
  putchar('\n');
}

static int
print_items(const msgpack_object *items, int output) {
  if (items->type != MSGPACK_OBJECT_ARRAY)
    return cli_fail("get", 0, "catalog reply is not a list");
  if (output == CLI_OUT_JSON) {
    char *j = cli_obj_to_json(items);
    puts(j ? j : "[]");
    free(j);
    return CLI_OK;
  }
  printf("%-10s %-28s %-8s %-4s %-7s %-22s %-6s%s\n", "KIND", "NAME", "VERSION",
         "GEN", "EVENTS", "LAST", "AGE",
         output == CLI_OUT_WIDE ? " ACTOR            TIME" : "");
  for (uint32_t i = 0; i < items->via.array.size; i++)
    print_row(&items->via.array.ptr[i], output == CLI_OUT_WIDE);
  return CLI_OK;
}

int
cmd_get(int argc, char **argv, lark_cli *cli) {
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
    } else {
      return cli_usage(USAGE);
    }
  }
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object items;
  int rc = cli_catalog_fetch(cli, "list", &q, &zone, &items);
  if (rc == CLI_OK)
    rc = print_items(&items, cli->output);
  msgpack_zone_destroy(&zone);
  return rc;
}

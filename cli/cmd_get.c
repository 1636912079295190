/*
 * cmd_get.c - larkctl get: resources, live or as they were.
 *
 *   larkctl get [KIND [NAME]] [--at TIME] [--limit N] [-w]
 *               [-o json|yaml|wide|name]
 *   larkctl get routes DOMAIN [--cluster C]     what C's relay sees
 *   larkctl get stages [JOB] | peers JOB        lark-engine's (cmd_stages.c)
 *
 * A kind owned by a service (see kinds.c) is listed by that service; any
 * other kind, and `get` alone, lists the catalog's aggregates. KIND may be
 * singular, plural or short. --at shows the platform as it was at TIME.
 * -w (--watch) then prints a row for each change until Ctrl-C (watch.c).
 * -o wide adds columns; for pods, the virtual IP lark-ipam gave each
 * (podvip.c). -o name prints kind/name per line, -o yaml the JSON form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages.h"

/* what cli_parse_time takes, for the usage error */
#define CLI_TIME_FORMS                                                         \
  "a time (2026-11-29T10:00:00Z, 2026-11-29, unix seconds, or a duration "     \
  "back from now: 30s, 5m, 2h, 1d)"
#define USAGE                                                                  \
  "larkctl get [KIND [NAME]] [--at TIME] [--limit N] [-w] "                    \
  "[-o json|yaml|wide|name]\n"                                                 \
  "       larkctl get routes|domainpeers DOMAIN [--cluster C]\n"               \
  "       larkctl get stages [JOB] [-w] | get peers JOB"

/* Whether name names one object, which then must be there (as kubectl
 * says NotFound). For pods and tasks it may name their Job (or Task), for
 * routes and domain peers their Domain, for devices their node (NODE or
 * NODE/NAME): a filter, which may match none. */
static int
names_one(const cli_kind *k, const char *name) {
  static const char *const filters[] = {"pod", "task", "route", "domainpeer",
                                        "device"};
  for (size_t i = 0; name && i < sizeof filters / sizeof *filters; i++)
    if (!strcmp(k->kind, filters[i]))
      return 0;
  return name != NULL;
}

int
cmd_get(int argc, char **argv, lark_cli *cli) {
  const char *kind = NULL, *name = NULL, *cluster = NULL;
  char scoped[2 * BUS_NAME_MAX + 2];
  int64_t at = 0;
  uint64_t limit = 0;
  int watch = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--at") && i + 1 < argc) {
      if (cli_parse_time(argv[++i], &at) < 0) {
        fprintf(stderr, "larkctl get: --at %s: not %s\n", argv[i],
                CLI_TIME_FORMS);
        return cli_usage(USAGE);
      }
    } else if (!strcmp(argv[i], "--cluster") && i + 1 < argc) {
      cluster = argv[++i];
    } else if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
      char *end;
      const char *v = argv[++i];
      limit = strtoull(v, &end, 10);
      if (!*v || *end || *v == '-') {
        fprintf(stderr, "larkctl get: --limit %s: not a count\n", v);
        return cli_usage(USAGE);
      }
    } else if (!strcmp(argv[i], "-w") || !strcmp(argv[i], "--watch")) {
      watch = 1;
    } else if (argv[i][0] != '-' && !kind) {
      kind = argv[i];
    } else if (argv[i][0] != '-' && !name) {
      name = argv[i];
    } else {
      return cli_usage(USAGE);
    }
  }
  if ((watch && at) || (cluster && !name))
    return cli_usage(USAGE);
  if (cli_engine_kind(kind) && !cluster)
    return cli_get_engine(cli, kind, name, at, watch, limit);
  if (cluster) { /* the ipam view names a (domain, cluster) "d.c" */
    snprintf(scoped, sizeof scoped, "%s.%s", name, cluster);
    name = scoped;
  }
  const cli_kind *k = kind ? cli_kind_find(kind) : NULL;
  char single[BUS_NAME_MAX + 2] = "";
  if (kind && !k)
    cli_kind_singular(kind, single, sizeof single);

  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, k ? "name" : "kind", k ? (name ? name : "") : single);
  bus_pack_kv_str(&b.pk, k ? "kind" : "id", k ? k->kind : (name ? name : ""));
  msgpack_pack_str_with_body(&b.pk, "limit", 5);
  msgpack_pack_uint64(&b.pk, limit);

  const cli_kind *show = k ? k : &cli_catalog_kind;
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object items;
  int rc =
      cli_query(cli, show->view, show->kind, "list", &b.sb, at, &zone, &items);
  if (rc == CLI_OK)
    items = *cli_list_items(&items);
  if (rc == CLI_OK && cli->output == CLI_OUT_WIDE && !strcmp(show->kind, "pod"))
    cli_pod_vips(cli, at, &items, &zone);
  if (rc == CLI_OK && names_one(show, name) && !watch &&
      items.type == MSGPACK_OBJECT_ARRAY && items.via.array.size == 0) {
    fprintf(stderr, "larkctl get: %s/%s: not found\n", k ? k->kind : single,
            name);
    rc = CLI_ERR;
  } else if (rc == CLI_OK) {
    cli_print_table(&items, show, cli->output);
  }
  if (rc == CLI_OK && watch)
    rc = cli_watch(cli, show, &b.sb, &items);
  msgpack_zone_destroy(&zone);
  bus_packbuf_destroy(&b);
  return rc;
}

/*
 * catalog_read.c - how get and describe read the catalog: from the live
 * lark-catalog service, or, with --at TIME, from a replay of the catalog
 * up to that time into a temporary directory (the platform as it was).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "catalog_read.h"
#include "replay.h"

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static int
local_query(bus_conn *c, const char *verb, const cli_catalog_q *q,
            msgpack_sbuffer *sb) {
  char dir[512];
  const char *base = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/larkctl-at-XXXXXX",
           base && *base ? base : "/tmp");
  if (!mkdtemp(dir))
    return cli_fail(verb, -1, "temporary directory");
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = dir;
  o.until_ns = q->at_ns;
  lark_replay_result res;
  const lark_view_entry *ve = lark_view_find("catalog");
  int rc = lark_replay_run(c, ve, &o, &res);
  bus_view *v = NULL;
  if (!rc) {
    bus_view_def def;
    ve->def(&def);
    bus_view_opts vo;
    bus_view_opts_init(&vo);
    vo.dir = dir;
    vo.effects = 0;
    rc = bus_view_open(&v, &def, &vo);
  }
  if (!rc) {
    msgpack_packer pk;
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    bus_txn *t;
    if (!(rc = bus_view_read(v, &t))) {
      rc = !strcmp(verb, "list")
               ? catalog_list(t, q->kind, q->limit, &pk)
               : catalog_describe(t, q->kind, q->id, q->limit, &pk);
      bus_txn_end(t);
    }
  }
  bus_view_close(v);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc == BUS_ENOT_FOUND)
    return cli_fail(verb, 0, "%s/%s did not exist at that time", q->kind,
                    q->id);
  return rc ? cli_fail(verb, rc, "replay of the catalog") : CLI_OK;
}

static void
pack_query(const cli_catalog_q *q, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, "kind", 4);
  msgpack_pack_str_with_body(&pk, q->kind ? q->kind : "",
                             q->kind ? strlen(q->kind) : 0);
  msgpack_pack_str_with_body(&pk, "id", 2);
  msgpack_pack_str_with_body(&pk, q->id ? q->id : "",
                             q->id ? strlen(q->id) : 0);
  msgpack_pack_str_with_body(&pk, "limit", 5);
  msgpack_pack_uint64(&pk, q->limit);
}

int
cli_catalog_fetch(lark_cli *cli, const char *verb, const cli_catalog_q *q,
                  msgpack_zone *zone, msgpack_object *out) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc;
  if (q->at_ns) {
    rc = local_query(c, verb, q, &sb);
    if (!rc && msgpack_unpack(sb.data, sb.size, NULL, zone, out) < 0)
      rc = cli_fail(verb, 0, "catalog record malformed");
  } else {
    msgpack_object reply;
    pack_query(q, &sb);
    rc = cli_call(cli, c, "catalog", verb, &sb, zone, &reply);
    const msgpack_object *r =
        rc ? NULL
           : bus_obj_get(&reply, !strcmp(verb, "list") ? "items" : "result");
    if (!rc && !r)
      rc = cli_fail(verb, 0, "catalog reply without a result");
    if (r)
      *out = *r;
  }
  msgpack_sbuffer_destroy(&sb);
  bus_conn_close(c);
  return rc;
}

const char *
cli_kind_singular(const char *kind, char *buf, size_t cap) {
  snprintf(buf, cap, "%s", kind);
  size_t n = strlen(buf);
  if (n > 3 && buf[n - 1] == 's')
    buf[n - 1] = 0;
  return buf;
}

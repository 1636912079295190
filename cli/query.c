/*
 * query.c - reads of a view, live or as it was.
 *
 * Live, the view's service answers lark.cmd.<user>.<kind>.<verb>. With
 * --at TIME, larkctl rebuilds the view up to TIME into a temporary
 * directory and runs the very same query function on it: the platform as
 * it was, without touching any live view.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"
#include "replay.h"

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* Unpack a reply kept in zone; on {error} print it and return CLI_ERR. */
static int
take_result(const char *verb, const void *buf, size_t len, msgpack_zone *zone,
            msgpack_object *result) {
  void *keep = msgpack_zone_malloc(zone, len ? len : 1);
  msgpack_object r;
  if (!keep)
    return cli_fail(verb, 0, "out of memory");
  memcpy(keep, buf, len);
  if (msgpack_unpack(keep, len, NULL, zone, &r) < 0)
    return cli_fail(verb, 0, "malformed reply");
  const msgpack_object *err = bus_obj_get(&r, "error");
  if (err) {
    char code[64] = "", msg[512] = "";
    bus_obj_str(err, "code", code, sizeof code);
    bus_obj_str(err, "message", msg, sizeof msg);
    return cli_fail(verb, 0, "%s: %s", code, msg);
  }
  const msgpack_object *res = bus_obj_get(&r, "result");
  if (!res)
    return cli_fail(verb, 0, "reply without a result");
  *result = *res;
  return CLI_OK;
}

static int
open_replayed(bus_conn *c, const lark_view_entry *ve, const char *dir,
              int64_t at_ns, bus_view **v) {
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = dir;
  o.until_ns = at_ns;
  lark_replay_result res;
  int rc = lark_replay_run(c, ve, &o, &res);
  if (rc)
    return rc;
  bus_view_def def;
  ve->def(&def);
  bus_view_opts vo;
  bus_view_opts_init(&vo);
  vo.dir = dir;
  vo.effects = 0;
  return bus_view_open(v, &def, &vo);
}

static int
query_past(bus_conn *c, const char *view, const char *kind, const char *verb,
           const msgpack_sbuffer *req, int64_t at_ns, msgpack_zone *zone,
           msgpack_object *result) {
  const lark_view_entry *ve = lark_view_find(view);
  if (!ve || !ve->query)
    return cli_fail(verb, 0, "view %s cannot be read at a past time", view);
  char dir[512];
  const char *base = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/larkctl-at-XXXXXX",
           base && *base ? base : "/tmp");
  if (!mkdtemp(dir))
    return cli_fail(verb, -1, "temporary directory");
  bus_view *v = NULL;
  int rc = open_replayed(c, ve, dir, at_ns, &v);
  if (rc) {
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return cli_fail(verb, rc, "replay of %s", view);
  }
  msgpack_zone rz;
  msgpack_zone_init(&rz, 1024);
  msgpack_object obj = {.type = MSGPACK_OBJECT_MAP};
  if (req && req->size)
    msgpack_unpack(req->data, req->size, NULL, &rz, &obj);
  msgpack_sbuffer out;
  msgpack_sbuffer_init(&out);
  bus_query_answer(v, ve->query, kind, verb, &obj, &out, NULL);
  bus_view_close(v);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  int crc = take_result(verb, out.data, out.size, zone, result);
  msgpack_sbuffer_destroy(&out);
  msgpack_zone_destroy(&rz);
  return crc;
}

int
cli_query(lark_cli *cli, const char *view, const char *kind, const char *verb,
          const msgpack_sbuffer *req, int64_t at_ns, msgpack_zone *zone,
          msgpack_object *result) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int rc;
  if (at_ns) {
    rc = query_past(c, view, kind, verb, req, at_ns, zone, result);
  } else {
    msgpack_object reply;
    rc = cli_call(cli, c, kind, verb, req, zone, &reply);
    const msgpack_object *res = rc ? NULL : bus_obj_get(&reply, "result");
    if (!rc && !res)
      rc = cli_fail(verb, 0, "reply without a result");
    if (res)
      *result = *res;
  }
  bus_conn_close(c);
  return rc;
}

/*
 * cmd_snapshot.c - larkctl snapshot: a compacted copy of a live view.
 *
 *   larkctl snapshot VIEW [--out PATH]
 *
 * The service writes the copy on its own host (PATH must not exist; by
 * default <data>/snapshots/<view>-<unix time>), with the applied sequence
 * inside; `larkctl replay VIEW --from-snapshot PATH` continues from it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"

#define USAGE "larkctl snapshot VIEW [--out PATH]"

static void
default_path(lark_cli *cli, const char *view, char *out, size_t cap) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/snapshots", cli->data);
  mkdir(dir, 0700);
  char *abs = realpath(dir, NULL);
  snprintf(out, cap, "%s/%s-%lld", abs ? abs : dir, view,
           (long long)time(NULL));
  free(abs);
}

int
cmd_snapshot(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"--out", NULL};
  const char *view = NULL, *out = NULL;
  if (cli_take_args(argc, argv, 1, flags, &out, &view, 1) != 1 ||
      !bus_name_valid(view, BUS_NAME_MAX))
    return cli_usage(USAGE);
  char path[PATH_MAX], subject[160];
  if (!out)
    default_path(cli, view, path, sizeof path);
  else
    snprintf(path, sizeof path, "%s", out);
  snprintf(subject, sizeof subject, "lark.sys.snapshot.%s", view);

  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  msgpack_pack_str_with_body(&b.pk, "path", 4);
  msgpack_pack_str_with_body(&b.pk, path, strlen(path));
  bus_conn *c = cli_connect(cli);
  void *reply = NULL;
  size_t len = 0;
  int rc = c ? bus_conn_request(c, subject, b.sb.data, b.sb.size, 30000, &reply,
                                &len)
             : BUS_ECONN;
  bus_packbuf_destroy(&b);
  bus_conn_close(c);
  if (rc)
    return cli_fail("snapshot", rc,
                    "no answer on %s: is the %s service "
                    "running?",
                    subject, view);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  msgpack_object r = {.type = MSGPACK_OBJECT_NIL};
  int ok =
      msgpack_unpack(reply, len, NULL, &zone, &r) >= 0 && bus_obj_get(&r, "ok");
  if (!ok) {
    char msg[512] = "malformed reply";
    const msgpack_object *e = bus_obj_get(&r, "error");
    if (e)
      bus_obj_str(e, "message", msg, sizeof msg);
    msgpack_zone_destroy(&zone);
    free(reply);
    return cli_fail("snapshot", 0, "%s: %s", view, msg);
  }
  long long seq = (long long)bus_obj_int(&r, "seq", 0);
  if (cli->output == CLI_OUT_JSON)
    printf("{\"view\":\"%s\",\"path\":\"%s\",\"seq\":%lld}\n", view, path, seq);
  else
    printf("snapshot of %s at seq %lld: %s\n", view, seq, path);
  msgpack_zone_destroy(&zone);
  free(reply);
  return CLI_OK;
}

/*
 * cmd_camera.c - larkctl camera capture: one frame of a node's camera.
 *
 *   larkctl camera capture NODE/CAM -o FILE [--timeout 10s]
 *
 * A core-NATS request on lark.dev.<node>.camera.<cam>.capture, answered
 * by that node's lark-edge with the JPEG (at most 1 MiB): the frame
 * crosses the broker as the reply and is stored nowhere; the node reports
 * camera.captured. Only admin may ask (deploy/policy.c). After `camera`,
 * -o is the file to write ("-": standard output), as after `emit` --data
 * is the report; `larkctl -o json camera capture ...` prints the result
 * as JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define USAGE "larkctl camera capture NODE/CAM -o FILE [--timeout 10s]"

enum { CAPTURE_WAIT_MS = 10000 };

static int
split(const char *arg, char *node, char *cam) {
  const char *slash = arg ? strchr(arg, '/') : NULL;
  if (!slash || (size_t)(slash - arg) > BUS_NAME_MAX)
    return -1;
  memcpy(node, arg, (size_t)(slash - arg));
  node[slash - arg] = 0;
  snprintf(cam, BUS_NAME_MAX + 1, "%s", slash + 1);
  return bus_name_valid(node, BUS_NAME_MAX) && bus_name_valid(cam, BUS_NAME_MAX)
             ? 0
             : -1;
}

static int
write_frame(const char *path, const msgpack_object *frame) {
  const char *data = frame->via.bin.ptr;
  size_t len = frame->via.bin.size;
  if (strcmp(path, "-"))
    return bus_file_write(path, data, len, 0644);
  return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0
             ? 0
             : bus_error(-EIO, "standard output");
}

/* The reply: the frame written to path, or why not (printed). */
static int
take_reply(lark_cli *cli, const void *reply, size_t len, const char *what,
           const char *path) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 1024);
  msgpack_object r = {.type = MSGPACK_OBJECT_NIL};
  char msg[512] = "malformed reply";
  int rc = CLI_ERR;
  const msgpack_object *frame = NULL, *e;
  if (msgpack_unpack(reply, len, NULL, &zone, &r) < 0)
    cli_fail("camera", 0, "%s: %s", what, msg);
  else if ((e = bus_obj_get(&r, "error"))) {
    bus_obj_str(e, "message", msg, sizeof msg);
    cli_fail("camera", 0, "%s: %s", what, msg);
  } else if (!(frame = bus_obj_get(&r, "frame")) ||
             frame->type != MSGPACK_OBJECT_BIN)
    cli_fail("camera", 0, "%s: %s", what, msg);
  else if ((rc = write_frame(path, frame)))
    rc = cli_fail("camera", rc, "cannot write %s", path);
  else {
    long long w = bus_obj_int(&r, "width", 0), h = bus_obj_int(&r, "height", 0);
    FILE *out = strcmp(path, "-") ? stdout : stderr;
    if (cli->output == CLI_OUT_JSON)
      fprintf(out,
              "{\"camera\":\"%s\",\"width\":%lld,\"height\":%lld,"
              "\"format\":\"jpeg\",\"bytes\":%u,\"file\":\"%s\"}\n",
              what, w, h, frame->via.bin.size, path);
    else
      fprintf(out, "%s: %lldx%lld jpeg, %u bytes -> %s\n", what, w, h,
              frame->via.bin.size, path);
  }
  msgpack_zone_destroy(&zone);
  return rc;
}

int
cmd_camera(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"-o", "--timeout", NULL};
  const char *vals[2] = {NULL, NULL}, *pos[2] = {NULL, NULL};
  char node[BUS_NAME_MAX + 1], cam[BUS_NAME_MAX + 1], subject[256];
  int64_t wait_ns = (int64_t)CAPTURE_WAIT_MS * 1000000;
  if (cli_take_args(argc, argv, 1, flags, vals, pos, 2) != 2 || !vals[0] ||
      strcmp(pos[0], "capture") || split(pos[1], node, cam) ||
      (vals[1] && (bus_duration_parse(vals[1], 1e9, &wait_ns) || wait_ns <= 0)))
    return cli_usage(USAGE);
  snprintf(subject, sizeof subject, "lark.dev.%s.camera.%s.capture", node, cam);
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(c, subject, "\x80", 1, (int)(wait_ns / 1000000),
                            &reply, &len);
  bus_conn_close(c);
  if (rc == BUS_EDENIED)
    return cli_fail("camera", rc, "%s/%s: only admin may capture", node, cam);
  if (rc)
    return cli_fail("camera", rc,
                    "no answer on %s: is node %s's lark-edge running with "
                    "camera %s?",
                    subject, node, cam);
  rc = take_reply(cli, reply, len, pos[1], vals[0]);
  free(reply);
  return rc;
}

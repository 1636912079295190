/*
 * queries.c - reads of lark-devices' view: robot.status, device.list and
 * device.get. The same function answers live (lark-devices) and on a
 * replay; it only reads. A device on a NotReady node shows the state
 * Unknown: what it last reported may no longer be so. get and describe
 * name a device NODE/NAME (list: NODE or NODE/NAME as a filter).
 */
#include <stdio.h>
#include <string.h>

#include "larkdevices-int.h"

/* One row (larkdevices.h). */
static int
pack_row(bus_txn *t, const dev_rec *d, msgpack_packer *pk) {
  bus_map m;
  bus_map_begin(&m, pk);
  char id[DEV_KEY_SZ];
  dev_key(d->node, d->name, id);
  bus_map_str(&m, "id", id); /* its identity across nodes */
  bus_map_str(&m, "node", d->node);
  bus_map_str(&m, "name", d->name);
  bus_map_str(&m, "kind", dev_kind_name(d->kind));
  bus_map_str(&m, "state", dev_state_name(d, dev_node_down(t, d->node)));
  bus_map_str(&m, "mode",
              d->kind == DEV_CAMERA ? ""
              : d->mode[0]          ? d->mode
              : d->nmodes           ? d->modes[0]
                                    : "");
  bus_map_str(&m, "holder", d->holder);
  msgpack_pack_int64(bus_map_key(&m, "ts"), d->ts);
  if (d->kind == DEV_CAMERA) {
    bus_map_uint(&m, "width", d->width);
    bus_map_uint(&m, "height", d->height);
    bus_map_uint(&m, "fps", d->fps);
    bus_map_str(&m, "source", d->source);
    bus_map_uint(&m, "frames", d->frames);
    bus_map_uint(&m, "bytes", d->bytes);
    return bus_map_end(&m);
  }
  bus_map_str(&m, "robot", d->name);
  msgpack_packer *mp = bus_map_key(&m, "modes");
  msgpack_pack_array(mp, d->nmodes);
  for (int i = 0; i < d->nmodes && i < DEV_MODES_MAX; i++)
    bus_pack_str(mp, d->modes[i]);
  bus_map_str(&m, "desired", d->running ? "Running" : "Stopped");
  bus_map_str(&m, "runningMode", d->ran);
  bus_map_uint(&m, "resets", d->resets);
  bus_map_uint(&m, "restarts", d->restarts);
  bus_map_uint(&m, "version", d->version);
  if (d->has_exit)
    msgpack_pack_int64(bus_map_key(&m, "exitCode"), d->exit_code);
  return bus_map_end(&m);
}

typedef struct rows {
  bus_txn *t;
  bus_packbuf b;
  uint32_t n;
  int robots;       /* robots only */
  const char *name; /* this one only, when set */
} rows;

static int
add_row(const dev_rec *d, void *ud) {
  rows *r = ud;
  if ((r->robots && d->kind == DEV_CAMERA) ||
      (r->name && strcmp(r->name, d->name)))
    return 0;
  r->n++;
  return pack_row(r->t, d, &r->b.pk);
}

/* {items: [rows]} of node's devices (every node's when empty). */
static int
items(bus_txn *t, const char *node, const char *name, int robots,
      msgpack_packer *pk) {
  rows r = {.t = t, .robots = robots, .name = name && name[0] ? name : NULL};
  bus_packbuf_init(&r.b);
  int rc = dev_each(t, node, add_row, &r);
  if (!rc) {
    msgpack_pack_map(pk, 1);
    bus_pack_str(pk, "items");
    msgpack_pack_array(pk, r.n);
    bus_pack_raw(pk, r.b.sb.data, r.b.sb.size);
  }
  bus_packbuf_destroy(&r.b);
  return rc;
}

static int
get(bus_txn *t, const char *node, const char *name, msgpack_packer *pk) {
  dev_rec d;
  int rc = dev_get(t, node, name, &d);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no device %s/%s", node, name);
  if (rc)
    return rc;
  msgpack_pack_map(pk, 1);
  bus_pack_str(pk, "item");
  return pack_row(t, &d, pk);
}

/* NODE or NODE/NAME, as get and describe name a device (name). */
static void
split(const msgpack_object *req, char *node, char *name) {
  char both[2 * DEV_NAME_SZ] = "";
  bus_obj_str(req, "name", both, sizeof both);
  char *slash = strchr(both, '/');
  if (slash)
    *slash = 0;
  snprintf(node, DEV_NAME_SZ, "%.*s", DEV_NAME_SZ - 1, both);
  snprintf(name, DEV_NAME_SZ, "%.*s", DEV_NAME_SZ - 1, slash ? slash + 1 : "");
}

int
devices_query(bus_txn *t, const char *kind, const char *verb,
              const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)ud;
  char node[DEV_NAME_SZ] = "", name[DEV_NAME_SZ] = "";
  if (!strcmp(kind, "device") &&
      (!strcmp(verb, "describe") || !bus_obj_get(req, "node")))
    split(req, node, name);
  else
    bus_obj_str(req, "node", node, sizeof node);
  if (!strcmp(kind, "device") && !strcmp(verb, "describe")) {
    dev_rec d;
    int rc = dev_get(t, node, name, &d);
    if (rc == BUS_ENOT_FOUND)
      return bus_error(rc, "no device %s/%s", node, name);
    return rc ? rc : pack_row(t, &d, pk);
  }
  if (!strcmp(kind, "robot") && !strcmp(verb, "status")) {
    bus_obj_str(req, "robot", name, sizeof name);
    return items(t, node, name, 1, pk);
  }
  if (!strcmp(kind, "device") && !strcmp(verb, "list"))
    return items(t, node, name, 0, pk);
  if (!strcmp(kind, "device") && !strcmp(verb, "get")) {
    bus_obj_str(req, "name", name, sizeof name);
    if (!node[0] || !name[0])
      return bus_error(BUS_EMISSING, "device.get needs node and name");
    return get(t, node, name, pk);
  }
  return bus_error(BUS_EINVAL, "unknown verb %s.%s", kind, verb);
}

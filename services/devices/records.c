/*
 * records.c - lark-devices' rows: devices and holding pods read and
 * written whole, their keys, the walk over a node's devices, and the
 * names the rows show.
 */
#include <stdio.h>
#include <string.h>

#include "larkdevices-int.h"

void
dev_copy(char *dst, size_t cap, bus_str s) {
  bus_str_copy(s, dst, cap);
}

size_t
dev_key(const char *node, const char *name, char *key) {
  int n = snprintf(key, DEV_KEY_SZ, "%s/%s", node, name);
  return n < 0 ? 0 : (size_t)n >= DEV_KEY_SZ ? DEV_KEY_SZ - 1 : (size_t)n;
}

static int
rec_get(bus_txn *t, const char *table, const char *key, size_t klen, void *r,
        size_t sz) {
  const void *v;
  size_t len;
  int rc = bus_txn_get(t, table, key, klen, &v, &len);
  if (rc)
    return rc;
  if (len != sz || ((const uint8_t *)v)[0] != DEV_LAYOUT)
    return bus_error(BUS_ECORRUPT, "%s %.*s: unknown layout", table, (int)klen,
                     key);
  memcpy(r, v, sz);
  return 0;
}

int
dev_get(bus_txn *t, const char *node, const char *name, dev_rec *d) {
  char key[DEV_KEY_SZ];
  return rec_get(t, "devices", key, dev_key(node, name, key), d, sizeof *d);
}

int
dev_put(bus_txn *t, const dev_rec *d) {
  char key[DEV_KEY_SZ];
  return bus_txn_put(t, "devices", key, dev_key(d->node, d->name, key), d,
                     sizeof *d);
}

int
dev_pod_get(bus_txn *t, const char *pod, pod_rec *p) {
  return rec_get(t, "pods", pod, strlen(pod), p, sizeof *p);
}

int
dev_pod_put(bus_txn *t, const pod_rec *p) {
  return bus_txn_put(t, "pods", p->pod, strlen(p->pod), p, sizeof *p);
}

int
dev_node_down(bus_txn *t, const char *node) {
  const void *v;
  size_t len;
  return bus_txn_get(t, "nodes", node, strlen(node), &v, &len) == 0 &&
         len == 1 && *(const char *)v == 'N';
}

static const char *const kinds[] = {"", "ros", "ros2", "camera"};

const char *
dev_kind_name(int kind) {
  return kind > 0 && kind <= DEV_CAMERA ? kinds[kind] : "";
}

int
dev_kind_of(bus_str s) {
  for (int k = DEV_ROS; k <= DEV_CAMERA; k++)
    if (bus_str_eq(s, kinds[k]))
      return k;
  return 0;
}

static const char *const states[] = {
    "Stopped", "Running", "Exited", "Restarting", "Closed", "Open", "Error"};

const char *
dev_state_name(const dev_rec *d, int node_down) {
  if (node_down)
    return "Unknown";
  return d->state <= DEV_S_ERROR ? states[d->state] : "Unknown";
}

int
dev_has_mode(const dev_rec *d, const char *mode) {
  for (int i = 0; i < d->nmodes && i < DEV_MODES_MAX; i++)
    if (!strcmp(d->modes[i], mode))
      return 1;
  return 0;
}

int
dev_subject_names(const char *subject, char *node, char *name) {
  static const char pre[] = "lark.ev.device.";
  if (strncmp(subject, pre, sizeof pre - 1))
    return BUS_EINVAL;
  const char *p = subject + sizeof pre - 1, *dot = strchr(p, '.');
  if (!dot || (size_t)(dot - p) >= DEV_NAME_SZ ||
      strlen(dot + 1) >= DEV_NAME_SZ)
    return BUS_EINVAL;
  memcpy(node, p, (size_t)(dot - p));
  node[dot - p] = 0;
  strcpy(name, dot + 1);
  return 0;
}

typedef struct each {
  dev_fn fn;
  void *ud;
} each;

static int
each_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  each *e = ud;
  dev_rec d;
  if (vl != sizeof d || ((const uint8_t *)v)[0] != DEV_LAYOUT)
    return 0;
  memcpy(&d, v, sizeof d);
  return e->fn(&d, e->ud);
}

int
dev_each(bus_txn *t, const char *node, dev_fn fn, void *ud) {
  char prefix[DEV_NAME_SZ + 1];
  size_t plen = 0;
  if (node && node[0])
    plen = (size_t)snprintf(prefix, sizeof prefix, "%s/", node);
  each e = {fn, ud};
  return bus_txn_scan(t, "devices", prefix, plen, each_cb, &e);
}

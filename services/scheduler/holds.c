/*
 * holds.c - the named devices bound pods hold, in the view's `held` table:
 * key "<node>/<device>" (`edge-1/robot/arm-1`), value the holder pod's
 * name.
 *
 * Rows are written when job.placed binds a pod (Binding.devices) and
 * deleted when the pod gives its capacity back (sched_pod_release), so the
 * table follows the log alone and a replay rebuilds it byte for byte. A
 * view whose log never bound a named device has no row, and its digest is
 * what it was before the table existed. A node name holds no '/', so the
 * prefix "<node>/" is exactly that node's rows, in device-name order.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler.h"

#define HELD "held"
#define KEY_SZ (SCHED_NAME_SZ + SCHED_DEV_SZ)

/* "<node>/<device>" into key; its length, 0 when it does not fit. */
static size_t
hold_key(char *key, const char *node, bus_str dev) {
  int n = snprintf(key, KEY_SZ, "%s/%.*s", node, (int)dev.len, dev.ptr);
  return n > 0 && n < KEY_SZ ? (size_t)n : 0;
}

int
sched_hold_devices(bus_txn *t, const pod_rec *p, const bus_str_list *devs) {
  char key[KEY_SZ];
  for (uint32_t i = 0; i < devs->n; i++) {
    size_t kl = hold_key(key, p->node, devs->v[i]);
    if (!kl)
      continue; /* the schema bounds a device's name: never so long */
    int rc = bus_txn_put(t, HELD, key, kl, p->name, strlen(p->name));
    if (rc)
      return rc;
  }
  return 0;
}

typedef struct walk {
  size_t skip; /* the prefix's length */
  const char *pod;
  sched_hold_cb cb;
  void *ud;
} walk;

static int
visit(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  walk *w = ud;
  char dev[SCHED_DEV_SZ];
  if (kl <= w->skip || kl - w->skip >= sizeof dev)
    return 0;
  if (w->pod && (vl != strlen(w->pod) || memcmp(v, w->pod, vl)))
    return 0;
  memcpy(dev, (const char *)k + w->skip, kl - w->skip);
  dev[kl - w->skip] = 0;
  return w->cb(dev, w->ud);
}

int
sched_each_hold(bus_txn *t, const char *node, const char *pod, sched_hold_cb cb,
                void *ud) {
  char prefix[SCHED_NAME_SZ + 1];
  int n = snprintf(prefix, sizeof prefix, "%s/", node);
  walk w = {(size_t)n, pod, cb, ud};
  return bus_txn_scan(t, HELD, prefix, (size_t)n, visit, &w);
}

typedef struct mine {
  char dev[SCHED_MAX_DEVICES * 2][SCHED_DEV_SZ];
  int n;
} mine;

static int
collect(const char *dev, void *ud) {
  mine *m = ud;
  if (m->n < (int)(sizeof m->dev / sizeof *m->dev))
    snprintf(m->dev[m->n++], SCHED_DEV_SZ, "%s", dev);
  return 0;
}

int
sched_drop_holds(bus_txn *t, const pod_rec *p) {
  mine m;
  char key[KEY_SZ];
  m.n = 0;
  if (!p->node[0])
    return 0;
  /* collected first: rows are not deleted under the scan's cursor */
  int rc = sched_each_hold(t, p->node, p->name, collect, &m);
  for (int i = 0; i < m.n && !rc; i++) {
    size_t kl = hold_key(key, p->node, bus_str_of(m.dev[i]));
    rc = bus_txn_del(t, HELD, key, kl);
  }
  return rc;
}

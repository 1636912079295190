/*
 * apply.c - lark-devices' apply, dispatched by event type: what nodes
 * registered (their devices), their readiness, who holds which device
 * (job.placed's Binding.devices) and when the holder ends (its pod's
 * terminal phase, its Job unplaced or deleted). The device events
 * themselves are apply_device.c.
 *
 * apply is pure: no clock, no broker. A device keeps its desired and
 * observed state across its node's registrations; a device the node no
 * longer declares is dropped with what was queued for it. A holder ends
 * with its pod's terminal phase, its Job unplaced or deleted, or its node
 * NotReady (the scheduler's NodeLost). When a holder ends while its robot
 * should run, the robot gets an `ending` row and
 * decide stops it with a robot.commanded of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larkdevices-int.h"

static const char *const tables[] = {"devices", "nodes", "pods",
                                     "ending",  "desq",  NULL};

/* The <id> of lark.ev.<kind>.<id>. */
static const char *
subject_id(const char *subject) {
  const char *p = strlen(subject) > 8 ? strchr(subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

/* ------------------------------------------------------------- nodes */

/* A device dropped from its node: its row, its queued desired state and
 * its pending stop. */
static int
drop_device(bus_txn *t, const dev_rec *d) {
  char key[DEV_KEY_SZ + 8];
  size_t n = dev_key(d->node, d->name, key + 8);
  int rc = bus_txn_del(t, "ending", key + 8, n);
  if (!rc && d->version) {
    bus_put_be64((unsigned char *)key, d->version);
    rc = bus_txn_del(t, "desq", key, n + 8);
  }
  return rc ? rc : bus_txn_del(t, "devices", key + 8, n);
}

typedef struct stale {
  const bus_device_list *keep;
  bus_txn *t;
} stale;

static int
drop_unlisted(const dev_rec *d, void *ud) {
  stale *s = ud;
  for (uint32_t i = 0; i < s->keep->n; i++)
    if (bus_str_eq(s->keep->v[i].name, d->name))
      return 0;
  return drop_device(s->t, d);
}

/* A registered device: new, or the same one with its declaration again. */
static int
register_device(bus_txn *t, const char *node, const bus_device *dv,
                int64_t ts) {
  char name[DEV_NAME_SZ];
  dev_copy(name, sizeof name, dv->name);
  int kind = dev_kind_of(dv->kind);
  if (!kind || !bus_name_valid(name, BUS_NAME_MAX))
    return 0;
  dev_rec d;
  int rc = dev_get(t, node, name, &d);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  if (rc || (d.kind == DEV_CAMERA) != (kind == DEV_CAMERA)) {
    memset(&d, 0, sizeof d);
    d.layout = DEV_LAYOUT;
    snprintf(d.node, sizeof d.node, "%s", node);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.state = kind == DEV_CAMERA ? DEV_S_CLOSED : DEV_S_STOPPED;
    d.ts = ts;
  }
  d.kind = (uint8_t)kind;
  memset(d.modes, 0, sizeof d.modes);
  d.nmodes = 0;
  for (uint32_t i = 0; dv->has_modes && i < dv->modes.n && i < DEV_MODES_MAX;
       i++)
    dev_copy(d.modes[d.nmodes++], DEV_NAME_SZ, dv->modes.v[i]);
  memset(d.source, 0, sizeof d.source);
  if (dv->has_source)
    dev_copy(d.source, sizeof d.source, dv->source);
  d.width = (uint32_t)dv->width;
  d.height = (uint32_t)dv->height;
  d.fps = (uint32_t)dv->fps;
  return dev_put(t, &d);
}

static int
apply_registered(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_node_res *r = data;
  const char *node = subject_id(ev->subject);
  if (!bus_name_valid(node, BUS_NAME_MAX))
    return 0;
  bus_device_list none = {NULL, 0};
  stale s = {r->spec.has_devices ? &r->spec.devices : &none, t};
  int rc = dev_each(t, node, drop_unlisted, &s);
  for (uint32_t i = 0; !rc && i < s.keep->n; i++)
    rc = register_device(t, node, &s.keep->v[i], ev->ts);
  return rc ? rc : bus_txn_put(t, "nodes", node, strlen(node), "R", 1);
}

/* ------------------------------------------------------------ holders */

/* The pod ended: it holds nothing more; a robot it held that should run
 * is to be stopped (decide). */
static int
end_pod(bus_txn *t, const char *pod, int64_t ts) {
  pod_rec p;
  int rc = dev_pod_get(t, pod, &p);
  if (rc)
    return rc == BUS_ENOT_FOUND ? 0 : rc;
  for (int i = 0; !rc && i < p.ndev && i < DEV_HELD_MAX; i++) {
    dev_rec d;
    if (dev_get(t, p.node, p.devs[i], &d) || strcmp(d.holder, p.pod))
      continue;
    d.holder[0] = 0;
    d.ts = ts;
    if (d.kind != DEV_CAMERA && d.running) {
      char key[DEV_KEY_SZ];
      rc = bus_txn_put(t, "ending", key, dev_key(d.node, d.name, key), p.pod,
                       strlen(p.pod));
    }
    rc = rc ? rc : dev_put(t, &d);
  }
  return rc ? rc : bus_txn_del(t, "pods", p.pod, strlen(p.pod));
}

static int
apply_pod_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_pod_phase *e = data;
  const char *pod = subject_id(ev->subject);
  pod_rec p;
  if (!bus_str_eq(e->phase, "Succeeded") && !bus_str_eq(e->phase, "Failed") &&
      !bus_str_eq(e->phase, "Stopped"))
    return 0;
  if (dev_pod_get(t, pod, &p) || !bus_str_eq(e->node, p.node))
    return 0; /* holds nothing, or from a node it has left */
  return end_pod(t, pod, ev->ts);
}

/* One binding's named devices: "robot/<n>" and "camera/<n>" of its node. */
static int
hold(bus_txn *t, const bus_binding *b, const char *job, int64_t ts) {
  pod_rec p;
  char pod[DEV_DNAME_SZ];
  dev_copy(pod, sizeof pod, b->pod);
  /* placed again without an end seen: what it held before, it holds no
   * more (the view never keeps a holder its pod does not list) */
  int rc = end_pod(t, pod, ts);
  if (rc)
    return rc;
  memset(&p, 0, sizeof p);
  p.layout = DEV_LAYOUT;
  dev_copy(p.pod, sizeof p.pod, b->pod);
  dev_copy(p.node, sizeof p.node, b->node);
  snprintf(p.job, sizeof p.job, "%s", job);
  for (uint32_t i = 0; !rc && i < b->devices.n && p.ndev < DEV_HELD_MAX; i++) {
    char full[DEV_NAME_SZ + 8];
    dev_copy(full, sizeof full, b->devices.v[i]);
    char *slash = strchr(full, '/');
    dev_rec d;
    if (!slash || dev_get(t, p.node, slash + 1, &d))
      continue; /* not a device this view knows */
    *slash = 0;
    if (strcmp(full, d.kind == DEV_CAMERA ? "camera" : "robot"))
      continue; /* robot/<a camera>: not this device */
    snprintf(d.holder, sizeof d.holder, "%s", p.pod);
    d.ts = ts;
    snprintf(p.devs[p.ndev++], DEV_NAME_SZ, "%s", d.name);
    rc = dev_put(t, &d);
  }
  return rc || !p.ndev ? rc : dev_pod_put(t, &p);
}

static int
apply_placed(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_placed *e = data;
  char job[DEV_NAME_SZ];
  dev_copy(job, sizeof job, e->job);
  int rc = 0;
  for (uint32_t i = 0; !rc && i < e->bindings.n; i++)
    if (e->bindings.v[i].has_devices && e->bindings.v[i].devices.n)
      rc = hold(t, &e->bindings.v[i], job, ev->ts);
  return rc;
}

typedef struct names {
  char (*v)[DEV_DNAME_SZ];
  size_t n, cap;
} names;

static int
collect(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  names *ns = ud;
  (void)v;
  if (vl != sizeof(pod_rec) || kl >= DEV_DNAME_SZ)
    return 0;
  if (bus_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 16))
    return -ENOMEM;
  memcpy(ns->v[ns->n], k, kl);
  ns->v[ns->n++][kl] = 0;
  return 0;
}

/* Every pod of job (named <job>-...), or every pod on node, ends. */
static int
end_pods(bus_txn *t, const char *job, const char *node, int64_t ts) {
  char prefix[DEV_NAME_SZ + 1] = "";
  int plen = job ? snprintf(prefix, sizeof prefix, "%s-", job) : 0;
  names ns = {NULL, 0, 0};
  int rc = bus_txn_scan(t, "pods", prefix, (size_t)plen, collect, &ns);
  for (size_t i = 0; !rc && i < ns.n; i++) {
    pod_rec p;
    if (!dev_pod_get(t, ns.v[i], &p) && (!job || !strcmp(p.job, job)) &&
        (!node || !strcmp(p.node, node)))
      rc = end_pod(t, ns.v[i], ts);
  }
  free(ns.v);
  return rc;
}

/* A node NotReady: its devices' state is unknown, and its pods lose what
 * they hold, as the scheduler fails them (NodeLost) and gives their
 * capacity back. A deleted node the same, for good: its row stays, so
 * what the outbox still has for its stream finds it made again (the
 * scheduler removes it again). */
static int
apply_readiness(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  const char *node = subject_id(ev->subject);
  int down = ev->t == BUS_T_NODE_NOTREADY || ev->t == BUS_T_NODE_DELETED;
  if (!bus_name_valid(node, BUS_NAME_MAX))
    return 0;
  int rc = bus_txn_put(t, "nodes", node, strlen(node), down ? "N" : "R", 1);
  return rc || !down ? rc : end_pods(t, NULL, node, ev->ts);
}

static int
apply_unplaced(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  char job[DEV_NAME_SZ];
  dev_copy(job, sizeof job, ((const bus_ev_job_unplaced *)data)->job);
  return end_pods(t, job, NULL, ev->ts);
}

static int
apply_job_deleted(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  return end_pods(t, subject_id(ev->subject), NULL, ev->ts);
}

/* ------------------------------------------------------------ dispatch */

/* The types the view applies, indexed by the event's type (BUS_T_*). */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_CAMERA_CAPTURED] = dev_apply_camera,
        [BUS_T_CAMERA_CLOSED] = dev_apply_camera,
        [BUS_T_CAMERA_ERROR] = dev_apply_camera,
        [BUS_T_CAMERA_OPENED] = dev_apply_camera,
        [BUS_T_JOB_DELETED] = apply_job_deleted,
        [BUS_T_JOB_PLACED] = apply_placed,
        [BUS_T_JOB_UNPLACED] = apply_unplaced,
        [BUS_T_NODE_DELETED] = apply_readiness,
        [BUS_T_NODE_NOTREADY] = apply_readiness,
        [BUS_T_NODE_READY] = apply_readiness,
        [BUS_T_NODE_REGISTERED] = apply_registered,
        [BUS_T_POD_PHASE] = apply_pod_phase,
        [BUS_T_ROBOT_COMMANDED] = dev_apply_commanded,
        [BUS_T_ROBOT_EXITED] = dev_apply_robot,
        [BUS_T_ROBOT_RESTARTED] = dev_apply_robot,
        [BUS_T_ROBOT_STARTED] = dev_apply_robot,
        [BUS_T_ROBOT_STOPPED] = dev_apply_robot,
        [BUS_T_ROBOT_SWITCHED] = dev_apply_robot,
    }};

int
devices_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
devices_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "devices",
                        .tables = tables,
                        .apply = devices_apply,
                        .decide = devices_decide,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>"};
}

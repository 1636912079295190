/*
 * fuzz_devview.c - libFuzzer harness for lark-devices' view
 * (services/devices): what nodes register, the placement log, pods'
 * phases, node readiness and the device events, applied in any order
 * with any contents the schema lets through.
 *
 * The input is one msgpack array of events, each [type, node, name,
 * data]: type one of the event types the view applies, node and name the
 * tokens of its subject (lark.ev.device.<node>.<name>, lark.ev.node.<node>,
 * lark.ev.pod.<name>, lark.ev.job.<name>, lark.ev.placement.default), data
 * its map. Each is applied on top of its subject's version (so none is
 * stale) in a live view (decide runs), which must never fail as a store;
 * then the view must hold together: every holder a device names is a pod
 * the view has on that node, holding it; every list and row answers.
 * The view is made anew every 512 inputs, so it stays small, and removed
 * at exit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "bus.h"
#include "larkdevices-int.h"
#include "schema-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static bus_view *view;
static uint64_t seq;
static unsigned inputs;

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_devview: %s: %s\n", what, bus_last_error());
  abort();
}

/* The view and its directory gone (between views, and at exit). */
static void
drop_view(void) {
  char cmd[96];
  bus_view_close(view);
  view = NULL;
  if (dir[0]) {
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
      fail("cannot remove the view");
  }
  dir[0] = 0;
}

static void
fresh_view(void) {
  if (!dir[0])
    atexit(drop_view);
  drop_view();
  snprintf(dir, sizeof dir, "/tmp/fuzz-devview-XXXXXX");
  if (!mkdtemp(dir))
    fail("mkdtemp");
  bus_view_def def;
  devices_view_def(&def);
  bus_view_opts o;
  bus_view_opts_init(&o);
  o.dir = dir;
  o.nosync = 1;
  o.map_size = (size_t)64 << 20;
  if (bus_view_open(&view, &def, &o))
    fail("open");
  seq = 0;
}

/* The subject of type for node and name; 0 when it has none. */
static int
subject_of(bus_type t, const char *node, const char *name, char *out,
           size_t cap) {
  const char *type = bus_type_name(t);
  if (!strncmp(type, "robot.", 6) || !strncmp(type, "camera.", 7))
    snprintf(out, cap, "lark.ev.device.%s.%s", node, name);
  else if (!strncmp(type, "node.", 5))
    snprintf(out, cap, "lark.ev.node.%s", node);
  else if (t == BUS_T_POD_PHASE)
    snprintf(out, cap, "lark.ev.pod.%s", name);
  else if (t == BUS_T_JOB_DELETED)
    snprintf(out, cap, "lark.ev.job.%s", name);
  else if (t == BUS_T_JOB_PLACED || t == BUS_T_JOB_UNPLACED)
    snprintf(out, cap, "lark.ev.placement.default");
  else
    return 0;
  return 1;
}

static void
str_of(const msgpack_object *o, char *out, size_t cap) {
  out[0] = 0;
  if (o->type == MSGPACK_OBJECT_STR && o->via.str.size < cap) {
    memcpy(out, o->via.str.ptr, o->via.str.size);
    out[o->via.str.size] = 0;
  }
}

static void
apply_one(const msgpack_object *e) {
  char type[64], node[80], name[300], subject[BUS_SUBJECT_MAX], id[33];
  if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 4)
    return;
  const msgpack_object *f = e->via.array.ptr;
  str_of(&f[0], type, sizeof type);
  str_of(&f[1], node, sizeof node);
  str_of(&f[2], name, sizeof name);
  bus_type t = bus_type_of(type);
  if (!t || !bus_name_valid(node, BUS_NAME_MAX) ||
      !bus_name_valid(name, BUS_DERIVED_NAME_MAX) ||
      !subject_of(t, node, name, subject, sizeof subject))
    return;
  bus_txn *tx;
  bus_version ver = {0};
  if (bus_view_read(view, &tx))
    fail("read");
  bus_txn_version(tx, subject, &ver);
  bus_txn_end(tx);
  seq++;
  snprintf(id, sizeof id, "%032llx", (unsigned long long)seq);
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = (int64_t)seq,
                  .actor = "fuzz",
                  .cause = "c",
                  .prev = ver.seq,
                  .data = f[3],
                  .subject = subject,
                  .seq = seq};
  const bus_event *evs[1] = {&ev};
  if (bus_view_apply(view, evs, 1))
    fail("apply failed as a store");
}

/* Every holder a device names is a pod the view has there, holding it. */
static int
holder_held(const dev_rec *d, void *ud) {
  bus_txn *t = ud;
  pod_rec p;
  if (!d->holder[0])
    return 0;
  if (dev_pod_get(t, d->holder, &p) || strcmp(p.node, d->node))
    fail("a device's holder is no pod of its node");
  for (int i = 0; i < p.ndev && i < DEV_HELD_MAX; i++)
    if (!strcmp(p.devs[i], d->name))
      return 0;
  fail("a device's holder does not hold it");
  return 0;
}

static void
check(void) {
  bus_txn *t;
  if (bus_view_read(view, &t))
    fail("read");
  dev_each(t, NULL, holder_held, t);
  bus_txn_end(t);
  msgpack_sbuffer out;
  msgpack_sbuffer_init(&out);
  msgpack_object none = {.type = MSGPACK_OBJECT_NIL};
  bus_query_answer(view, devices_query, "device", "list", &none, &out, NULL);
  bus_query_answer(view, devices_query, "robot", "status", &none, &out, NULL);
  msgpack_sbuffer_destroy(&out);
  uint8_t digest[32];
  uint64_t at;
  if (bus_view_digest(view, digest, &at) || at != seq)
    fail("digest");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!view || ++inputs % 512 == 0)
    fresh_view();
  if (size > BUS_MAX_PAYLOAD || bus__mp_scan(data, size))
    return 0;
  msgpack_unpacked up;
  msgpack_unpacked_init(&up);
  if (msgpack_unpack_next(&up, (const char *)data, size, NULL) ==
          MSGPACK_UNPACK_SUCCESS &&
      up.data.type == MSGPACK_OBJECT_ARRAY) {
    for (uint32_t i = 0; i < up.data.via.array.size && i < 64; i++)
      apply_one(&up.data.via.array.ptr[i]);
    check();
  }
  msgpack_unpacked_destroy(&up);
  return 0;
}

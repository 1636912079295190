/*
 * fuzz_sched.c - libFuzzer harness for the scheduler's readers of outside
 * input and the placement of what they read (services/scheduler: a Node
 * an edge registers, a Job a user applies), devices above all.
 *
 * The input is a msgpack resource, passed through the structural scan the
 * decoder uses (so the unpacker's allocations stay bounded). A Node is read
 * and, when taken, must hold only what its rules allow (each named device a
 * `robot/` or `camera/` key of capacity 1, the class counting them all); a
 * fixed Job asking for devices by name, by class and as bare counts is then
 * placed on it. A Job is read and placed on fixed nodes with robots, cameras
 * and a subnet. Either way a placement that fits must pack as job.placed, read
 * back and book on a second copy of the nodes to the same allocations, and
 * releasing both must leave every count at zero; one that does not fit must
 * leave the nodes untouched. Any violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"
#include "model.h"
#include "placement.h"
#include "schema-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_sched: %s: %s\n", what, bus_last_error());
  abort();
}

/* What a taken node may hold. */
static void
check_node(const sched_node *n) {
  uint32_t named = 0;
  for (int i = 0; i < n->capacity.ndevices; i++) {
    const sched_device *d = &n->capacity.devices[i];
    int key = sched_device_key(d->name);
    if ((d->flags & SCHED_DEV_NAMED) != (key == SCHED_KEY_NAMED) ||
        ((d->flags & SCHED_DEV_NAMED) && d->count != 1))
      fail("a named device is not what its key says");
    named += (d->flags & SCHED_DEV_NAMED) != 0;
  }
  if (named != n->nnamed ||
      sched_resources_device(&n->capacity, SCHED_DEVICE_CLASS) < named)
    fail("the class does not count the named devices");
}

static int
all_free(const sched_nodes *s) {
  for (size_t i = 0; i < s->n; i++) {
    const sched_node *n = s->v[i];
    if (n->cpu_used_m || n->memory_used_mib || n->gpu_taken || n->pods)
      return 0;
    for (int d = 0; d < n->capacity.ndevices; d++)
      if (n->dev_used[d])
        return 0;
  }
  return 1;
}

static void
same_use(const sched_nodes *a, const sched_nodes *b) {
  for (size_t i = 0; i < a->n; i++)
    for (int d = 0; d < a->v[i]->capacity.ndevices; d++)
      if (a->v[i]->dev_used[d] != b->v[i]->dev_used[d])
        fail("the booked event does not hold what was placed");
}

/* Place job on a, then book its job.placed on b; release both. */
static void
place(sched_nodes *a, sched_nodes *b, const sched_job *job) {
  sched_placement p, q;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_unpacked up;
  sched_placement_init(&p);
  sched_placement_init(&q);
  if (sched_place(a, job, NULL, &p) || !p.ok) {
    if (!all_free(a))
      fail("a Job that does not fit booked something");
    sched_placement_clear(&p);
    return;
  }
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_unpacked_init(&up);
  if (sched_pack_placed(&pk, "default", job->name, 1, &p) ||
      msgpack_unpack_next(&up, sb.data, sb.size, NULL) !=
          MSGPACK_UNPACK_SUCCESS ||
      sched_placement_from_msgpack(&up.data, job, &q) || sched_book(b, job, &q))
    fail("a placement does not book from its own event");
  same_use(a, b);
  sched_release(a, job, &p);
  sched_release(b, job, &q);
  if (!all_free(a) || !all_free(b))
    fail("release left something booked");
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&sb);
  sched_placement_clear(&q);
  sched_placement_clear(&p);
}

/* A node of the fixed set: raw+netns or not, a subnet robot or not. */
static void
fixed_node(sched_nodes *s, const char *name, unsigned rt, int subnet) {
  sched_node n;
  sched_node_init(&n, name);
  n.capacity.cpu_m = 64000;
  n.capacity.memory_mib = 1 << 20;
  n.capacity.gpu = 8;
  n.runtimes = rt;
  if (sched_node_set_device(&n, "x.io/fpga", 2) ||
      sched_node_set_device(&n, SCHED_DEVICE_CLASS, 1) ||
      sched_node_add_named(&n, "robot/arm-1", subnet) ||
      sched_node_add_named(&n, "camera/wrist", 0) || sched_nodes_put(s, &n))
    fail("cannot build the fixed nodes");
  sched_node_clear(&n);
}

static void
fixed_nodes(sched_nodes *s) {
  sched_nodes_init(s);
  fixed_node(s, "a", SCHED_RT_RAW, 0);
  fixed_node(s, "b", SCHED_RT_ALL, 1);
}

/* The fixed Job placed on a node: by name (its first named device), by
 * class and by a bare count. */
static void
fixed_job(sched_job *job, const sched_node *n) {
  sched_job_init(job, "j");
  sched_template *t = sched_job_add_task(job, "n");
  for (int i = 0; t && i < n->capacity.ndevices; i++)
    if (n->capacity.devices[i].flags & SCHED_DEV_NAMED) {
      sched_resources_set_device(&t->req, n->capacity.devices[i].name, 1);
      break;
    }
  t = sched_job_add_task(job, "c");
  if (t) {
    t->replicas = 2;
    sched_resources_set_device(&t->req, SCHED_DEVICE_CLASS, 1);
  }
  t = sched_job_add_task(job, "b");
  if (t)
    sched_resources_set_device(&t->req, "x.io/fpga", 1);
}

static void
one_node(const msgpack_object *o) {
  sched_node n, copy;
  sched_nodes a, b;
  sched_job job;
  int rc = sched_node_from_msgpack(o, &n, NULL, 0, NULL);
  if (rc == 0 && sched_node_from_msgpack(o, &copy, NULL, 0, NULL))
    fail("a node read once is not read twice");
  if (rc) {
    sched_node_clear(&n);
    return;
  }
  check_node(&n);
  fixed_job(&job, &n);
  sched_nodes_init(&a);
  sched_nodes_init(&b);
  if (sched_nodes_put(&a, &n) || sched_nodes_put(&b, &copy))
    fail("a node read is not put");
  place(&a, &b, &job);
  sched_job_clear(&job);
  sched_nodes_clear(&a);
  sched_nodes_clear(&b);
}

static void
one_job(const msgpack_object *o) {
  sched_job job;
  sched_nodes a, b;
  if (sched_job_from_msgpack(o, &job, NULL, 0, NULL) == 0) {
    fixed_nodes(&a);
    fixed_nodes(&b);
    place(&a, &b, &job);
    sched_nodes_clear(&a);
    sched_nodes_clear(&b);
  }
  sched_job_clear(&job);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  msgpack_unpacked up;
  char kind[8] = "";
  if (size > BUS_MAX_PAYLOAD || bus__mp_scan(data, size))
    return 0;
  msgpack_unpacked_init(&up);
  if (msgpack_unpack_next(&up, (const char *)data, size, NULL) ==
      MSGPACK_UNPACK_SUCCESS) {
    bus_obj_str(&up.data, "kind", kind, sizeof kind);
    if (!strcmp(kind, "Node"))
      one_node(&up.data);
    else
      one_job(&up.data);
  }
  msgpack_unpacked_destroy(&up);
  return 0;
}

/*
 * test_sched_util.h - helpers shared by the scheduler's unit tests: a
 * resource written as JSON turned into the msgpack object the service
 * would hand over, and small node and Job builders.
 */
#ifndef LARK_TEST_SCHED_UTIL_H
#define LARK_TEST_SCHED_UTIL_H

#include <jansson.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "model.h"

/* Parse text (JSON) into up->data; 0 on success. Free with
 * msgpack_unpacked_destroy. */
static inline int
ts_msgpack(const char *text, msgpack_unpacked *up) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  if (!j)
    return -1;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  lt_pack_json(&pk, j);
  json_decref(j);
  msgpack_unpacked_init(up);
  int rc =
      msgpack_unpack_next(up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS
          ? 0
          : -1;
  /* strings point into the buffer: it lives as long as the zone */
  char *buf = msgpack_sbuffer_release(&sb);
  if (rc == 0 && !msgpack_zone_push_finalizer(up->zone, free, buf))
    rc = -1;
  if (rc)
    free(buf);
  return rc;
}

/* Add a Ready node: cpu cores, memory MiB, gpus, and label zone=<zone>
 * when zone is not NULL. Returns the node in the set. */
static inline sched_node *
ts_node(sched_nodes *s, const char *name, unsigned cpu, unsigned mem,
        unsigned gpu, const char *zone) {
  sched_node n;
  sched_node_init(&n, name);
  snprintf(n.cluster, sizeof n.cluster, "c1");
  n.capacity.cpu_m = (uint64_t)cpu * 1000;
  n.capacity.memory_mib = mem;
  n.capacity.gpu = gpu;
  if (zone)
    sched_node_set_label(&n, "zone", zone);
  if (sched_nodes_put(s, &n))
    return NULL;
  return sched_nodes_find(s, name);
}

/* Add a template: role, replicas, cpu cores, memory MiB, gpus. */
static inline sched_template *
ts_task(sched_job *job, const char *name, sched_role role, unsigned replicas,
        unsigned cpu, unsigned mem, unsigned gpu) {
  sched_template *t = sched_job_add_task(job, name);
  if (!t)
    return NULL;
  t->role = role;
  t->replicas = replicas;
  t->req.cpu_m = (uint64_t)cpu * 1000;
  t->req.memory_mib = mem;
  t->req.gpu = gpu;
  return t;
}

#endif

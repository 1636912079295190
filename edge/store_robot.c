/*
 * store_robot.c - a node's robots in its store (store.h): each robot's
 * desired state, kept only when newer (as a pod's), and its run record,
 * written in one transaction with the robot.report that says what
 * changed. Tables "robot_desired" robot -> [be64 version][robot.desired
 * map] and "robot_runs" robot -> edge_robot_run.
 */
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

int
edge_store_robot_desired_put(edge_store *s, const char *robot, uint64_t seq,
                             const void *data, size_t len, int *stored) {
  return edge_store__put_newer(s, s->robot_desired, robot, seq, data, len,
                               stored);
}

typedef struct versioned {
  uint64_t seq;
  void *data;
  size_t len;
} versioned;

static int
versioned_of(const MDB_val *v, void *out) {
  versioned *b = out;
  if (v->mv_size < 8 || !(b->data = malloc(v->mv_size - 8 + 1)))
    return 0;
  b->seq = bus_get_be64(v->mv_data);
  b->len = v->mv_size - 8;
  memcpy(b->data, (unsigned char *)v->mv_data + 8, b->len);
  return 1;
}

int
edge_store_robot_desired_get(edge_store *s, const char *robot, uint64_t *seq,
                             void **data, size_t *len) {
  versioned b;
  int rc = edge_store__get(s, s->robot_desired, robot, versioned_of, &b,
                           "get robot desired");
  if (rc == 0)
    *seq = b.seq, *data = b.data, *len = b.len;
  return rc;
}

static int
robot_run_of(const MDB_val *v, void *out) {
  if (v->mv_size != sizeof(edge_robot_run))
    return 0;
  memcpy(out, v->mv_data, sizeof(edge_robot_run));
  ((edge_robot_run *)out)->mode[sizeof((edge_robot_run *)out)->mode - 1] = 0;
  return 1;
}

int
edge_store_robot_run_get(edge_store *s, const char *robot, edge_robot_run *r) {
  return edge_store__get(s, s->robot_runs, robot, robot_run_of, r,
                         "get robot run");
}

int
edge_store_robot_run_put(edge_store *s, const char *robot,
                         const edge_robot_run *r, const edge_msg *msg) {
  MDB_val v = {sizeof *r, (void *)r};
  return edge_store__write(s, &s->robot_runs, 1, key_of(robot), &v, msg,
                           msg != NULL, "put robot run");
}

/*
 * engine_op.h - private to edge/: the RL engine's request lines a pod
 * writes to LARK_SOCKET (a JSON object with "op"), parsed, and the
 * stage.report a done becomes (engine_op.c; the forms are in
 * edge/README.md). Pure: no loop, no store; the fuzz harness
 * (fuzz/fuzz_engine_op.c) runs it alone. Nothing here trusts the line.
 */
#ifndef LARK_EDGE_ENGINE_OP_H
#define LARK_EDGE_ENGINE_OP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <msgpack.h>

#include "bus.h"

enum {
  EDGE_OP_DONE = 1,
  EDGE_OP_WAIT,
  EDGE_OP_PUBLISH_WEIGHTS,
  EDGE_OP_WAIT_WEIGHTS,
  EDGE_OP_PEERS,
};

enum {
  EDGE_OP_METRICS_MAX = 64, /* StageDone.metrics' max_items */
  EDGE_OP_PATH_MAX = 4096,
};

/* The stages in canonical order: an op's stage is an index here. */
extern const char *const edge_op_stages[4];

/* One request. The strings of metrics point into json (the parsed line):
 * valid until edge_op_free. */
typedef struct edge_op {
  int kind;
  int stage;          /* done, wait: index into edge_op_stages */
  uint64_t step;      /* done, wait */
  int64_t timeout_ms; /* wait, wait_weights: -1 none, 0 poll */
  uint64_t version;   /* publish_weights: the version; wait_weights: min */
  char path[EDGE_OP_PATH_MAX];
  bus_value metrics[EDGE_OP_METRICS_MAX];
  uint32_t nmetrics;
  json_t *json;
} edge_op;

/* The line (len bytes, no newline; a JSON object with "op", sockline.c
 * tells) into op: NULL, or why it is refused (op then needs no free). */
const char *edge_op_parse(const char *line, size_t len, edge_op *op);
void edge_op_free(edge_op *op);

/* What the node stamps on a done: the pod its socket belongs to, its Job
 * and attempt, and the highest weights version it handed the pod. */
typedef struct edge_op_stamp {
  const char *pod, *job;
  uint32_t attempt;
  uint64_t weights;
} edge_op_stamp;

/* A done's stage.report data packed into sb (initialised): 0, or the
 * schema's code with the reason in bus_last_error(). */
int edge_op_report(const edge_op *op, const edge_op_stamp *st,
                   msgpack_sbuffer *sb);

#endif

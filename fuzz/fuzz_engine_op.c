/*
 * fuzz_engine_op.c - libFuzzer harness for the RL engine's request lines
 * a pod writes to its LARK_SOCKET (edge/engine_op.c): any bytes, split
 * into lines as the socket splits them (at '\n', a '\r' before it
 * dropped, empty lines skipped). Every line is either refused with a
 * reason, or taken as one of the five requests with its fields in range;
 * a done taken must pack into stage.report data the schema takes, since
 * the pod hears ok for it and the node sends it on as it is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "engine_op.h"
#include "fuzz_lines.h"

static void
check_done(const edge_op *op) {
  msgpack_sbuffer sb;
  edge_op_stamp st = {"j-a-0", "j", 3, 7};
  msgpack_sbuffer_init(&sb);
  if (edge_op_report(op, &st, &sb) || !sb.size)
    abort(); /* "ok" to the pod, refused by the ingress */
  msgpack_sbuffer_destroy(&sb);
}

static void
one_line(const char *line, size_t len) {
  edge_op op;
  char *copy = malloc(len); /* exactly len: no terminator to lean on */
  if (!copy)
    return;
  memcpy(copy, line, len);
  const char *why = edge_op_parse(copy, len, &op);
  free(copy);
  if (why) {
    if (!*why)
      abort();
    return;
  }
  if (op.kind < EDGE_OP_DONE || op.kind > EDGE_OP_PEERS)
    abort();
  if ((op.kind == EDGE_OP_DONE || op.kind == EDGE_OP_WAIT) &&
      (op.stage < 0 || op.stage > 3))
    abort();
  if (op.nmetrics > EDGE_OP_METRICS_MAX || op.timeout_ms < -1)
    abort();
  if (op.kind == EDGE_OP_PUBLISH_WEIGHTS &&
      (!op.path[0] || strlen(op.path) >= sizeof op.path))
    abort();
  if (op.kind == EDGE_OP_DONE)
    check_done(&op);
  edge_op_free(&op);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_each_line(data, size, 1, one_line);
  return 0;
}

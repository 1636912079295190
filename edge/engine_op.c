/*
 * engine_op.c - a pod's engine request line parsed (engine_op.h), and a
 * done turned into the stage.report the node queues. Pure: the answers
 * and what the node does with a request are engine_sock.c's.
 *
 * Every refusal is a short reason the pod reads in {"ok": false, "error":
 * ...}; nothing that passes here can make the schema refuse the report
 * later, since edge_op_report packs it through the schema's check before
 * anything is queued.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine_op.h"
#include "sockline.h"

const char *const edge_op_stages[4] = {"rollout", "update_dataset", "train",
                                       "sync_weights"};

/* A step, version or the like: an integer >= 0, or why not. */
static const char *
count_of(const json_t *o, const char *key, uint64_t *out) {
  const json_t *v = json_object_get(o, key);
  static char why[64];
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    snprintf(why, sizeof why, "%s must be an integer >= 0", key);
    return why;
  }
  *out = (uint64_t)json_integer_value(v);
  return NULL;
}

/* "timeout" in seconds: absent or null -> -1 (none), else >= 0. */
static const char *
timeout_of(const json_t *o, int64_t *ms) {
  const json_t *v = json_object_get(o, "timeout");
  *ms = -1;
  if (!v || json_is_null(v))
    return NULL;
  double s = json_is_number(v) ? json_number_value(v) : -1;
  if (!(s >= 0) || !isfinite(s) || s > 1e9)
    return "timeout must be a number of seconds >= 0";
  *ms = (int64_t)(s * 1000 + 0.5);
  return NULL;
}

static const char *
stage_of(const json_t *o, int *stage) {
  const char *s = json_string_value(json_object_get(o, "stage"));
  static char why[160];
  if (!s)
    return "stage must be a string";
  for (int i = 0; i < 4; i++)
    if (!strcmp(s, edge_op_stages[i])) {
      *stage = i;
      return NULL;
    }
  snprintf(why, sizeof why, "unknown stage %.64s%s", s,
           strlen(s) > 64 ? "..." : "");
  return why;
}

static const char *
metrics_of(const json_t *o, edge_op *op) {
  json_t *m = json_object_get(o, "metrics"), *v;
  const char *k, *why;
  if (!m || json_is_null(m))
    return NULL;
  if (!json_is_object(m) || json_object_size(m) > EDGE_OP_METRICS_MAX)
    return "metrics must be an object of at most 64 entries";
  json_object_foreach(m, k, v) {
    if (!*k || strlen(k) > 253) /* the schema's keys: 1 to 253 bytes */
      return *k ? "a metric's name is longer than 253 bytes"
                : "a metric's name is empty";
    op->metrics[op->nmetrics].key = bus_str_of(k);
    if ((why = edge_sock_value(v, &op->metrics[op->nmetrics])))
      return why;
    op->nmetrics++;
  }
  return NULL;
}

static const char *
path_of(const json_t *o, edge_op *op) {
  const json_t *v = json_object_get(o, "path");
  const char *s = json_string_value(v);
  size_t n = s ? json_string_length(v) : 0;
  if (!s || !n || n >= sizeof op->path || strlen(s) != n)
    return "path must be a non-empty string of at most 4095 bytes";
  memcpy(op->path, s, n + 1);
  return NULL;
}

/* The fields of op->kind from o. */
static const char *
fields(const json_t *o, edge_op *op) {
  const char *why = NULL;
  switch (op->kind) {
  case EDGE_OP_DONE:
    if (!(why = stage_of(o, &op->stage)) &&
        !(why = count_of(o, "step", &op->step)))
      why = metrics_of(o, op);
    return why;
  case EDGE_OP_WAIT:
    if (!(why = stage_of(o, &op->stage)) &&
        !(why = count_of(o, "step", &op->step)))
      why = timeout_of(o, &op->timeout_ms);
    return why;
  case EDGE_OP_PUBLISH_WEIGHTS:
    if (!(why = count_of(o, "version", &op->version)))
      why = path_of(o, op);
    return why;
  case EDGE_OP_WAIT_WEIGHTS:
    if (!(why = count_of(o, "min_version", &op->version)))
      why = timeout_of(o, &op->timeout_ms);
    return why;
  default:
    return NULL;
  }
}

static int
kind_of(const char *name) {
  static const char *const names[] = {"done", "wait", "publish_weights",
                                      "wait_weights", "peers"};
  for (int i = 0; name && i < 5; i++)
    if (!strcmp(name, names[i]))
      return EDGE_OP_DONE + i;
  return 0;
}

const char *
edge_op_parse(const char *line, size_t len, edge_op *op) {
  json_error_t err;
  static char why[128];
  memset(op, 0, offsetof(edge_op, metrics));
  op->nmetrics = 0;
  op->json = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
  const char *name = json_string_value(json_object_get(op->json, "op"));
  const char *bad = NULL;
  if (!json_is_object(op->json))
    bad = "not a JSON object";
  else if (!name)
    bad = "op must be a string";
  else if (!(op->kind = kind_of(name))) {
    snprintf(why, sizeof why, "unknown op %.64s%s", name,
             strlen(name) > 64 ? "..." : "");
    bad = why;
  } else
    bad = fields(op->json, op);
  if (bad)
    edge_op_free(op);
  return bad;
}

void
edge_op_free(edge_op *op) {
  json_decref(op->json);
  op->json = NULL;
  op->nmetrics = 0;
}

int
edge_op_report(const edge_op *op, const edge_op_stamp *st,
               msgpack_sbuffer *sb) {
  bus_ev_stage_report d = {
      .pod = bus_str_of(st->pod),
      .job = bus_str_of(st->job),
      .has_attempt = 1,
      .attempt = st->attempt,
      .stage = bus_str_of(edge_op_stages[op->stage]),
      .step = op->step,
      .has_weights = 1,
      .weights = st->weights,
      .has_metrics = op->nmetrics > 0,
      .metrics = {op->metrics, op->nmetrics},
  };
  return bus_stage_report_pack(sb, &d);
}

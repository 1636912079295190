/*
 * stages_print.c - how lark-engine's answers print: the timeline of
 * `larkctl get stages JOB`, the Stages section of `describe job`, and the
 * row of a step that -w prints when it starts or ends.
 *
 * Everything here reads a stages.get answer (the contract's shape:
 * {job, mode, maxStaleness, phase, ended, syncs, weights, current,
 * steps, versions, peers}) and writes text; nothing asks the broker, so
 * the same answer prints the same whether it came live or from a replay
 * (--at). A field missing from an answer prints as "-", never crashes.
 */
#include <stdlib.h>
#include <string.h>

#include "stages.h"

/* How many of a stage's latest steps "who was last" looks at. */
#define LAST_STEPS 10

static const char *const stage_names[] = {"rollout", "update_dataset", "train",
                                          "sync_weights"};
enum { NSTAGES = 4 };

void
cli_stages_duration(int64_t ms, char *out, size_t cap) {
  if (ms < 0)
    ms = 0;
  if (ms < 1000)
    snprintf(out, cap, "%lldms", (long long)ms);
  else if (ms < 60000)
    snprintf(out, cap, "%.2fs", (double)ms / 1000.0);
  else if (ms < 3600000)
    snprintf(out, cap, "%lldm%02llds", (long long)(ms / 60000),
             (long long)(ms / 1000 % 60));
  else
    snprintf(out, cap, "%lldh%02lldm", (long long)(ms / 3600000),
             (long long)(ms / 60000 % 60));
}

/* The array at key, or NULL when the answer has none. */
static const msgpack_object *
array_at(const msgpack_object *o, const char *key) {
  const msgpack_object *a = o ? bus_obj_get(o, key) : NULL;
  return a && a->type == MSGPACK_OBJECT_ARRAY ? a : NULL;
}

/* A flag the answer gives as a boolean (or, older, a count). */
static int
truthy(const msgpack_object *o, const char *key) {
  const msgpack_object *v = bus_obj_get(o, key);
  if (v && v->type == MSGPACK_OBJECT_BOOLEAN)
    return v->via.boolean;
  return bus_obj_int(o, key, 0) != 0;
}

static const char *
str_or_dash(const msgpack_object *o, const char *key, char *buf, size_t cap) {
  const char *s = bus_obj_str(o, key, buf, cap);
  return s && *s ? s : "-";
}

void
cli_stages_header(const msgpack_object *r) {
  char job[BUS_NAME_MAX + 1], mode[32], phase[32];
  printf("Job %s  mode %s", str_or_dash(r, "job", job, sizeof job),
         str_or_dash(r, "mode", mode, sizeof mode));
  if (!strcmp(mode, "pipeline"))
    printf("  maxStaleness %lld", (long long)bus_obj_int(r, "maxStaleness", 1));
  printf("  phase %s  weights %lld  syncs %lld  peers %lld%s\n",
         str_or_dash(r, "phase", phase, sizeof phase),
         (long long)bus_obj_int(r, "weights", 0),
         (long long)bus_obj_int(r, "syncs", 0),
         (long long)bus_obj_int(r, "peers", 0),
         truthy(r, "ended") ? "  (ended)" : "");
}

/* "reward=0.51 loss=1.2": a step's metric means, for -o wide. */
static void
metrics_text(const msgpack_object *step, char *out, size_t cap) {
  const msgpack_object *m = bus_obj_get(step, "metrics");
  size_t n = 0;
  out[0] = 0;
  for (uint32_t i = 0;
       m && m->type == MSGPACK_OBJECT_MAP && i < m->via.map.size && n + 1 < cap;
       i++) {
    const msgpack_object_kv *kv = &m->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR)
      continue;
    double v = kv->val.type == MSGPACK_OBJECT_FLOAT64 ||
                       kv->val.type == MSGPACK_OBJECT_FLOAT32
                   ? kv->val.via.f64
               : kv->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER
                   ? (double)kv->val.via.u64
               : kv->val.type == MSGPACK_OBJECT_NEGATIVE_INTEGER
                   ? (double)kv->val.via.i64
                   : 0;
    int w = snprintf(out + n, cap - n, "%s%.*s=%.4g", n ? " " : "",
                     (int)kv->key.via.str.size, kv->key.via.str.ptr, v);
    n += w > 0 ? (size_t)w : 0;
  }
  if (!out[0])
    snprintf(out, cap, "-");
}

void
cli_stages_columns(int wide) {
  printf("%-15s %-6s %-8s %-24s %-9s %-6s %-*s%s\n", "STAGE", "STEP", "WEIGHTS",
         "STARTED", "DURATION", "DONE", wide ? 32 : 0, "LAST",
         wide ? " METRICS" : "");
}

void
cli_stages_row(const msgpack_object *s, int wide) {
  char stage[32], last[BUS_DERIVED_NAME_MAX + 1], when[40] = "-", dur[24],
                                                  done[32], metrics[512] = "";
  int64_t started = bus_obj_int(s, "started", 0);
  if (started)
    cli_format_time(started, when, sizeof when);
  if (bus_obj_int(s, "ended", 0))
    cli_stages_duration(bus_obj_int(s, "ms", 0), dur, sizeof dur);
  else
    snprintf(dur, sizeof dur, "running");
  snprintf(done, sizeof done, "%lld/%lld", (long long)bus_obj_int(s, "done", 0),
           (long long)bus_obj_int(s, "of", 0));
  if (wide)
    metrics_text(s, metrics + 1, sizeof metrics - 1), metrics[0] = ' ';
  printf("%-15s %-6lld %-8lld %-24s %-9s %-6s %-*s%s\n",
         str_or_dash(s, "stage", stage, sizeof stage),
         (long long)bus_obj_int(s, "step", 0),
         (long long)bus_obj_int(s, "weights", 0), when, dur, done,
         wide ? 32 : 0, str_or_dash(s, "last", last, sizeof last), metrics);
}

void
cli_stages_print(const msgpack_object *r, int wide) {
  cli_stages_header(r);
  cli_stages_columns(wide);
  const msgpack_object *steps = array_at(r, "steps");
  for (uint32_t i = 0; steps && i < steps->via.array.size; i++)
    cli_stages_row(&steps->via.array.ptr[i], wide);
}

/* What describe says of one stage, from its latest LAST_STEPS ended
 * steps: the latest step, the mean duration, and the pod that was last
 * most often (the slowest). */
typedef struct stage_sum {
  int64_t latest, ms, n;
  int seen;
  const msgpack_object *lasts[LAST_STEPS];
  int nlast;
} stage_sum;

static int
stage_index(const msgpack_object *s) {
  char name[32] = "";
  bus_obj_str(s, "stage", name, sizeof name);
  for (int i = 0; i < NSTAGES; i++)
    if (!strcmp(name, stage_names[i]))
      return i;
  return -1;
}

/* Steps are chronological: walk them newest first. */
static void
summarise(const msgpack_object *steps, stage_sum sums[NSTAGES]) {
  memset(sums, 0, sizeof(stage_sum) * NSTAGES);
  for (uint32_t i = steps ? steps->via.array.size : 0; i-- > 0;) {
    const msgpack_object *s = &steps->via.array.ptr[i];
    int k = stage_index(s);
    if (k < 0)
      continue;
    stage_sum *u = &sums[k];
    if (!u->seen || bus_obj_int(s, "step", 0) > u->latest)
      u->latest = bus_obj_int(s, "step", 0);
    u->seen = 1;
    if (!bus_obj_int(s, "ended", 0) || u->n >= LAST_STEPS)
      continue;
    u->ms += bus_obj_int(s, "ms", 0);
    u->n++;
    const msgpack_object *last = bus_obj_get(s, "last");
    if (last && last->type == MSGPACK_OBJECT_STR)
      u->lasts[u->nlast++] = last;
  }
}

/* The pod named most often in lasts, and how often. */
static int
slowest(const stage_sum *u, char *pod, size_t cap) {
  int best = 0;
  snprintf(pod, cap, "-");
  for (int i = 0; i < u->nlast; i++) {
    int n = 0;
    for (int j = 0; j < u->nlast; j++)
      n += u->lasts[j]->via.str.size == u->lasts[i]->via.str.size &&
           !memcmp(u->lasts[j]->via.str.ptr, u->lasts[i]->via.str.ptr,
                   u->lasts[i]->via.str.size);
    if (n > best) {
      best = n;
      snprintf(pod, cap, "%.*s", (int)u->lasts[i]->via.str.size,
               u->lasts[i]->via.str.ptr);
    }
  }
  return best;
}

static void
print_stage_sums(const msgpack_object *r) {
  stage_sum sums[NSTAGES];
  summarise(array_at(r, "steps"), sums);
  printf("  %-15s %-7s %-9s %s\n", "STAGE", "LATEST", "MEAN",
         "LAST MOST OFTEN (of the latest ended steps)");
  for (int k = 0; k < NSTAGES; k++) {
    const stage_sum *u = &sums[k];
    if (!u->seen)
      continue;
    char mean[24] = "-", pod[BUS_DERIVED_NAME_MAX + 1];
    if (u->n)
      cli_stages_duration(u->ms / u->n, mean, sizeof mean);
    int times = slowest(u, pod, sizeof pod);
    printf("  %-15s %-7lld %-9s %s", stage_names[k], (long long)u->latest, mean,
           pod);
    if (times)
      printf(" (%d of %lld)", times, (long long)u->n);
    putchar('\n');
  }
}

/* The nodes that hold a version, joined by ", ". */
static void
nodes_text(const msgpack_object *v, char *out, size_t cap) {
  const msgpack_object *nodes = array_at(v, "nodes");
  size_t n = 0;
  snprintf(out, cap, "-");
  for (uint32_t i = 0; nodes && i < nodes->via.array.size && n + 1 < cap; i++) {
    const msgpack_object *e = &nodes->via.array.ptr[i];
    if (e->type != MSGPACK_OBJECT_STR)
      continue;
    int w = snprintf(out + n, cap - n, "%s%.*s", n ? ", " : "",
                     (int)e->via.str.size, e->via.str.ptr);
    n += w > 0 ? (size_t)w : 0;
  }
}

static void
print_versions(const msgpack_object *r) {
  const msgpack_object *vs = array_at(r, "versions");
  printf("  Weights versions:\n");
  if (!vs || !vs->via.array.size) {
    printf("    <none>\n");
    return;
  }
  printf("    %-8s %-10s %-64s %-30s %s\n", "VERSION", "SIZE", "SHA256", "POD",
         "NODES");
  for (uint32_t i = 0; i < vs->via.array.size; i++) {
    const msgpack_object *v = &vs->via.array.ptr[i];
    char sha[80], pod[BUS_DERIVED_NAME_MAX + 1], nodes[512];
    nodes_text(v, nodes, sizeof nodes);
    printf("    %-8lld %-10lld %-64s %-30s %s\n",
           (long long)bus_obj_int(v, "version", 0),
           (long long)bus_obj_int(v, "size", 0),
           str_or_dash(v, "sha256", sha, sizeof sha),
           str_or_dash(v, "pod", pod, sizeof pod), nodes);
  }
}

void
cli_stages_section(const msgpack_object *r) {
  char mode[32], phase[32];
  printf("\nStages:\n");
  printf("  Mode:          %s", str_or_dash(r, "mode", mode, sizeof mode));
  if (!strcmp(mode, "pipeline"))
    printf(" (maxStaleness %lld)",
           (long long)bus_obj_int(r, "maxStaleness", 1));
  printf("\n  Run:           %s%s\n",
         str_or_dash(r, "phase", phase, sizeof phase),
         truthy(r, "ended") ? ", ended" : "");
  printf("  Weights:       %lld (syncs %lld)\n",
         (long long)bus_obj_int(r, "weights", 0),
         (long long)bus_obj_int(r, "syncs", 0));
  const msgpack_object *steps = array_at(r, "steps");
  if (!steps || !steps->via.array.size)
    printf("  <no step started>\n");
  else
    print_stage_sums(r);
  print_versions(r);
}

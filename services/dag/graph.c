/*
 * graph.c - a Workflow's templates as a graph: validation, topological
 * order, readiness and the Workflow's phase. Pure: no I/O, no clock.
 *
 * Invariants, and why they hold:
 * - A built graph is acyclic, its names unique and its dependency indices
 *   in range: dag_graph_build returns a graph only after checking all
 *   three, and clears it otherwise. Every later function may rely on it.
 * - order[] lists each template after all its dependencies (the DFS post
 *   order), so one pass over it settles skipped and ready.
 * - Input of the wrong shape is reported, never trusted: sizes are bounded
 *   by DAG_MAX_TEMPLATES and DAG_MAX_DEPS before anything is allocated.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"

typedef struct errs_out {
  bus_field_err *e;
  int max, n;
} errs_out;

static void add_err(errs_out *o, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
add_err(errs_out *o, const char *path, const char *fmt, ...) {
  if (o->e && o->n < o->max) {
    bus_field_err *e = &o->e[o->n];
    snprintf(e->path, sizeof e->path, "%s", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
  }
  o->n++;
}

/* A msgpack string into a NUL-terminated name buffer; 0 unless valid. */
static int
get_name(const msgpack_object *o, char *out, size_t cap) {
  if (!o || o->type != MSGPACK_OBJECT_STR || o->via.str.size >= cap)
    return 0;
  memcpy(out, o->via.str.ptr, o->via.str.size);
  out[o->via.str.size] = 0;
  return memchr(out, 0, o->via.str.size) == NULL &&
         bus_name_valid(out, BUS_NAME_MAX);
}

void
dag_graph_free(dag_graph *g) {
  if (!g)
    return;
  for (int i = 0; g->t && i < g->n; i++)
    free(g->t[i].deps);
  free(g->t);
  free(g->order);
  memset(g, 0, sizeof *g);
}

int
dag_graph_find(const dag_graph *g, const char *name) {
  for (int i = 0; i < g->n; i++)
    if (!strcmp(g->t[i].name, name))
      return i;
  return -1;
}

int
dag_job_name(const char *wf, const char *tmpl, char *out, size_t cap) {
  if (!wf || !tmpl || !*wf || !*tmpl)
    return bus_error(BUS_ENAME, "a Job name needs a workflow and a template");
  int n = snprintf(out, cap, "%s-%s", wf, tmpl);
  if (n < 0 || (size_t)n >= cap || !bus_name_valid(out, BUS_DERIVED_NAME_MAX))
    return bus_error(BUS_ENAME,
                     "Job name '%s-%s' is not a valid name of at "
                     "most %d characters",
                     wf, tmpl, BUS_DERIVED_NAME_MAX);
  return 0;
}

/* Names: valid, unique, and their Job names valid. */
static void
read_names(const msgpack_object *arr, const char *wf, dag_graph *g,
           errs_out *eo) {
  char path[96], job[BUS_DERIVED_NAME_MAX + 2];
  for (int i = 0; i < g->n; i++) {
    const msgpack_object *it = &arr->via.array.ptr[i];
    snprintf(path, sizeof path, "spec.jobTemplates[%d].name", i);
    if (!get_name(bus_obj_get(it, "name"), g->t[i].name, sizeof g->t[i].name)) {
      add_err(eo, path, "must be a name: [a-z0-9-], at most %d", BUS_NAME_MAX);
      g->t[i].name[0] = 0;
      continue;
    }
    for (int j = 0; j < i; j++)
      if (!strcmp(g->t[j].name, g->t[i].name))
        add_err(eo, path,
                "duplicate template name '%s' (also jobTemplates[%d])",
                g->t[i].name, j);
    if (wf && dag_job_name(wf, g->t[i].name, job, sizeof job))
      add_err(eo, path, "Job name '%s-%s' is longer than %d", wf, g->t[i].name,
              BUS_DERIVED_NAME_MAX);
    g->t[i].spec = bus_obj_get(it, "spec");
  }
}

/* Dependencies: each one a known template; duplicates dropped. */
static int
read_deps(const msgpack_object *arr, dag_graph *g, errs_out *eo) {
  char path[96], name[BUS_NAME_MAX + 1];
  for (int i = 0; i < g->n; i++) {
    const msgpack_object *d =
        bus_obj_get(&arr->via.array.ptr[i], "dependencies");
    if (!d || d->type == MSGPACK_OBJECT_NIL)
      continue;
    snprintf(path, sizeof path, "spec.jobTemplates[%d].dependencies", i);
    if (d->type != MSGPACK_OBJECT_ARRAY || d->via.array.size > DAG_MAX_DEPS) {
      add_err(eo, path, "must be a list of at most %d names", DAG_MAX_DEPS);
      continue;
    }
    g->t[i].deps = calloc(d->via.array.size + 1, sizeof *g->t[i].deps);
    if (!g->t[i].deps)
      return -ENOMEM;
    for (uint32_t j = 0; j < d->via.array.size; j++) {
      snprintf(path, sizeof path, "spec.jobTemplates[%d].dependencies[%u]", i,
               j);
      int k = get_name(&d->via.array.ptr[j], name, sizeof name)
                  ? dag_graph_find(g, name)
                  : -1;
      if (k < 0) {
        add_err(eo, path, "unknown template '%s'",
                get_name(&d->via.array.ptr[j], name, sizeof name) ? name : "?");
        continue;
      }
      int dup = 0;
      for (int m = 0; m < g->t[i].ndeps; m++)
        dup |= g->t[i].deps[m] == k;
      if (!dup)
        g->t[i].deps[g->t[i].ndeps++] = (uint16_t)k;
    }
  }
  return 0;
}

/* Depth-first search over "depends on" edges; white 0, grey 1, black 2. */
typedef struct dfs {
  dag_graph *g;
  uint8_t *color;
  uint16_t *stack;
  int depth, norder, cycle;
  errs_out *eo;
} dfs;

/* The grey path from stack[from] to the top, plus the edge back to it, in
 * "runs before" order: reversed, since each entry depends on the next. */
static void
report_cycle(dfs *s, int from) {
  char reason[sizeof((bus_field_err *)0)->reason], path[96];
  size_t len = (size_t)snprintf(reason, sizeof reason, "cycle: %s",
                                s->g->t[s->stack[from]].name);
  for (int k = s->depth - 1; k >= from && len < sizeof reason; k--)
    len += (size_t)snprintf(reason + len, sizeof reason - len, " -> %s",
                            s->g->t[s->stack[k]].name);
  snprintf(path, sizeof path, "spec.jobTemplates[%d].dependencies",
           s->stack[s->depth - 1]);
  add_err(s->eo, path, "%s", reason);
  s->cycle = 1;
}

static void
visit(dfs *s, int u) {
  s->color[u] = 1;
  s->stack[s->depth++] = (uint16_t)u;
  for (int j = 0; j < s->g->t[u].ndeps && !s->cycle; j++) {
    int v = s->g->t[u].deps[j];
    if (s->color[v] == 1) {
      int from = s->depth - 1;
      while (s->stack[from] != v)
        from--;
      report_cycle(s, from);
    } else if (s->color[v] == 0) {
      visit(s, v);
    }
  }
  s->depth--;
  s->color[u] = 2;
  s->g->order[s->norder++] = (uint16_t)u;
}

static int
topo_sort(dag_graph *g, errs_out *eo) {
  dfs s = {.g = g, .eo = eo};
  s.color = calloc((size_t)g->n, 1);
  s.stack = calloc((size_t)g->n, sizeof *s.stack);
  g->order = calloc((size_t)g->n, sizeof *g->order);
  int rc = s.color && s.stack && g->order ? 0 : -ENOMEM;
  for (int i = 0; !rc && i < g->n && !s.cycle; i++)
    if (s.color[i] == 0)
      visit(&s, i);
  free(s.color);
  free(s.stack);
  return rc;
}

static const msgpack_object *
templates_of(const msgpack_object *spec, errs_out *eo) {
  const msgpack_object *arr = bus_obj_get(spec, "jobTemplates");
  if (!arr || arr->type != MSGPACK_OBJECT_ARRAY || arr->via.array.size == 0 ||
      arr->via.array.size > DAG_MAX_TEMPLATES) {
    add_err(eo, "spec.jobTemplates", "must be a list of 1 to %d templates",
            DAG_MAX_TEMPLATES);
    return NULL;
  }
  for (uint32_t i = 0; i < arr->via.array.size; i++)
    if (arr->via.array.ptr[i].type != MSGPACK_OBJECT_MAP) {
      char path[64];
      snprintf(path, sizeof path, "spec.jobTemplates[%u]", i);
      add_err(eo, path, "must be a map");
    }
  return eo->n ? NULL : arr;
}

int
dag_graph_build(const msgpack_object *spec, const char *wf, dag_graph *g,
                bus_field_err *errs, int max, int *nerr) {
  errs_out eo = {.e = errs, .max = max};
  memset(g, 0, sizeof *g);
  const msgpack_object *arr = templates_of(spec, &eo);
  int rc = 0;
  if (arr) {
    g->n = (int)arr->via.array.size;
    g->t = calloc((size_t)g->n, sizeof *g->t);
    rc = g->t ? 0 : -ENOMEM;
  }
  if (!rc && arr)
    read_names(arr, wf, g, &eo);
  if (!rc && arr && !eo.n)
    rc = read_deps(arr, g, &eo);
  if (!rc && arr && !eo.n)
    rc = topo_sort(g, &eo);
  if (nerr)
    *nerr = eo.n;
  if (!rc && eo.n)
    rc = bus_error(BUS_EINVAL, "%s: %s", errs && max ? errs[0].path : "spec",
                   errs && max ? errs[0].reason : "invalid workflow");
  if (rc)
    dag_graph_free(g);
  return rc;
}

/* ------------------------------------------------------------- evaluation */

static void
append_names(char *buf, size_t cap, const char *label, const dag_graph *g,
             const uint8_t *mark, const uint8_t *state, int want) {
  size_t len = strlen(buf);
  int first = 1;
  for (int i = 0; i < g->n && len < cap; i++) {
    if (!(mark ? mark[i] : state[i] == want))
      continue;
    len += (size_t)snprintf(buf + len, cap - len, "%s%s%s",
                            first ? (len ? "; " : "") : ", ",
                            first ? label : "", g->t[i].name);
    first = 0;
  }
}

static int
wf_phase(const dag_graph *g, const uint8_t *state, int stopped,
         const dag_eval *e) {
  if (stopped)
    return DAG_WF_STOPPED;
  if (e->succeeded == g->n)
    return DAG_WF_SUCCEEDED;
  if ((e->failed || e->skipped) && !e->active)
    return DAG_WF_FAILED;
  for (int i = 0; i < g->n; i++)
    if (state[i] != DAG_NONE)
      return DAG_WF_RUNNING;
  return DAG_WF_PENDING;
}

void
dag_evaluate(const dag_graph *g, const uint8_t *state, int stopped,
             uint8_t *ready, uint8_t *skipped, dag_eval *out) {
  memset(out, 0, sizeof *out);
  for (int k = 0; k < g->n; k++) {
    int i = g->order[k], blocked = 0, waiting = 0;
    for (int j = 0; j < g->t[i].ndeps; j++) {
      int d = g->t[i].deps[j];
      blocked |= state[d] == DAG_FAILED || skipped[d];
      waiting |= state[d] != DAG_SUCCEEDED;
    }
    skipped[i] = state[i] == DAG_NONE && blocked;
    ready[i] = state[i] == DAG_NONE && !waiting;
    out->succeeded += state[i] == DAG_SUCCEEDED;
    out->failed += state[i] == DAG_FAILED;
    out->skipped += skipped[i];
    out->active += ready[i] || state[i] == DAG_PENDING ||
                   state[i] == DAG_RUNNING || state[i] == DAG_STOPPED;
  }
  out->phase = wf_phase(g, state, stopped, out);
  if (out->phase == DAG_WF_STOPPED)
    snprintf(out->reason, sizeof out->reason, "stopped");
  else if (out->phase == DAG_WF_SUCCEEDED)
    snprintf(out->reason, sizeof out->reason, "all %d jobs succeeded", g->n);
  if (out->phase == DAG_WF_STOPPED || out->phase == DAG_WF_SUCCEEDED)
    return;
  append_names(out->reason, sizeof out->reason, "failed: ", g, NULL, state,
               DAG_FAILED);
  append_names(out->reason, sizeof out->reason, "skipped: ", g, skipped, NULL,
               0);
}

const char *
dag_phase_name(int phase) {
  static const char *const names[] = {"Pending", "Running", "Succeeded",
                                      "Failed", "Stopped"};
  return phase >= 0 && phase <= DAG_WF_STOPPED ? names[phase] : "Unknown";
}

const char *
dag_state_name(int state, int skipped) {
  static const char *const names[] = {"",          "Pending", "Running",
                                      "Succeeded", "Failed",  "Stopped"};
  if (skipped)
    return "Skipped";
  return state >= 0 && state <= DAG_STOPPED ? names[state] : "Unknown";
}

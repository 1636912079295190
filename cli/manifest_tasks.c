/*
 * manifest_tasks.c - the reference platform's task shapes: a runtime
 * written directly in a task (`raw: {...}`, `kubernetes:`, `docker:`),
 * in a Job's tasks or a Workflow template's, is rewritten in the tree
 * into larkbus's stored form `runtime: {raw: {...}}` before packing, and
 * a task that gives its runtime twice is refused, naming it.
 */
#include <stdio.h>
#include <string.h>

#include "manifest-int.h"

/*
 * The reference platform writes a task's runtime directly in the task
 * (`raw: {...}` next to `name`); larkbus has always stored it wrapped,
 * `runtime: {raw: {...}}`. The wrapped form stays the one stored: every
 * job.submitted and workflow.submitted already in a log has it, so the
 * scheduler, lark-dag, the edge and the replay of old events keep one
 * shape, and the reader alone knows the other.
 */
static const char *const task_runtimes[] = {"raw", "kubernetes", "docker"};

static int
is_runtime_key(const lark_mnode *k) {
  for (size_t i = 0; i < sizeof task_runtimes / sizeof task_runtimes[0]; i++)
    if (mf_eq(k->v.s.p, k->v.s.n, task_runtimes[i]))
      return 1;
  return 0;
}

/*
 * One task: a runtime written directly in it becomes `runtime: {<rt>:
 * value}` in place (the key node renamed, the value wrapped in a new map
 * at the same position), so both forms pack to the same bytes and a
 * schema error's path still finds the value's line. This adds one level
 * below the task, within the depth libbus accepts (see
 * LARK_MANIFEST_MAX_DEPTH). A task with both forms, or with two runtimes
 * in either, is refused here, naming it: which one was meant is the
 * user's call.
 */
static int
task_runtime(pctx *p, lark_mnode *task, const char *who, int index) {
  if (task->type != MN_MAP)
    return 0; /* the schema check says what is wrong */
  char name[BUS_NAME_MAX + 1];
  mf_copy_str(task, "name", name, sizeof name);
  if (!name[0])
    snprintf(name, sizeof name, "(unnamed)");
  const lark_mnode *wrap = mf_map_find(task, "runtime", 7);
  lark_mnode *key = NULL;
  for (lark_mnode *k = task->first; k && k->next; k = k->next->next) {
    if (!is_runtime_key(k))
      continue;
    if (wrap)
      return mf_fail(p, BUS_EFIELD, index, k->line,
                     "%stask %s: both runtime and %s given; write the runtime "
                     "once",
                     who, name, k->v.s.p);
    if (key)
      return mf_fail(p, BUS_EFIELD, index, k->line,
                     "%stask %s: two runtimes (%s and %s); a task has one", who,
                     name, key->v.s.p, k->v.s.p);
    key = k;
  }
  if (wrap && wrap->type == MN_MAP && wrap->count > 2)
    return mf_fail(p, BUS_EFIELD, index, wrap->line,
                   "%stask %s: two runtimes (%s and %s) in runtime; a task has "
                   "one",
                   who, name, wrap->first->v.s.p,
                   wrap->first->next->next->v.s.p);
  if (!key)
    return 0;
  lark_mnode *val = key->next;
  lark_mnode *m = mf_node_new(p, MN_MAP, key->line);
  lark_mnode *inner =
      m ? mf_str_new(p, key->v.s.p, key->v.s.n, key->line) : NULL;
  if (!inner)
    return p->rc;
  m->next = val->next;
  if (task->last == val)
    task->last = m;
  key->next = m;
  key->v.s.p = "runtime";
  key->v.s.n = 7;
  val->next = NULL;
  m->first = inner;
  inner->next = val;
  m->last = val;
  m->count = 2;
  return 0;
}

/* Every task of a Job, or of each template of a Workflow. */
int
mf_normalise_tasks(pctx *p, lark_mnode *root, const char *kind, int index) {
  lark_mnode *spec = mf_map_get(root, "spec");
  if (!strcmp(kind, "Job")) {
    lark_mnode *ts = mf_map_get(spec, "tasks");
    for (lark_mnode *t = ts && ts->type == MN_SEQ ? ts->first : NULL; t;
         t = t->next)
      if (task_runtime(p, t, "", index))
        return p->rc;
    return 0;
  }
  if (strcmp(kind, "Workflow"))
    return 0;
  lark_mnode *jt = mf_map_get(spec, "jobTemplates");
  for (lark_mnode *j = jt && jt->type == MN_SEQ ? jt->first : NULL; j;
       j = j->next) {
    char who[BUS_NAME_MAX + 16], tmpl[BUS_NAME_MAX + 1];
    mf_copy_str(j, "name", tmpl, sizeof tmpl);
    snprintf(who, sizeof who, "template %s, ", tmpl);
    lark_mnode *ts = mf_map_get(mf_map_get(j, "spec"), "tasks");
    for (lark_mnode *t = ts && ts->type == MN_SEQ ? ts->first : NULL; t;
         t = t->next)
      if (task_runtime(p, t, who, index))
        return p->rc;
  }
  return 0;
}

/*
 * queries.c - reads of the dag view: `list` and `describe` for larkctl (live
 * and --at alike), and the checks the workflow commands make before they
 * append.
 *
 * Everything here reads through one transaction and writes nothing, so an
 * answer is one consistent state of the view. A deleted Workflow is kept
 * as a row (its Jobs are being deleted) but is not listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"
#include "jobcheck.h"
#include "dag-int.h"

/* The summary map; extra more entries follow (the caller packs them). */
static void
pack_summary(msgpack_packer *pk, const dag__wfrec *r, uint32_t extra) {
  char progress[32];
  snprintf(progress, sizeof progress, "%u/%u", r->succeeded, r->total);
  msgpack_pack_map(pk, 9 + extra);
  bus_pack_kv_str(pk, "name", r->name);
  bus_pack_kv_str(pk, "phase", r->phase);
  bus_pack_kv_str(pk, "reason", r->reason);
  bus_pack_kv_str(pk, "progress", progress);
  bus_pack_kv_uint(pk, "succeeded", r->succeeded);
  bus_pack_kv_uint(pk, "total", r->total);
  bus_pack_kv_uint(pk, "generation", r->generation);
  bus_pack_kv_bool(pk, "stopped", r->stopped);
  bus_pack_kv_int(pk, "ts", r->ts);
}

/* Why template i is where it is, for people. */
static void
tmpl_reason(const dag__wf *w, int i, char *buf, size_t cap) {
  const dag__jobrec *j = &w->jobs[i];
  int current = w->have[i] && j->ours && j->wfgen == w->rec.generation;
  size_t len = 0;
  buf[0] = 0;
  if (current && j->deleted)
    snprintf(buf, cap, "the Job was deleted");
  else if (current)
    snprintf(buf, cap, "%s", j->reason);
  else if (w->state[i] == DAG_FAILED)
    snprintf(buf, cap, "the name %s is taken by another Job", w->jobname[i]);
  else if (w->state[i] == DAG_NONE && !w->ready[i])
    for (int k = 0; k < w->g.t[i].ndeps && len < cap; k++) {
      int d = w->g.t[i].deps[k];
      if (w->state[d] == DAG_SUCCEEDED)
        continue;
      len += (size_t)snprintf(buf + len, cap - len, "%s%s",
                              len ? ", "
                                  : (w->skipped[i] ? "after " : "waiting for "),
                              w->g.t[d].name);
    }
}

static void
pack_job(msgpack_packer *pk, const dag__wf *w, int i) {
  char reason[256];
  tmpl_reason(w, i, reason, sizeof reason);
  msgpack_pack_map(pk, 5);
  bus_pack_kv_str(pk, "name", w->jobname[i]);
  bus_pack_kv_str(pk, "template", w->g.t[i].name);
  bus_pack_kv_str(pk, "phase", dag_state_name(w->state[i], w->skipped[i]));
  bus_pack_kv_str(pk, "reason", reason);
  bus_pack_str(pk, "dependencies");
  msgpack_pack_array(pk, (uint32_t)w->g.t[i].ndeps);
  for (int k = 0; k < w->g.t[i].ndeps; k++)
    bus_pack_str(pk, w->g.t[w->g.t[i].deps[k]].name);
}

static int
describe(bus_txn *t, const char *name, msgpack_packer *pk) {
  dag__wf w;
  int rc = dag__wf_load(t, name, &w);
  if (rc == BUS_ENOT_FOUND || (!rc && w.rec.deleted))
    rc = bus_error(BUS_ENOT_FOUND, "no workflow %s", name);
  if (!rc) {
    pack_summary(pk, &w.rec, 1);
    bus_pack_str(pk, "jobs");
    msgpack_pack_array(pk, (uint32_t)w.g.n);
    for (int k = 0; k < w.g.n; k++)
      pack_job(pk, &w, w.g.order[k]);
  }
  dag__wf_free(&w);
  return rc;
}

/* One row of the workflows table, packed unless deleted. */
static int
list_one(const void *key, size_t klen, const void *val, size_t vlen,
         msgpack_packer *pk, void *ud) {
  (void)val, (void)vlen;
  char name[BUS_NAME_MAX + 1];
  dag__wfrec r;
  if (klen >= sizeof name)
    return 0;
  memcpy(name, key, klen);
  name[klen] = 0;
  int rc = dag__wf_get(ud, name, &r);
  if (rc || r.deleted)
    return rc;
  pack_summary(pk, &r, 0);
  return 1;
}

static int
list(bus_txn *t, const char *name, uint32_t limit, msgpack_packer *pk) {
  dag__wfrec r;
  if (!*name)
    return bus_txn_list(t, DAG__T_WORKFLOWS, NULL, 0, limit, list_one, t, pk);
  int rc = dag__wf_get(t, name, &r);
  if (rc && rc != BUS_ENOT_FOUND)
    return rc;
  msgpack_pack_array(pk, !rc && !r.deleted);
  if (!rc && !r.deleted)
    pack_summary(pk, &r, 0);
  return 0;
}

int
dag_query(bus_txn *t, const char *kind, const char *verb,
          const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)kind, (void)ud;
  char name[BUS_NAME_MAX + 2] = "";
  const msgpack_object *n = bus_obj_get(req, "name");
  if (n && n->type == MSGPACK_OBJECT_STR &&
      !bus_obj_str(req, "name", name, sizeof name))
    name[0] = 0;
  if (*name && !bus_name_valid(name, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "invalid workflow name");
  int64_t limit = bus_obj_int(req, "limit", 0);
  if (limit < 0 || limit > UINT32_MAX)
    return bus_error(BUS_EFIELD, "limit must be from 0 to %u", UINT32_MAX);
  if (!strcmp(verb, "list"))
    return list(t, name, (uint32_t)limit, pk);
  if (!strcmp(verb, "describe") && *name)
    return describe(t, name, pk);
  return bus_error(BUS_EINVAL, "verbs: list {name?, limit?}, describe {name}");
}

/* --------------------------------------------------------------- checks */

static int
add_detail(bus_field_err *errs, int max, int *n, const char *path,
           const char *reason) {
  if (*n < max) {
    bus_str_copy(bus_str_of(path), errs[*n].path, sizeof errs[*n].path);
    bus_str_copy(bus_str_of(reason), errs[*n].reason, sizeof errs[*n].reason);
  }
  (*n)++;
  return 0;
}

/* Derived Job names already held by another Workflow or by a Job that is
 * not this Workflow's. */
static int
check_names(bus_txn *t, const char *wf, const dag_graph *g, bus_field_err *errs,
            int max, int *nerr) {
  char job[BUS_DERIVED_NAME_MAX + 1], subject[BUS_SUBJECT_MAX], path[64],
      reason[600];
  for (int i = 0; i < g->n; i++) {
    dag__jobrec j;
    dag__wfrec other;
    bus_version v;
    int rc = dag_job_name(wf, g->t[i].name, job, sizeof job);
    if (!rc)
      rc = dag__subject(DAG__JOB_PREFIX, job, subject, sizeof subject);
    if (!rc)
      rc = bus_txn_version(t, subject, &v);
    if (rc)
      return rc;
    rc = dag__job_get(t, job, &j);
    if (rc && rc != BUS_ENOT_FOUND)
      return rc;
    snprintf(path, sizeof path, "spec.jobTemplates[%d].name", i);
    int mine = !rc && !strcmp(j.wf, wf);
    if (!rc && !mine && dag__wf_get(t, j.wf, &other) == 0 && !other.deleted) {
      if (snprintf(reason, sizeof reason,
                   "Job name %s collides with "
                   "workflow %s's Job %s",
                   job, j.wf, job) < 0)
        reason[0] = 0;
      add_detail(errs, max, nerr, path, reason);
    } else if (v.seq && !v.deleted && !(mine && j.ours)) {
      if (snprintf(reason, sizeof reason,
                   "Job name %s collides with the existing Job %s", job,
                   job) < 0)
        reason[0] = 0;
      add_detail(errs, max, nerr, path, reason);
    }
  }
  return 0;
}

/* A Workflow is there: the same resource is "unchanged", another one is
 * refused with each difference. */
static int
compare_existing(bus_txn *t, const char *wf, const msgpack_object *resource,
                 bus_field_err *errs, int max, int *nerr) {
  const void *val;
  size_t len, off = 0;
  msgpack_zone z;
  msgpack_object old;
  int rc = bus_txn_get(t, DAG__T_SPECS, wf, strlen(wf), &val, &len);
  if (rc)
    return rc;
  msgpack_zone_init(&z, 4096);
  if (msgpack_unpack(val, len, &off, &z, &old) != MSGPACK_UNPACK_SUCCESS)
    rc = bus_error(BUS_ECORRUPT, "spec of %s does not decode", wf);
  else if (dag_obj_equal(&old, resource, "", errs, max, nerr))
    rc = DAG_APPLY_UNCHANGED;
  else
    rc = bus_error(BUS_EEXISTS,
                   "workflow %s exists with another spec (a spec is "
                   "immutable: delete it first)",
                   wf);
  msgpack_zone_destroy(&z);
  return rc;
}

/* What a raw task needs to run on a node, as lark-scheduler checks it
 * (artifact.h): its artifact's form, an entrypoint or a runScript. */
static void
check_runnable(const msgpack_object *task, const msgpack_object *spec,
               uint32_t i, uint32_t j, bus_field_err *errs, int max,
               int *nerr) {
  char field[64], why[200], path[160], reason[300], tn[BUS_NAME_MAX + 1] = "";
  if (!lark_task_runnable(task, spec, field, sizeof field, why, sizeof why))
    return;
  bus_obj_str(task, "name", tn, sizeof tn);
  snprintf(path, sizeof path, "spec.jobTemplates[%u].spec.tasks[%u].%s", i, j,
           field);
  snprintf(reason, sizeof reason, "task %s: %s", tn, why);
  add_detail(errs, max, nerr, path, reason);
}

/*
 * Each task's runtime, as lark-scheduler checks a Job's: one, and one a
 * node can offer. lark-dag submits its Jobs itself, past the scheduler's
 * job.apply check, so a Workflow is checked here when applied. Nodes
 * offer raw and raw+netns only (the Node schema's enum; raw+netns comes
 * from a domain, not from the task), so a kubernetes or docker task is
 * refused outright rather than left as a Job no node would ever take.
 */
static void
check_runtimes(const msgpack_object *spec, bus_field_err *errs, int max,
               int *nerr) {
  const msgpack_object *jt = bus_obj_get(spec, "jobTemplates");
  for (uint32_t i = 0;
       jt && jt->type == MSGPACK_OBJECT_ARRAY && i < jt->via.array.size; i++) {
    const msgpack_object *tmpl = &jt->via.array.ptr[i];
    const msgpack_object *ts = bus_obj_get(bus_obj_get(tmpl, "spec"), "tasks");
    char tn[BUS_NAME_MAX + 1] = "", task[BUS_NAME_MAX + 1] = "", rt[32] = "";
    bus_obj_str(tmpl, "name", tn, sizeof tn);
    for (uint32_t j = 0;
         ts && ts->type == MSGPACK_OBJECT_ARRAY && j < ts->via.array.size;
         j++) {
      const msgpack_object *o = bus_obj_get(&ts->via.array.ptr[j], "runtime");
      char path[96], why[256];
      bus_obj_str(&ts->via.array.ptr[j], "name", task, sizeof task);
      snprintf(path, sizeof path,
               "spec.jobTemplates[%u].spec.tasks[%u].runtime", i, j);
      const msgpack_object_kv *kv =
          o && o->type == MSGPACK_OBJECT_MAP && o->via.map.size == 1
              ? &o->via.map.ptr[0]
              : NULL;
      if (!kv || kv->key.type != MSGPACK_OBJECT_STR ||
          kv->key.via.str.size >= sizeof rt) {
        snprintf(why, sizeof why,
                 "template %s, task %s: must be a map with one runtime (raw, "
                 "kubernetes or docker)",
                 tn, task);
        add_detail(errs, max, nerr, path, why);
        continue;
      }
      memcpy(rt, kv->key.via.str.ptr, kv->key.via.str.size);
      rt[kv->key.via.str.size] = 0;
      if (strcmp(rt, "raw")) {
        snprintf(why, sizeof why,
                 "template %s, task %s needs runtime %s, which no node offers",
                 tn, task, rt);
        add_detail(errs, max, nerr, path, why);
      } else
        check_runnable(&ts->via.array.ptr[j], bus_obj_get(tmpl, "spec"), i, j,
                       errs, max, nerr);
    }
  }
}

/* Each template's engine stages name tasks of its Job, as lark-scheduler
 * checks a Job's (jobcheck.h). */
static void
check_engines(const msgpack_object *spec, bus_field_err *errs, int max,
              int *nerr) {
  const msgpack_object *jt = bus_obj_get(spec, "jobTemplates");
  for (uint32_t i = 0;
       jt && jt->type == MSGPACK_OBJECT_ARRAY && i < jt->via.array.size; i++) {
    char at[64];
    snprintf(at, sizeof at, "spec.jobTemplates[%u].spec", i);
    lark_job_engine_check(bus_obj_get(&jt->via.array.ptr[i], "spec"), at, errs,
                          max, nerr);
  }
}

int
dag_check_apply(bus_txn *t, const msgpack_object *resource, bus_field_err *errs,
                int max, int *nerr, uint64_t *prev) {
  char wf[BUS_NAME_MAX + 1], subject[BUS_SUBJECT_MAX];
  dag_graph g;
  dag__wfrec r;
  bus_version v;
  *nerr = 0;
  *prev = 0;
  const msgpack_object *md = bus_obj_get(resource, "metadata");
  if (!bus_obj_str(md, "name", wf, sizeof wf) ||
      !bus_name_valid(wf, BUS_NAME_MAX)) {
    add_detail(errs, max, nerr, "metadata.name", "must be a name");
    return bus_error(BUS_ENAME, "metadata.name: must be a name");
  }
  int rc =
      dag_graph_build(bus_obj_get(resource, "spec"), wf, &g, errs, max, nerr);
  if (rc)
    return rc;
  check_runtimes(bus_obj_get(resource, "spec"), errs, max, nerr);
  check_engines(bus_obj_get(resource, "spec"), errs, max, nerr);
  if (*nerr) {
    dag_graph_free(&g);
    return bus_error(BUS_EFIELD, "%s", errs[0].reason);
  }
  if (!(rc = dag__subject(DAG__WF_PREFIX, wf, subject, sizeof subject)))
    rc = bus_txn_version(t, subject, &v);
  int have = 0;
  if (!rc) {
    rc = dag__wf_get(t, wf, &r);
    have = rc == 0 && !r.deleted;
    rc = rc == BUS_ENOT_FOUND ? 0 : rc;
  }
  *prev = v.seq;
  if (!rc && have)
    rc = compare_existing(t, wf, resource, errs, max, nerr);
  else if (!rc && !(rc = check_names(t, wf, &g, errs, max, nerr)) && *nerr)
    rc = bus_error(BUS_EEXISTS, "%s", errs[0].reason);
  dag_graph_free(&g);
  return rc;
}

int
dag_check_verb(bus_txn *t, const char *name, const char *verb,
               const char **type, uint64_t *prev) {
  char subject[BUS_SUBJECT_MAX];
  dag__wfrec r;
  bus_version v;
  if (!bus_name_valid(name, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "invalid workflow name '%s'", name);
  int rc = dag__wf_get(t, name, &r);
  if (rc == BUS_ENOT_FOUND || (!rc && r.deleted))
    return bus_error(BUS_ENOT_FOUND, "no workflow %s", name);
  if (!rc &&
      !(rc = dag__subject(DAG__WF_PREFIX, name, subject, sizeof subject)))
    rc = bus_txn_version(t, subject, &v);
  if (rc)
    return rc;
  *prev = v.seq;
  if (!strcmp(verb, "delete")) {
    *type = "workflow.deleted";
    return 0;
  }
  if (!strcmp(verb, "stop")) {
    *type = "workflow.stopped";
    if (r.stopped)
      return DAG_APPLY_UNCHANGED;
    if (!strcmp(r.phase, "Succeeded"))
      return bus_error(BUS_EINVAL, "workflow %s has Succeeded", name);
    return 0;
  }
  if (!strcmp(verb, "resume")) {
    *type = "workflow.resumed";
    return r.stopped ? 0 : DAG_APPLY_UNCHANGED;
  }
  return bus_error(BUS_EINVAL, "unknown verb %s", verb);
}

/*
 * commands.c - what users ask the scheduler: apply, stop, resume and
 * delete Jobs; register, cordon and uncordon Nodes; and read them.
 *
 * A command is checked against the view (read transaction), then its
 * event is appended with the broker's version check (prev = the version
 * the check saw), so a race between two commands lands one and refuses
 * the other with CONFLICT. The event id is libbus's one rule
 * (bus_cmd_event_id): a retried command lands once. The verbs are the
 * table at the end, served by bus_verbs_serve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"
#include "expand.h"
#include "scheduler.h"

#define MAX_ERRS 32

/* Append type on lark.ev.<kind>.<name> for cmd, data packed in sb. */
static int
append(bus_conn *c, const bus_cmd *cmd, const char *kind, const char *name,
       const char *type, uint64_t prev, const msgpack_sbuffer *sb,
       uint64_t *seq) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.ev.%s.%s", kind, name);
  return bus_cmd_append(c, cmd, subject, type, prev, sb ? sb->data : NULL,
                        sb ? sb->size : 0, seq, NULL);
}

static int
reply_append(bus_conn *c, const bus_cmd *cmd, int rc, uint64_t seq,
             const char *what) {
  if (rc == 0) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_str_with_body(&pk, "result", 6);
    msgpack_pack_str_with_body(&pk, what, strlen(what));
    bus_cmd_reply_ok(c, cmd, seq, sb.data, sb.size, 1);
    msgpack_sbuffer_destroy(&sb);
  } else if (rc == BUS_ECONFLICT) {
    bus_cmd_reply_error(
        c, cmd, rc, "changed by someone else meanwhile: try again", NULL, 0);
  } else {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0);
  }
  return rc;
}

/* ------------------------------------------------------------ job.apply */

static int
collect_runtimes(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  unsigned *mask = ud;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  if (msgpack_unpack(v, vl, NULL, &z, &o) >= 0) {
    const msgpack_object *rts =
        bus_obj_get(bus_obj_get(&o, "spec"), "runtimes");
    if (!rts || rts->type != MSGPACK_OBJECT_ARRAY || !rts->via.array.size)
      *mask |= SCHED_RT_RAW;
    for (uint32_t i = 0;
         rts && rts->type == MSGPACK_OBJECT_ARRAY && i < rts->via.array.size;
         i++) {
      const msgpack_object *r = &rts->via.array.ptr[i];
      char name[32];
      if (r->type == MSGPACK_OBJECT_STR) {
        snprintf(name, sizeof name, "%.*s", (int)r->via.str.size,
                 r->via.str.ptr);
        *mask |= sched_runtime_bit(name);
      }
    }
  }
  msgpack_zone_destroy(&z);
  return 0;
}

/* The paths where two resources differ (a changed spec is refused). */
static void
diff(const msgpack_object *a, const msgpack_object *b, char *path, size_t plen,
     bus_field_err *errs, int *n) {
  if (*n >= MAX_ERRS)
    return;
  if (a && b && a->type == MSGPACK_OBJECT_MAP &&
      b->type == MSGPACK_OBJECT_MAP) {
    for (int side = 0; side < 2; side++) {
      const msgpack_object *x = side ? b : a, *y = side ? a : b;
      for (uint32_t i = 0; i < x->via.map.size; i++) {
        const msgpack_object_kv *kv = &x->via.map.ptr[i];
        char key[128];
        if (kv->key.type != MSGPACK_OBJECT_STR)
          continue;
        snprintf(key, sizeof key, "%.*s", (int)kv->key.via.str.size,
                 kv->key.via.str.ptr);
        const msgpack_object *other = bus_obj_get(y, key);
        if (side && other)
          continue; /* both sides have it: compared on the first pass */
        size_t at = strlen(path);
        snprintf(path + at, plen - at, "%s%s", at ? "." : "", key);
        diff(side ? other : &kv->val, side ? &kv->val : other, path, plen, errs,
             n);
        path[at] = 0;
      }
    }
    return;
  }
  if (a && b && msgpack_object_equal(*a, *b))
    return;
  snprintf(errs[*n].path, sizeof errs[*n].path, "%s", path);
  snprintf(errs[*n].reason, sizeof errs[*n].reason, "%s",
           !a   ? "added"
           : !b ? "removed"
                : "changed");
  (*n)++;
}

/* Same spec: unchanged. Only spec.stopped differs: stop or resume. Else
 * EXISTS with the differences. */
static int
compare_existing(bus_txn *t, const char *name, const msgpack_object *res,
                 bus_field_err *errs, int *n, int *stop_to) {
  const void *data;
  size_t len;
  int rc = sched_spec_get(t, "specs", name, &data, &len);
  if (rc)
    return rc;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object old;
  char path[256] = "";
  *n = 0;
  if (msgpack_unpack(data, len, NULL, &z, &old) >= 0)
    diff(&old, res, path, sizeof path, errs, n);
  msgpack_zone_destroy(&z);
  *stop_to = -1;
  if (*n == 1 && !strcmp(errs[0].path, "spec.stopped")) {
    const msgpack_object *s = bus_obj_get(bus_obj_get(res, "spec"), "stopped");
    *stop_to = s && s->type == MSGPACK_OBJECT_BOOLEAN && s->via.boolean;
  }
  return 0;
}

/* What each task needs to run on a node (artifact.h): its artifact's
 * form, and an entrypoint or a runScript. Adds to errs[*n..]. */
static int
check_runnable(const msgpack_object *res, bus_field_err *errs, int *n) {
  const msgpack_object *spec = bus_obj_get(res, "spec");
  const msgpack_object *ts = bus_obj_get(spec, "tasks");
  int found = 0;
  for (uint32_t i = 0;
       ts && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size; i++) {
    const msgpack_object *task = &ts->via.array.ptr[i];
    char field[64], why[200], name[SCHED_NAME_SZ] = "";
    if (!lark_task_runnable(task, spec, field, sizeof field, why, sizeof why))
      continue;
    found++;
    if (*n >= MAX_ERRS)
      continue;
    bus_obj_str(task, "name", name, sizeof name);
    snprintf(errs[*n].path, sizeof errs[*n].path, "spec.tasks[%u].%.60s", i,
             field);
    snprintf(errs[*n].reason, sizeof errs[*n].reason, "task %.63s: %.88s", name,
             why);
    (*n)++;
  }
  return found ? BUS_EFIELD : 0;
}

/* A name collision leaves its reason, naming both Jobs, in message. */
static int
check_new_job(bus_txn *t, const msgpack_object *res, bus_field_err *errs,
              int *n, char *message, size_t cap) {
  sched_job job;
  int rc = sched_job_from_msgpack(res, &job, errs, MAX_ERRS, n);
  if (!rc) {
    sched_owner o = {.t = t};
    rc = sched_names_check(&job, sched_owner_of, &o, &errs[0]);
    *n = rc ? 1 : 0;
    if (rc)
      snprintf(message, cap, "%s", errs[0].reason);
  }
  if (!rc) {
    unsigned offered = 0;
    bus_txn_scan(t, "nodespecs", NULL, 0, collect_runtimes, &offered);
    rc = sched_job_runtimes_check(&job, offered ? offered : SCHED_RT_ALL, errs,
                                  MAX_ERRS, n);
  }
  if (!rc && (rc = check_runnable(res, errs, n)))
    snprintf(message, cap, "%s", errs[0].reason);
  sched_job_clear(&job);
  return rc;
}

typedef struct plan {
  const char *type; /* event to append, NULL: nothing */
  uint64_t prev;
  const char *what;  /* created, unchanged, stopped, resumed */
  char message[256]; /* a refusal's message, when not the usual one */
} plan;

static int
plan_job_apply(bus_view *v, const msgpack_object *res, const char *name,
               bus_field_err *errs, int *n, plan *pl) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", name);
  bus_version ver;
  job_rec j;
  rc = bus_txn_version(t, subject, &ver);
  pl->prev = ver.seq;
  int exists = !rc && sched_job_get(t, name, &j) == 0 && !j.deleted;
  if (!rc && exists) {
    int stop_to;
    rc = compare_existing(t, name, res, errs, n, &stop_to);
    if (!rc && *n == 0)
      pl->what = "unchanged";
    else if (!rc && stop_to >= 0) {
      pl->type = stop_to ? "job.stopped" : "job.resumed";
      pl->what = stop_to ? "stopped" : "resumed";
      *n = 0;
    } else if (!rc)
      rc = BUS_EEXISTS;
  } else if (!rc) {
    rc = check_new_job(t, res, errs, n, pl->message, sizeof pl->message);
    pl->type = "job.submitted";
    pl->what = "created";
  }
  bus_txn_end(t);
  return rc;
}

/*
 * job.apply runs once the view has applied everything LARK_EVENTS held
 * when the command came (BUS_VERB_CATCH_UP, up to 5 s): a Job submitted
 * just before, by this command queue or another scheduler, is then in the
 * view and its names are checked against. apply refuses what slips past.
 */
static int
job_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  bus_field_err errs[MAX_ERRS];
  int n = 0;
  char name[SCHED_NAME_SZ] = "";
  int rc =
      res ? bus_schema_check("Job", res, errs, MAX_ERRS, &n) : BUS_EMISSING;
  if (rc ||
      !bus_obj_str(bus_obj_get(res, "metadata"), "name", name, sizeof name)) {
    bus_cmd_reply_error(c, cmd, rc ? rc : BUS_EMISSING,
                        res ? "invalid Job" : "the body needs a resource", errs,
                        n < MAX_ERRS ? n : MAX_ERRS);
    return rc ? rc : BUS_EMISSING;
  }
  plan pl = {0};
  rc = plan_job_apply(v, res, name, errs, &n, &pl);
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc,
                        pl.message[0] ? pl.message
                        : rc == BUS_EEXISTS
                            ? "a Job's spec cannot change (only "
                              "spec.stopped); delete it first"
                            : "invalid Job",
                        errs, n < MAX_ERRS ? n : MAX_ERRS);
    return rc;
  }
  uint64_t seq = 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, *res);
  if (pl.type && !strcmp(pl.type, "job.submitted"))
    rc = append(c, cmd, "job", name, pl.type, pl.prev, &sb, &seq);
  else if (pl.type)
    rc = append(c, cmd, "job", name, pl.type, pl.prev, NULL, &seq);
  msgpack_sbuffer_destroy(&sb);
  return reply_append(c, cmd, rc, seq, pl.what);
}

/* ------------------------------------------------- job stop/resume/delete */

static int
job_state(bus_view *v, const char *name, job_rec *j, uint64_t *prev) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", name);
  bus_version ver;
  rc = sched_job_get(t, name, j);
  if (!rc)
    rc = bus_txn_version(t, subject, &ver);
  *prev = ver.seq;
  bus_txn_end(t);
  if (rc == BUS_ENOT_FOUND || (!rc && j->deleted))
    return bus_error(BUS_ENOT_FOUND, "no job %s", name);
  return rc;
}

static int
job_verb(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char name[SCHED_NAME_SZ] = "";
  job_rec j;
  uint64_t prev = 0, seq = 0;
  bus_obj_str(&cmd->body, "name", name, sizeof name);
  int rc = job_state(v, name, &j, &prev);
  const char *type = NULL, *what = NULL;
  if (!rc && !strcmp(cmd->verb, "stop")) {
    if (j.stopped || !strcmp(j.phase, "Succeeded"))
      what = j.stopped ? "unchanged" : NULL;
    else
      type = "job.stopped", what = "stopped";
    if (!what)
      rc = bus_error(BUS_EINVAL, "job %s has Succeeded: nothing to stop", name);
  } else if (!rc && !strcmp(cmd->verb, "resume")) {
    if (!j.stopped)
      what = "unchanged";
    else
      type = "job.resumed", what = "resumed";
  } else if (!rc) {
    type = "job.deleted", what = "deleted";
  }
  if (!rc && type)
    rc = append(c, cmd, "job", name, type, prev, NULL, &seq);
  return reply_append(c, cmd, rc, seq, what ? what : "");
}

/* ----------------------------------------------------------------- nodes */

static int
node_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  bus_field_err errs[MAX_ERRS];
  int n = 0;
  char name[SCHED_NAME_SZ] = "";
  int rc =
      res ? bus_schema_check("Node", res, errs, MAX_ERRS, &n) : BUS_EMISSING;
  if (!rc &&
      !bus_obj_str(bus_obj_get(res, "metadata"), "name", name, sizeof name))
    rc = BUS_EMISSING;
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, "invalid Node", errs,
                        n < MAX_ERRS ? n : MAX_ERRS);
    return rc;
  }
  bus_txn *t;
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  bus_version ver = {0};
  const char *what = "created";
  if ((rc = bus_view_read(v, &t)) == 0) {
    bus_txn_version(t, subject, &ver);
    const void *old;
    size_t len;
    if (sched_spec_get(t, "nodespecs", name, &old, &len) == 0) {
      msgpack_sbuffer cur;
      msgpack_sbuffer_init(&cur);
      msgpack_packer pk;
      msgpack_packer_init(&pk, &cur, msgpack_sbuffer_write);
      msgpack_pack_object(&pk, *res);
      what = cur.size == len && !memcmp(cur.data, old, len) ? "unchanged"
                                                            : "configured";
      msgpack_sbuffer_destroy(&cur);
    }
    bus_txn_end(t);
  }
  uint64_t seq = 0;
  /* the node's stream first: it exists before the node can be placed */
  if (!rc && (rc = sched_slice_ensure(c, name)) > 0)
    rc = 0;
  if (!rc && strcmp(what, "unchanged")) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, *res);
    rc = append(c, cmd, "node", name, "node.registered", ver.seq, &sb, &seq);
    msgpack_sbuffer_destroy(&sb);
  }
  return reply_append(c, cmd, rc, seq, what);
}

static int
node_verb(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char name[SCHED_NAME_SZ] = "", subject[BUS_SUBJECT_MAX];
  bus_obj_str(&cmd->body, "name", name, sizeof name);
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  bus_txn *t;
  node_rec r;
  bus_version ver = {0};
  int rc = bus_view_read(v, &t);
  if (!rc) {
    rc = sched_noderec_get(t, name, &r);
    bus_txn_version(t, subject, &ver);
    bus_txn_end(t);
  }
  if (rc == BUS_ENOT_FOUND)
    rc = bus_error(rc, "no node %s", name);
  int cordon = !strcmp(cmd->verb, "cordon");
  uint64_t seq = 0;
  const char *what = cordon ? "cordoned" : "uncordoned";
  if (!rc && r.cordoned == cordon)
    what = "unchanged";
  else if (!rc)
    rc = append(c, cmd, "node", name,
                cordon ? "node.cordoned" : "node.uncordoned", ver.seq, NULL,
                &seq);
  return reply_append(c, cmd, rc, seq, what);
}

/* ---------------------------------------------------------------- verbs */

/* Writes are one at a time per kind, as each kind's queue was before:
 * a command's check and append never interleave with another's. */
#define W BUS_VERB_SERIAL

static const bus_verb verbs[] = {
    {NULL, "list", NULL, sched_query, 0},
    {NULL, "describe", NULL, sched_query, 0},
    {"job", "apply", job_apply, NULL, W | BUS_VERB_CATCH_UP},
    {"job", "stop", job_verb, NULL, W},
    {"job", "resume", job_verb, NULL, W},
    {"job", "delete", job_verb, NULL, W},
    {"node", "apply", node_apply, NULL, W},
    {"node", "cordon", node_verb, NULL, W},
    {"node", "uncordon", node_verb, NULL, W},
    {0},
};

static const char *const kinds[] = {"job", "node", "task", "pod", NULL};

const bus_verbs sched_verbs = {
    .kinds = kinds, .verbs = verbs, .unknown = "no such command"};

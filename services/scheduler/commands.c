/*
 * commands.c - what users ask the scheduler: apply, stop, resume and
 * delete Jobs; register, cordon, uncordon and delete Nodes; and read
 * them.
 *
 * A command is checked against the view (read transaction), then its
 * event is appended with the broker's version check (prev = the version
 * the check saw), so a race between two commands lands one and refuses
 * the other with CONFLICT. The event id is libbus's one rule
 * (bus_cmd_event_id): a retried command lands once. The verbs are the
 * table at the end, served by bus_verbs_serve.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"
#include "expand.h"
#include "jobcheck.h"
#include "scheduler.h"

#define MAX_ERRS 32

/* lark.ev.<kind>.<name>, the subject of every event of a Job or Node. */
static int
subject_of(const char *kind, const char *name, char subject[BUS_SUBJECT_MAX]) {
  return !strcmp(kind, "job")
             ? bus_subj_job_submitted(subject, BUS_SUBJECT_MAX, name)
             : bus_subj_node_registered(subject, BUS_SUBJECT_MAX, name);
}

/* Append type on its subject for cmd, data packed in b (NULL: none). */
static int
append(bus_conn *c, const bus_cmd *cmd, bus_type type, const char *name,
       uint64_t prev, const bus_packbuf *b, uint64_t *seq) {
  char subject[BUS_SUBJECT_MAX];
  const char *tn = bus_type_name(type);
  int rc = subject_of(strncmp(tn, "job.", 4) ? "node" : "job", name, subject);
  return rc ? rc
            : bus_cmd_append(c, cmd, subject, tn, prev, b ? b->sb.data : NULL,
                             b ? b->sb.size : 0, seq, NULL);
}

/*
 * The version of the subject of name (a job or node) into *prev and, rec
 * set, its record (a job_rec or node_rec); NOT_FOUND naming it when there
 * is none.
 */
static int
state_in(bus_txn *t, const char *kind, const char *name, void *rec,
         uint64_t *prev) {
  char subject[BUS_SUBJECT_MAX];
  bus_version ver = {0};
  int rc = subject_of(kind, name, subject) ? BUS_ENOT_FOUND : 0;
  if (!rc)
    rc = bus_txn_version(t, subject, &ver);
  if (!rc && rec)
    rc = !strcmp(kind, "job") ? sched_job_get(t, name, rec)
                              : sched_noderec_get(t, name, rec);
  *prev = ver.seq;
  return rc == BUS_ENOT_FOUND ? bus_error(rc, "no %s %s", kind, name) : rc;
}

/* The same for the body's name (into name), in a read of v of its own. */
static int
state_of(bus_view *v, const bus_cmd *cmd, const char *kind,
         char name[SCHED_NAME_SZ], void *rec, uint64_t *prev) {
  bus_txn *t;
  bus_obj_str(&cmd->body, "name", name, SCHED_NAME_SZ);
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = state_in(t, kind, name, rec, prev);
  bus_txn_end(t);
  return rc;
}

static int
reply_append(bus_conn *c, const bus_cmd *cmd, int rc, uint64_t seq,
             const char *what) {
  if (rc == 0) {
    bus_packbuf b;
    bus_packbuf_init(&b);
    bus_pack_kv_str(&b.pk, "result", what);
    bus_cmd_reply_ok(c, cmd, seq, b.sb.data, b.sb.size, 1);
    bus_packbuf_destroy(&b);
  } else if (rc == BUS_ECONFLICT) {
    bus_cmd_reply_error(
        c, cmd, rc, "changed by someone else meanwhile: try again", NULL, 0);
  } else {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0);
  }
  return rc;
}

/* ------------------------------------------------------------ resources */

/*
 * The body's resource, checked against kind's schema and unpacked into
 * out (type's data, from z); its name into name. On error it is replied,
 * missing the message when there is no resource, else invalid.
 */
static int
resource_of(bus_conn *c, const bus_cmd *cmd, const char *kind, bus_type type,
            const char *missing, msgpack_zone *z, void *out,
            char name[SCHED_NAME_SZ]) {
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  bus_field_err errs[MAX_ERRS];
  char invalid[32];
  int n = 0;
  int rc = res ? bus_schema_check(kind, res, errs, MAX_ERRS, &n) : BUS_EMISSING;
  if (!rc)
    rc = bus_data_unpack(type, res, z, out);
  if (!rc) /* a Job's and a Node's resource both start with metadata */
    bus_str_copy(((const bus_job_res *)out)->metadata.name, name,
                 SCHED_NAME_SZ);
  snprintf(invalid, sizeof invalid, "invalid %s", kind);
  if (rc)
    bus_cmd_reply_error(c, cmd, rc, res ? invalid : missing, errs,
                        n < MAX_ERRS ? n : MAX_ERRS);
  return rc;
}

/* ------------------------------------------------------------ job.apply */

static int
collect_runtimes(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  unsigned *mask = ud;
  msgpack_zone z;
  msgpack_object o;
  bus_node_res res;
  char name[32];
  if (!msgpack_zone_init(&z, 1024))
    return -ENOMEM;
  if (msgpack_unpack(v, vl, NULL, &z, &o) >= 0 &&
      bus_node_registered_unpack(&o, &z, &res) == 0) {
    if (!res.spec.runtimes.n)
      *mask |= SCHED_RT_RAW;
    for (uint32_t i = 0; i < res.spec.runtimes.n; i++)
      *mask |= sched_runtime_bit(
          bus_str_copy(res.spec.runtimes.v[i], name, sizeof name));
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
                 const bus_job_res *job, bus_field_err *errs, int *n,
                 int *stop_to) {
  msgpack_zone z;
  msgpack_object old;
  char path[256] = "";
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = sched_spec_unpack(t, "specs", name, &z, &old);
  *n = 0;
  if (rc != BUS_ECORRUPT && rc)
    goto out;
  if (!rc)
    diff(&old, res, path, sizeof path, errs, n);
  rc = 0;
  *stop_to = -1;
  if (*n == 1 && !strcmp(errs[0].path, "spec.stopped"))
    *stop_to = job->spec.has_stopped && job->spec.stopped;
out:
  msgpack_zone_destroy(&z);
  return rc;
}

/* What each task needs to run on a node (artifact.h): its artifact's
 * form, and an entrypoint or a runScript. Adds to errs[*n..]. */
static int
check_runnable(const bus_job_res *job, bus_field_err *errs, int *n) {
  int found = 0;
  for (uint32_t i = 0; i < job->spec.tasks.n; i++) {
    char field[64], why[200], name[SCHED_NAME_SZ];
    if (!lark_task_can_run(&job->spec.tasks.v[i], &job->spec, field,
                           sizeof field, why, sizeof why))
      continue;
    found++;
    if (*n >= MAX_ERRS)
      continue;
    bus_str_copy(job->spec.tasks.v[i].name, name, sizeof name);
    snprintf(errs[*n].path, sizeof errs[*n].path, "spec.tasks[%u].%.60s", i,
             field);
    snprintf(errs[*n].reason, sizeof errs[*n].reason, "task %.63s: %.88s", name,
             why);
    (*n)++;
  }
  return found ? BUS_EFIELD : 0;
}

/* A name collision leaves its reason, naming both Jobs, in message; so
 * does a stage naming no task of the Job, with its path. res is the
 * resource as submitted, res_t decoded. */
static int
check_new_job(bus_txn *t, const msgpack_object *res, const bus_job_res *res_t,
              bus_field_err *errs, int *n, char *message, size_t cap) {
  sched_job job;
  int rc = sched_job_read(res_t, &job, errs, MAX_ERRS, n);
  if (!rc && (rc = lark_job_engine_check(bus_obj_get(res, "spec"), "spec", errs,
                                         MAX_ERRS, n)))
    snprintf(message, cap, "%.96s: %.150s", errs[0].path, errs[0].reason);
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
  if (!rc && (rc = check_runnable(res_t, errs, n)))
    snprintf(message, cap, "%s", errs[0].reason);
  sched_job_clear(&job);
  return rc;
}

typedef struct plan {
  bus_type type; /* event to append, BUS_T_UNKNOWN: nothing */
  uint64_t prev;
  const char *what;  /* created, unchanged, stopped, resumed */
  char message[256]; /* a refusal's message, when not the usual one */
} plan;

static int
plan_job_apply(bus_view *v, const msgpack_object *res, const bus_job_res *job,
               const char *name, bus_field_err *errs, int *n, plan *pl) {
  bus_txn *t;
  job_rec j;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = state_in(t, "job", name, &j, &pl->prev);
  int exists = !rc && !j.deleted;
  if (rc == BUS_ENOT_FOUND)
    rc = 0;
  if (!rc && exists) {
    int stop_to;
    rc = compare_existing(t, name, res, job, errs, n, &stop_to);
    if (!rc && *n == 0)
      pl->what = "unchanged";
    else if (!rc && stop_to >= 0) {
      pl->type = stop_to ? BUS_T_JOB_STOPPED : BUS_T_JOB_RESUMED;
      pl->what = stop_to ? "stopped" : "resumed";
      *n = 0;
    } else if (!rc)
      rc = BUS_EEXISTS;
  } else if (!rc) {
    rc = check_new_job(t, res, job, errs, n, pl->message, sizeof pl->message);
    pl->type = BUS_T_JOB_SUBMITTED;
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
  char name[SCHED_NAME_SZ];
  bus_job_res job;
  msgpack_zone z;
  plan pl = {0};
  bus_packbuf b;
  uint64_t seq = 0;
  int n = 0;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = resource_of(c, cmd, "Job", BUS_T_JOB_SUBMITTED,
                       "the body needs a resource", &z, &job, name);
  if (!rc && (rc = plan_job_apply(v, res, &job, name, errs, &n, &pl)))
    bus_cmd_reply_error(c, cmd, rc,
                        pl.message[0] ? pl.message
                        : rc == BUS_EEXISTS
                            ? "a Job's spec cannot change (only "
                              "spec.stopped); delete it first"
                            : "invalid Job",
                        errs, n < MAX_ERRS ? n : MAX_ERRS);
  if (rc) {
    msgpack_zone_destroy(&z);
    return rc;
  }
  bus_packbuf_init(&b);
  msgpack_pack_object(&b.pk, *res);
  if (pl.type)
    rc = append(c, cmd, pl.type, name, pl.prev,
                pl.type == BUS_T_JOB_SUBMITTED ? &b : NULL, &seq);
  bus_packbuf_destroy(&b);
  msgpack_zone_destroy(&z);
  return reply_append(c, cmd, rc, seq, pl.what);
}

/* ------------------------------------------ stop, resume, delete, cordon */

/* What a verb does to the record of the name it is given: the event to
 * append (BUS_T_UNKNOWN: none) and the reply's result. */
static int
job_plan(const bus_cmd *cmd, const char *name, const void *rec, bus_type *type,
         const char **what) {
  const job_rec *j = rec;
  if (j->deleted)
    return bus_error(BUS_ENOT_FOUND, "no job %s", name);
  if (!strcmp(cmd->verb, "stop") && j->stopped)
    *what = "unchanged";
  else if (!strcmp(cmd->verb, "stop") && !strcmp(j->phase, "Succeeded"))
    return bus_error(BUS_EINVAL, "job %s has Succeeded: nothing to stop", name);
  else if (!strcmp(cmd->verb, "stop"))
    *type = BUS_T_JOB_STOPPED, *what = "stopped";
  else if (!strcmp(cmd->verb, "resume") && !j->stopped)
    *what = "unchanged";
  else if (!strcmp(cmd->verb, "resume"))
    *type = BUS_T_JOB_RESUMED, *what = "resumed";
  else
    *type = BUS_T_JOB_DELETED, *what = "deleted";
  return 0;
}

static int
node_plan(const bus_cmd *cmd, const char *name, const void *rec, bus_type *type,
          const char **what) {
  const node_rec *r = rec;
  int cordon = !strcmp(cmd->verb, "cordon");
  (void)name;
  if (!strcmp(cmd->verb, "delete")) { /* admin only: the verbs' table */
    *type = BUS_T_NODE_DELETED, *what = "deleted";
    return 0;
  }
  *what = cordon ? "cordoned" : "uncordoned";
  if (r->cordoned == cordon)
    *what = "unchanged";
  else
    *type = cordon ? BUS_T_NODE_CORDONED : BUS_T_NODE_UNCORDONED;
  return 0;
}

/* job stop, resume, delete; node cordon, uncordon, delete: {name}. */
static int
record_verb(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char name[SCHED_NAME_SZ] = "";
  union {
    job_rec j;
    node_rec n;
  } rec;
  uint64_t prev = 0, seq = 0;
  bus_type type = BUS_T_UNKNOWN;
  const char *what = "";
  int job = !strcmp(cmd->kind, "job");
  int rc = state_of(v, cmd, job ? "job" : "node", name, &rec, &prev);
  if (!rc)
    rc = (job ? job_plan : node_plan)(cmd, name, &rec, &type, &what);
  if (!rc && type)
    rc = append(c, cmd, type, name, prev, NULL, &seq);
  return reply_append(c, cmd, rc, seq, what);
}

/* ----------------------------------------------------------------- nodes */

static int
node_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char name[SCHED_NAME_SZ];
  bus_node_res node;
  msgpack_zone z;
  bus_packbuf b;
  bus_txn *t;
  uint64_t prev = 0, seq = 0;
  const char *what = "created";
  if (!msgpack_zone_init(&z, 2048))
    return -ENOMEM;
  int rc = resource_of(c, cmd, "Node", BUS_T_NODE_REGISTERED, "invalid Node",
                       &z, &node, name);
  msgpack_zone_destroy(&z);
  if (rc)
    return rc;
  bus_packbuf_init(&b);
  msgpack_pack_object(&b.pk, *bus_obj_get(&cmd->body, "resource"));
  if ((rc = bus_view_read(v, &t)) == 0) {
    const void *old;
    size_t len;
    state_in(t, "node", name, NULL, &prev);
    if (sched_spec_get(t, "nodespecs", name, &old, &len) == 0)
      what = b.sb.size == len && !memcmp(b.sb.data, old, len) ? "unchanged"
                                                              : "configured";
    bus_txn_end(t);
  }
  /* the node's stream first: it exists before the node can be placed */
  if (!rc && (rc = sched_slice_ensure(c, name)) > 0)
    rc = 0;
  if (!rc && strcmp(what, "unchanged"))
    rc = append(c, cmd, BUS_T_NODE_REGISTERED, name, prev, &b, &seq);
  bus_packbuf_destroy(&b);
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
    {"job", "stop", record_verb, NULL, W},
    {"job", "resume", record_verb, NULL, W},
    {"job", "delete", record_verb, NULL, W},
    {"node", "apply", node_apply, NULL, W},
    {"node", "cordon", record_verb, NULL, W},
    {"node", "uncordon", record_verb, NULL, W},
    {"node", "delete", record_verb, NULL,
     W | BUS_VERB_ADMIN | BUS_VERB_CATCH_UP},
    {0},
};

static const char *const kinds[] = {"job", "node", "task", "pod", NULL};

const bus_verbs sched_verbs = {
    .kinds = kinds, .verbs = verbs, .unknown = "no such command"};

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
 * table at the end, served by bus_verbs_serve; job.apply, which users
 * send most and many at once, is commands_apply.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands-int.h"

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
int
sched_cmd_state_in(bus_txn *t, const char *kind, const char *name, void *rec,
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
  rc = sched_cmd_state_in(t, kind, name, rec, prev);
  bus_txn_end(t);
  return rc;
}

int
sched_cmd_reply(bus_conn *c, const bus_cmd *cmd, int rc, uint64_t seq,
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
int
sched_cmd_resource(bus_conn *c, const bus_cmd *cmd, const char *kind,
                   bus_type type, const char *missing, msgpack_zone *z,
                   void *out, char name[SCHED_NAME_SZ]) {
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
  if (job)
    pthread_mutex_lock(&sched_job_writes);
  int rc = state_of(v, cmd, job ? "job" : "node", name, &rec, &prev);
  if (!rc)
    rc = (job ? job_plan : node_plan)(cmd, name, &rec, &type, &what);
  if (!rc && type)
    rc = append(c, cmd, type, name, prev, NULL, &seq);
  if (job)
    pthread_mutex_unlock(&sched_job_writes);
  return sched_cmd_reply(c, cmd, rc, seq, what);
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
  int rc = sched_cmd_resource(c, cmd, "Node", BUS_T_NODE_REGISTERED,
                              "invalid Node", &z, &node, name);
  msgpack_zone_destroy(&z);
  if (rc)
    return rc;
  bus_packbuf_init(&b);
  msgpack_pack_object(&b.pk, *bus_obj_get(&cmd->body, "resource"));
  if ((rc = bus_view_read(v, &t)) == 0) {
    const void *old;
    size_t len;
    sched_cmd_state_in(t, "node", name, NULL, &prev);
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
  return sched_cmd_reply(c, cmd, rc, seq, what);
}

/* ---------------------------------------------------------------- verbs */

/* Writes are one at a time per kind, as each kind's queue was before:
 * a command's check and append never interleave with another's. */
#define W BUS_VERB_SERIAL

static const bus_verb verbs[] = {
    {NULL, "list", NULL, sched_query, 0},
    {NULL, "describe", NULL, sched_query, 0},
    {"job", "apply", sched_job_apply, NULL, 0}, /* in groups: see group_apply */
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

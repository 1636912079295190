/*
 * commands.c - the workflow commands: apply, stop, resume, delete, and the
 * list/describe queries.
 *
 * Invariants, and why they hold:
 * - The actor is the subject's user, never the body's (bus_cmd_parse).
 * - A command lands at most once: its event id is libbus's one rule
 *   (bus_cmd_event_id: kind, verb, user and key), so a retried command is
 *   dropped by the broker's dedupe window and answered with the
 *   original's seq.
 * - Every append carries the version the check read (prev) and the
 *   broker's check, so two applies of one name cannot both create it; the
 *   loser waits until the view has caught up with the stream (the
 *   winner included), then reads it again and gets "unchanged" or the
 *   differences.
 * - The verbs are the table at the end, served by bus_verbs_serve.
 */
#include <stdio.h>
#include <string.h>

#include "dag-app.h"

#define MAX_DETAILS 32
#define ATTEMPTS 60
#define CATCH_MS 3000 /* how long one catch-up may take */

static void
reply_ok(bus_conn *c, const bus_cmd *cmd, uint64_t seq, const char *name,
         int unchanged) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_kv_str(&b.pk, "name", name);
  bus_pack_kv_bool(&b.pk, "unchanged", unchanged);
  bus_cmd_reply_ok(c, cmd, seq, b.sb.data, b.sb.size, 2);
  bus_packbuf_destroy(&b);
}

/* Append one workflow event for cmd (every type has the subject of
 * workflow.submitted); *seq as bus_append. */
static int
append(bus_conn *c, const bus_cmd *cmd, const char *name, const char *type,
       uint64_t prev, const msgpack_object *data, uint64_t *seq) {
  char subject[BUS_SUBJECT_MAX];
  bus_packbuf b;
  int rc = bus_subj_workflow_submitted(subject, sizeof subject, name);
  if (rc)
    return rc;
  bus_packbuf_init(&b);
  if (data)
    msgpack_pack_object(&b.pk, *data);
  rc = bus_cmd_append(c, cmd, subject, type, prev, data ? b.sb.data : NULL,
                      b.sb.size, seq, NULL);
  bus_packbuf_destroy(&b);
  return rc;
}

/* One write: the Workflow, its resource (apply) or NULL (a verb), and
 * what the last check found. */
typedef struct wf_write {
  const char *name;
  const msgpack_object *res;
  const char *type; /* the event to append */
  uint64_t prev;
  bus_field_err errs[MAX_DETAILS];
  int n;
} wf_write;

/* The check of w under one read transaction of the view. */
static int
check(dag_app *a, const bus_cmd *cmd, wf_write *w) {
  bus_txn *t;
  int rc = bus_view_read(a->view, &t);
  if (rc)
    return rc;
  w->type = "workflow.submitted";
  if (w->res)
    rc = dag_check_apply(t, w->res, w->errs, MAX_DETAILS, &w->n, &w->prev);
  else
    rc = dag_check_verb(t, w->name, cmd->verb, &w->type, &w->prev);
  bus_txn_end(t);
  return rc;
}

/*
 * Check w, append its event with the prev the check read, and after a
 * conflict (the view was behind) check again once it has caught up. The
 * reply is sent here; returns 0 or the error replied.
 */
static int
run_write(bus_conn *c, const bus_cmd *cmd, dag_app *a, wf_write *w) {
  uint64_t seq = 0;
  int rc = 0;
  for (int i = 0; i < ATTEMPTS; i++) {
    rc = check(a, cmd, w);
    if (rc == DAG_APPLY_UNCHANGED) {
      reply_ok(c, cmd, w->prev, w->name, 1);
      return 0;
    }
    if (rc == 0)
      rc = append(c, cmd, w->name, w->type, w->prev, w->res, &seq);
    if (rc != BUS_ECONFLICT)
      break;
    bus_view_catch_up(c, a->view, NULL, CATCH_MS);
  }
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), w->errs,
                        w->n < MAX_DETAILS ? w->n : MAX_DETAILS);
    if (w->res)
      SVC_LOG(&a->s, SVC_INFO, "lark.cmd", 0, "%s workflow.apply %s: %s",
              cmd->user, w->name, bus_err_name(rc));
    return rc;
  }
  reply_ok(c, cmd, seq, w->name, 0);
  SVC_LOG(&a->s, SVC_INFO, "lark.ev.workflow", seq, "%s %s workflow %s",
          cmd->user, w->res ? "applied" : cmd->verb, w->name);
  return 0;
}

static int
do_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)v;
  char name[BUS_NAME_MAX + 1] = "";
  wf_write w = {.name = name, .res = bus_obj_get(&cmd->body, "resource")};
  int rc;
  if (!w.res || w.res->type != MSGPACK_OBJECT_MAP) {
    bus_field_err e = {"resource", "required: the Workflow resource"};
    bus_cmd_reply_error(c, cmd, BUS_EMISSING, "no resource", &e, 1);
    return BUS_EMISSING;
  }
  if ((rc = bus_schema_check("Workflow", w.res, w.errs, MAX_DETAILS, &w.n))) {
    bus_cmd_reply_error(c, cmd, rc, "invalid Workflow", w.errs,
                        w.n < MAX_DETAILS ? w.n : MAX_DETAILS);
    return rc;
  }
  bus_ev_workflow_submitted wf;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  if (!bus_workflow_submitted_unpack(w.res, &z, &wf))
    bus_str_copy(wf.metadata.name, name, sizeof name);
  msgpack_zone_destroy(&z);
  return run_write(c, cmd, ud, &w);
}

/* stop, resume, delete {key, name} */
static int
do_verb(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)v;
  char name[BUS_NAME_MAX + 2] = "";
  wf_write w = {.name = name};
  if (!bus_obj_str(&cmd->body, "name", name, sizeof name)) {
    bus_field_err e = {"name", "required: the Workflow's name"};
    bus_cmd_reply_error(c, cmd, BUS_EMISSING, "no name", &e, 1);
    return BUS_EMISSING;
  }
  return run_write(c, cmd, ud, &w);
}

/* ---------------------------------------------------------------- verbs */

/* Writes one at a time, as the one workflow queue took them before. */
static const bus_verb verbs[] = {
    {NULL, "apply", do_apply, NULL, BUS_VERB_SERIAL},
    {NULL, "stop", do_verb, NULL, BUS_VERB_SERIAL},
    {NULL, "resume", do_verb, NULL, BUS_VERB_SERIAL},
    {NULL, "delete", do_verb, NULL, BUS_VERB_SERIAL},
    {NULL, "list", NULL, dag_query, 0},
    {NULL, "describe", NULL, dag_query, 0},
    {0},
};

static const char *const kinds[] = {"workflow", NULL};

const bus_verbs dag_verbs = {
    .kinds = kinds,
    .verbs = verbs,
    .unknown = "verbs: apply, stop, resume, delete, list, describe"};

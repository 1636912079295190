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

/* Run the view check under a read transaction. */
static int
check_apply(dag_app *a, const msgpack_object *res, bus_field_err *errs, int *n,
            uint64_t *prev) {
  bus_txn *t;
  int rc = bus_view_read(a->view, &t);
  if (rc)
    return rc;
  rc = dag_check_apply(t, res, errs, MAX_DETAILS, n, prev);
  bus_txn_end(t);
  return rc;
}

static int
do_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)v;
  dag_app *a = ud;
  bus_field_err errs[MAX_DETAILS];
  char name[BUS_NAME_MAX + 1] = "";
  int n = 0, rc;
  uint64_t prev = 0, seq = 0;
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  if (!res || res->type != MSGPACK_OBJECT_MAP) {
    bus_field_err e = {"resource", "required: the Workflow resource"};
    bus_cmd_reply_error(c, cmd, BUS_EMISSING, "no resource", &e, 1);
    return BUS_EMISSING;
  }
  if ((rc = bus_schema_check("Workflow", res, errs, MAX_DETAILS, &n))) {
    bus_cmd_reply_error(c, cmd, rc, "invalid Workflow", errs,
                        n < MAX_DETAILS ? n : MAX_DETAILS);
    return rc;
  }
  bus_ev_workflow_submitted wf;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  if (!(rc = bus_workflow_submitted_unpack(res, &z, &wf)))
    bus_str_copy(wf.metadata.name, name, sizeof name);
  msgpack_zone_destroy(&z);
  for (int i = 0; i < ATTEMPTS; i++) {
    rc = check_apply(a, res, errs, &n, &prev);
    if (rc == DAG_APPLY_UNCHANGED) {
      reply_ok(c, cmd, prev, name, 1);
      return 0;
    }
    if (rc == 0)
      rc = append(c, cmd, name, "workflow.submitted", prev, res, &seq);
    if (rc != BUS_ECONFLICT)
      break;
    bus_view_catch_up(c, a->view, NULL, CATCH_MS); /* the view is behind */
  }
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), errs,
                        n < MAX_DETAILS ? n : MAX_DETAILS);
    SVC_LOG(&a->s, SVC_INFO, "lark.cmd", 0, "%s workflow.apply %s: %s",
            cmd->user, name, bus_err_name(rc));
    return rc;
  }
  reply_ok(c, cmd, seq, name, 0);
  SVC_LOG(&a->s, SVC_INFO, "lark.ev.workflow", seq, "%s applied workflow %s",
          cmd->user, name);
  return 0;
}

static int
check_verb(dag_app *a, const char *name, const char *verb, const char **type,
           uint64_t *prev) {
  bus_txn *t;
  int rc = bus_view_read(a->view, &t);
  if (rc)
    return rc;
  rc = dag_check_verb(t, name, verb, type, prev);
  bus_txn_end(t);
  return rc;
}

/* stop, resume, delete {key, name} */
static int
do_verb(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)v;
  dag_app *a = ud;
  char name[BUS_NAME_MAX + 2] = "";
  const char *type = NULL;
  uint64_t prev = 0, seq = 0;
  int rc = BUS_EMISSING;
  if (!bus_obj_str(&cmd->body, "name", name, sizeof name)) {
    bus_field_err e = {"name", "required: the Workflow's name"};
    bus_cmd_reply_error(c, cmd, rc, "no name", &e, 1);
    return rc;
  }
  for (int i = 0; i < ATTEMPTS; i++) {
    rc = check_verb(a, name, cmd->verb, &type, &prev);
    if (rc == DAG_APPLY_UNCHANGED) {
      reply_ok(c, cmd, prev, name, 1);
      return 0;
    }
    if (rc == 0)
      rc = append(c, cmd, name, type, prev, NULL, &seq);
    if (rc != BUS_ECONFLICT)
      break;
    bus_view_catch_up(c, a->view, NULL, CATCH_MS);
  }
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0);
    return rc;
  }
  reply_ok(c, cmd, seq, name, 0);
  SVC_LOG(&a->s, SVC_INFO, "lark.ev.workflow", seq, "%s %s workflow %s",
          cmd->user, cmd->verb, name);
  return 0;
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

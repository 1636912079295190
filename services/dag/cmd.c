/*
 * cmd.c - the workflow commands: apply, stop, resume, delete, and the
 * list/describe queries.
 *
 * Invariants, and why they hold:
 * - The actor is the subject's user, never the body's (bus_cmd_parse).
 * - A command lands at most once: its event id is derived from the
 *   command's key, so a retried command is dropped by the broker's dedupe
 *   window and answered with the original's seq.
 * - Every append carries the version the check read (prev) and the
 *   broker's check, so two applies of one name cannot both create it; the
 *   loser re-reads the view (which catches up with the winner) and gets
 *   "unchanged" or the differences.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"

#define MAX_DETAILS 32
#define ATTEMPTS 60
#define RETRY_US (50 * 1000)

static int64_t
now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
reply_ok(bus_conn *c, const bus_cmd *cmd, uint64_t seq, const char *name,
         int unchanged) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_str_with_body(&pk, "name", 4);
  msgpack_pack_str_with_body(&pk, name, strlen(name));
  msgpack_pack_str_with_body(&pk, "unchanged", 9);
  unchanged ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk);
  bus_cmd_reply_ok(c, cmd, seq, sb.data, sb.size, 2);
  msgpack_sbuffer_destroy(&sb);
}

/* Append one workflow event for cmd; *seq and *dup as bus_append. */
static int
append(bus_conn *c, const bus_cmd *cmd, const char *name, const char *type,
       uint64_t prev, const msgpack_object *data, uint64_t *seq) {
  char subject[BUS_SUBJECT_MAX], id[33];
  snprintf(subject, sizeof subject, "lark.ev.workflow.%s", name);
  if (cmd->key[0])
    bus_event_derive_id(cmd->key, 0, id);
  else
    bus_event_new_id(id);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  ev.v = BUS_SCHEMA_VERSION;
  ev.type = type;
  ev.id = id;
  ev.ts = now_ns();
  ev.actor = cmd->user;
  ev.cause = cmd->key;
  ev.prev = prev;
  if (data)
    ev.data = *data;
  else
    ev.data.type = MSGPACK_OBJECT_NIL;
  return bus_append(c, subject, &ev, BUS_APPEND_CHECK, seq, NULL);
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

static void
do_apply(dag_app *a, bus_conn *c, const bus_cmd *cmd) {
  bus_field_err errs[MAX_DETAILS];
  char name[BUS_NAME_MAX + 1] = "";
  int n = 0, rc;
  uint64_t prev = 0, seq = 0;
  const msgpack_object *res = bus_obj_get(&cmd->body, "resource");
  if (!res || res->type != MSGPACK_OBJECT_MAP) {
    bus_field_err e = {"resource", "required: the Workflow resource"};
    bus_cmd_reply_error(c, cmd, BUS_EMISSING, "no resource", &e, 1);
    return;
  }
  if ((rc = bus_schema_check("Workflow", res, errs, MAX_DETAILS, &n))) {
    bus_cmd_reply_error(c, cmd, rc, "invalid Workflow", errs,
                        n < MAX_DETAILS ? n : MAX_DETAILS);
    return;
  }
  bus_obj_str(bus_obj_get(res, "metadata"), "name", name, sizeof name);
  for (int i = 0; i < ATTEMPTS; i++) {
    rc = check_apply(a, res, errs, &n, &prev);
    if (rc == DAG_APPLY_UNCHANGED) {
      reply_ok(c, cmd, prev, name, 1);
      return;
    }
    if (rc == 0)
      rc = append(c, cmd, name, "workflow.submitted", prev, res, &seq);
    if (rc != BUS_ECONFLICT)
      break;
    usleep(RETRY_US); /* the view is behind the stream: let it catch up */
  }
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), errs,
                        n < MAX_DETAILS ? n : MAX_DETAILS);
    SVC_LOG(&a->s, SVC_INFO, "lark.cmd", 0, "%s workflow.apply %s: %s",
            cmd->user, name, bus_err_name(rc));
    return;
  }
  reply_ok(c, cmd, seq, name, 0);
  SVC_LOG(&a->s, SVC_INFO, "lark.ev.workflow", seq, "%s applied workflow %s",
          cmd->user, name);
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
static void
do_verb(dag_app *a, bus_conn *c, const bus_cmd *cmd) {
  char name[BUS_NAME_MAX + 2] = "";
  const char *type = NULL;
  uint64_t prev = 0, seq = 0;
  int rc = BUS_EMISSING;
  if (!bus_obj_str(&cmd->body, "name", name, sizeof name)) {
    bus_field_err e = {"name", "required: the Workflow's name"};
    bus_cmd_reply_error(c, cmd, rc, "no name", &e, 1);
    return;
  }
  for (int i = 0; i < ATTEMPTS; i++) {
    rc = check_verb(a, name, cmd->verb, &type, &prev);
    if (rc == DAG_APPLY_UNCHANGED) {
      reply_ok(c, cmd, prev, name, 1);
      return;
    }
    if (rc == 0)
      rc = append(c, cmd, name, type, prev, NULL, &seq);
    if (rc != BUS_ECONFLICT)
      break;
    usleep(RETRY_US);
  }
  if (rc) {
    bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0);
    return;
  }
  reply_ok(c, cmd, seq, name, 0);
  SVC_LOG(&a->s, SVC_INFO, "lark.ev.workflow", seq, "%s %s workflow %s",
          cmd->user, cmd->verb, name);
}

static void
do_query(dag_app *a, bus_conn *c, const bus_cmd *cmd) {
  if (!cmd->reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_query_answer(a->view, dag_query, cmd->kind, cmd->verb, &cmd->body, &sb,
                   NULL);
  bus_conn_publish(c, cmd->reply, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

void
dag_cmd_handle(bus_conn *c, const bus_cmd *cmd, void *ud) {
  dag_app *a = ud;
  if (!strcmp(cmd->verb, "apply"))
    do_apply(a, c, cmd);
  else if (!strcmp(cmd->verb, "stop") || !strcmp(cmd->verb, "resume") ||
           !strcmp(cmd->verb, "delete"))
    do_verb(a, c, cmd);
  else if (!strcmp(cmd->verb, "list") || !strcmp(cmd->verb, "describe"))
    do_query(a, c, cmd);
  else
    bus_cmd_reply_error(c, cmd, BUS_EINVAL,
                        "verbs: apply, stop, resume, delete, list, describe",
                        NULL, 0);
}

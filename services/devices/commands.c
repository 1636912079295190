/*
 * commands.c - what operators ask lark-devices: start, stop, reset a
 * robot or switch its mode (lark.cmd.<user>.robot.<verb>), and the reads
 * (robot.status, device.list, device.get).
 *
 * A command is checked against the view (the robot exists, the mode is
 * one of its modes, no pod holds it unless forced) in a read transaction,
 * then robot.commanded is appended on lark.ev.device.<node>.<robot> with
 * prev = the version that check saw; the event id is libbus's one rule
 * (bus_cmd_event_id), so a retried command lands once. When the robot's
 * subject moved meanwhile (its node reported, a pod asked), the check is
 * redone once the view has caught up.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "larkdevices-int.h"

#define RETRIES 20
#define CATCH_MS 2000

typedef struct ask {
  char node[DEV_NAME_SZ], robot[DEV_NAME_SZ], mode[DEV_NAME_SZ];
  char holder[DEV_DNAME_SZ];
  bool force;
  uint64_t prev;
  int err; /* a refusal, with why */
  char why[640];
} ask;

static int
refuse(ask *a, int err, const char *fmt, const char *x, const char *y,
       const char *z) {
  a->err = err;
  snprintf(a->why, sizeof a->why, fmt, x, y, z);
  return 0;
}

/* The robot as the view has it now, against what verb asks. */
static int
check(bus_txn *t, const char *verb, ask *a) {
  char subject[BUS_SUBJECT_MAX];
  dev_rec d;
  bus_version ver;
  int rc = bus_subj_robot_commanded(subject, sizeof subject, a->node, a->robot);
  if (!rc)
    rc = bus_txn_version(t, subject, &ver);
  if (rc)
    return rc;
  a->prev = ver.seq;
  a->err = 0;
  rc = dev_get(t, a->node, a->robot, &d);
  if (rc == BUS_ENOT_FOUND || (!rc && d.kind == DEV_CAMERA))
    return refuse(a, BUS_ENOT_FOUND, "no robot %s/%s%s", a->node, a->robot, "");
  if (rc)
    return rc;
  if (!strcmp(verb, "mode") && !a->mode[0])
    return refuse(a, BUS_EMISSING, "robot %s/%s: mode is required%s", a->node,
                  a->robot, "");
  if (a->mode[0] && !dev_has_mode(&d, a->mode))
    return refuse(a, BUS_EFIELD, "robot %s/%s has no mode %s", a->node,
                  a->robot, a->mode);
  snprintf(a->holder, sizeof a->holder, "%s", d.holder);
  if (d.holder[0] && !a->force)
    return refuse(a, BUS_ECONFLICT,
                  "robot %s/%s is held by pod %s: use --force", a->node,
                  a->robot, d.holder);
  return 0;
}

static int
check_in_view(bus_view *v, const char *verb, ask *a) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = check(t, verb, a);
  bus_txn_end(t);
  return rc;
}

static int
append(bus_conn *c, const bus_cmd *cmd, const ask *a, uint64_t *seq) {
  bus_ev_robot_commanded e = {.node = bus_str_of(a->node),
                              .robot = bus_str_of(a->robot),
                              .op = bus_str_of(cmd->verb),
                              .has_mode = a->mode[0] != 0,
                              .mode = bus_str_of(a->mode),
                              .has_force = a->force,
                              .force = a->force,
                              .has_holder = a->holder[0] != 0,
                              .holder = bus_str_of(a->holder)};
  char subject[BUS_SUBJECT_MAX];
  bus_packbuf b;
  bus_packbuf_init(&b);
  int rc = bus_robot_commanded_pack(&b.sb, &e);
  if (!rc)
    rc = bus_subj_robot_commanded(subject, sizeof subject, a->node, a->robot);
  if (!rc)
    rc = bus_cmd_append(c, cmd, subject, bus_type_name(BUS_T_ROBOT_COMMANDED),
                        a->prev, b.sb.data, b.sb.size, seq, NULL);
  bus_packbuf_destroy(&b);
  return rc;
}

/* The body: node and robot (names), mode (start and mode), force. */
static int
parse(const bus_cmd *cmd, ask *a) {
  memset(a, 0, sizeof *a);
  const msgpack_object *f = bus_obj_get(&cmd->body, "force");
  a->force = f && f->type == MSGPACK_OBJECT_BOOLEAN && f->via.boolean;
  if (!bus_obj_str(&cmd->body, "node", a->node, sizeof a->node) ||
      !bus_name_valid(a->node, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "node: a node name is required");
  if (!bus_obj_str(&cmd->body, "robot", a->robot, sizeof a->robot) ||
      !bus_name_valid(a->robot, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "robot: a robot name is required");
  if (strcmp(cmd->verb, "start") && strcmp(cmd->verb, "mode"))
    return 0;
  if (bus_obj_str(&cmd->body, "mode", a->mode, sizeof a->mode) && a->mode[0] &&
      !bus_name_valid(a->mode, BUS_NAME_MAX))
    return bus_error(BUS_ENAME, "mode: not a mode name");
  return 0;
}

static int
cmd_robot(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  ask a;
  int rc = parse(cmd, &a);
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  uint64_t seq = 0;
  rc = BUS_ECONFLICT;
  for (int i = 0; i < RETRIES && rc == BUS_ECONFLICT; i++) {
    if ((rc = check_in_view(v, cmd->verb, &a)) || a.err)
      break;
    rc = append(c, cmd, &a, &seq);
    if (rc == BUS_ECONFLICT) /* the robot's subject moved on */
      bus_view_catch_up(c, v, NULL, CATCH_MS);
  }
  if (!rc && a.err)
    rc = a.err, bus_error(rc, "%s", a.why);
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  bus_cmd_reply_ok(c, cmd, seq, NULL, 0, 0);
  return 0;
}

static const bus_verb verbs[] = {
    {"robot", "start", cmd_robot, NULL, BUS_VERB_SERIAL | BUS_VERB_CATCH_UP},
    {"robot", "stop", cmd_robot, NULL, BUS_VERB_SERIAL | BUS_VERB_CATCH_UP},
    {"robot", "reset", cmd_robot, NULL, BUS_VERB_SERIAL | BUS_VERB_CATCH_UP},
    {"robot", "mode", cmd_robot, NULL, BUS_VERB_SERIAL | BUS_VERB_CATCH_UP},
    {NULL, NULL, NULL, devices_query, 0}, /* every other verb reads */
    {0},
};

static const char *const kinds[] = {"robot", "device", NULL};

const bus_verbs devices_verbs = {.kinds = kinds, .verbs = verbs};

/*
 * cmd_robot.c - larkctl robot: drive the robots of the edge nodes, through
 * lark-devices (which appends robot.commanded, the audit record, and tells
 * the node through its own stream).
 *
 *   larkctl robot start|stop|reset NODE/ROBOT [--mode M] [--force] [-o json]
 *   larkctl robot mode NODE/ROBOT MODE [--force] [-o json]
 *   larkctl robot status [NODE[/ROBOT]] [-o json|yaml|wide]
 *   larkctl robot modes NODE/ROBOT [-o json]
 *
 * While a pod holds the robot a command is refused (CONFLICT) unless
 * --force; the force is recorded. start, stop, reset and mode say what is
 * now desired: `robot status` shows what the node reports (STATE).
 */
#include <stdlib.h>
#include <string.h>

#include "kinds.h"

#define USAGE                                                                  \
  "larkctl robot start|stop|reset NODE/ROBOT [--mode M] [--force]\n"           \
  "       larkctl robot mode NODE/ROBOT MODE [--force]\n"                      \
  "       larkctl robot status [NODE[/ROBOT]]\n"                               \
  "       larkctl robot modes NODE/ROBOT"

static const cli_col robot_cols[] = {{"NODE", "node", COL_STR, 14},
                                     {"ROBOT", "robot", COL_STR, 16},
                                     {"KIND", "kind", COL_STR, 5},
                                     {"DESIRED", "desired", COL_STR, 8},
                                     {"STATE", "state", COL_STR, 10},
                                     {"MODE", "mode", COL_STR, 10},
                                     {"RESTARTS", "restarts", COL_INT, 8},
                                     {"HOLDER", "holder", COL_STR, 16},
                                     {NULL, NULL, 0, 0}};
static const cli_col robot_wide[] = {{"RESETS", "resets", COL_INT, 6},
                                     {"EXIT", "exitCode", COL_INT, 4},
                                     {"VERSION", "version", COL_INT, 8},
                                     {"AGE", "ts", COL_AGE, 6},
                                     {NULL, NULL, 0, 0}};
static const cli_kind robot_kind = {"robot",    "robots",   NULL, "devices",
                                    robot_cols, robot_wide, "id"};

/* The commands: the verb, what is printed after, whether MODE follows. */
static const struct {
  const char *verb, *done;
  int takes_mode;
} ops[] = {{"start", "started", 0},
           {"stop", "stopped", 0},
           {"reset", "reset", 0},
           {"mode", "switched", 1}};

/* NODE/ROBOT into node and robot (NODE alone when alone is set); 0 or -1. */
static int
split(const char *s, char *node, char *robot, int alone) {
  const char *slash = strchr(s, '/');
  size_t n = slash ? (size_t)(slash - s) : strlen(s);
  if (n > BUS_NAME_MAX || (!slash && !alone))
    return -1;
  memcpy(node, s, n);
  node[n] = 0;
  snprintf(robot, BUS_NAME_MAX + 1, "%s", slash ? slash + 1 : "");
  return bus_name_valid(node, BUS_NAME_MAX) &&
                 (!slash || bus_name_valid(robot, BUS_NAME_MAX))
             ? 0
             : -1;
}

/* robot.status {node, robot} into zone: the rows (an array), or NULL
 * after printing why. */
static const msgpack_object *
status(lark_cli *cli, bus_conn *c, const char *node, const char *robot,
       msgpack_zone *zone) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_map m;
  bus_map_begin(&m, &b.pk);
  bus_map_str(&m, "node", node);
  bus_map_str(&m, "robot", robot);
  bus_map_end(&m);
  msgpack_object reply;
  int rc = cli_call(cli, c, "robot", "status", &b.sb, zone, &reply);
  bus_packbuf_destroy(&b);
  return rc ? NULL : cli_list_items(bus_obj_get(&reply, "result"));
}

static int
robot_status(lark_cli *cli, bus_conn *c, const char *node, const char *robot) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  const msgpack_object *items = status(cli, c, node, robot, &zone);
  if (items)
    cli_print_table(items, &robot_kind, cli->output);
  int rc = !items ? CLI_ERR
           : robot[0] && items->type == MSGPACK_OBJECT_ARRAY &&
                   !items->via.array.size
               ? cli_fail("robot", 0, "no robot %s/%s", node, robot)
               : CLI_OK;
  msgpack_zone_destroy(&zone);
  return rc;
}

/* A robot's modes, one a line, the first (its default) marked. */
static int
robot_modes(lark_cli *cli, bus_conn *c, const char *node, const char *robot) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  const msgpack_object *items = status(cli, c, node, robot, &zone);
  const msgpack_object *modes =
      items && items->type == MSGPACK_OBJECT_ARRAY && items->via.array.size
          ? bus_obj_get(&items->via.array.ptr[0], "modes")
          : NULL;
  int rc = CLI_OK;
  if (!modes || modes->type != MSGPACK_OBJECT_ARRAY)
    rc = items ? cli_fail("robot", 0, "no robot %s/%s", node, robot) : CLI_ERR;
  else if (cli->output == CLI_OUT_JSON) {
    json_t *m = cli_obj_json(modes);
    json_t *o =
        json_pack("{s:O, s:O?}", "modes", m, "default", json_array_get(m, 0));
    cli_put_json(o, "{}");
    json_decref(o);
    json_decref(m);
  } else {
    for (uint32_t i = 0; i < modes->via.array.size; i++) {
      const msgpack_object *s = &modes->via.array.ptr[i];
      if (s->type == MSGPACK_OBJECT_STR)
        printf("%.*s%s\n", (int)s->via.str.size, s->via.str.ptr,
               i ? "" : " (default)");
    }
  }
  msgpack_zone_destroy(&zone);
  return rc;
}

/* robot.<verb> {key, node, robot, mode?, force?} and its outcome. */
static int
command(lark_cli *cli, bus_conn *c, int op, const char *node, const char *robot,
        const char *mode, int force) {
  char key[33], what[2 * BUS_NAME_MAX + 16], done[BUS_NAME_MAX + 16];
  bus_event_new_id(key);
  snprintf(what, sizeof what, "robot/%s/%s", node, robot);
  snprintf(done, sizeof done, "%s%s%s", ops[op].done,
           !mode                ? ""
           : ops[op].takes_mode ? " to "
                                : " in mode ",
           mode ? mode : "");
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_map m;
  bus_map_begin(&m, &b.pk);
  bus_map_str(&m, "key", key);
  bus_map_str(&m, "node", node);
  bus_map_str(&m, "robot", robot);
  if (mode)
    bus_map_str(&m, "mode", mode);
  if (force)
    msgpack_pack_true(bus_map_key(&m, "force"));
  bus_map_end(&m);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_object reply;
  int rc = cli_command(cli, c, "robot", ops[op].verb, &b.sb, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  if (rc)
    rc = cli_command_fail(cli, "robot", rc, "robot", ops[op].verb);
  else if (cli->output == CLI_OUT_JSON)
    cli_print_outcome_json("robot", what + 6, err ? "error" : ops[op].done,
                           &reply, key);
  else if (err)
    cli_print_refusal("robot", what, err);
  else
    printf("%s %s\n", what, done);
  msgpack_zone_destroy(&zone);
  bus_packbuf_destroy(&b);
  return rc || err ? CLI_ERR : CLI_OK;
}

/* The words after `robot VERB`, --mode and --force taken out. */
typedef struct words {
  const char *pos[2];
  int npos;
  const char *mode;
  int force;
} words;

static int
take(int argc, char **argv, words *w) {
  memset(w, 0, sizeof *w);
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--force"))
      w->force = 1;
    else if (!strcmp(argv[i], "--mode") && i + 1 < argc && !w->mode)
      w->mode = argv[++i];
    else if (argv[i][0] == '-' || w->npos == 2)
      return -1;
    else
      w->pos[w->npos++] = argv[i];
  }
  return 0;
}

int
cmd_robot(int argc, char **argv, lark_cli *cli) {
  char node[BUS_NAME_MAX + 1] = "", robot[BUS_NAME_MAX + 1] = "";
  words w;
  if (argc < 2 || take(argc, argv, &w))
    return cli_usage(USAGE);
  int reads = !strcmp(argv[1], "status") || !strcmp(argv[1], "modes");
  int op = -1;
  for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
    if (!strcmp(argv[1], ops[i].verb))
      op = i;
  int want = op >= 0 && ops[op].takes_mode ? 2 : 1;
  if ((!reads && op < 0) || (reads && (w.mode || w.force)) ||
      (op >= 0 && ops[op].takes_mode && w.mode) ||
      (!strcmp(argv[1], "status") ? w.npos > 1 : w.npos != want))
    return cli_usage(USAGE);
  if (w.npos && split(w.pos[0], node, robot, !strcmp(argv[1], "status"))) {
    fprintf(stderr, "larkctl robot: %s: not NODE/ROBOT ([a-z0-9-])\n",
            w.pos[0]);
    return cli_usage(USAGE);
  }
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int rc;
  if (!strcmp(argv[1], "status"))
    rc = robot_status(cli, c, node, robot);
  else if (!strcmp(argv[1], "modes"))
    rc = robot_modes(cli, c, node, robot);
  else
    rc = command(cli, c, op, node, robot, want == 2 ? w.pos[1] : w.mode,
                 w.force);
  bus_conn_close(c);
  return rc;
}

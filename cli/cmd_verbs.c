/*
 * cmd_verbs.c - larkctl stop, resume, cordon and uncordon: the commands
 * that take only names.
 *
 *   larkctl stop KIND NAME [NAME ...] [-o json]
 *   larkctl resume KIND NAME [NAME ...] [-o json]
 *   larkctl cordon node NAME [NAME ...] [-o json]
 *   larkctl uncordon node NAME [NAME ...] [-o json]
 *
 * stop: a Job's or Workflow's pods stop (the object goes to Stopped and
 * keeps its spec); resume: Stopped goes back to Pending and is placed
 * again. cordon: no new pods on a node (pods already running there stay);
 * uncordon: new pods again. Each NAME is one `<kind>.<verb>` command
 * {key, name} to the owning service.
 */
#include <string.h>

#include "cli.h"

static const char *const stop_kinds[] = {"job", "workflow", NULL};
static const char *const node_kinds[] = {"node", NULL};

static const cli_verb verbs[] = {
    {"stop", "stopped", stop_kinds,
     "larkctl stop job|workflow NAME [NAME ...]"},
    {"resume", "resumed", stop_kinds,
     "larkctl resume job|workflow NAME [NAME ...]"},
    {"cordon", "cordoned", node_kinds, "larkctl cordon node NAME [NAME ...]"},
    {"uncordon", "uncordoned", node_kinds,
     "larkctl uncordon node NAME [NAME ...]"},
};

int
cmd_name_verb(int argc, char **argv, lark_cli *cli) {
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (!strcmp(argv[0], verbs[i].name))
      return cli_name_verb(cli, argc, argv, &verbs[i]);
  return cli_usage("larkctl stop|resume|cordon|uncordon KIND NAME ...");
}

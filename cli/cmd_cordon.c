/*
 * cmd_cordon.c - larkctl cordon and uncordon: no new pods on a node, or
 * new pods again. Pods already running there stay.
 *
 *   larkctl cordon node NAME [NAME ...] [-o json]
 *   larkctl uncordon node NAME [NAME ...] [-o json]
 *
 * Each NAME is one `node.cordon` or `node.uncordon` command {key, name}
 * to lark-scheduler.
 */
#include "cli.h"

static const char *const node_kinds[] = {"node", NULL};

int
cmd_cordon(int argc, char **argv, lark_cli *cli) {
  static const cli_verb v = {"cordon", "cordoned", node_kinds,
                             "larkctl cordon node NAME [NAME ...]"};
  return cli_name_verb(cli, argc, argv, &v);
}

int
cmd_uncordon(int argc, char **argv, lark_cli *cli) {
  static const cli_verb v = {"uncordon", "uncordoned", node_kinds,
                             "larkctl uncordon node NAME [NAME ...]"};
  return cli_name_verb(cli, argc, argv, &v);
}

/*
 * cmd_stop.c - larkctl stop and resume: a Job's or Workflow's pods stop
 * (the object goes to Stopped and keeps its spec) or start again (Stopped
 * goes back to Pending and is placed again).
 *
 *   larkctl stop KIND NAME [NAME ...] [-o json]
 *   larkctl resume KIND NAME [NAME ...] [-o json]
 *
 * KIND is job or workflow; each NAME is one `<kind>.stop` or
 * `<kind>.resume` command {key, name} to the owning service.
 */
#include "cli.h"

static const char *const stop_kinds[] = {"job", "workflow", NULL};

int
cmd_stop(int argc, char **argv, lark_cli *cli) {
  static const cli_verb v = {"stop", "stopped", stop_kinds,
                             "larkctl stop job|workflow NAME [NAME ...]"};
  return cli_name_verb(cli, argc, argv, &v);
}

int
cmd_resume(int argc, char **argv, lark_cli *cli) {
  static const cli_verb v = {"resume", "resumed", stop_kinds,
                             "larkctl resume job|workflow NAME [NAME ...]"};
  return cli_name_verb(cli, argc, argv, &v);
}

/*
 * larkctl.c - the one command a user types: global flags, then a
 * subcommand from the table below. Each subcommand lives in its own file.
 *
 * Connection settings resolve in order: flags, environment (LARK_URL,
 * LARK_CREDS, LARK_DATA), then what `larkctl up` wrote under the data
 * directory (<data>/url and <data>/creds/admin.nk).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct cli_cmd {
  const char *name;
  int (*run)(int argc, char **argv, lark_cli *cli);
  const char *help;
} cli_cmd;

static const cli_cmd commands[] = {
    {"up", cmd_up, "run the local platform: broker, services, edge nodes"},
    {"init", cmd_init, "create or update the platform's streams"},
    {"status", cmd_status, "each service: up or down, applied sequence, lag"},
    {"node", cmd_node, "node credentials: node add NAME, list, rotate NAME"},
    {"site", cmd_site, "edge sites (leaf servers): site add SITE, list"},
    {"tail", cmd_tail, "the audit trail of events and run reports"},
    {"emit", cmd_emit, "append a training-script report to a job's run log"},
    {"logs", cmd_logs, "what a job's, task's or pod's processes printed"},
    {"get", cmd_get,
     "list resources; get stages JOB: an RL Job's steps, get peers JOB"},
    {"describe", cmd_describe,
     "one object and its event history (a Job's: its Stages too)"},
    {"apply", cmd_apply, "create resources from manifests: apply -f FILE"},
    {"delete", cmd_delete, "delete a job, workflow, node or domain"},
    {"stop", cmd_name_verb, "stop a job or workflow (its pods stop)"},
    {"resume", cmd_name_verb, "resume a stopped job or workflow"},
    {"cordon", cmd_name_verb, "no new pods on a node"},
    {"uncordon", cmd_name_verb, "new pods on a node again"},
    {"wait", cmd_wait, "wait until an object reaches a phase"},
    {"robot", cmd_robot, "drive a node's robot: start, stop, reset, mode"},
    {"replay", cmd_replay, "rebuild a view from the stream; --verify"},
    {"snapshot", cmd_snapshot, "a compacted copy of a live view"},
    {"cert", cmd_cert, "certificates: request, revoke, list, show, ca"},
    {"camera", cmd_camera, "one frame of a node's camera: camera capture"},
    {"version", cmd_version,
     "larkctl's, the broker's and the services' versions"},
    {"completion", cmd_completion,
     "shell completion: completion bash (source it, or install it)"},
};

static void
usage(FILE *f) {
  fprintf(f, "usage: larkctl [--url URL] [--creds FILE] [--data DIR] "
             "[-o json|yaml|wide|name] COMMAND [ARGS]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
}

/* -o's words, at each CLI_OUT_ value. */
static const char *const outputs[] = {[CLI_OUT_TEXT] = "text",
                                      [CLI_OUT_JSON] = "json",
                                      [CLI_OUT_WIDE] = "wide",
                                      [CLI_OUT_YAML] = "yaml",
                                      [CLI_OUT_NAME] = "name"};

static int
set_output(lark_cli *cli, const char *v) {
  for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
    if (!strcmp(v, outputs[i])) {
      cli->output = (int)i;
      return 0;
    }
  return -1;
}

/*
 * Take the global flags out of argv wherever they stand, so that both
 * `larkctl -o json tail` and `larkctl tail -o json` work. Returns the new
 * argc, or -1 on a bad flag.
 */
static int
take_globals(int argc, char **argv, lark_cli *cli) {
  int out = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = NULL;
    /* after `emit`, --data is the report's JSON, not the data directory */
    int data_is_dir = !(out > 0 && !strcmp(argv[0], "emit"));
    /* after `camera`, -o is the file the frame goes to */
    int o_is_output = !(out > 0 && !strcmp(argv[0], "camera"));
    if (!strcmp(a, "--url"))
      slot = &cli->url;
    else if (!strcmp(a, "--creds"))
      slot = &cli->creds;
    else if (!strcmp(a, "--data") && data_is_dir)
      slot = &cli->data;
    if (slot || (!strcmp(a, "-o") && o_is_output) || !strcmp(a, "--output")) {
      if (i + 1 >= argc)
        return -1;
      if (slot)
        *slot = argv[++i];
      else if (set_output(cli, argv[++i]) < 0)
        return -1;
      continue;
    }
    if (!strncmp(a, "-o", 2) && a[2] && o_is_output &&
        set_output(cli, a + 2) == 0)
      continue;
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      cli->verbose = 1;
      continue;
    }
    argv[out++] = argv[i];
  }
  argv[out] = NULL;
  return out;
}

/* -o yaml and -o name are what get, describe (and, for yaml, version)
 * print; elsewhere they would silently print text. */
static int
output_fits(const char *cmd, int output) {
  if (output == CLI_OUT_YAML)
    return !strcmp(cmd, "get") || !strcmp(cmd, "describe") ||
           !strcmp(cmd, "version");
  if (output == CLI_OUT_NAME)
    return !strcmp(cmd, "get") || !strcmp(cmd, "describe");
  return 1;
}

int
main(int argc, char **argv) {
  lark_cli cli;
  memset(&cli, 0, sizeof cli);
  argc = take_globals(argc - 1, argv + 1, &cli);
  argv++;
  if (argc < 0) {
    usage(stderr);
    return CLI_USAGE;
  }
  if (argc == 0 || !strcmp(argv[0], "help") || !strcmp(argv[0], "--help") ||
      !strcmp(argv[0], "-h")) {
    usage(argc == 0 ? stderr : stdout);
    return argc == 0 ? CLI_USAGE : CLI_OK;
  }
  if (!cli.data)
    cli.data = getenv("LARK_DATA");
  if (!cli.data)
    cli.data = "./.lark";
  if (!output_fits(argv[0], cli.output)) {
    fprintf(stderr, "larkctl %s: -o %s is for get, describe%s\n", argv[0],
            cli.output == CLI_OUT_YAML ? "yaml" : "name",
            cli.output == CLI_OUT_YAML ? " and version" : "");
    return CLI_USAGE;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[0], commands[i].name))
      return commands[i].run(argc, argv, &cli);
  fprintf(stderr, "larkctl: unknown command '%s'\n", argv[0]);
  usage(stderr);
  return CLI_USAGE;
}

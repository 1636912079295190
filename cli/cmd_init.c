/*
 * cmd_init.c - `larkctl init`: create or update the platform's streams.
 *
 * Idempotent: bus_streams_ensure changes only what differs, and each
 * stream is reported created, updated or unchanged by comparing its
 * configuration before and after (lark_streams_init). Needs admin rights.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "deploy.h"
#include "cli.h"

static const char *const outcome_names[] = {"unchanged", "created", "updated"};

static const char usage_line[] =
    "larkctl init [--replicas 1|3] [--dedupe DURATION]";

static void
print_reports(const lark_stream_report *r, size_t n, int output) {
  if (output != CLI_OUT_JSON) {
    for (size_t i = 0; i < n; i++)
      printf("%-13s %-9s replicas %d, %llu messages\n", r[i].name,
             outcome_names[r[i].outcome], r[i].replicas, r[i].messages);
    return;
  }
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(
        a, json_pack("{s:s, s:s, s:i, s:I}", "stream", r[i].name, "outcome",
                     outcome_names[r[i].outcome], "replicas", r[i].replicas,
                     "messages", (json_int_t)r[i].messages));
  cli_put_json(a, NULL);
  json_decref(a);
}

/*
 * Create or update the streams on c and print what happened; shared with
 * `larkctl up`, which runs it in-process.
 */
int
cli_init_streams(bus_conn *c, const bus_streams_opts *o, int output) {
  lark_stream_report reports[16];
  size_t n = 0;
  int rc = lark_streams_init(c, o, reports, 16, &n);
  if (rc < 0)
    return cli_fail("init", rc, "cannot create the streams: %s",
                    lark_cfg_error());
  print_reports(reports, n, output);
  return CLI_OK;
}

static int
parse_args(int argc, char **argv, bus_streams_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc)
      return -1;
    if (!strcmp(a, "--replicas")) {
      o->replicas = atoi(argv[++i]);
      if (o->replicas != 1 && o->replicas != 3)
        return -1;
    } else if (!strcmp(a, "--dedupe")) {
      if (bus_duration_parse(argv[++i], 0, &o->dedupe_ns) < 0 ||
          o->dedupe_ns <= 0)
        return -1;
    } else {
      return -1;
    }
  }
  return 0;
}

int
cmd_init(int argc, char **argv, lark_cli *cli) {
  bus_streams_opts o;
  bus_streams_opts_init(&o);
  if (parse_args(argc, argv, &o) < 0)
    return cli_usage(usage_line);
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int rc = cli_init_streams(c, &o, cli->output);
  bus_conn_close(c);
  return rc;
}

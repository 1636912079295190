/*
 * cmd_version.c - `larkctl version`: larkctl's version, the broker's and
 * what the services say of themselves.
 *
 * The broker and the services are found as `larkctl status` finds them
 * (cli_status_probe). Each service's status record carries the version
 * it was built as; one that answers without (an older build) says so,
 * and one larkctl up would run that did not answer is "down". Exit 0
 * when the broker answered, 1 otherwise, larkctl's own version printed
 * either way. -o json and -o yaml print the same record.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage_line[] = "larkctl version [-o json|yaml]";

/* name, state and version (when a service reports one) of each service. */
static json_t *
service_versions(json_t *services) {
  json_t *a = json_array(), *v;
  size_t i;
  json_array_foreach(services, i, v) {
    json_t *ver = json_object_get(v, "version");
    json_t *o = json_pack("{s:O, s:O}", "name", json_object_get(v, "name"),
                          "state", json_object_get(v, "state"));
    if (ver)
      json_object_set(o, "version", ver);
    json_array_append_new(a, o);
  }
  return a;
}

static void
print_text(json_t *broker, json_t *services) {
  size_t i;
  json_t *v;
  printf("larkctl      %s\n", LARK_VERSION);
  json_array_foreach(json_object_get(broker, "servers"), i, v)
      printf("nats-server  %s (server %s, %s)\n",
             json_string_value(json_object_get(v, "version")),
             json_string_value(json_object_get(v, "name")),
             json_string_value(json_object_get(broker, "url")));
  json_array_foreach(services, i, v) {
    json_t *ver = json_object_get(v, "version");
    printf("%-12s %s\n", json_string_value(json_object_get(v, "name")),
           ver ? json_string_value(ver)
           : strcmp(json_string_value(json_object_get(v, "state")), "down")
               ? "answers, reports no version"
               : "down");
  }
}

/* broker and services are NULL when the broker did not answer. */
static void
print_json(json_t *broker, json_t *services, int output) {
  json_t *all = json_pack("{s:{s:s, s:s}, s:O?, s:O?}", "client", "name",
                          "larkctl", "version", LARK_VERSION, "broker", broker,
                          "services", services);
  if (output == CLI_OUT_YAML) {
    cli_print_doc(all, output);
  } else {
    cli_put_json(all, "null");
  }
  json_decref(all);
}

int
cmd_version(int argc, char **argv, lark_cli *cli) {
  (void)argv;
  if (argc > 1)
    return cli_usage(usage_line);
  bus_conn *c = cli_connect(cli);
  json_t *broker = NULL, *services = NULL, *versions = NULL;
  if (c) {
    cli_status_probe(cli, c, 1000, &broker, &services);
    versions = service_versions(services);
    bus_conn_close(c);
  }
  if (cli->output == CLI_OUT_JSON || cli->output == CLI_OUT_YAML)
    print_json(broker, versions, cli->output);
  else if (broker)
    print_text(broker, versions);
  else
    printf("larkctl      %s\n", LARK_VERSION);
  json_decref(broker);
  json_decref(services);
  json_decref(versions);
  return c ? CLI_OK : CLI_ERR;
}

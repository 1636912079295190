/*
 * cmd_emit.c - larkctl emit: what a training script calls.
 *
 *   larkctl emit JOB KIND [--data JSON]
 *
 * Publishes run.reported {kind, values} on lark.rep.<user>.<JOB>
 * (LARK_REPORTS), where the broker lets only <user> publish; lark-reports
 * appends it to lark.run.<JOB> (LARK_RUNS) with that user as the actor,
 * whatever the body says. The publish waits for the broker's ack and
 * carries the report's id as Nats-Msg-Id, so sending it again after a
 * timeout does not double it. Prints the report's subject, its sequence
 * in LARK_REPORTS and its id.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "manifest.h"

#define USAGE "larkctl emit JOB KIND [--data JSON]"

static int
pack_report(const char *kind, const json_t *values, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "kind", 4);
  msgpack_pack_str_with_body(&pk, kind, strlen(kind));
  msgpack_pack_str_with_body(&pk, "values", 6);
  if (values)
    lark_json_pack(values, &pk);
  else
    msgpack_pack_map(&pk, 0);
  return 0;
}

/* A timeout may hide a report that landed: the same id again is dropped
 * by the broker's duplicate window, so retrying is safe. */
static int
publish_report(bus_conn *c, const char *subject, const bus_event *ev,
               uint64_t *seq) {
  int rc = 0;
  for (int tries = 0; tries < 3; tries++) {
    rc = bus_append(c, subject, ev, BUS_APPEND_NOCHECK, seq, NULL);
    if (rc != BUS_ETIMEOUT && rc != BUS_ECONN)
      break;
  }
  return rc;
}

static int
send_report(lark_cli *cli, const char *job, const msgpack_sbuffer *data) {
  const char *user = cli_user(cli);
  if (!bus_name_valid(user, BUS_NAME_MAX))
    return cli_fail("emit", 0, "'%s' is not a user name", user);
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  char id[33], subject[BUS_SUBJECT_MAX];
  bus_event_new_id(id);
  snprintf(subject, sizeof subject, "lark.rep.%s.%s", user, job);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .type = "run.reported",
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = user,
                  .cause = "",
                  .data_mp = data->data,
                  .data_mp_len = data->size};
  uint64_t seq = 0;
  int rc = publish_report(c, subject, &ev, &seq);
  bus_conn_close(c);
  if (rc)
    return cli_fail("emit", rc, "publish to %s", subject);
  if (cli->output == CLI_OUT_JSON)
    printf("{\"subject\":\"%s\",\"seq\":%llu,\"id\":\"%s\"}\n", subject,
           (unsigned long long)seq, id);
  else
    printf("%s seq %llu id %s\n", subject, (unsigned long long)seq, id);
  return CLI_OK;
}

int
cmd_emit(int argc, char **argv, lark_cli *cli) {
  static const char *const flags[] = {"--data", NULL};
  const char *pos[2] = {NULL, NULL}, *data = NULL;
  if (cli_take_args(argc, argv, 1, flags, &data, pos, 2) != 2)
    return cli_usage(USAGE);
  if (!bus_name_valid(pos[0], BUS_NAME_MAX))
    return cli_fail("emit", 0,
                    "'%s' is not a job name (lowercase letters, "
                    "digits and '-', at most 63)",
                    pos[0]);
  json_t *values = NULL;
  if (data) {
    json_error_t jerr;
    values = json_loads(data, 0, &jerr);
    if (!values || !json_is_object(values)) {
      json_decref(values);
      return cli_fail("emit", 0, "--data must be a JSON object: %s",
                      values ? "not an object" : jerr.text);
    }
  }
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_report(pos[1], values, &sb);
  json_decref(values);
  int rc = send_report(cli, pos[0], &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

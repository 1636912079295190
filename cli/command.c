/*
 * command.c - commands larkctl sends to the services that own kinds
 * (apply, delete, stop, resume, cordon, uncordon, and the describe polls
 * of wait), the queries of get, describe and cert (cli_call), and how
 * their replies print. It uses common.c; common.c uses nothing here.
 *
 * Every command carries a fresh idempotency key and goes out through
 * lark_command_send (command_send.c, shared with lark-gateway), which
 * retries it with the same key. "No
 * answer" (nobody subscribed, or silence) is told apart from the broker's
 * refusal ("permission denied") and from a service's refusal, and names
 * the service that should be running, never one that does not exist. A
 * refusal prints its code, message and every {path, reason} detail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "command_send.h"
#include "manifest.h"

/* Who answers each command kind (lark.cmd.<user>.<kind>.<verb>): the
 * services' own lists (services/<name>/main.c). A kind that is not here
 * gets no made-up name: no message may send a user looking for a process
 * that does not exist. */
static const struct {
  const char *kind, *service;
} answerers[] = {{"job", "lark-scheduler"},   {"node", "lark-scheduler"},
                 {"task", "lark-scheduler"},  {"pod", "lark-scheduler"},
                 {"workflow", "lark-dag"},    {"domain", "lark-ipam"},
                 {"domainpeer", "lark-ipam"}, {"route", "lark-ipam"},
                 {"cert", "lark-signer"},     {"catalog", "lark-catalog"},
                 {"logs", "lark-logs"},       {"robot", "lark-devices"},
                 {"device", "lark-devices"},  {"stages", "lark-engine"},
                 {"peers", "lark-engine"},    {NULL, NULL}};

const char *
cli_service_of(const char *kind) {
  const lark_kind *k = lark_kind_find(kind);
  if (k)
    return k->service;
  for (size_t i = 0; answerers[i].kind; i++)
    if (!strcmp(answerers[i].kind, kind))
      return answerers[i].service;
  return "the service that serves it";
}

int
cli_command(lark_cli *cli, bus_conn *c, const char *kind, const char *verb,
            const msgpack_sbuffer *body, msgpack_zone *zone,
            msgpack_object *reply) {
  return lark_command_send(c, cli_user(cli), kind, verb, body, zone, reply);
}

int
cli_describe_cmd(lark_cli *cli, bus_conn *c, const char *kind, const char *name,
                 msgpack_zone *zone, msgpack_object *reply) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "name", name);
  int rc = cli_command(cli, c, kind, "describe", &b.sb, zone, reply);
  bus_packbuf_destroy(&b);
  return rc;
}

/*
 * Why a command got no reply. A refusal by the broker is "permission
 * denied" (the credentials' role may not send it); nobody subscribed
 * names the service that should be running; silence after a send leaves
 * the outcome unknown: the command may have been applied, and every
 * command is idempotent, so sending it again is safe.
 */
int
cli_command_fail(lark_cli *cli, const char *cmd, int rc, const char *kind,
                 const char *verb) {
  const char *svc = cli_service_of(kind);
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.cmd.%s.%s.%s", cli_user(cli), kind,
           verb);
  if (rc == BUS_EDENIED)
    return cli_fail(cmd, 0,
                    "permission denied: these credentials may not send %s "
                    "(see larkctl --creds or $LARK_CREDS)",
                    subject);
  if (rc == BUS_ENOT_FOUND)
    return cli_fail(cmd, 0, "no answer on %s: is %s running?", subject, svc);
  if (rc == BUS_ETIMEOUT)
    return cli_fail(cmd, 0,
                    "no answer on %s in time: the outcome is unknown; check "
                    "with larkctl get or describe, or run the command again "
                    "(it is idempotent); is %s running?",
                    subject, svc);
  return cli_fail(cmd, rc, "%s", subject);
}

/* A query to a service: one request, no retry; the error of a reply
 * that has one is printed. */
int
cli_call(lark_cli *cli, bus_conn *c, const char *kind, const char *verb,
         const msgpack_sbuffer *body, msgpack_zone *zone, msgpack_object *out) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.cmd.%s.%s.%s", cli_user(cli), kind,
           verb);
  void *reply = NULL;
  size_t len = 0;
  int rc = bus_conn_request(c, subject, body ? body->data : NULL,
                            body ? body->size : 0, LARK_CMD_TIMEOUT_MS, &reply,
                            &len);
  if (rc)
    return cli_command_fail(cli, verb, rc, kind, verb);
  /* unpacked strings point into the buffer: keep it in the zone */
  void *keep = msgpack_zone_malloc(zone, len ? len : 1);
  if (keep)
    memcpy(keep, reply, len);
  free(reply);
  int urc = keep ? msgpack_unpack(keep, len, NULL, zone, out) : -1;
  if (urc < 0 || out->type != MSGPACK_OBJECT_MAP)
    return cli_fail(verb, 0, "malformed reply on %s", subject);
  const msgpack_object *err = bus_obj_get(out, "error");
  if (err) {
    char code[64] = "", msg[512] = "";
    bus_obj_str(err, "code", code, sizeof code);
    bus_obj_str(err, "message", msg, sizeof msg);
    return cli_fail(verb, 0, "%s: %s", code, msg);
  }
  return CLI_OK;
}

static const char *
str_of(const msgpack_object *o, const char *key, char *buf, size_t cap) {
  const char *s = bus_obj_str(o, key, buf, cap);
  return s ? s : "";
}

void
cli_print_refusal(const char *cmd, const char *what,
                  const msgpack_object *err) {
  char code[64], msg[1024];
  fprintf(stderr, "larkctl %s: %s: %s: %s\n", cmd, what,
          str_of(err, "code", code, sizeof code),
          str_of(err, "message", msg, sizeof msg));
  const msgpack_object *d = bus_obj_get(err, "details");
  for (uint32_t i = 0;
       d && d->type == MSGPACK_OBJECT_ARRAY && i < d->via.array.size; i++) {
    char path[256], reason[512];
    const msgpack_object *e = &d->via.array.ptr[i];
    fprintf(stderr, "  %s: %s\n", str_of(e, "path", path, sizeof path),
            str_of(e, "reason", reason, sizeof reason));
  }
}

const char *
cli_reply_outcome(const msgpack_object *reply, const char *dflt, char *buf,
                  size_t cap) {
  return lark_reply_outcome(reply, dflt, buf, cap);
}

/* One JSON line for a command's outcome: {kind, name, result, seq?,
 * key?, error?}. */
void
cli_print_outcome_json(const char *kind, const char *name, const char *result,
                       const msgpack_object *reply, const char *key) {
  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string(kind));
  json_object_set_new(o, "name", json_string(name));
  json_object_set_new(o, "result", json_string(result));
  if (key)
    json_object_set_new(o, "key", json_string(key));
  const msgpack_object *seq = reply ? bus_obj_get(reply, "seq") : NULL;
  if (seq)
    json_object_set_new(o, "seq",
                        json_integer((json_int_t)bus_obj_int(reply, "seq", 0)));
  const msgpack_object *err = reply ? bus_obj_get(reply, "error") : NULL;
  if (err) {
    char *e = cli_obj_to_json(err);
    json_object_set_new(o, "error", json_loads(e ? e : "null", 0, NULL));
    free(e);
  }
  cli_put_json(o, "{}");
  json_decref(o);
}

/* Send <kind>.<verb> {key, name} and print the outcome; a CLI code. */
static int
name_one(lark_cli *cli, bus_conn *c, const cli_verb *v, const char *kind,
         const char *name) {
  char key[33], what[BUS_NAME_MAX * 2 + 16];
  bus_event_new_id(key);
  snprintf(what, sizeof what, "%s.rlinf.io/%s", kind, name);
  if (!bus_name_valid(name, BUS_DERIVED_NAME_MAX))
    return cli_fail(v->name, 0, "%s: not a valid name ([a-z0-9-])", what);
  bus_packbuf b;
  bus_packbuf_init(&b);
  lark_name_body(&b.sb, key, name);
  msgpack_zone zone;
  msgpack_zone_init(&zone, 2048);
  msgpack_object reply;
  int rc = cli_command(cli, c, kind, v->name, &b.sb, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  char word[32];
  const char *done =
      rc || err ? "error"
                : cli_reply_outcome(&reply, v->done, word, sizeof word);
  if (rc)
    rc = cli_command_fail(cli, v->name, rc, kind, v->name);
  else if (cli->output == CLI_OUT_JSON)
    cli_print_outcome_json(kind, name, done, &reply, key);
  else if (err)
    cli_print_refusal(v->name, what, err);
  else
    printf("%s %s\n", what, done);
  if (!rc && cli->verbose)
    fprintf(stderr, "key %s\n", key);
  msgpack_zone_destroy(&zone);
  bus_packbuf_destroy(&b);
  return rc || err ? CLI_ERR : CLI_OK;
}

/* The command kind for what a user typed, if v allows it. */
static const char *
verb_kind(const cli_verb *v, const char *typed) {
  const lark_kind *k = lark_kind_find(typed);
  for (const char *const *a = v->kinds; k && *a; a++)
    if (!strcmp(*a, k->cmd))
      return k->cmd;
  return NULL;
}

int
cli_name_verb(lark_cli *cli, int argc, char **argv, const cli_verb *v) {
  if (argc < 3)
    return cli_usage(v->usage);
  for (int i = 1; i < argc; i++)
    if (argv[i][0] == '-')
      return cli_usage(v->usage);
  const char *kind = verb_kind(v, argv[1]);
  if (!kind) {
    fprintf(stderr, "larkctl %s: cannot %s a '%s'\n", v->name, v->name,
            argv[1]);
    return cli_usage(v->usage);
  }
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  int rc = CLI_OK;
  for (int i = 2; i < argc; i++)
    if (name_one(cli, c, v, kind, argv[i]) != CLI_OK)
      rc = CLI_ERR;
  bus_conn_close(c);
  return rc;
}

/*
 * cli.h - what larkctl's subcommands share.
 *
 * Each subcommand is one file (cmd_<name>.c) exporting
 *   int cmd_<name>(int argc, char **argv, lark_cli *cli);
 * registered in the table of larkctl.c. argv[0] is the subcommand's name;
 * the global flags (--url, --creds, --data, -o) are already taken out.
 * Exit codes: 0 ok, 1 error (message on stderr), 2 usage.
 */
#ifndef LARK_CLI_H
#define LARK_CLI_H

#include <stdio.h>

#include "bus.h"

enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2 };
enum {
  CLI_OUT_TEXT = 0,
  CLI_OUT_JSON = 1,
  CLI_OUT_WIDE = 2,
  CLI_OUT_YAML = 3, /* get, describe, version: the JSON form as YAML */
  CLI_OUT_NAME = 4  /* get, describe: kind/name per line */
};

typedef struct lark_cli {
  const char *url;   /* --url, else $LARK_URL, else <data>/url */
  const char *creds; /* --creds, else $LARK_CREDS, else <data>/creds/admin.nk */
  const char *data;  /* --data, else $LARK_DATA, else ./.lark */
  int output;        /* -o json|wide|yaml|name */
  int verbose;
  char url_buf[512];
  char creds_buf[512];
} lark_cli;

/* Connect with the resolved settings; prints the error and returns NULL. */
bus_conn *cli_connect(lark_cli *cli);

/* Print "larkctl <cmd>: <msg>: <bus detail>" to stderr; returns CLI_ERR. */
int cli_fail(const char *cmd, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* While on, cli_fail prints nothing (a lookup allowed to miss). */
void cli_quiet(int on);
/* From now on SIGINT (and SIGTERM when term) sets a flag that
 * cli_interrupted reads: follow loops stop at their next look. */
void cli_catch_interrupt(int term);
int cli_interrupted(void);
/*
 * A subcommand's arguments from argv[from]: "--flag VALUE" for each flag
 * of flags (NULL-terminated; the value into vals at its index), and words
 * not starting with '-' into pos, npos at most, in order. Returns how many
 * words it took, or -1 at anything else (a flag without its value too).
 */
int cli_take_args(int argc, char **argv, int from, const char *const *flags,
                  const char **vals, const char **pos, int npos);
/* Print a usage line to stderr; returns CLI_USAGE. */
int cli_usage(const char *usage);

/*
 * Parse a time given by a user: RFC 3339 ("2026-11-29T10:00:00Z"), a unix
 * time in seconds, or a duration back from now ("5m", "2h", "30s", "1d").
 * Returns 0 and unix nanoseconds in *ns, or -1.
 */
int cli_parse_time(const char *s, int64_t *ns);
/* cli_format_time, cli_event_json (event_json.c, shared with lark-gateway). */
#include "event_json.h"

/* msgpack as JSON: cli_obj_to_json, cli_json_dumps, cli_real_text,
 * cli_obj_json (json.c, shared with lark-gateway). */
#include "json.h"
/* j as one compact JSON line on stdout (keys in their order); fallback
 * instead when it cannot be written (NULL: nothing). */
void cli_put_json(const json_t *j, const char *fallback);

/*
 * yaml_out.c: j as a YAML document (libyaml's emitter; keys sorted, reals
 * in their shortest form, strings that would read back as another type
 * quoted), malloc'd, NULL on failure; and j printed on stdout as -o json
 * (one line) or -o yaml asks. Returns CLI_OK or CLI_ERR.
 */
char *cli_yaml_dumps(const json_t *j);
int cli_print_doc(const json_t *j, int output);

/* objprint.c: a map as describe shows it: "Key: value" lines, nested maps
 * indented, Unix-nanosecond times as RFC 3339 with their age, lists of
 * maps as tables, lists of scalars joined by ", ". */
void cli_describe_print(const msgpack_object *o, int indent);
/* A duration in kubectl's short form: 45s, 12m, 5h, 3d. */
void cli_age(int64_t ts_ns, char *out, size_t cap);

/* The user this larkctl acts as: $LARK_USER, else the creds file's name
 * without .nk ("admin" for admin.nk), else "admin". */
const char *cli_user(lark_cli *cli);

/*
 * Commands to the services that own kinds (command.c): apply, delete,
 * stop, resume, cordon, uncordon, describe.
 */
typedef struct cli_verb {
  const char *name;         /* "stop": the command's verb and subcommand */
  const char *done;         /* "stopped": printed after the object */
  const char *const *kinds; /* command kinds it takes, NULL-terminated */
  const char *usage;
} cli_verb;

/*
 * A query or command to a service (command.c): request
 * lark.cmd.<user>.<kind>.<verb> with body (msgpack, may be NULL), the reply
 * unpacked into zone as *out. A reply {error: {code, message}} is printed and
 * returns CLI_ERR; no reply prints that the service is not answering.
 */
int cli_call(lark_cli *cli, bus_conn *c, const char *kind, const char *verb,
             const msgpack_sbuffer *body, msgpack_zone *zone,
             msgpack_object *out);

/* The service answering a command kind: "lark-scheduler" for "job". */
const char *cli_service_of(const char *kind);
/*
 * Request lark.cmd.<user>.<kind>.<verb> with body; a timeout is retried
 * once with the same body (its key makes it land once). Returns 0 with the
 * reply map (which may be {error}) unpacked into zone, BUS_ENOT_FOUND or
 * BUS_ETIMEOUT when nobody answers, another code on transport failures.
 */
int cli_command(lark_cli *cli, bus_conn *c, const char *kind, const char *verb,
                const msgpack_sbuffer *body, msgpack_zone *zone,
                msgpack_object *reply);
/* cli_command of <kind>.describe {name}, the reply into zone. */
int cli_describe_cmd(lark_cli *cli, bus_conn *c, const char *kind,
                     const char *name, msgpack_zone *zone,
                     msgpack_object *reply);
/* Print why cli_command failed ("no answer on ...: is lark-X running?");
 * returns CLI_ERR. */
int cli_command_fail(lark_cli *cli, const char *cmd, int rc, const char *kind,
                     const char *verb);
/* Print a reply's {error}: "larkctl CMD: WHAT: CODE: message" and one
 * "  path: reason" line per detail, to stderr. */
void cli_print_refusal(const char *cmd, const char *what,
                       const msgpack_object *err);
/* What an ok reply says was done: "unchanged", "configured", a `result`
 * word ("created", "stopped", ...), else dflt. buf holds the word. */
const char *cli_reply_outcome(const msgpack_object *reply, const char *dflt,
                              char *buf, size_t cap);
/* One JSON line {kind, name, result, key?, seq?, error?} on stdout. */
void cli_print_outcome_json(const char *kind, const char *name,
                            const char *result, const msgpack_object *reply,
                            const char *key);
/* larkctl VERB KIND NAME...: <kind>.<verb> {key, name} for each NAME. */
int cli_name_verb(lark_cli *cli, int argc, char **argv, const cli_verb *v);
/* larkctl delete node NAME (cmd_node.c): node.deleted through
 * lark-scheduler, then the node's key out of the registry and the brokers
 * (accounts regenerated, servers reloaded). */
int cli_node_delete(lark_cli *cli, const char *name);

/*
 * get -w (watch.c): after the table of items, follow LARK_EVENTS and print
 * a row for each item of the list (req, as get sent it) that changes,
 * until SIGINT. k is the kind get printed (a struct cli_kind, kinds.h).
 */
struct cli_kind;
int cli_watch(lark_cli *cli, const struct cli_kind *k,
              const msgpack_sbuffer *req, const msgpack_object *items);
/*
 * The follow under every -w: read filter on LARK_EVENTS from its end,
 * until SIGINT; call again(ud) at once (for events between the caller's
 * first answer and the reader's start), then, while events arrive, at
 * most every 250 ms until 1.5 s after the last (a service applies an
 * event a little after larkctl sees it). Returns a CLI exit code.
 */
int cli_follow_events(lark_cli *cli, const char *filter,
                      void (*again)(void *ud), void *ud);

/* Subcommands. */
int cmd_up(int argc, char **argv, lark_cli *cli);
int cmd_init(int argc, char **argv, lark_cli *cli);
/* cmd_init.c: create or update the streams on c and print the outcome
 * per stream; `larkctl up` runs it in-process. */
int cli_init_streams(bus_conn *c, const bus_streams_opts *o, int output);
int cmd_status(int argc, char **argv, lark_cli *cli);
/* What status shows of the broker ({url, servers: [{name, version,
 * jetstream}]}) and of the services ([{name, state, expected, ...}], one
 * per service that answered within wait_ms or that larkctl up would run);
 * returns the services' gather result (BUS_EDENIED: nobody was asked). */
int cli_status_probe(lark_cli *cli, bus_conn *c, int wait_ms, json_t **broker,
                     json_t **services);
int cmd_node(int argc, char **argv, lark_cli *cli);
int cmd_site(int argc, char **argv, lark_cli *cli);
int cmd_tail(int argc, char **argv, lark_cli *cli);
int cmd_emit(int argc, char **argv, lark_cli *cli);
int cmd_logs(int argc, char **argv, lark_cli *cli);
int cmd_replay(int argc, char **argv, lark_cli *cli);
int cmd_snapshot(int argc, char **argv, lark_cli *cli);
int cmd_describe(int argc, char **argv, lark_cli *cli);
int cmd_get(int argc, char **argv, lark_cli *cli);
int cmd_apply(int argc, char **argv, lark_cli *cli);
int cmd_delete(int argc, char **argv, lark_cli *cli);
/* stop, resume, cordon, uncordon: argv[0] names the verb (cmd_verbs.c) */
int cmd_name_verb(int argc, char **argv, lark_cli *cli);
int cmd_wait(int argc, char **argv, lark_cli *cli);
int cmd_robot(int argc, char **argv, lark_cli *cli);
int cmd_cert(int argc, char **argv, lark_cli *cli);
int cmd_camera(int argc, char **argv, lark_cli *cli);
int cmd_version(int argc, char **argv, lark_cli *cli);
int cmd_completion(int argc, char **argv, lark_cli *cli);

#endif

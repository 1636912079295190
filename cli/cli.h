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
enum { CLI_OUT_TEXT = 0, CLI_OUT_JSON = 1, CLI_OUT_WIDE = 2 };

typedef struct lark_cli {
  const char *url;   /* --url, else $LARK_URL, else <data>/url */
  const char *creds; /* --creds, else $LARK_CREDS, else <data>/creds/admin.nk */
  const char *data;  /* --data, else $LARK_DATA, else ./.lark */
  int output;        /* -o json|wide */
  int verbose;
  char url_buf[512];
  char creds_buf[512];
} lark_cli;

/* Connect with the resolved settings; prints the error and returns NULL. */
bus_conn *cli_connect(lark_cli *cli);

/* Print "larkctl <cmd>: <msg>: <bus detail>" to stderr; returns CLI_ERR. */
int cli_fail(const char *cmd, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Print a usage line to stderr; returns CLI_USAGE. */
int cli_usage(const char *usage);

/*
 * Parse a time given by a user: RFC 3339 ("2026-11-29T10:00:00Z"), a unix
 * time in seconds, or a duration back from now ("5m", "2h", "30s", "1d").
 * Returns 0 and unix nanoseconds in *ns, or -1.
 */
int cli_parse_time(const char *s, int64_t *ns);
/* Format unix ns as RFC 3339 with milliseconds, UTC. */
void cli_format_time(int64_t ns, char *out, size_t cap);

/* The msgpack object as JSON text appended to out (jansson underneath). */
char *cli_obj_to_json(const msgpack_object *o);

/* Pack a JSON value as msgpack (objects, arrays, scalars). */
#include <jansson.h>
void cli_json_pack(const json_t *j, msgpack_packer *pk);

/* The user this larkctl acts as: $LARK_USER, else the creds file's name
 * without .nk ("admin" for admin.nk), else "admin". */
const char *cli_user(lark_cli *cli);

/*
 * A query or command to a service: request lark.cmd.<user>.<kind>.<verb>
 * with body (msgpack, may be NULL), the reply unpacked into zone as *out.
 * A reply {error: {code, message}} is printed and returns CLI_ERR; no
 * reply prints that the service is not answering.
 */
int cli_call(lark_cli *cli, bus_conn *c, const char *kind, const char *verb,
             const msgpack_sbuffer *body, msgpack_zone *zone,
             msgpack_object *out);

/* Subcommands. */
int cmd_up(int argc, char **argv, lark_cli *cli);
int cmd_init(int argc, char **argv, lark_cli *cli);
int cmd_status(int argc, char **argv, lark_cli *cli);
int cmd_node(int argc, char **argv, lark_cli *cli);
int cmd_tail(int argc, char **argv, lark_cli *cli);
int cmd_emit(int argc, char **argv, lark_cli *cli);
int cmd_replay(int argc, char **argv, lark_cli *cli);
int cmd_snapshot(int argc, char **argv, lark_cli *cli);
int cmd_describe(int argc, char **argv, lark_cli *cli);
int cmd_get(int argc, char **argv, lark_cli *cli);
int cmd_cert(int argc, char **argv, lark_cli *cli);

#endif

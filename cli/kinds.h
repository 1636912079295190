/*
 * kinds.h - the resource kinds larkctl knows, who answers for each, and
 * how a list of them prints.
 *
 * A service that owns a kind adds one row to the table in kinds.c: its
 * names, the view that answers (a name in replay/views.c, and the command
 * kind its service serves), and its columns. `get` and `describe` then
 * work for it live and with --at.
 */
#ifndef LARK_CLI_KINDS_H
#define LARK_CLI_KINDS_H

#include "cli.h"

enum { COL_STR, COL_INT, COL_AGE, COL_TIME, COL_JSON, COL_BOOL };

typedef struct cli_col {
  const char *header;
  const char *key; /* a key of the item map; "a.b" reaches into a map */
  int fmt;
  int width;
} cli_col;

typedef struct cli_kind {
  const char *kind;      /* "job": the command kind, lark.cmd.<user>.job.* */
  const char *plural;    /* "jobs" */
  const char *shortname; /* "wf"; may be NULL */
  const char *view;      /* "scheduler": replayed for --at */
  const cli_col *cols;
  const cli_col *wide;  /* extra columns for -o wide; may be NULL */
  const char *name_key; /* what -o name prints; NULL: name, id or pod */
} cli_kind;

/* The i-th kind owned by a service; NULL past the last. */
const cli_kind *cli_kind_at(size_t i);
/* The row for a name, singular, plural or short; NULL when unknown. */
const cli_kind *cli_kind_find(const char *name);

/* The catalog's columns (`larkctl get` with no kind, or an unowned kind). */
extern const cli_kind cli_catalog_kind;
/* The certificates' columns (`larkctl cert list`, the signer's). */
extern const cli_kind cli_cert_kind;

/* A list's rows: result itself, or its `items` when a service answers
 * {items: [...]} (lark-devices). */
const msgpack_object *cli_list_items(const msgpack_object *result);

/* Print items (an array of maps) as a table, or as -o json|yaml|wide|name
 * asks. */
void cli_print_table(const msgpack_object *items, const cli_kind *k,
                     int output);
/* Print one item's cells (no newline), as the table does. */
void cli_print_row(const msgpack_object *item, const cli_kind *k, int wide);
/* Print one item as -o name does: "kind/name" and a newline. */
void cli_print_name(const msgpack_object *item, const cli_kind *k);

/*
 * Ask the view behind kind k: verb with request req (a packed map; may be
 * NULL), live from its service or, when at_ns is set, from a replay of
 * the view up to that time. *result (allocated from zone) is the reply's
 * result. Prints its own errors; returns a CLI exit code.
 */
int cli_query(lark_cli *cli, const char *view, const char *kind,
              const char *verb, const msgpack_sbuffer *req, int64_t at_ns,
              msgpack_zone *zone, msgpack_object *result);

/* podvip.c: add "virtualIP" to each pod of items (a `get pods` list)
 * that holds an address in a Domain, as lark-ipam knows it (at at_ns,
 * when set); pods without one, or no answer, leave items as they were. */
void cli_pod_vips(lark_cli *cli, int64_t at_ns, msgpack_object *items,
                  msgpack_zone *zone);

/* podstory.c: what happened to pod (of job, in domain, "" for none)
 * since its Job's submission (since, Unix ns) up to at (0: now): a new
 * array of {seq, time, type, reason, from, message}, oldest first, read
 * from LARK_EVENTS by direct gets. Returns a CLI exit code. */
int cli_pod_story(lark_cli *cli, const char *pod, const char *job,
                  const char *domain, int64_t since, int64_t at,
                  json_t **events);
/* The events on a device's subject (lark.ev.device.<node>.<name>) up to
 * at (0: now), as cli_pod_story gives a pod's. */
int cli_device_story(lark_cli *cli, const char *node, const char *name,
                     int64_t at, json_t **events);
/* The story as describe's Events table: TIME AGE TYPE REASON FROM
 * MESSAGE. */
void cli_print_story(const json_t *events);

/* "samples" -> "sample" for kinds only the catalog knows. */
const char *cli_kind_singular(const char *kind, char *buf, size_t cap);

#endif

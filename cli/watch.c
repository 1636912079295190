/*
 * watch.c - larkctl get -w: the table, then a row for each change.
 *
 * Events are the trigger, the service's list is the truth: larkctl follows
 * LARK_EVENTS (every lark.ev. subject, from the end it finds) and, when
 * events arrive, lists the kind again and prints each row that was added,
 * changed or removed since the last list. Listing again rather than
 * decoding events keeps rows exactly what `get` prints, and covers derived
 * objects (a placement changes many pods, a Job's end changes its
 * Workflow). A service applies an event a little after larkctl sees it,
 * so lists repeat for SETTLE_MS after the last event, at most every
 * LIST_EVERY_MS; a row prints only when it differs, so repeats cost no
 * output. The first list after the reader opens covers events that landed
 * between `get`'s list and the reader's start.
 *
 * Rows are remembered as canonical JSON (sorted keys) by identity (kind,
 * name, id); memory is one row per object listed.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "kinds.h"
#include "manifest.h"

#define LIST_EVERY_MS 250
#define SETTLE_MS 1500

typedef struct watch {
  lark_cli *cli;
  const cli_kind *k;
  const msgpack_sbuffer *req;
  bus_conn *c;
  json_t *rows; /* identity -> row (json object) */
} watch;

/* A change as -o json (a line) or -o yaml (a document) prints it:
 * {event, object}. */
static void
print_change(const watch *w, json_t *row, const char *event) {
  json_t *o = json_pack("{s:s, s:O}", "event", event, "object", row);
  char *text = w->cli->output == CLI_OUT_YAML
                   ? cli_yaml_dumps(o)
                   : cli_json_dumps(o, JSON_SORT_KEYS);
  if (w->cli->output == CLI_OUT_YAML)
    printf("---\n%s", text ? text : "{}\n");
  else
    puts(text ? text : "{}");
  free(text);
  json_decref(o);
}

static void
print_row(const watch *w, json_t *row, const char *event) {
  if (w->cli->output == CLI_OUT_JSON || w->cli->output == CLI_OUT_YAML) {
    print_change(w, row, event);
  } else {
    /* the row as get prints it: through the same printer, in msgpack */
    bus_packbuf b;
    bus_packbuf_init(&b);
    lark_json_pack(row, &b.pk);
    msgpack_zone z;
    msgpack_zone_init(&z, 1024);
    msgpack_object o;
    int name = w->cli->output == CLI_OUT_NAME,
        ok = msgpack_unpack(b.sb.data, b.sb.size, NULL, &z, &o) >= 0;
    if (ok && name)
      cli_print_name(&o, w->k); /* kubectl -w -o name: deleted ones too */
    else if (ok)
      cli_print_row(&o, w->k, w->cli->output == CLI_OUT_WIDE);
    msgpack_zone_destroy(&z);
    bus_packbuf_destroy(&b);
    if (!name && !strcmp(event, "DELETED"))
      printf("(deleted)");
    if (!name)
      putchar('\n');
  }
  fflush(stdout);
}

/* The row's identity: its kind, name and id, as JSON. */
static char *
identity(json_t *row) {
  if (!json_object_get(row, "kind") && !json_object_get(row, "name") &&
      !json_object_get(row, "id"))
    return cli_json_dumps(row, JSON_SORT_KEYS);
  json_t *id =
      json_pack("[O?, O?, O?]", json_object_get(row, "kind"),
                json_object_get(row, "name"), json_object_get(row, "id"));
  char *s = id ? cli_json_dumps(id, 0) : NULL;
  json_decref(id);
  return s;
}

/*
 * Compare a fresh list with the rows remembered; print what changed and
 * remember the fresh rows. With quiet set (the table get just printed),
 * only remember.
 */
static void
diff(watch *w, const msgpack_object *items, int quiet) {
  json_t *fresh = json_object();
  for (uint32_t i = 0;
       items->type == MSGPACK_OBJECT_ARRAY && i < items->via.array.size; i++) {
    char *text = cli_obj_to_json(&items->via.array.ptr[i]);
    json_t *row = text ? json_loads(text, 0, NULL) : NULL;
    char *id = row ? identity(row) : NULL;
    free(text);
    if (!id) {
      json_decref(row);
      continue;
    }
    json_t *old = json_object_get(w->rows, id);
    if (!quiet && !json_equal(old, row))
      print_row(w, row, old ? "MODIFIED" : "ADDED");
    json_object_set_new(fresh, id, row);
    free(id);
  }
  const char *id;
  json_t *row;
  json_object_foreach(w->rows, id, row) {
    if (!quiet && !json_object_get(fresh, id))
      print_row(w, row, "DELETED");
  }
  json_decref(w->rows);
  w->rows = fresh;
}

/* List again, as get did; a failure is printed and the watch goes on. */
static void
relist(watch *w) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 8192);
  msgpack_object reply;
  int rc = cli_command(w->cli, w->c, w->k->kind, "list", w->req, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  const msgpack_object *res = rc ? NULL : bus_obj_get(&reply, "result");
  if (rc)
    cli_command_fail(w->cli, "get", rc, w->k->kind, "list");
  else if (err)
    cli_print_refusal("get", w->k->plural, err);
  else if (res)
    diff(w, cli_list_items(res), 0);
  msgpack_zone_destroy(&zone);
}

static void
relist_cb(void *ud) {
  relist(ud);
}

/* Ask again (again) at once, then while events arrive on the reader: at
 * most every LIST_EVERY_MS, until SETTLE_MS after the last. */
static int
follow(bus_reader *r, bus_batch *b, const char *filter, void (*again)(void *),
       void *ud) {
  int64_t last_event = 0, last_list = bus_mono_ms();
  again(ud); /* events between the first answer and the reader's start */
  while (!cli_interrupted()) {
    int rc = bus_reader_next(r, b, LIST_EVERY_MS);
    if (rc < 0 && rc != BUS_ETIMEOUT && rc != BUS_EEOF)
      return cli_fail("get", rc, "follow %s", filter);
    int64_t now = bus_mono_ms();
    if (bus_batch_len(b))
      last_event = now;
    if (last_event && now - last_event <= SETTLE_MS &&
        now - last_list >= LIST_EVERY_MS) {
      again(ud);
      last_list = bus_mono_ms();
    }
  }
  return CLI_OK;
}

int
cli_follow_events(lark_cli *cli, const char *filter, void (*again)(void *ud),
                  void *ud) {
  bus_conn *c = cli_connect(cli);
  if (!c)
    return CLI_ERR;
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  uint64_t end = 0;
  int rc = bus_stream_last_seq(c, "LARK_EVENTS", &end);
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = filter;
  o.from_seq = end + 1;
  o.follow = 1;
  o.direct = 1; /* a user may make no consumer (deploy/policy.c) */
  if (!rc)
    rc = bus_batch_new(&b);
  if (!rc)
    rc = bus_reader_open(c, &o, &r);
  if (rc) {
    rc = cli_fail("get", rc, "follow %s", filter);
  } else {
    cli_catch_interrupt(1);
    rc = follow(r, b, filter, again, ud);
  }
  bus_reader_close(r);
  bus_batch_free(b);
  bus_conn_close(c);
  return rc;
}

int
cli_watch(lark_cli *cli, const cli_kind *k, const msgpack_sbuffer *req,
          const msgpack_object *items) {
  watch w = {.cli = cli, .k = k, .req = req, .rows = json_object()};
  diff(&w, items, 1);
  fflush(stdout);
  int rc = CLI_ERR;
  w.c = cli_connect(cli);
  if (w.c)
    rc = cli_follow_events(cli, "lark.ev.>", relist_cb, &w);
  bus_conn_close(w.c);
  json_decref(w.rows);
  return rc;
}

/*
 * main.c - lark-catalog: keeps the catalog view and answers its queries.
 *
 *   lark-catalog --url URL --creds FILE --data DIR
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence).
 */
#include <string.h>

#include "catalog.h"
#include "svc.h"

static const char *const streams[] = {"LARK_EVENTS", NULL};
static const char *const kinds[] = {"catalog", NULL};

typedef struct app {
  svc s;
  bus_view *view;
} app;

/* lark.cmd.<user>.catalog.<verb>: the catalog's queries. */
static void
on_query(bus_conn *c, const bus_cmd *cmd, void *ud) {
  app *a = ud;
  if (!cmd->reply)
    return;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_query_answer(a->view, catalog_query, cmd->kind, cmd->verb, &cmd->body,
                   &sb, NULL);
  bus_conn_publish(c, cmd->reply, sb.data, sb.size);
  SVC_LOG(&a->s, SVC_DEBUG, "lark.cmd", 0, "%s %s.%s answered", cmd->user,
          cmd->kind, cmd->verb);
  msgpack_sbuffer_destroy(&sb);
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  svc_view_opts o = {
      .kinds = kinds, .on_command = on_query, .ud = &a, .view = &a.view};
  catalog_view_def(&o.def);
  return svc_main(&a.s, "catalog", argc, argv, streams, &o);
}

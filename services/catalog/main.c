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

typedef struct app {
  svc s;
  bus_view *view;
} app;

/* After each of the catalog's queries (lark.cmd.<user>.catalog.<verb>). */
static void
on_done(const bus_cmd *cmd, int rc, void *ud) {
  app *a = ud;
  (void)rc;
  if (cmd->reply)
    SVC_LOG(&a->s, SVC_DEBUG, "lark.cmd", 0, "%s %s.%s answered", cmd->user,
            cmd->kind, cmd->verb);
}

int
main(int argc, char **argv) {
  app a;
  memset(&a, 0, sizeof a);
  bus_verbs verbs = catalog_verbs;
  verbs.on_done = on_done;
  svc_view_opts o = {.verbs = &verbs, .ud = &a, .view = &a.view};
  catalog_view_def(&o.def);
  return svc_main(&a.s, "catalog", argc, argv, streams, &o);
}

/*
 * main.c - lark-dag: runs Workflows, submitting each template's Job once
 * its dependencies succeeded (see dag.h for the rules).
 *
 *   lark-dag --url URL --creds FILE --data DIR
 *
 * Exits 0 on SIGINT/SIGTERM, 1 on an error it cannot ride out (a
 * supervisor restarts it; the view resumes from its applied sequence and
 * the outbox publishes what was decided but not yet sent).
 */
#include <string.h>

#include "dag-app.h"

static const char *const streams[] = {"LARK_EVENTS", NULL};

int
main(int argc, char **argv) {
  dag_app a;
  memset(&a, 0, sizeof a);
  svc_view_opts o = {.verbs = &dag_verbs, .ud = &a, .view = &a.view};
  dag_view_def(&o.def);
  return svc_main(&a.s, "dag", argc, argv, streams, &o);
}

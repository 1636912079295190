/*
 * views.c - the views larkbus can rebuild. A service that owns a view adds
 * one line here.
 */
#include <string.h>

#include "catalog.h"
#include "dag.h"
#include "ipam.h"
#include "logs.h"
#include "replay.h"
#include "scheduler.h"
#include "signer.h"

const lark_view_entry lark_views[] = {
    {"catalog", "LARK_EVENTS", "lark.ev.>", catalog_view_def, catalog_query},
    {"dag", "LARK_EVENTS", "lark.ev.>", dag_view_def, dag_query},
    {"signer", "LARK_EVENTS", "lark.ev.cert.>", signer_view_def, signer_query},
    {"scheduler", "LARK_EVENTS", "lark.ev.>", sched_view_def, sched_query},
    {"ipam", "LARK_EVENTS", "lark.ev.>", ipam_view_def, ipam_query},
    {"logs", "LARK_EVENTS", "lark.ev.>", logs_view_def, logs_query},
    {NULL, NULL, NULL, NULL, NULL},
};

const lark_view_entry *
lark_view_find(const char *name) {
  for (const lark_view_entry *e = lark_views; e->name; e++)
    if (!strcmp(e->name, name))
      return e;
  return NULL;
}

/*
 * views.c - the views larkbus can rebuild. A service that owns a view adds
 * one line here: its definition (which names the stream and filter the
 * service reads, so a rebuild reads the same) and its reads.
 */
#include <string.h>

#include "catalog.h"
#include "dag.h"
#include "gateway.h"
#include "larkdevices.h"
#include "larkengine.h"
#include "ipam.h"
#include "logs.h"
#include "replay.h"
#include "scheduler.h"
#include "signer.h"

const lark_view_entry lark_views[] = {
    {"catalog", catalog_view_def, catalog_query},
    {"dag", dag_view_def, dag_query},
    {"signer", signer_view_def, signer_query},
    {"scheduler", sched_view_def, sched_query},
    {"ipam", ipam_view_def, ipam_query},
    {"logs", logs_view_def, logs_query},
    {"devices", devices_view_def, devices_query},
    {"engine", engine_view_def, engine_query},
    {"gateway", gw_view_def, NULL}, /* served over HTTP, not on NATS */
    {NULL, NULL, NULL},
};

const lark_view_entry *
lark_view_find(const char *name) {
  for (const lark_view_entry *e = lark_views; e->name; e++)
    if (!strcmp(e->name, name))
      return e;
  return NULL;
}

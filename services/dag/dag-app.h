/*
 * dag-app.h - lark-dag's process: the service plumbing, the view, and the
 * command handler main.c registers.
 */
#ifndef LARK_DAG_APP_H
#define LARK_DAG_APP_H

#include "dag.h"
#include "svc.h"

typedef struct dag_app {
  svc s;
  bus_view *view;
} dag_app;

/*
 * lark.cmd.<user>.workflow.<verb>: apply, stop, resume, delete, list,
 * describe; the table for bus_verbs_serve, with the view and the dag_app
 * as ud. Appends go straight to the stream with the broker's check; after
 * a conflict (the view was behind) the command is checked again once the
 * view has caught up.
 */
extern const bus_verbs dag_verbs;

#endif

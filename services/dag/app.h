/*
 * app.h - lark-dag's process: the service plumbing, the view, and the
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
 * describe. Runs in nats.c's delivery thread; ud is the dag_app. Appends
 * go straight to the stream with the broker's check; after a conflict
 * (the view was behind) the command is checked again against the view.
 */
void dag_cmd_handle(bus_conn *c, const bus_cmd *cmd, void *ud);

#endif

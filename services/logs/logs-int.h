/*
 * logs-int.h - what lark-logs' files share: the tables and the row
 * helpers of records.c.
 */
#ifndef LARK_LOGS_INT_H
#define LARK_LOGS_INT_H

#include "logs.h"

#define T_PODS "pods"
#define T_JOBS "jobs"

int logs__binding_put(bus_txn *t, const logs_binding *b);
/* "<job>/<pod>" into key; its length, or -1 when it does not fit. */
int logs__index_key(char *key, size_t cap, const char *job, const char *pod);

#endif

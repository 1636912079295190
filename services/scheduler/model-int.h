/*
 * model-int.h - what model.c shares with its readers (model_read.c).
 */
#ifndef LARK_SCHED_MODEL_INT_H
#define LARK_SCHED_MODEL_INT_H

#include "model.h"

/* Set key=value in the array *kv of *n entries. */
int sched_kv_set(sched_kv **kv, int *n, const char *key, const char *value);
/* Make sure dev_used has one entry per device. */
int sched_node_fix_dev_used(sched_node *n);

#endif

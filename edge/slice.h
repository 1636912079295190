/*
 * slice.h - private to edge/: the slice thread, the node's desired states
 * into the store (slice.c). Uses the store and the log; wakes the loop
 * through edge_agent.wake.
 */
#ifndef LARK_EDGE_SLICE_H
#define LARK_EDGE_SLICE_H

#include "agent.h"

/* The slice thread (a: the edge_agent). */
void *edge_slice_main(void *a);

#endif

/*
 * sender.h - private to edge/: the sender thread and the queue it sends
 * (sender.c). Uses the store and the log.
 */
#ifndef LARK_EDGE_SENDER_H
#define LARK_EDGE_SENDER_H

#include "agent.h"

/* Queue a message and wake the sender. loop or any thread. */
int edge_send(edge_agent *a, const edge_msg *m);
/* Queue n messages in one store transaction (one sync), in order, all or
 * none, and wake the sender. */
int edge_send_n(edge_agent *a, const edge_msg *msgs, size_t n);
void edge_sender_wake(edge_agent *a);

/* The sender thread (a: the edge_agent). */
void *edge_sender_main(void *a);

#endif

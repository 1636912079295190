/*
 * sock.h - private to edge/: LARK_SOCKET, where a pod's scripts report
 * (sock.c). Uses the process record, output and the sender. Loop.
 */
#ifndef LARK_EDGE_SOCK_H
#define LARK_EDGE_SOCK_H

#include "proc.h"

/* The Unix-socket path of a pod's attempt into out; BUS_EINVAL if it
 * cannot fit. */
int edge_sock_path(const edge_agent *a, const char *pod, uint32_t attempt,
                   char *out, size_t cap);
int edge_sock_listen(edge_proc *p);
void edge_sock_close(edge_proc *p);
/* Send text (len bytes) and a newline to c, after its earlier answers. */
void edge_sock_reply(edge_client *c, const char *text, size_t len);
/* c's engine request was answered: take the lines it held. */
void edge_sock_resume(edge_client *c);

#endif

/*
 * engine_sock.h - private to edge/: the RL engine's requests on a pod's
 * LARK_SOCKET (engine_sock.c, engine_pod.c, engine_answer.c; the lines
 * are parsed by engine_op.c, the forms are in edge/README.md). The socket
 * (sock.c) is below these files: it hands them a request through the
 * hooks the agent sets to the two functions here (edge_agent.sock_op,
 * sock_cancel). Loop.
 *
 * A connection has at most one request pending (a wait): the socket
 * (sock.c) holds the connection's later lines until it is answered, then
 * goes on with them (edge_sock_resume), so every line is answered in
 * order.
 */
#ifndef LARK_EDGE_ENGINE_SOCK_H
#define LARK_EDGE_ENGINE_SOCK_H

#include "proc.h"

/* A request line of c (len bytes, no newline): answered now, or left
 * pending in c->op. */
void edge_engine_sock_op(edge_client *c, const char *line, size_t len);

/* c is closing: its pending request, if any, is dropped unanswered. */
void edge_engine_sock_cancel(edge_client *c);

/* job's engine.stages changed: answer the waits of its pods it
 * satisfies (or ends). */
void edge_engine_sock_on_stages(edge_agent *a, const char *job);

#endif

/*
 * reqline.h - private to edge/: what the controller sockets' request
 * parsers (camera_req.c, robot_req.c) share (reqline.c): a line taken as
 * one JSON object, its "op" looked up in a table of names, a refusal's
 * reason. Pure: the sockets' fuzz harnesses run it with them.
 */
#ifndef LARK_EDGE_REQLINE_H
#define LARK_EDGE_REQLINE_H

#include <jansson.h>
#include <stddef.h>

/* Reads a request out of object o into req: 0, or -1 with why. */
typedef int (*edge_reqline_fn)(const json_t *o, void *req, char *why,
                               size_t whylen);

/* line (without its newline) as one JSON object (duplicate keys refused)
 * handed to fn; -1 with why when it is no object, else fn's result. */
int edge_reqline_parse(const char *line, size_t len, edge_reqline_fn fn,
                       void *req, char *why, size_t whylen);
/* The index of o's string "op" among the n names, or -1. */
int edge_reqline_op(const json_t *o, const char *const *names, int n);
/* reason into why; returns -1. */
int edge_reqline_bad(char *why, size_t whylen, const char *reason);

#endif

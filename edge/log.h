/*
 * log.h - private to edge/: the agent's log, one line per event on
 * stderr: "<UTC time> <level> lark-edge subject=<subject> <message>".
 * Any thread. The bottom of edge/: it uses nothing else here.
 */
#ifndef LARK_EDGE_LOG_H
#define LARK_EDGE_LOG_H

void edge_logf(const char *level, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

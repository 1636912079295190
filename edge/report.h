/*
 * report.h - private to edge/: a pod's run record and the pod.report
 * that says so, stored together (report.c). Uses the store, the sender
 * and the log. Loop.
 */
#ifndef LARK_EDGE_REPORT_H
#define LARK_EDGE_REPORT_H

#include "agent.h"

/* Record the run r of pod and, when phase is not NULL, queue its
 * pod.report {pod, phase, attempt, exitCode (code >= 0), signal (sig >
 * 0), localIP (ip), reason} in one transaction, then wake the sender. */
int edge_record(edge_agent *a, const char *pod, const edge_run *r,
                const char *phase, int code, int sig, const char *ip,
                const char *reason);

#endif

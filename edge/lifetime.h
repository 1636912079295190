/*
 * lifetime.h - private to edge/: the life of a pod's process, from its
 * spawn to its end (lifetime.c): the shim spawned with its output and
 * socket, the exit noticed (or, for an adopted process, polled) and
 * recorded, a stop with its grace period, the processes a previous agent
 * left adopted, and the handles let go. Uses the process record, output,
 * the socket, the shim's command line, run records and the pod network.
 * Loop.
 */
#ifndef LARK_EDGE_LIFETIME_H
#define LARK_EDGE_LIFETIME_H

#include "proc.h"

/* Spawn the shim for p in cwd (in namespace file netns when p->netns),
 * running entry (or the runScript when NULL) of desired state d; fills
 * p->pid and p->ticks. */
int edge_proc_spawn(edge_proc *p, const bus_ev_pod_desired *d, const char *cwd,
                    char *netns);
/* SIGTERM to p's process group, SIGKILL after the grace period. Its end
 * is reported Stopped when report, not at all when silent. */
void edge_proc_stop(edge_proc *p, int report, int silent);
/* Close everything p holds; p is freed by the last close callback. */
void edge_proc_finish(edge_proc *p);

/* Adopt or account for the processes a previous agent started. */
void edge_procs_adopt(edge_agent *a);
/* Close every handle the pods hold (processes keep running). */
void edge_procs_close(edge_agent *a);

#endif

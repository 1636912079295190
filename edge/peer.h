/*
 * peer.h - private to edge/: which pod is on the other end of a local
 * socket. The kernel's SO_PEERCRED gives the caller's pid; the caller
 * belongs to the pod whose shim is that process or one of its
 * ancestors. The controller sockets (robots, cameras) ask this of each
 * client before serving it, and whether that pod holds the device asked
 * for.
 */
#ifndef LARK_EDGE_PEER_H
#define LARK_EDGE_PEER_H

#include <stddef.h>
#include <sys/types.h>

#include "agent.h"

/*
 * The pod whose running shim is an ancestor of (or is) the process on the
 * other end of the connected Unix socket fd: 0 with its name in pod, -1
 * when no running pod's shim is (or cap is too small). Reads the local
 * store and /proc: any thread.
 */
int edge_peer_pod(edge_agent *a, int fd, char *pod, size_t cap);

/* The same for a pid (the part that needs no socket). */
int edge_peer_pod_of_pid(edge_agent *a, pid_t pid, char *pod, size_t cap);

/* 1 when pod's desired state, as stored, is Running and binds the device
 * named bound ("robot/arm-1", "camera/wrist"); else 0. What the robot and
 * camera sockets ask before serving a pod. Reads the local store: any
 * thread. */
int edge_pod_holds(edge_agent *a, const char *pod, const char *bound);

#endif

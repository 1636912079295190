/*
 * camera_run.h - private to edge/: the node's cameras as the agent starts
 * and stops them (camera_run.c), above the cameras (camera.h), their
 * socket (camera_sock.h) and the operator's capture (camera_op.h).
 */
#ifndef LARK_EDGE_CAMERA_RUN_H
#define LARK_EDGE_CAMERA_RUN_H

#include "agent.h"

/* The node's cameras: started after the broker connection is made (the
 * socket, then the operators' subscription), nothing when the node has
 * no camera; stopped before the threads (the socket, its clients and the
 * subscription closed, open sessions reported closed). Loop. */
int edge_cameras_start(edge_agent *a);
void edge_cameras_stop(edge_agent *a);
/* Free them, once the loop has run its last callbacks (after stop). */
void edge_cameras_free(edge_agent *a);

#endif

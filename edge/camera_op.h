/*
 * camera_op.h - private to edge/: an operator's capture (camera_op.c),
 * the subscription to lark.dev.<node>.> that serves it.
 */
#ifndef LARK_EDGE_CAMERA_OP_H
#define LARK_EDGE_CAMERA_OP_H

#include "camera.h"

/* Serve the operators' captures of cs into *serve; stop (from the loop,
 * before the connection closes). */
int edge_cam_op_start(edge_cameras *cs, bus_serve **serve);
void edge_cam_op_stop(bus_serve **serve);

#endif

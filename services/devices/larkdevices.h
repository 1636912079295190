/*
 * larkdevices.h - the robots and cameras of the edge nodes: larkdevices.
 *
 * lark-devices owns lark.ev.device.> (robot.commanded, robot.started,
 * switched, exited, restarted, stopped; camera.opened, closed, captured,
 * error) and writes robot.desired into each node's own stream
 * (lark.node.<node>.robot.<robot>, latest wins). Its view follows what
 * the nodes registered (node.registered's devices), their readiness, who
 * holds which named device (job.placed's Binding.devices, until the pod
 * ends, its Job is unplaced or its node is NotReady) and its own device
 * events.
 *
 * A robot is a resource with a desired state (Running or Stopped, a mode,
 * a count of resets) and an observed one (Running, Stopped, Exited,
 * Restarting; Unknown while its node is NotReady). Operators drive it
 * through commands, a pod that holds it through its node's ingress
 * (robot.request); either becomes robot.commanded, the audit record, and
 * decide then writes robot.desired with version = that event's sequence.
 * While a pod holds a robot an operator's command is refused unless
 * forced (the force is recorded); when the holder ends, decide stops the
 * robot with a robot.commanded of its own.
 *
 * Functions return 0 or a negative BUS_E* code.
 */
#ifndef LARK_LARKDEVICES_H
#define LARK_LARKDEVICES_H

#include <stdint.h>

#include "bus.h"
#include "queue.h"

/* The view: filter lark.ev.>; its tables are described in larkdevices-int.h. */
void devices_view_def(bus_view_def *def);

/*
 * Reads, live and in a replay:
 *   robot  status {node?, robot?} -> {items: [robot rows]}
 *   device list {node?}           -> {items: [rows of every device]}
 *          get {node, name}       -> {item: row}
 *          describe {name: "<node>/<name>"} -> row
 * (list without node takes name: "<node>" or "<node>/<name>", as get
 * sends it). A row: id ("<node>/<name>"), node, name, kind, state, mode,
 * holder, ts; a robot's also robot,
 * modes, desired, resets, restarts, exitCode (when it exited), version;
 * a camera's width, height, fps, source, frames, bytes.
 */
int devices_query(bus_txn *t, const char *kind, const char *verb,
                  const msgpack_object *req, msgpack_packer *pk, void *ud);

/*
 * lark.cmd.<user>.robot.<verb>, bodies {key, node, robot, mode?, force?}:
 *   start (mode optional), stop, reset, mode (mode required) -> {ok, seq}
 * refused NOT_FOUND (no such robot), FIELD (no such mode), CONFLICT while
 * a pod holds the robot and force is not set. robot.status and the
 * device.* reads answer from the view (devices_query).
 */
extern const bus_verbs devices_verbs;

/*
 * The ingress: a durable consumer (devices-ingress) on LARK_INGRESS,
 * filter lark.in.*.dev.>. robot.report and camera.report become robot.*
 * and camera.* events when the sending node has the device; robot.request
 * becomes robot.commanded when the pod that asked holds the robot there.
 * What does not pass is logged and dropped.
 */
typedef struct devices_ingress devices_ingress;
typedef svc_queue_opts devices_ingress_opts;
void devices_ingress_opts_init(devices_ingress_opts *o);
int devices_ingress_start(bus_conn *c, bus_view *v,
                          const devices_ingress_opts *o, devices_ingress **out);
void devices_ingress_stop(devices_ingress *in);

#endif

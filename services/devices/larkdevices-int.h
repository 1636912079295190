/*
 * larkdevices-int.h - the view's records and tables, shared by apply
 * (apply.c, apply_device.c), decide (decide.c), queries (queries.c),
 * commands (commands.c) and the ingress (ingress.c).
 *
 * Records are zeroed fixed structs with a layout byte, so equal states
 * are equal bytes for the digest. Tables:
 *   devices  <node>/<name>           -> dev_rec (every registered device)
 *   nodes    <node>                  -> "R" ready or "N" NotReady
 *   pods     <pod>                   -> pod_rec (a pod holding devices)
 *   ending   <node>/<robot>          -> the pod whose end stops the robot
 *                                       (decide's robot.commanded stop)
 *   desq     be64(seq) <node>/<robot> -> "": robot.desired to send, one
 *                                       row per robot (its latest)
 */
#ifndef LARK_LARKDEVICES_INT_H
#define LARK_LARKDEVICES_INT_H

#include <string.h>

#include "larkdevices.h"

#define DEV_NAME_SZ 64
#define DEV_DNAME_SZ 256
#define DEV_KEY_SZ (2 * DEV_NAME_SZ)
#define DEV_MODES_MAX 32
#define DEV_HELD_MAX 32
#define DEV_LAYOUT 1
#define DEV_ACTOR "lark-devices"
/* Appends of one report or request before its device's subject is deemed
 * busy (BUS_EBUSY, tried again after a nap). */
#define DEV_APPEND_TRIES 8

enum { DEV_ROS = 1, DEV_ROS2 = 2, DEV_CAMERA = 3 };

/* Observed states. A robot: Stopped until it starts; Restarting when it
 * died while it should run. A camera: Closed, Open, Error. */
enum {
  DEV_S_STOPPED = 0,
  DEV_S_RUNNING,
  DEV_S_EXITED,
  DEV_S_RESTARTING,
  DEV_S_CLOSED,
  DEV_S_OPEN,
  DEV_S_ERROR
};

typedef struct dev_rec {
  uint8_t layout;
  uint8_t kind;     /* DEV_ROS, DEV_ROS2, DEV_CAMERA */
  uint8_t running;  /* desired Running */
  uint8_t state;    /* DEV_S_* */
  uint8_t nmodes;   /* a robot's modes */
  uint8_t has_exit; /* exit_code is known */
  uint8_t pad[2];
  char node[DEV_NAME_SZ];
  char name[DEV_NAME_SZ];
  char modes[DEV_MODES_MAX][DEV_NAME_SZ];
  char mode[DEV_NAME_SZ];    /* the desired mode ("": the first) */
  char ran[DEV_NAME_SZ];     /* the mode it was last seen running */
  char holder[DEV_DNAME_SZ]; /* the pod holding it; "" none */
  char request[136];         /* what led to the last robot.desired */
  char source[256];          /* a camera's, cut */
  int32_t exit_code;
  uint32_t width, height, fps;
  uint64_t resets, restarts;
  uint64_t version; /* the robot.commanded of the last robot.desired */
  uint64_t frames, bytes;
  int64_t ts; /* its last change */
} dev_rec;

typedef struct pod_rec {
  uint8_t layout;
  uint8_t ndev;
  uint8_t pad[6];
  char pod[DEV_DNAME_SZ];
  char job[DEV_NAME_SZ];
  char node[DEV_NAME_SZ];
  char devs[DEV_HELD_MAX][DEV_NAME_SZ]; /* names of its node's devices */
} pod_rec;

/* "<node>/<name>" into key (DEV_KEY_SZ); its length. */
size_t dev_key(const char *node, const char *name, char *key);
/* Records, read and written whole: BUS_ENOT_FOUND when absent,
 * BUS_ECORRUPT for a wrong size or layout. */
int dev_get(bus_txn *t, const char *node, const char *name, dev_rec *d);
int dev_put(bus_txn *t, const dev_rec *d);
int dev_pod_get(bus_txn *t, const char *pod, pod_rec *p);
int dev_pod_put(bus_txn *t, const pod_rec *p);
/* 1 when node is NotReady (its devices' state is not known). */
int dev_node_down(bus_txn *t, const char *node);
/* "ros", "ros2", "camera"; the kind's code from its name (0: none). */
const char *dev_kind_name(int kind);
int dev_kind_of(bus_str s);
/* The state as shown: Unknown while the node is down. */
const char *dev_state_name(const dev_rec *d, int node_down);
/* 1 when mode is one of the robot's modes. */
int dev_has_mode(const dev_rec *d, const char *mode);
/* A bus_str copied into a fixed field. */
void dev_copy(char *dst, size_t cap, bus_str s);
/* The tokens of lark.ev.device.<node>.<name>: 0, or BUS_EINVAL. */
int dev_subject_names(const char *subject, char *node, char *name);

/* Walk every dev_rec (of node, when not NULL); fn's non-zero stops. */
typedef int (*dev_fn)(const dev_rec *d, void *ud);
int dev_each(bus_txn *t, const char *node, dev_fn fn, void *ud);

/* apply_device.c: the device events (data: their generated structs). */
int dev_apply_commanded(bus_txn *t, const bus_event *ev, const void *data,
                        void *ud);
int dev_apply_robot(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud);
int dev_apply_camera(bus_txn *t, const bus_event *ev, const void *data,
                     void *ud);
/* A robot.desired to send for d at seq (its older one dropped). */
int dev_queue_desired(bus_txn *t, dev_rec *d, uint64_t seq);

int devices_apply(bus_txn *t, const bus_event *ev, void *ud);
int devices_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud);

#endif

/*
 * robot.h - private to edge/: the node's robots (the device file's ros
 * and ros2 devices), each a supervised launch process brought in line
 * with its robot.desired (robot.c), and the controller sockets through
 * which the pods holding them drive them (robot_sock.c). Uses the device
 * list, the store, the sender and the log. Loop.
 */
#ifndef LARK_EDGE_ROBOT_H
#define LARK_EDGE_ROBOT_H

#include "agent.h"
#include "devices.h"

enum { EDGE_REQ_SZ = 129, EDGE_ROBOT_SEEN = 8 };

typedef struct edge_robot edge_robot;
typedef struct edge_robots edge_robots;

struct edge_robot {
  edge_robots *all;
  const edge_device *dev;
  char dir[4200]; /* <data>/robots/<name>: cwd, launch.log, exit-<n> */
  /* the desired state last taken from the store */
  int want_run;
  char want_mode[EDGE_DEV_NAME_SZ];
  uint64_t version, resets;
  char holder[EDGE_POD_SZ];
  /* request ids of desired states taken, answered once settled */
  char seen[EDGE_ROBOT_SEEN][EDGE_REQ_SZ];
  int nseen;
  /* the launch */
  edge_robot_run run; /* as recorded in the store */
  int live;           /* a launch process runs (spawned or adopted) */
  int stopping;       /* SIGTERM sent; what then: */
  const char *next;   /* the event the next launch reports */
  int retrying;       /* a restart after a crash is due */
  int crashes;        /* in a row: the backoff's exponent */
  uint64_t launched;  /* uv_now at launch */
  uint64_t refused;   /* the desired version whose mode was unknown */
  uv_process_t *proc; /* the launch we spawned (each its own: a closing
                         one may outlive the next spawn) */
  uv_timer_t poll, grace, retry;
};

struct edge_robots {
  edge_agent *a;
  edge_robot *v;
  int n;
  /* A robot settled after taking a desired state with request id req:
   * the sockets answer the pod that asked (robot_sock.c sets it). */
  void (*settled)(edge_robots *all, edge_robot *r, const char *req);
  struct edge_robot_socks *socks;
};

/* The robots of devs (which must outlive them): their records adopted
 * (a launch a previous agent left running is watched, never started
 * again). 0 with *out NULL when devs has none. Their sockets are the
 * caller's to open and close (edge_robot_socks_*, below): the sockets
 * sit above the robots and call them, never the other way. */
int edge_robots_open(edge_agent *a, const edge_devices *devs,
                     edge_robots **out);
/* Bring every robot in line with its desired state (after the slice
 * stored some). */
void edge_robots_reconcile(edge_robots *all);
/* Close every handle (launches keep running: the next agent adopts
 * them); free once the loop has run the closes. */
void edge_robots_close(edge_robots *all);
void edge_robots_free(edge_robots *all);

/* The robot named name, or NULL. */
edge_robot *edge_robot_find(edge_robots *all, const char *name);
/* Its observed state: Running, Restarting, Exited or Stopped. */
const char *edge_robot_state(const edge_robot *r);

/* robot_orphan.c: a shim of r's launch (attempt > after) running with no
 * record (its agent died between the spawn and the record): 1 with its
 * pid, start time, attempt and mode in run, else 0. */
int edge_robot_find_launch(const edge_robot *r, uint32_t after,
                           edge_robot_run *run);

/* robot_sock.c: the controller sockets <data>/run/ros-ctrl.sock and
 * ros2-ctrl.sock, for the kinds the node has. */
int edge_robot_socks_open(edge_robots *all);
void edge_robot_socks_close(edge_robots *all);

#endif

/*
 * robot_req.h - private to edge/: a request line of the robot controller
 * sockets, parsed (robot_req.c, with reqline.c). Pure: the robot
 * sockets' fuzz harness (fuzz/fuzz_robot_req.c) runs it alone.
 */
#ifndef LARK_EDGE_ROBOT_REQ_H
#define LARK_EDGE_ROBOT_REQ_H

#include <stddef.h>

typedef enum edge_robot_op {
  EDGE_ROBOT_LIST,
  EDGE_ROBOT_STATUS,
  EDGE_ROBOT_MODES,
  EDGE_ROBOT_START,
  EDGE_ROBOT_STOP,
  EDGE_ROBOT_RESET,
  EDGE_ROBOT_SWITCH
} edge_robot_op;

typedef struct edge_robot_req {
  edge_robot_op op;
  char robot[64]; /* a device name; "" for list */
  char mode[64];  /* a mode's name: switch needs one, start may have one;
                     "" else */
} edge_robot_req;

/* One line (without its newline): 0, or -1 with the reason in why. */
int edge_robot_req_parse(const char *line, size_t len, edge_robot_req *r,
                         char *why, size_t whylen);

/* "list", "status", ... "switch". */
const char *edge_robot_op_name(edge_robot_op op);

#endif

/*
 * camera_req.h - private to edge/: a request line of the camera socket,
 * parsed (camera_req.c, with reqline.c). Pure: the camera socket's fuzz
 * harness (fuzz/fuzz_camera_req.c) runs it alone.
 */
#ifndef LARK_EDGE_CAMERA_REQ_H
#define LARK_EDGE_CAMERA_REQ_H

#include <stddef.h>
#include <stdint.h>

enum { EDGE_CAM_COUNT_MAX = 1000000 };

typedef enum edge_cam_op {
  EDGE_CAM_LIST,
  EDGE_CAM_OPEN,
  EDGE_CAM_CAPTURE,
  EDGE_CAM_WATCH,
  EDGE_CAM_CLOSE
} edge_cam_op;

typedef struct edge_cam_req {
  edge_cam_op op;
  char camera[64]; /* a device name; "" for list */
  uint32_t count;  /* capture: 1 to EDGE_CAM_COUNT_MAX (default 1) */
} edge_cam_req;

/* One line (without its newline): 0, or -1 with the reason in why. */
int edge_cam_req_parse(const char *line, size_t len, edge_cam_req *r, char *why,
                       size_t whylen);

#endif

/*
 * devices.h - a node's robots and cameras, as declared by
 * `lark-edge --device-file FILE` (edge/README.md, "Devices").
 *
 * The file is YAML with two top-level lists, `robots:` and `cameras:`:
 *
 *   robots:
 *     - name: arm-1
 *       kind: ros2                       # ros | ros2
 *       launch: [ros2, launch, arm_bringup, arm.launch.py]
 *       modes:                           # name -> argv appended to launch
 *         impedance: [control_mode:=impedance]   # the first is the default
 *         joint: [control_mode:=joint]
 *       rosDomainId: 7                   # ros2; ros: rosMasterUri
 *       user: robot                      # optional: run the launch as
 *       subnet:                          # optional
 *         parent: eth1
 *         cidr: 192.168.50.0/24
 *         range: 192.168.50.100-192.168.50.120
 *         gateway: 192.168.50.1
 *   cameras:
 *     - name: wrist
 *       source: pattern          # pattern | files:DIR | v4l2:/dev/videoN
 *       width: 640
 *       height: 480
 *       fps: 30                  # 0: as fast as asked
 *
 * Names are device names (bus_name_valid), unique across robots and cameras
 * of the file. A robot without modes has one, "default", that appends
 * nothing. Unknown keys are refused; width and height are 1 to 8192, fps
 * 0 to 1000 (default 0), rosDomainId 0 to 232, as the schema's Device.
 * A subnet's range and gateway lie inside its cidr, the gateway outside
 * the range. Everything the parser returns is owned by the edge_devices
 * and lives until edge_devices_free; robots come first in it, then
 * cameras, each in the file's order.
 */
#ifndef LARK_EDGE_DEVICES_H
#define LARK_EDGE_DEVICES_H

#include <stddef.h>

enum { EDGE_DEV_NAME_SZ = 64, EDGE_DEV_PATH_SZ = 4096, EDGE_DEV_IP_SZ = 46 };

/* Limits of a file: devices (NodeSpec.devices's max_items), modes of a
 * robot (Device.modes's), arguments of a launch line or a mode. */
enum { EDGE_DEV_MAX = 64, EDGE_DEV_MODES_MAX = 32, EDGE_DEV_ARGV_MAX = 256 };

typedef enum edge_dev_kind {
  EDGE_DEV_ROS,
  EDGE_DEV_ROS2,
  EDGE_DEV_CAMERA
} edge_dev_kind;

typedef enum edge_cam_source {
  EDGE_CAM_PATTERN, /* a moving test pattern */
  EDGE_CAM_FILES,   /* the images of a folder, played in a loop */
  EDGE_CAM_V4L2     /* a V4L2 device node */
} edge_cam_source;

typedef struct edge_dev_mode {
  char name[EDGE_DEV_NAME_SZ];
  char **argv; /* appended to the robot's launch; NULL-terminated */
  int argc;
} edge_dev_mode;

typedef struct edge_dev_subnet {
  int set;                       /* 0: the robot has no subnet */
  char parent[16];               /* interface name on the node */
  char cidr[EDGE_DEV_IP_SZ + 4]; /* "192.168.50.0/24" */
  char first[EDGE_DEV_IP_SZ];    /* the range given out to pods, */
  char last[EDGE_DEV_IP_SZ];     /* both inside cidr */
  char gateway[EDGE_DEV_IP_SZ];  /* "" when none */
} edge_dev_subnet;

typedef struct edge_device {
  char name[EDGE_DEV_NAME_SZ];
  edge_dev_kind kind;
  /* Robots. */
  char **launch; /* NULL-terminated argv; launch[0] looked up in PATH */
  int nlaunch;
  edge_dev_mode *modes; /* at least one; modes[0] is the default */
  int nmodes;
  char user[EDGE_DEV_NAME_SZ]; /* "" : the agent's own user */
  char ros_master_uri[257];    /* ros only; "" when not given */
  int ros_domain_id;           /* ros2 only; -1 when not given */
  edge_dev_subnet subnet;
  /* Cameras. */
  edge_cam_source source;
  char path[EDGE_DEV_PATH_SZ]; /* /dev/videoN or DIR; "" for pattern */
  unsigned width, height, fps;
} edge_device;

typedef struct edge_devices {
  edge_device *v;
  int n;
} edge_devices;

/*
 * Parse a device file's text. On error returns -1 with a message naming
 * the line ("line 7: robot arm-1: kind must be ros or ros2") in err, and
 * *out left empty; 0 on success.
 */
int edge_devices_parse(const char *text, size_t len, edge_devices *out,
                       char *err, size_t errlen);

/* edge_devices_parse of a file's content; err names the file too. */
int edge_devices_load(const char *path, edge_devices *out, char *err,
                      size_t errlen);

/* Frees what d holds and empties it; d itself is the caller's. */
void edge_devices_free(edge_devices *d);

/* The device named name ("arm-1"), or NULL. */
const edge_device *edge_devices_find(const edge_devices *d, const char *name);

/* The device a bound name names ("robot/arm-1", "camera/wrist"): the kind
 * must agree. NULL when there is none. */
const edge_device *edge_devices_bound(const edge_devices *d, const char *bound);

/* The mode named name of robot r, or NULL; name NULL or "" gives the
 * default. */
const edge_dev_mode *edge_device_mode(const edge_device *r, const char *name);

/* "ros", "ros2" or "camera". */
const char *edge_dev_kind_name(edge_dev_kind kind);

/* The name a device is bound and scheduled by: "robot/arm-1",
 * "camera/wrist" (at most 71 characters) into buf; -1 when cap is too
 * small. */
int edge_dev_bound_name(const edge_device *dev, char *buf, size_t cap);

/*
 * Keep device j of d (robots first, then cameras, each in the file's
 * order, as the parser leaves them) when j mod n == i - 1: node i of n
 * takes its share of one file (`--device-share I/N`). 1 <= i <= n.
 */
void edge_devices_share(edge_devices *d, int i, int n);

/*
 * The controller socket of a kind on the node whose data directory is
 * data: <data>/run/ros-ctrl.sock, ros2-ctrl.sock or camera-ctrl.sock,
 * into buf. -1 when it does not fit cap (pass sizeof sun_path where the
 * path is bound).
 */
int edge_dev_socket_path(const char *data, edge_dev_kind kind, char *buf,
                         size_t cap);

#endif

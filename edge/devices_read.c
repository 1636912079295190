/*
 * devices_read.c - one robot or camera of the device file: its keys,
 * each read by what may stand there, then the checks that need the whole
 * device (required keys, a robot's kind against its ROS keys, a subnet's
 * addresses against each other, the name not taken). Every problem is
 * kept as the device's first (dp_problem) with the line it is on, and
 * reported when the mapping ends as "line L: robot NAME: ...".
 *
 * It stands on devices_yaml.c (and devices_subnet.c for a subnet) and is
 * called by devices.c; a device's freeing and a robot's mode lookup live
 * here, beside what they read, so that nothing below calls upward.
 */
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "devices-int.h"

enum { KEYS_MAX = 8 };

/* A device's kind of keys: its table, how a value is read, the checks. */
typedef struct dkind {
  const char *word; /* "robot", "camera" */
  const char *keys[KEYS_MAX + 1];
  int (*value)(dparse *p, edge_device *d, int key);
  void (*check)(dparse *p, edge_device *d, const int *lines, int start);
} dkind;

/* The name key, first in every table. */
static int
read_name(dparse *p, edge_device *d) {
  int line = dp_line(p), was = p->pline;
  if (dp_str(p, "name", d->name, sizeof d->name))
    return -1;
  if (p->pline == was && !bus_name_valid(d->name, BUS_NAME_MAX)) {
    dp_problem(p, line,
               "name %.64s must be lowercase letters, digits and '-', "
               "at most %d",
               d->name, BUS_NAME_MAX);
    d->name[0] = 0;
  }
  return 0;
}

/* ------------------------------------------------------------- robots */

enum { R_NAME, R_KIND, R_LAUNCH, R_MODES, R_URI, R_DOMAIN, R_USER, R_SUBNET };

/* A mode's name, valid and new, or a problem noted (and 0 returned). */
static int
mode_name_ok(dparse *p, const edge_device *d, const char *name, int line) {
  if (!bus_name_valid(name, BUS_NAME_MAX))
    dp_problem(p, line,
               "mode %.64s: a mode's name must be lowercase letters, "
               "digits and '-'",
               name);
  else if (edge_device_mode(d, name))
    dp_problem(p, line, "mode %s given twice", name);
  else if (d->nmodes >= EDGE_DEV_MODES_MAX)
    dp_problem(p, line, "more than %d modes", EDGE_DEV_MODES_MAX);
  else
    return 1;
  return 0;
}

/* One more mode, its argv empty until read. */
static edge_dev_mode *
mode_add(edge_device *d, const char *name) {
  edge_dev_mode *m = realloc(d->modes, (size_t)(d->nmodes + 1) * sizeof *m);
  if (!m)
    return NULL;
  d->modes = m;
  m = &m[d->nmodes++];
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  return m;
}

/* modes: a mapping of name -> argv, in the file's order. */
static int
read_modes(dparse *p, edge_device *d) {
  if (p->ev.type != YAML_MAPPING_START_EVENT) {
    dp_problem(p, dp_line(p), "modes must map each mode to its arguments");
    return dp_skip(p);
  }
  int more;
  while ((more = dp_each(p, YAML_MAPPING_END_EVENT)) > 0) {
    int line = dp_line(p);
    char name[EDGE_DEV_NAME_SZ] = "";
    if (dp_str(p, "a mode's name", name, sizeof name) || dp_next(p))
      return -1;
    edge_dev_mode *m = NULL;
    if (mode_name_ok(p, d, name, line) && !(m = mode_add(d, name))) {
      dp_fail(p, line, "out of memory");
      return -1;
    }
    char what[EDGE_DEV_NAME_SZ + 8];
    snprintf(what, sizeof what, "mode %s", name);
    int rc = !m || dp_is_empty(p) ? dp_skip(p) /* `mode:` alone: nothing */
                                  : dp_argv(p, what, &m->argv, &m->argc);
    if (rc)
      return -1;
  }
  return more;
}

static int
read_kind(dparse *p, edge_device *d) {
  char kind[8] = "";
  int line = dp_line(p), was = p->pline;
  if (dp_str(p, "kind", kind, sizeof kind))
    return -1;
  if (!strcmp(kind, "ros"))
    d->kind = EDGE_DEV_ROS;
  else if (!strcmp(kind, "ros2"))
    d->kind = EDGE_DEV_ROS2;
  else if (p->pline == was)
    dp_problem(p, line, "kind must be ros or ros2");
  return 0;
}

/* A user name as useradd takes it: [a-z_][a-z0-9_-]*, at most 32. */
static int
user_valid(const char *u) {
  size_t n = strlen(u);
  if (!n || n > 32 || !((*u >= 'a' && *u <= 'z') || *u == '_'))
    return 0;
  return strspn(u, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static int
robot_value(dparse *p, edge_device *d, int key) {
  int line = dp_line(p), was = p->pline;
  unsigned v = 0;
  switch (key) {
  case R_NAME:
    return read_name(p, d);
  case R_KIND:
    return read_kind(p, d);
  case R_LAUNCH:
    return dp_argv(p, "launch", &d->launch, &d->nlaunch);
  case R_MODES:
    return read_modes(p, d);
  case R_URI:
    return dp_str(p, "rosMasterUri", d->ros_master_uri,
                  sizeof d->ros_master_uri);
  case R_DOMAIN:
    if (dp_uint(p, "rosDomainId", 232, &v))
      return -1;
    d->ros_domain_id = (int)v;
    return 0;
  case R_USER:
    if (dp_str(p, "user", d->user, sizeof d->user))
      return -1;
    if (p->pline == was && !user_valid(d->user))
      dp_problem(p, line, "user %.64s is not a user name", d->user);
    return 0;
  default:
    return dp_read_subnet(p, &d->subnet);
  }
}

/* A robot's launch, its ROS keys against its kind, its default mode. */
static void
robot_check(dparse *p, edge_device *d, const int *lines, int start) {
  if (!lines[R_KIND])
    dp_problem(p, start, "kind (ros or ros2) is missing");
  else if (!lines[R_LAUNCH] || !d->nlaunch)
    dp_problem(p, lines[R_LAUNCH] ? lines[R_LAUNCH] : start,
               "launch must give the command that starts the robot");
  else if (d->kind == EDGE_DEV_ROS2 && lines[R_URI])
    dp_problem(p, lines[R_URI],
               "rosMasterUri is for ros robots (ros2 takes rosDomainId)");
  else if (d->kind == EDGE_DEV_ROS && lines[R_DOMAIN])
    dp_problem(p, lines[R_DOMAIN],
               "rosDomainId is for ros2 robots (ros takes rosMasterUri)");
  else if (!d->nmodes && !mode_add(d, "default"))
    dp_fail(p, start, "out of memory");
  for (int i = 0; i < d->nmodes; i++)
    if (!d->modes[i].argv && !(d->modes[i].argv = calloc(1, sizeof(char *))))
      dp_fail(p, start, "out of memory");
}

/* ------------------------------------------------------------ cameras */

enum { C_NAME, C_SOURCE, C_WIDTH, C_HEIGHT, C_FPS };

static int
read_source(dparse *p, edge_device *d) {
  char src[EDGE_DEV_PATH_SZ + 8] = "";
  int line = dp_line(p), was = p->pline;
  if (dp_str(p, "source", src, sizeof src))
    return -1;
  const char *path = NULL;
  if (!strcmp(src, "pattern"))
    d->source = EDGE_CAM_PATTERN, path = "";
  else if (!strncmp(src, "files:", 6) && src[6])
    d->source = EDGE_CAM_FILES, path = src + 6;
  else if (!strncmp(src, "v4l2:/", 6))
    d->source = EDGE_CAM_V4L2, path = src + 5;
  if (p->pline != was)
    return 0;
  if (!path || strlen(path) >= sizeof d->path)
    dp_problem(p, line,
               "source must be pattern, files:DIR or v4l2:/dev/videoN");
  else
    strcpy(d->path, path);
  return 0;
}

static int
camera_value(dparse *p, edge_device *d, int key) {
  switch (key) {
  case C_NAME:
    return read_name(p, d);
  case C_SOURCE:
    return read_source(p, d);
  case C_WIDTH:
    return dp_uint(p, "width", 8192, &d->width);
  case C_HEIGHT:
    return dp_uint(p, "height", 8192, &d->height);
  default:
    return dp_uint(p, "fps", 1000, &d->fps);
  }
}

static void
camera_check(dparse *p, edge_device *d, const int *lines, int start) {
  (void)d;
  if (!lines[C_SOURCE])
    dp_problem(p, start,
               "source (pattern, files:DIR or v4l2:/dev/videoN) "
               "is missing");
  else if (!lines[C_WIDTH] || !lines[C_HEIGHT])
    dp_problem(p, start, "width and height are required");
  else if (!d->width || !d->height)
    dp_problem(p, lines[d->width ? C_HEIGHT : C_WIDTH],
               "width and height must be 1 to 8192");
}

/* ------------------------------------------------------------ devices */

static const dkind robot_kind = {"robot",
                                 {"name", "kind", "launch", "modes",
                                  "rosMasterUri", "rosDomainId", "user",
                                  "subnet", NULL},
                                 robot_value,
                                 robot_check};

static const dkind camera_kind = {
    "camera",
    {"name", "source", "width", "height", "fps", NULL},
    camera_value,
    camera_check};

/* A new device at the end of out, empty; NULL when out of memory. */
static edge_device *
device_add(edge_devices *out, edge_dev_kind kind) {
  edge_device *v = realloc(out->v, (size_t)(out->n + 1) * sizeof *v);
  if (!v)
    return NULL;
  out->v = v;
  edge_device *d = &v[out->n++];
  memset(d, 0, sizeof *d);
  d->kind = kind;
  d->ros_domain_id = -1;
  return d;
}

/* A key of the device's mapping and its value. */
static int
device_key(dparse *p, const dkind *k, edge_device *d, int *lines) {
  int line = dp_line(p), key = -1;
  const char *s = p->ev.type == YAML_SCALAR_EVENT
                      ? (const char *)p->ev.data.scalar.value
                      : "";
  for (int i = 0; k->keys[i] && key < 0; i++)
    if (!strcmp(s, k->keys[i]))
      key = i;
  if (p->ev.type != YAML_SCALAR_EVENT)
    dp_problem(p, line, "a key must be a string");
  else if (key < 0)
    dp_problem(p, line, "unknown key %.64s", s);
  else if (lines[key])
    dp_problem(p, line, "%s given twice", s);
  if (dp_skip(p) || dp_next(p))
    return -1;
  if (key < 0 || lines[key])
    return dp_skip(p);
  lines[key] = line;
  return k->value(p, d, key);
}

/* The first device before d with d's name, or -1. */
static int
name_taken(const edge_devices *out, const edge_device *d) {
  for (int i = 0; &out->v[i] != d; i++)
    if (!strcmp(out->v[i].name, d->name))
      return i;
  return -1;
}

static int
read_device(dparse *p, const dkind *k, edge_dev_kind kind, int nth) {
  int start = dp_line(p), lines[KEYS_MAX] = {0};
  edge_device *d = device_add(p->out, kind);
  if (!d) {
    dp_fail(p, start, "out of memory");
    return -1;
  }
  p->lines[p->out->n - 1] = start;
  p->pline = 0;
  int more;
  while ((more = dp_each(p, YAML_MAPPING_END_EVENT)) > 0) {
    if (device_key(p, k, d, lines))
      return -1;
  }
  if (more)
    return -1;
  if (!p->pline && !lines[R_NAME])
    dp_problem(p, start, "name is missing");
  if (!p->pline)
    k->check(p, d, lines, start);
  int t = p->pline ? -1 : name_taken(p->out, d);
  if (t >= 0)
    dp_problem(
        p, lines[R_NAME], "name %s is taken by the %s on line %d", d->name,
        p->out->v[t].kind == EDGE_DEV_CAMERA ? "camera" : "robot", p->lines[t]);
  if (!p->pline)
    return p->rc;
  if (*d->name)
    dp_fail(p, p->pline, "%s %s: %s", k->word, d->name, p->pmsg);
  else
    dp_fail(p, p->pline, "%s #%d: %s", k->word, nth, p->pmsg);
  return -1;
}

int
dp_read_robot(dparse *p) {
  return read_device(p, &robot_kind, EDGE_DEV_ROS, ++p->nrobots);
}

int
dp_read_camera(dparse *p) {
  return read_device(p, &camera_kind, EDGE_DEV_CAMERA, ++p->ncameras);
}

void
dp_device_free(edge_device *d) {
  dp_argv_free(d->launch);
  for (int i = 0; i < d->nmodes; i++)
    dp_argv_free(d->modes[i].argv);
  free(d->modes);
  memset(d, 0, sizeof *d);
}

const edge_dev_mode *
edge_device_mode(const edge_device *r, const char *name) {
  if (!name || !*name)
    return r->nmodes ? &r->modes[0] : NULL;
  for (int i = 0; i < r->nmodes; i++)
    if (!strcmp(r->modes[i].name, name))
      return &r->modes[i];
  return NULL;
}

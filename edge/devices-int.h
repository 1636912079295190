/*
 * devices-int.h - private to the device file's parser, in layers that
 * only call downward: devices_yaml.c walks events and reads scalars and
 * lists (dp_*); devices_subnet.c a robot's subnet and devices_read.c a
 * robot's and a camera's keys, above it; devices.c the file's shape, the
 * entry, on top; devices_use.c (loading, lookups) above the parser.
 *
 * Reading convention: a reader is called with p->ev at the first event
 * of its value and returns with p->ev at the value's last event, the
 * value consumed whatever it held. A problem inside a device is only
 * noted (dp_problem) and reported when the device's mapping ends, naming
 * the device; dp_fail ends the parse.
 */
#ifndef LARK_EDGE_DEVICES_INT_H
#define LARK_EDGE_DEVICES_INT_H

#include <stddef.h>

#include <yaml.h>

#include "devices.h"

typedef struct dparse {
  yaml_parser_t y;
  yaml_event_t ev; /* the current event, when have */
  int have;
  int rc; /* -1 once failed: err holds why */
  char *err;
  size_t errlen;
  edge_devices *out;
  int lines[EDGE_DEV_MAX]; /* where each device of out starts */
  int nrobots, ncameras;   /* read so far, for "robot #2" */
  int pline;               /* the device's first problem, when pline */
  char pmsg[320];
} dparse;

/* devices_yaml.c */
void dp_fail(dparse *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Note the device's problem unless it has one; -1. */
int dp_problem(dparse *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int dp_line(const dparse *p);
/* The next event into p->ev; -1 on a YAML error or an alias. */
int dp_next(dparse *p);
/* The next item of the sequence or mapping being read, whose end event
 * is end: 1 with p->ev its first event, 0 at the end, -1 on an error.
 *   while ((more = dp_each(p, YAML_SEQUENCE_END_EVENT)) > 0) ... */
int dp_each(dparse *p, yaml_event_type_t end);
/* Consume the value p->ev opens. */
int dp_skip(dparse *p);
/* Whether p->ev is a plain empty or null scalar (`robots:` alone). */
int dp_is_empty(const dparse *p);
/* A string value into dst (cap bytes with the NUL). */
int dp_str(dparse *p, const char *what, char *dst, size_t cap);
/* A whole number 0..max. */
int dp_uint(dparse *p, const char *what, unsigned max, unsigned *dst);
/* A list of strings appended to *argv (NULL-terminated). */
int dp_argv(dparse *p, const char *what, char ***argv, int *argc);
void dp_argv_free(char **argv);

/* One robot or camera: p->ev is its mapping's start (devices_read.c). */
int dp_read_robot(dparse *p);
int dp_read_camera(dparse *p);
void dp_device_free(edge_device *d);
/* A robot's subnet: parent, cidr, range, gateway (devices_subnet.c). */
int dp_read_subnet(dparse *p, edge_dev_subnet *s);

#endif

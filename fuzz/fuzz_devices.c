/*
 * fuzz_devices.c - libFuzzer harness for lark-edge's device file
 * (edge/devices.c): any bytes as the file. A refused file leaves no
 * device and an error that names its line; a taken one holds only what
 * the file's rules allow (valid, unique names, robots before cameras,
 * every robot with a launch line and a default mode, every argv
 * NULL-terminated, sizes inside the schema's bounds), and every device
 * is found again by its bound name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "devices.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_argv(char *const *argv, int argc) {
  for (int i = 0; i < argc; i++)
    if (!argv[i] || strlen(argv[i]) >= EDGE_DEV_PATH_SZ)
      abort();
  if (argv[argc])
    abort();
}

static void
check_device(const edge_devices *d, int i) {
  const edge_device *v = &d->v[i];
  char bound[80];
  if (!bus_name_valid(v->name, BUS_NAME_MAX) ||
      edge_devices_find(d, v->name) != v ||
      edge_dev_bound_name(v, bound, sizeof bound) ||
      edge_devices_bound(d, bound) != v)
    abort();
  if (v->kind == EDGE_DEV_CAMERA) {
    if (!v->width || v->width > 8192 || !v->height || v->height > 8192 ||
        v->fps > 1000 || (v->source != EDGE_CAM_PATTERN && !v->path[0]))
      abort();
    return;
  }
  if (i && d->v[i - 1].kind == EDGE_DEV_CAMERA)
    abort(); /* robots come first */
  if (v->nlaunch < 1 || v->nmodes < 1 || v->nmodes > EDGE_DEV_MODES_MAX ||
      edge_device_mode(v, NULL) != &v->modes[0] || v->ros_domain_id > 232)
    abort();
  check_argv(v->launch, v->nlaunch);
  for (int m = 0; m < v->nmodes; m++) {
    check_argv(v->modes[m].argv, v->modes[m].argc);
    if (edge_device_mode(v, v->modes[m].name) != &v->modes[m])
      abort();
  }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  edge_devices d;
  char err[512];
  if (edge_devices_parse((const char *)data, size, &d, err, sizeof err)) {
    if (d.n || d.v || strncmp(err, "line ", 5))
      abort();
    return 0;
  }
  if (d.n > EDGE_DEV_MAX)
    abort();
  for (int i = 0; i < d.n; i++)
    check_device(&d, i);
  int n = d.n;
  edge_devices_share(&d, 2, 3);
  if (d.n != (n + 1) / 3)
    abort();
  edge_devices_free(&d);
  return 0;
}

/*
 * fuzz_camera_req.c - libFuzzer harness for the request lines a pod
 * writes to the camera socket (edge/camera_req.c): any bytes, split into
 * lines as the socket splits them (at '\n', a trailing '\r' dropped,
 * empty lines skipped). Every line is either refused with a reason, or
 * taken as one of the five operations with a camera's name that is a
 * valid device name (none for list) and a count from 1 to 1000000.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bus.h"
#include "fuzz_lines.h"
#include "camera_req.h"

static void
one_line(const char *line, size_t len) {
  edge_cam_req r;
  char why[256] = "";
  if (fuzz_refused(edge_cam_req_parse(line, len, &r, why, sizeof why), why))
    return;
  if (r.op > EDGE_CAM_CLOSE || r.count < 1 || r.count > EDGE_CAM_COUNT_MAX)
    abort();
  if (r.op == EDGE_CAM_LIST ? r.camera[0] != 0
                            : !bus_name_valid(r.camera, sizeof r.camera - 1))
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_each_line(data, size, 1, one_line);
  return 0;
}

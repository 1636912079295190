/*
 * fuzz_robot_req.c - libFuzzer harness for the request lines a pod
 * writes to a robot controller socket (edge/robot_req.c): any bytes,
 * split into lines as the socket splits them (at '\n', empty lines
 * skipped). Every line is either refused with a reason, or taken as one
 * of the seven operations, with a robot's name that is a valid device
 * name (none for list) and a mode that is a valid name for switch, empty
 * or valid for start, and empty for the rest.
 */
#include <stdint.h>
#include <stdlib.h>

#include "bus.h"
#include "fuzz_lines.h"
#include "robot_req.h"

static void
one_line(const char *line, size_t len) {
  edge_robot_req r;
  char why[256] = "";
  if (fuzz_refused(edge_robot_req_parse(line, len, &r, why, sizeof why), why))
    return;
  if (r.op > EDGE_ROBOT_SWITCH)
    abort();
  if (r.op == EDGE_ROBOT_LIST ? r.robot[0] != 0
                              : !bus_name_valid(r.robot, sizeof r.robot - 1))
    abort();
  int takes_mode = r.op == EDGE_ROBOT_START || r.op == EDGE_ROBOT_SWITCH;
  if ((r.op == EDGE_ROBOT_SWITCH && !r.mode[0]) || (!takes_mode && r.mode[0]))
    abort();
  if (r.mode[0] && !bus_name_valid(r.mode, sizeof r.mode - 1))
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_each_line(data, size, 0, one_line);
  return 0;
}

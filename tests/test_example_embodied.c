/*
 * test_example_embodied.c - examples/embodied.yaml as a user runs it:
 * `larkctl up --nodes 1 --device-file examples/embodied-devices.yaml`
 * (every process real, under its own credentials), the Job applied, and
 * what the rollout (examples/embodied.py) and the operator see:
 *
 *   - the pod sees exactly the devices' variables of what it holds;
 *   - it drives the arm through RobotClient (start in a mode, switch,
 *     stop) and reads three 640x480 JPEG frames through CameraClient;
 *   - the Job succeeds, the devices are free again, and describe device
 *     shows who drove the arm: the pod, through its node;
 *   - an operator then starts the arm in its default mode and captures
 *     one frame of the camera; replay devices --verify holds.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

static lt_platform plat;
static char out[1 << 16], errout[1 << 14];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, errout, sizeof errout, __VA_ARGS__)

static void
platform_up(void) {
  char devfile[1024];
  snprintf(devfile, sizeof devfile, "%s/examples/embodied-devices.yaml",
           lt_source_dir());
  const char *const extra[] = {"--nodes", "1", "--device-file", devfile, NULL};
  lt_example_ready(&plat, "embodied", extra);
}

static void
platform_down(void) {
  lt_platform_end(&plat);
}

TestSuite(example, .init = platform_up, .fini = platform_down, .timeout = 240);

/* Wait (seconds) until `larkctl ARGS` prints needle. */
static int
prints(const char *needle, const char *args, int seconds) {
  if (lt_larkctl_until(&plat, out, sizeof out, errout, sizeof errout, needle,
                       seconds, "%s", args))
    return 1;
  cr_log_error("larkctl %s: no %s in %s%s", args, needle, out, errout);
  return 0;
}

/* The variables of this family the pod printed, in order, as one text. */
static void
expect_env(const char *logs) {
  static const char *const want[] = {"LARK_DEVICES=camera/wrist,robot/arm-1",
                                     "RLINF_EMBODIED_CAMERA_ENABLED=true",
                                     "RLINF_EMBODIED_CAMERA_SOCKET_PATH=",
                                     "RLINF_EMBODIED_ROS2_ENABLED=true",
                                     "RLINF_EMBODIED_ROS2_SOCKET_PATH=",
                                     "ROS_DOMAIN_ID=7",
                                     NULL};
  int n = 0;
  for (const char *p = logs; (p = strstr(p, "] ")); p += 2)
    if (!strncmp(p + 2, "RLINF_EMBODIED_", 15) || !strncmp(p + 2, "ROS_", 4) ||
        !strncmp(p + 2, "LARK_DEVICES=", 13)) {
      cr_assert_not_null(want[n], "more variables than held: %.60s", p + 2);
      cr_expect(!strncmp(p + 2, want[n], strlen(want[n])),
                "variable %d: %.60s, not %s", n, p + 2, want[n]);
      n++;
    }
  cr_expect_null(want[n], "the pod did not see %s", want[n] ? want[n] : "");
}

Test(example, embodied_job_drives_the_arm_and_reads_the_camera) {
  char job[1024];
  snprintf(job, sizeof job, "%s/examples/embodied.yaml", lt_source_dir());
  cr_assert(prints("wrist", "get devices", 30), "the node's devices");
  cr_assert_eq(ctl("apply -f %s", job), 0, "%s", errout);
  if (ctl("wait job embodied --for Succeeded --timeout 90s")) {
    char why[sizeof errout + 1024];
    snprintf(why, sizeof why, "%.1000s%s", out, errout);
    ctl("logs job embodied"); /* what the rollout said, to tell why */
    cr_assert_fail("%s\nthe pod's logs:\n%s%s", why, out, errout);
  }
  /* the pod's last lines reach the log store on their own path (its node,
   * lark-logs, LARK_LOGS), which may end after the Job's phase: wait for
   * the rollout's last line, as a user reading them at once would retry */
  cr_assert(prints("stopped: {'name': 'arm-1'", "logs job embodied", 20),
            "the rollout's last line never reached the logs");
  char logs[sizeof out];
  snprintf(logs, sizeof logs, "%s", out);
  expect_env(logs);
  cr_expect(strstr(logs, "modes of arm-1: ['impedance', 'joint']"), "%s", logs);
  cr_expect(strstr(logs, "'state': 'Running', 'mode': 'impedance'"), "%s",
            logs);
  for (int i = 0; i < 3; i++) {
    char frame[64];
    snprintf(frame, sizeof frame, "frame %d: 640x480, ", i);
    cr_expect(strstr(logs, frame), "no %s in %s", frame, logs);
  }
  cr_expect(strstr(logs, "closed: {'frames': 3,"), "%s", logs);
  cr_expect(strstr(logs, "'state': 'Running', 'mode': 'joint'"), "%s", logs);
  cr_expect(strstr(logs, "stopped: {'name': 'arm-1'"), "%s", logs);
  /* the audit trail: the pod drove the arm through its node */
  cr_assert_eq(ctl("describe device node-1/arm-1"), 0, "%s", errout);
  cr_expect(strstr(out, "start mode impedance by pod embodied-rollout-0"), "%s",
            out);
  cr_expect(strstr(out, "Switched"), "%s", out);
  /* free again once the pod ended; the operator drives it now */
  cr_assert(prints("Stopped", "get devices", 20));
  cr_expect(!strstr(out, "embodied-rollout-0"), "still held: %s", out);
  cr_assert_eq(ctl("robot start node-1/arm-1"), 0, "%s", errout);
  cr_expect(prints("Running    impedance", "robot status node-1/arm-1", 20),
            "an operator's start runs the default mode");
  char frame[512];
  snprintf(frame, sizeof frame, "%s/frame.jpg", plat.dir);
  cr_assert_eq(ctl("camera capture node-1/wrist -o %s", frame), 0, "%s",
               errout);
  cr_expect(strstr(out, "640x480 jpeg"), "%s", out);
  cr_expect_eq(ctl("replay devices --verify"), 0, "%s%s", out, errout);
}

/*
 * test_camera_platform.c - a camera through the whole platform: a broker
 * with the platform's accounts, lark-scheduler, lark-devices and a
 * lark-edge whose device file declares two cameras, all real processes
 * under their own credentials. A Job asking for both cameras by name is
 * placed on them; its pod (tests/data/camera_pod.py) finds the camera
 * socket in its environment and takes frames; the node's camera.report
 * becomes camera.* events, and lark-devices' row of the camera counts
 * what was delivered (the pod's session and an operator's capture), with
 * the holder while the pod runs; the devices view replays to the same
 * digest.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bed.h"
#include "cmd.h"
#include "cmd_check.h"
#include "deploy.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"
#include "wait.h"

#define NODE "cam-9"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t procs[3];

static pid_t
start(const char *bin, const char *name, const char *const more[]) {
  char cr[400], log[300];
  const char *extra[16] = {"--creds", cr};
  int n = 2;
  lark_creds_path(dir, name, cr, sizeof cr);
  for (int i = 0; more && more[i]; i++) {
    cr_assert_lt(n, 15, "too many arguments for %s", bin);
    extra[n++] = more[i];
  }
  extra[n] = NULL;
  snprintf(log, sizeof log, "%s.log", name);
  return lt_must_start(bin, srv.url, dir, name, log, extra);
}

static void
setup(void) {
  char path[400];
  lt_tmpdir(dir, sizeof dir, "camplat");
  const char *const who[] = {"admin", "lark-scheduler", "lark-devices", NODE,
                             NULL};
  const lark_role roles[] = {LARK_ROLE_ADMIN, LARK_ROLE_SERVICE,
                             LARK_ROLE_SERVICE, LARK_ROLE_NODE};
  lt_secure_bed_up(&srv, &conn, dir, who, roles);
  snprintf(path, sizeof path, "%s/devices.yaml", dir);
  cr_assert_eq(lt_write_file(path, "cameras:\n"
                                   "  - {name: wrist, source: pattern, "
                                   "width: 160, height: 120}\n"
                                   "  - {name: shelf, source: pattern, "
                                   "width: 64, height: 48, fps: 50}\n"),
               0);
  const char *edge[] = {"--node",        NODE, "--heartbeat", "0.5",
                        "--device-file", path, NULL};
  procs[0] = start("lark-scheduler", "lark-scheduler", NULL);
  procs[1] = start("lark-devices", "lark-devices", NULL);
  procs[2] = start("lark-edge", NODE, edge);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, procs, 3);
}

TestSuite(camera_platform, .init = setup, .fini = teardown, .timeout = 180);

/* Wait (30 s) until lark-devices' row of camera name has key want. */
static int
row_becomes(const char *name, const char *key, const char *want) {
  return lt_device_becomes(conn, NODE, name, key, want, 30);
}

/* The Job camj: one pod holding both cameras, running camera_pod.py. */
static void
apply_job(const char *out) {
  char script[400];
  const char *src = getenv("LARK_SOURCE_DIR");
  snprintf(script, sizeof script, "%s/tests/data/camera_pod.py", src);
  json_t *job =
      json_pack("{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:i,s:{s:i,s:i,s:{s:i,s:i}},"
                "s:{s:{s:[s,s,s,s,s]}}}]}}",
                "apiVersion", "rlinf.io/v1alpha1", "kind", "Job", "metadata",
                "name", "camj", "spec", "tasks", "name", "a", "role", "Actor",
                "replicas", 1, "resources", "cpu", 1, "memory", 64, "devices",
                "camera/wrist", 1, "camera/shelf", 1, "runtime", "raw",
                "entrypoint", "python3", script, "frames", out, src);
  lt_must_apply_resource(conn, "job", job);
}

Test(camera_platform, a_job_placed_on_cameras_takes_frames_and_is_counted) {
  char out[400], path[450], want[32];
  snprintf(out, sizeof out, "%s/camj", dir);
  mkdir(out, 0755);
  cr_assert(row_becomes("wrist", "kind", "camera"),
            "lark-devices never heard of the node's camera");
  apply_job(out);
  cr_expect(row_becomes("wrist", "holder", "camj-a-0"));
  snprintf(path, sizeof path, "%s/result.json", out);
  json_t *r = lt_pod_result(path, 90);
  char sock[300];
  snprintf(sock, sizeof sock, "%s/%s/run/camera-ctrl.sock", dir, NODE);
  cr_expect_str_eq(json_string_value(json_object_get(r, "env")), sock);
  json_int_t frames = json_integer_value(
      json_object_get(json_object_get(r, "close_wrist"), "frames"));
  cr_expect_geq(frames, 9);
  json_decref(r);
  snprintf(want, sizeof want, "%lld", (long long)frames);
  cr_expect(row_becomes("wrist", "frames", want));
  cr_expect(row_becomes("wrist", "state", "Closed"));
  cr_expect(row_becomes("shelf", "frames", "3"));
  cr_expect(row_becomes("wrist", "holder", ""), "the pod's end frees it");
  /* an operator's frame counts too */
  char bin[400], cr[400], o[512], err[512], jpg[450];
  lt_bin("larkctl", bin, sizeof bin);
  lark_creds_path(dir, "admin", cr, sizeof cr);
  snprintf(jpg, sizeof jpg, "%s/op.jpg", dir);
  int rc =
      lt_runl(o, sizeof o, err, sizeof err, bin, "--url", srv.url, "--creds",
              cr, "camera", "capture", NODE "/wrist", "-o", jpg, NULL);
  cr_assert_eq(rc, 0, "larkctl camera capture: %s", err);
  snprintf(want, sizeof want, "%lld", (long long)frames + 1);
  cr_expect(row_becomes("wrist", "frames", want));
  lt_expect_replay(conn, "devices", 25, 0);
}

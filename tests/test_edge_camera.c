/*
 * test_edge_camera.c - the cameras of lark-edge, a real agent beside a
 * real broker with the platform's accounts: a node declares a `pattern`
 * and a `files:` camera, the test writes pods' desired states (with their
 * boundDevices) to the node's stream as the scheduler would, and a pod
 * takes frames through the camera socket with larkbus.CameraClient.
 * Frames decode (libjpeg, here) to the camera's size; a file already at
 * that size comes out byte for byte; capture N, watch and close count
 * what was delivered; a pod without the camera and a process that is no
 * pod are refused; bad lines get an answer. An operator's `larkctl camera
 * capture` writes a JPEG that decodes; a user may not ask. What happened
 * reaches the node's ingress as camera.report. v4l2 sources are tested
 * only where /dev/video0 exists (the test says it skipped otherwise).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <jpeglib.h>

#include "bed.h"
#include "camera_jpeg.h"
#include "deploy.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "secure.h"
#include "wait.h"

#define NODE "cam-1"
enum { W = 320, H = 240 };

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *ingress;
static char dir[256], sock[108], imgs[300];
static pid_t edge_pid;
static int has_v4l2;

/* ------------------------------------------------------------ libjpeg */

typedef struct dec_err {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
} dec_err;

static void
dec_fail(j_common_ptr c) {
  longjmp(((dec_err *)c->err)->jb, 1);
}

/* Decode data whole; its size into w, h. 0, or -1 when it is no JPEG. */
static int
decode(const unsigned char *data, size_t len, unsigned *w, unsigned *h) {
  struct jpeg_decompress_struct d;
  dec_err e;
  d.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = dec_fail;
  jpeg_create_decompress(&d);
  static unsigned char row[8192 * 3];
  if (setjmp(e.jb)) {
    jpeg_destroy_decompress(&d);
    return -1;
  }
  jpeg_mem_src(&d, data, (unsigned long)len);
  jpeg_read_header(&d, TRUE);
  d.out_color_space = JCS_RGB;
  jpeg_start_decompress(&d);
  while (d.output_scanline < d.output_height) {
    JSAMPROW r = row;
    jpeg_read_scanlines(&d, &r, 1);
  }
  *w = d.output_width;
  *h = d.output_height;
  jpeg_finish_decompress(&d);
  jpeg_destroy_decompress(&d);
  return 0;
}

static unsigned char *
slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  static unsigned char buf[4 << 20];
  *len = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

/* path decodes to w x h. */
static void
expect_jpeg(const char *path, unsigned w, unsigned h) {
  size_t len;
  unsigned char *b = slurp(path, &len);
  unsigned gw = 0, gh = 0;
  cr_assert_eq(decode(b, len, &gw, &gh), 0, "%s: not a JPEG", path);
  cr_expect(gw == w && gh == h, "%s: %ux%u, not %ux%u", path, gw, gh, w, h);
}

/* A w x h gradient as a JPEG file (the files: camera's images). */
static void
write_image(const char *name, unsigned w, unsigned h) {
  uint8_t *px = malloc((size_t)w * h * 3);
  for (unsigned i = 0; i < w * h * 3; i++)
    px[i] = (uint8_t)(i * 7 / 3);
  edge_jpeg *j = edge_jpeg_new(90);
  edge_buf out = {0};
  char err[256], path[400];
  cr_assert_eq(
      edge_jpeg_encode(j, px, EDGE_PIX_RGB, w, h, &out, err, sizeof err), 0,
      "%s", err);
  snprintf(path, sizeof path, "%s/%s", imgs, name);
  FILE *f = fopen(path, "wb");
  cr_assert_eq(fwrite(out.data, 1, out.len, f), out.len);
  fclose(f);
  edge_buf_free(&out);
  edge_jpeg_free(j);
  free(px);
}

/* ------------------------------------------------------------ the bed */

static void
write_devices(void) {
  char path[400];
  snprintf(path, sizeof path, "%s/devices.yaml", dir);
  cr_assert_eq(lt_write_file(path,
                             "cameras:\n"
                             "  - name: wrist\n"
                             "    source: pattern\n"
                             "    width: %d\n"
                             "    height: %d\n"
                             "    fps: 0\n"
                             "  - name: shelf\n"
                             "    source: files:%s\n"
                             "    width: %d\n"
                             "    height: %d\n"
                             "  - name: slow\n"
                             "    source: pattern\n"
                             "    width: 64\n"
                             "    height: 48\n"
                             "    fps: 20\n"
                             "%s",
                             W, H, imgs, W, H,
                             has_v4l2 ? "  - name: video\n"
                                        "    source: v4l2:/dev/video0\n"
                                        "    width: 640\n"
                                        "    height: 480\n"
                                      : ""),
               0);
}

static void
setup(void) {
  char path[400];
  lt_tmpdir(dir, sizeof dir, "camera");
  const char *const who[] = {"admin", NODE, "alice", NULL};
  const lark_role roles[] = {LARK_ROLE_ADMIN, LARK_ROLE_NODE, LARK_ROLE_USER};
  lt_secure_bed_up(&srv, &conn, dir, who, roles);
  cr_assert_eq(bus_node_stream_ensure(conn, NODE, NULL), 0, "%s",
               bus_last_error());
  bus_consumer_opts o;
  bus_consumer_opts_init(&o);
  o.stream = "LARK_INGRESS";
  o.durable = "test";
  o.filter = "lark.in." NODE ".dev.>";
  cr_assert_eq(bus_consumer_open(conn, &o, &ingress), 0, "%s",
               bus_last_error());
  snprintf(imgs, sizeof imgs, "%s/images", dir);
  mkdir(imgs, 0755);
  write_image("a.jpg", W, H);   /* goes out as it is */
  write_image("b.jpg", 64, 48); /* decoded, resized, encoded */
  has_v4l2 = access("/dev/video0", R_OK) == 0;
  write_devices();
  snprintf(path, sizeof path, "%s/devices.yaml", dir);
  const char *extra[] = {"--device-file", path, NULL};
  edge_pid = lt_must_start_edge(srv.url, dir, NODE, 1, extra);
  cr_assert_lt(
      snprintf(sock, sizeof sock, "%s/%s/run/camera-ctrl.sock", dir, NODE),
      (int)sizeof sock);
  for (int i = 0; i < 100 && access(sock, F_OK); i++)
    lt_sleep_ms(100);
  cr_assert_eq(access(sock, F_OK), 0, "no camera socket %s", sock);
}

static void
teardown(void) {
  lt_node_bed_down(&srv, conn, ingress, dir, &edge_pid, 1);
}

TestSuite(edge_camera, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ helpers */

/* Pod pod's desired state as the scheduler writes it: it holds the bound
 * devices and runs tests/data/camera_pod.py in mode, its files into
 * dir/<pod>. */
static void
desire(const char *pod, const char *const bound[], const char *mode) {
  char out[400], script[400], src[400];
  snprintf(out, sizeof out, "%s/%s", dir, pod);
  mkdir(out, 0755);
  snprintf(script, sizeof script, "%s/tests/data/camera_pod.py",
           getenv("LARK_SOURCE_DIR"));
  snprintf(src, sizeof src, "%s", getenv("LARK_SOURCE_DIR"));
  const char *const argv[] = {"python3", script, mode, out, src, NULL};
  lt_pod_desire(conn, NODE, pod, 0, "Running", "raw", argv, bound);
}

/* What camera_pod.py wrote, waiting up to 60 s for it. */
static json_t *
result(const char *pod) {
  char path[400];
  snprintf(path, sizeof path, "%s/%s/result.json", dir, pod);
  return lt_pod_result(path, 60);
}

typedef struct cam_ev {
  char event[16], camera[64], pod[128], reason[256];
  long long frames, bytes, width;
} cam_ev;

static cam_ev evs[64];
static int nevs;

/* An event the node sent: kept when it is one the tests read. */
static void
take(const bus_event *ev, void *ud) {
  (void)ud;
  if (nevs == 64 || strcmp(ev->type, "camera.report"))
    return;
  cam_ev *c = &evs[nevs++];
  memset(c, 0, sizeof *c);
  bus_obj_str(&ev->data, "event", c->event, sizeof c->event);
  bus_obj_str(&ev->data, "camera", c->camera, sizeof c->camera);
  bus_obj_str(&ev->data, "pod", c->pod, sizeof c->pod);
  bus_obj_str(&ev->data, "reason", c->reason, sizeof c->reason);
  c->frames = bus_obj_int(&ev->data, "frames", -1);
  c->bytes = bus_obj_int(&ev->data, "bytes", -1);
  c->width = bus_obj_int(&ev->data, "width", -1);
}

static void
drain(int timeout_ms) {
  lt_drain(ingress, 64, timeout_ms, take, NULL);
}

/* The first camera.report event of camera, waiting up to 20 s. */
static const cam_ev *
wait_ev(const char *camera, const char *event) {
  for (int w = 0; w < 80; w++) {
    for (int i = 0; i < nevs; i++)
      if (!strcmp(evs[i].camera, camera) && !strcmp(evs[i].event, event))
        return &evs[i];
    drain(250);
  }
  cr_log_error("no camera.report %s for %s", event, camera);
  return NULL;
}

/* dir/<pod>/<name>-<i>.jpg */
static const char *
frame_path(const char *pod, const char *name, int i) {
  static char p[400];
  snprintf(p, sizeof p, "%s/%s/%s-%d.jpg", dir, pod, name, i);
  return p;
}

static long long
num(json_t *o, const char *k) {
  return (long long)json_integer_value(json_object_get(o, k));
}

/* A line to the socket from this process (no pod) and its answer. */
static void
ask_raw(const char *line, size_t len, char *answer, size_t cap) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  memcpy(a.sun_path, sock, sizeof sock);
  cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  cr_assert_eq(write(fd, line, len), (ssize_t)len);
  struct timeval tv = {5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ssize_t n = read(fd, answer, cap - 1);
  answer[n > 0 ? n : 0] = 0;
  close(fd);
}

/* ------------------------------------------------------------ tests */

Test(edge_camera, frames_decode_and_sessions_count) {
  const char *bound[] = {"camera/wrist", "camera/shelf", "camera/slow", NULL};
  desire("p1", bound, "frames");
  json_t *r = result("p1");
  cr_expect_str_eq(json_string_value(json_object_get(r, "env")), sock,
                   "RLINF_EMBODIED_CAMERA_SOCKET_PATH names the socket");
  /* list: both cameras, p1 holds them */
  json_t *list = json_object_get(r, "list"), *c;
  size_t i;
  cr_assert_geq(json_array_size(list), 2);
  json_array_foreach(list, i, c) {
    if (strcmp(json_string_value(json_object_get(c, "name")), "video"))
      cr_expect_str_eq(json_string_value(json_object_get(c, "holder")), "p1");
  }
  cr_expect_eq(num(json_object_get(r, "open"), "width"), W);
  /* capture 3: the camera's size, seq rising */
  json_t *wrist = json_object_get(r, "wrist");
  cr_assert_eq(json_array_size(wrist), 3);
  for (int k = 0; k < 3; k++) {
    expect_jpeg(frame_path("p1", "wrist", k), W, H);
    json_t *h = json_array_get(wrist, (size_t)k);
    cr_expect_eq(num(h, "width"), W);
    cr_expect_str_eq(json_string_value(json_object_get(h, "format")), "jpeg");
    if (k)
      cr_expect_gt(num(h, "seq"), num(json_array_get(wrist, k - 1), "seq"));
  }
  /* files: a.jpg as it is, b.jpg resized, then a.jpg again */
  size_t la, lf;
  unsigned char *a = slurp(frame_path("p1", "shelf", 0), &lf);
  unsigned char *copy = malloc(lf);
  memcpy(copy, a, lf);
  char src[400];
  snprintf(src, sizeof src, "%s/a.jpg", imgs);
  a = slurp(src, &la);
  cr_expect(la == lf && !memcmp(a, copy, la), "a.jpg not passed through");
  free(copy);
  for (int k = 0; k < 3; k++)
    expect_jpeg(frame_path("p1", "shelf", k), W, H);
  /* watch: 5 frames, and the connection serves on after it */
  cr_expect_eq(json_array_size(json_object_get(r, "watch")), 5);
  for (int k = 0; k < 5; k++)
    expect_jpeg(frame_path("p1", "watch", k), W, H);
  expect_jpeg(frame_path("p1", "after", 0), W, H);
  /* close: what was delivered since open (3 + 5 + 1, and what the watch
   * had sent before it heard the client stop, which the client read and
   * dropped) */
  json_t *cw = json_object_get(r, "close_wrist");
  cr_expect_geq(num(cw, "frames"), 9);
  cr_expect_gt(num(cw, "bytes"), 0);
  cr_expect_eq(num(json_object_get(r, "close_shelf"), "frames"), 3);
  /* fps 20: a frame every 50 ms at most, whoever asks (4 frames span 150
   * ms; unpaced they would take a few; a late frame may shorten a gap) */
  json_t *slow = json_object_get(r, "slow");
  cr_assert_eq(json_array_size(slow), 4);
  long long span =
      num(json_array_get(slow, 3), "ts") - num(json_array_get(slow, 0), "ts");
  cr_expect_geq(span, 100000000LL, "4 frames at fps 20 in %lld ns", span);
  expect_jpeg(frame_path("p1", "slow", 3), 64, 48);
  /* the ingress heard it */
  const cam_ev *e = wait_ev("wrist", "opened");
  cr_assert_not_null(e);
  cr_expect_str_eq(e->pod, "p1");
  cr_expect_eq(e->width, W);
  e = wait_ev("wrist", "closed");
  cr_assert_not_null(e);
  cr_expect_eq(e->frames, num(cw, "frames"));
  cr_expect_eq(e->bytes, num(cw, "bytes"));
  e = wait_ev("shelf", "closed");
  cr_assert_not_null(e);
  cr_expect_eq(e->frames, 3);
  json_decref(r);
}

Test(edge_camera, a_pod_without_the_camera_and_strangers_are_refused) {
  const char *bound[] = {"camera/shelf", NULL};
  desire("p2", bound, "refused");
  json_t *r = result("p2");
  cr_expect_str_eq(json_string_value(json_object_get(r, "wrist")),
                   "pod p2 does not hold camera wrist");
  cr_expect_str_eq(json_string_value(json_object_get(r, "nope")),
                   "no camera nope on this node");
  cr_expect_eq(json_array_size(json_object_get(r, "shelf")), 1);
  cr_expect_str_eq(json_string_value(json_object_get(r, "noenv")),
                   "no camera socket: RLINF_EMBODIED_CAMERA_SOCKET_PATH is "
                   "not set");
  json_decref(r);
  char ans[512];
  ask_raw("{\"op\":\"list\"}\n", 14, ans, sizeof ans);
  cr_expect_str_eq(ans,
                   "{\"error\":\"the caller is not a pod on this node\"}\n");
  ask_raw("nonsense\n", 9, ans, sizeof ans);
  cr_expect_str_eq(ans,
                   "{\"error\":\"a request is one JSON object on a line\"}\n");
  ask_raw("{\"op\":\"capture\",\"camera\":\"wrist\",\"count\":0}\n", 44, ans,
          sizeof ans);
  cr_expect(strstr(ans, "count must be"), "%s", ans);
  static char big[70000];
  memset(big, 'x', sizeof big);
  ask_raw(big, sizeof big, ans, sizeof ans);
  cr_expect(strstr(ans, "longer than 64 KiB"), "%s", ans);
}

static int
larkctl(const char *who, const char *target, const char *out, char *err,
        size_t errcap) {
  char bin[400], cr[400], o[1024];
  lt_bin("larkctl", bin, sizeof bin);
  lark_creds_path(dir, who, cr, sizeof cr);
  return lt_runl(o, sizeof o, err, errcap, bin, "--url", srv.url, "--creds", cr,
                 "camera", "capture", target, "-o", out, "--timeout", "3s",
                 NULL);
}

Test(edge_camera, an_operator_captures_through_larkctl) {
  char out[400], err[1024];
  snprintf(out, sizeof out, "%s/op.jpg", dir);
  int rc = larkctl("admin", NODE "/wrist", out, err, sizeof err);
  cr_assert_eq(rc, 0, "larkctl camera capture: %s", err);
  expect_jpeg(out, W, H);
  const cam_ev *e = wait_ev("wrist", "captured");
  cr_assert_not_null(e);
  cr_expect_eq(e->frames, 1);
  cr_expect_str_eq(e->pod, "", "an operator's capture names no pod");
  rc = larkctl("admin", NODE "/nope", out, err, sizeof err);
  cr_expect_eq(rc, 1);
  cr_expect(strstr(err, "no camera nope on node " NODE), "%s", err);
  rc = larkctl("alice", NODE "/wrist", out, err, sizeof err);
  cr_expect_eq(rc, 1);
  cr_expect(strstr(err, "only admin may capture"), "%s", err);
}

Test(edge_camera, v4l2_source_where_there_is_one) {
  if (!has_v4l2) {
    fprintf(stderr, "test_edge_camera: v4l2 SKIPPED: no /dev/video0 here\n");
    cr_skip_test("no /dev/video0 here (no V4L2 in this kernel): the v4l2 "
                 "source is built but not tested");
  }
  char out[400], err[1024];
  snprintf(out, sizeof out, "%s/video.jpg", dir);
  int rc = larkctl("admin", NODE "/video", out, err, sizeof err);
  cr_assert_eq(rc, 0, "larkctl camera capture: %s", err);
  expect_jpeg(out, 640, 480);
}

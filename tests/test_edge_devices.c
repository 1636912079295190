/*
 * test_edge_devices.c - lark-edge's device file (edge/devices.h): a whole
 * good file read into its model, every kind of bad file refused with the
 * line it is on, a node's share of a file, the names and socket paths the
 * rest of the edge uses; and edge/peer.h, which tells the pod behind a
 * local socket from the run records (real processes, a real store).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "devices.h"
#include "files.h"
#include "peer.h"
#include "store.h"

/* edge/proc.h (tests/support has a proc.h of its own) */
uint64_t edge_proc_start_ticks(pid_t pid);

static const char good[] =
    "# a node with two robots and two cameras\n"
    "cameras:\n"
    "  - name: wrist\n"
    "    source: pattern\n"
    "    width: 640\n"
    "    height: 480\n"
    "    fps: 30\n"
    "robots:\n"
    "  - name: arm-1\n"
    "    kind: ros2\n"
    "    launch: [ros2, launch, arm_bringup, arm.launch.py]\n"
    "    modes:\n"
    "      impedance: [control_mode:=impedance]\n"
    "      joint:\n"
    "        - control_mode:=joint\n"
    "        - rate:=500\n"
    "      idle: []\n"
    "    rosDomainId: 7\n"
    "    user: robot\n"
    "    subnet:\n"
    "      parent: eth1\n"
    "      cidr: 192.168.50.0/24\n"
    "      range: 192.168.50.100-192.168.50.120\n"
    "      gateway: 192.168.50.1\n"
    "  - name: base\n"
    "    kind: ros\n"
    "    launch: [roslaunch, base, base.launch]\n"
    "    rosMasterUri: http://localhost:11311\n"
    "cameras2: never\n";

static void
parse_ok(const char *text, edge_devices *d) {
  char err[512] = "";
  int rc = edge_devices_parse(text, strlen(text), d, err, sizeof err);
  cr_assert_eq(rc, 0, "refused: %s", err);
}

Test(devices, good_file_read_whole) {
  edge_devices d;
  char err[512] = "";
  /* the same file without its last (bad) line */
  size_t len = strstr(good, "cameras2") - good;
  cr_assert_eq(edge_devices_parse(good, len, &d, err, sizeof err), 0, "%s",
               err);
  cr_assert_eq(d.n, 3);
  const edge_device *arm = &d.v[0], *base = &d.v[1], *cam = &d.v[2];
  cr_expect_str_eq(arm->name, "arm-1"); /* robots first, in file order */
  cr_expect_str_eq(base->name, "base");
  cr_expect_str_eq(cam->name, "wrist");
  cr_expect_eq(arm->kind, EDGE_DEV_ROS2);
  cr_expect_eq(arm->nlaunch, 4);
  cr_expect_str_eq(arm->launch[3], "arm.launch.py");
  cr_expect_null(arm->launch[4]);
  cr_assert_eq(arm->nmodes, 3);
  cr_expect_str_eq(arm->modes[0].name, "impedance");
  cr_expect_str_eq(arm->modes[1].name, "joint");
  cr_expect_eq(arm->modes[1].argc, 2);
  cr_expect_str_eq(arm->modes[1].argv[1], "rate:=500");
  cr_expect_eq(arm->modes[2].argc, 0);
  cr_expect_null(arm->modes[2].argv[0]);
  cr_expect_eq(arm->ros_domain_id, 7);
  cr_expect_str_eq(arm->user, "robot");
  cr_expect(arm->subnet.set);
  cr_expect_str_eq(arm->subnet.parent, "eth1");
  cr_expect_str_eq(arm->subnet.cidr, "192.168.50.0/24");
  cr_expect_str_eq(arm->subnet.first, "192.168.50.100");
  cr_expect_str_eq(arm->subnet.last, "192.168.50.120");
  cr_expect_str_eq(arm->subnet.gateway, "192.168.50.1");
  cr_expect_eq(base->kind, EDGE_DEV_ROS);
  cr_expect_str_eq(base->ros_master_uri, "http://localhost:11311");
  cr_expect_eq(base->ros_domain_id, -1);
  cr_expect_eq(base->nmodes, 1); /* "default", appending nothing */
  cr_expect_str_eq(base->modes[0].name, "default");
  cr_expect_null(base->modes[0].argv[0]);
  cr_expect_not(base->subnet.set);
  cr_expect_eq(cam->kind, EDGE_DEV_CAMERA);
  cr_expect_eq(cam->source, EDGE_CAM_PATTERN);
  cr_expect_eq(cam->width, 640);
  cr_expect_eq(cam->height, 480);
  cr_expect_eq(cam->fps, 30);
  /* lookups */
  cr_expect_eq(edge_devices_find(&d, "base"), base);
  cr_expect_null(edge_devices_find(&d, "nope"));
  cr_expect_eq(edge_devices_bound(&d, "robot/arm-1"), arm);
  cr_expect_eq(edge_devices_bound(&d, "camera/wrist"), cam);
  cr_expect_null(edge_devices_bound(&d, "camera/arm-1"));
  cr_expect_null(edge_devices_bound(&d, "robot/wrist"));
  cr_expect_null(edge_devices_bound(&d, "arm-1"));
  cr_expect_eq(edge_device_mode(arm, NULL), &arm->modes[0]);
  cr_expect_eq(edge_device_mode(arm, ""), &arm->modes[0]);
  cr_expect_eq(edge_device_mode(arm, "joint"), &arm->modes[1]);
  cr_expect_null(edge_device_mode(arm, "fast"));
  char name[80];
  cr_expect_eq(edge_dev_bound_name(arm, name, sizeof name), 0);
  cr_expect_str_eq(name, "robot/arm-1");
  cr_expect_eq(edge_dev_bound_name(cam, name, sizeof name), 0);
  cr_expect_str_eq(name, "camera/wrist");
  cr_expect_eq(edge_dev_bound_name(cam, name, 12), -1);
  edge_devices_free(&d);
  cr_expect_eq(d.n, 0);
  cr_expect_null(d.v);
}

Test(devices, empty_files_have_no_devices) {
  const char *empty[] = {"", "# nothing yet\n", "robots:\ncameras: []\n",
                         "---\n...\n"};
  for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++) {
    edge_devices d;
    parse_ok(empty[i], &d);
    cr_expect_eq(d.n, 0, "'%s'", empty[i]);
    edge_devices_free(&d);
  }
}

Test(devices, camera_sources) {
  edge_devices d;
  parse_ok("cameras:\n"
           "- {name: a, source: 'files:/srv/frames', width: 1, height: 1}\n"
           "- {name: b, source: 'v4l2:/dev/video0', width: 8192, height: 8192,"
           " fps: 1000}\n",
           &d);
  cr_assert_eq(d.n, 2);
  cr_expect_eq(d.v[0].source, EDGE_CAM_FILES);
  cr_expect_str_eq(d.v[0].path, "/srv/frames");
  cr_expect_eq(d.v[0].fps, 0); /* as fast as asked */
  cr_expect_eq(d.v[1].source, EDGE_CAM_V4L2);
  cr_expect_str_eq(d.v[1].path, "/dev/video0");
  edge_devices_free(&d);
}

/* A bad file and what its error must say (the line first). */
static const struct bad {
  const char *text, *want;
} bad[] = {
    {"robots:\n  - name: arm-1\n    kind: ros3\n    launch: [x]\n",
     "line 3: robot arm-1: kind must be ros or ros2"},
    {"robots:\n  - kind: ros3\n    name: arm-1\n    launch: [x]\n",
     "line 2: robot arm-1: kind must be ros or ros2"},
    {"robots:\n  - name: arm-1\n    kind: ros\n    launch: [x]\n    colour: "
     "red\n",
     "line 5: robot arm-1: unknown key colour"},
    {"robots:\n  - name: Arm_1\n    kind: ros\n    launch: [x]\n",
     "line 2: robot #1: name Arm_1 must be lowercase"},
    {"robots:\n  - kind: ros\n    launch: [x]\n",
     "line 2: robot #1: name is missing"},
    {"robots:\n  - name: a\n    launch: [x]\n",
     "line 2: robot a: kind (ros or ros2) is missing"},
    {"robots:\n  - name: a\n    kind: ros\n",
     "line 2: robot a: launch must give"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: []\n",
     "line 4: robot a: launch must give"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: roslaunch x\n",
     "line 4: robot a: launch must be a list of strings"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x, [y]]\n",
     "line 4: robot a: launch must be a list of strings"},
    {"robots:\n  - name: a\n    kind: ros2\n    launch: [x]\n    "
     "rosMasterUri: http://m:11311\n",
     "line 5: robot a: rosMasterUri is for ros robots"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    rosDomainId: "
     "3\n",
     "line 5: robot a: rosDomainId is for ros2 robots"},
    {"robots:\n  - name: a\n    kind: ros2\n    launch: [x]\n    rosDomainId: "
     "233\n",
     "line 5: robot a: rosDomainId must be a whole number from 0 to 232"},
    {"robots:\n  - name: a\n    kind: ros2\n    launch: [x]\n    rosDomainId: "
     "-1\n",
     "line 5: robot a: rosDomainId must be a whole number"},
    {"robots:\n  - name: a\n    kind: ros\n    kind: ros\n    launch: [x]\n",
     "line 4: robot a: kind given twice"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    modes:\n"
     "      fast: [a]\n      fast: [b]\n",
     "line 7: robot a: mode fast given twice"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    modes:\n"
     "      Fast: [a]\n",
     "line 6: robot a: mode Fast: a mode's name must be"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    modes: [a]\n",
     "line 5: robot a: modes must map each mode"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    user: 'r b'\n",
     "line 5: robot a: user r b is not a user name"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.1.5-10.0.1.9\n",
     "line 8: robot a: subnet range 10.0.1.5 is outside its cidr"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.0.9-10.0.0.5\n",
     "line 8: robot a: subnet range ends before it starts"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.0.5\n",
     "line 8: robot a: subnet range must be first-last"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.1/24\n"
     "      range: 10.0.0.5-10.0.0.9\n",
     "line 7: robot a: subnet cidr: "},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.0.5-10.0.0.9\n      gateway: 10.0.0.7\n",
     "line 9: robot a: subnet gateway is inside its range"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.0.5-10.0.0.9\n      gateway: 10.9.0.1\n",
     "line 9: robot a: subnet gateway 10.9.0.1 is outside its cidr"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: a-very-long-interface\n      cidr: 10.0.0.0/24\n"
     "      range: 10.0.0.5-10.0.0.9\n",
     "line 6: robot a: subnet parent is longer than 15 bytes"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      range: 10.0.0.5-10.0.0.9\n",
     "line 6: robot a: subnet needs parent, cidr and range"},
    {"robots:\n  - name: a\n    kind: ros\n    launch: [x]\n    subnet:\n"
     "      parent: eth1\n      mask: 24\n",
     "line 7: robot a: subnet: unknown key mask"},
    {"cameras:\n  - name: c\n    source: hdmi\n    width: 1\n    height: 1\n",
     "line 3: camera c: source must be pattern, files:DIR or v4l2"},
    {"cameras:\n  - name: c\n    width: 1\n    height: 1\n",
     "line 2: camera c: source"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 640\n",
     "line 2: camera c: width and height are required"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 8193\n    "
     "height: 1\n",
     "line 4: camera c: width must be a whole number from 0 to 8192"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 0\n    "
     "height: 1\n",
     "line 4: camera c: width and height must be 1 to 8192"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 1\n    "
     "height: 1\n    fps: 1001\n",
     "line 6: camera c: fps must be a whole number from 0 to 1000"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 1\n    "
     "height: 1\n    fps: 2.5\n",
     "line 6: camera c: fps must be a whole number"},
    {"cameras:\n  - name: c\n    source: pattern\n    width: 1\n    "
     "height: 1\n    kind: camera\n",
     "line 6: camera c: unknown key kind"},
    {"robots:\n  - {name: a, kind: ros, launch: [x]}\ncameras:\n"
     "  - {name: a, source: pattern, width: 1, height: 1}\n",
     "line 4: camera a: name a is taken by the robot on line 2"},
    {"robots:\n  - {name: a, kind: ros, launch: [x]}\n"
     "  - {name: a, kind: ros2, launch: [x]}\n",
     "line 3: robot a: name a is taken by the robot on line 2"},
    {"robots: []\nrobots: []\n", "line 2: robots given twice"},
    {"printers: []\n", "line 1: unknown key printers"},
    {"robots: arm-1\n", "line 1: robots must be a list"},
    {"robots:\n  - arm-1\n", "line 2: robots: each item must be a mapping"},
    {"- robots\n", "line 1: the file must be a mapping"},
    {"robots: []\n---\ncameras: []\n", "line 2: one document only"},
    {"robots:\n  - &x {name: a, kind: ros, launch: [x]}\n  - *x\n",
     "line 3: aliases (*x) are not supported"},
    {"robots:\n  - name: a\n    kind: [ros\n", "line 4: "},
    {"robots:\n  - name: a\n\tkind: ros\n", "line 3: "},
};

Test(devices, bad_files_name_their_line) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    edge_devices d = {(edge_device *)1, 99};
    char err[512] = "";
    int rc = edge_devices_parse(bad[i].text, strlen(bad[i].text), &d, err,
                                sizeof err);
    cr_expect_eq(rc, -1, "taken:\n%s", bad[i].text);
    cr_expect_eq(d.n, 0);
    cr_expect_null(d.v);
    cr_expect(!strncmp(err, bad[i].want, strlen(bad[i].want)),
              "\n%s\nsaid:  %s\nwant: %s", bad[i].text, err, bad[i].want);
  }
}

Test(devices, too_many_devices_or_modes) {
  char text[16384] = "cameras:\n";
  for (int i = 0; i <= EDGE_DEV_MAX; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text),
             "- {name: c%d, source: pattern, width: 1, height: 1}\n", i);
  edge_devices d;
  char err[256];
  cr_expect_eq(edge_devices_parse(text, strlen(text), &d, err, sizeof err), -1);
  cr_expect(strstr(err, "line 66: more than 64 devices"), "%s", err);
  strcpy(text, "robots:\n- name: a\n  kind: ros\n  launch: [x]\n  modes:\n");
  for (int i = 0; i <= EDGE_DEV_MODES_MAX; i++)
    snprintf(text + strlen(text), sizeof text - strlen(text), "    m%d: []\n",
             i);
  cr_expect_eq(edge_devices_parse(text, strlen(text), &d, err, sizeof err), -1);
  cr_expect(strstr(err, "line 38: robot a: more than 32 modes"), "%s", err);
}

Test(devices, load_names_the_file_and_rebases_folders) {
  char dir[] = "/tmp/lark-devices-XXXXXX", path[256], err[512];
  cr_assert(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/devices.yaml", dir);
  lt_write_file(path, "cameras:\n- {name: c, source: 'files:frames', width: "
                      "2, height: 2}\n- {name: d, source: 'files:/abs', "
                      "width: 2, height: 2}\n");
  edge_devices d;
  cr_assert_eq(edge_devices_load(path, &d, err, sizeof err), 0, "%s", err);
  char want[300];
  snprintf(want, sizeof want, "%s/frames", dir);
  cr_expect_str_eq(d.v[0].path, want);
  cr_expect_str_eq(d.v[1].path, "/abs");
  edge_devices_free(&d);
  lt_write_file(path, "robots:\n- {name: a, kind: rosx, launch: [x]}\n");
  cr_expect_eq(edge_devices_load(path, &d, err, sizeof err), -1);
  char said[600];
  snprintf(said, sizeof said, "%s: line 2: robot a: kind must be", path);
  cr_expect(!strncmp(err, said, strlen(said)), "%s", err);
  unlink(path);
  cr_expect_eq(edge_devices_load(path, &d, err, sizeof err), -1);
  cr_expect(strstr(err, "No such file"), "%s", err);
  rmdir(dir);
}

Test(devices, share_of_a_file) {
  static const char text[] =
      "cameras: [{name: c1, source: pattern, width: 1, height: 1},"
      " {name: c2, source: pattern, width: 1, height: 1}]\n"
      "robots: [{name: r1, kind: ros, launch: [x]},"
      " {name: r2, kind: ros, launch: [x]}, {name: r3, kind: ros2, launch: "
      "[x]}]\n";
  /* in order r1 r2 r3 c1 c2: node 1 of 2 takes r1 r3 c2, node 2 r2 c1 */
  const char *want[3][4] = {{"r1", "r3", "c2", NULL}, {"r2", "c1", NULL}};
  for (int i = 1; i <= 2; i++) {
    edge_devices d;
    parse_ok(text, &d);
    edge_devices_share(&d, i, 2);
    int n = 0;
    while (want[i - 1][n])
      n++;
    cr_assert_eq(d.n, n, "node %d of 2 has %d", i, d.n);
    for (int j = 0; j < n; j++)
      cr_expect_str_eq(d.v[j].name, want[i - 1][j]);
    edge_devices_free(&d);
  }
  edge_devices d;
  parse_ok(text, &d);
  edge_devices_share(&d, 1, 1);
  cr_expect_eq(d.n, 5);
  edge_devices_share(&d, 4, 4); /* j mod 4 == 3 of r1 r2 r3 c1 c2 */
  cr_assert_eq(d.n, 1);
  cr_expect_str_eq(d.v[0].name, "c1");
  edge_devices_free(&d);
}

Test(devices, socket_paths) {
  char p[108];
  cr_expect_eq(edge_dev_socket_path("/var/lib/lark", EDGE_DEV_ROS, p, sizeof p),
               0);
  cr_expect_str_eq(p, "/var/lib/lark/run/ros-ctrl.sock");
  edge_dev_socket_path("/d", EDGE_DEV_ROS2, p, sizeof p);
  cr_expect_str_eq(p, "/d/run/ros2-ctrl.sock");
  edge_dev_socket_path("/d", EDGE_DEV_CAMERA, p, sizeof p);
  cr_expect_str_eq(p, "/d/run/camera-ctrl.sock");
  char longdir[200];
  memset(longdir, 'x', sizeof longdir - 1);
  longdir[sizeof longdir - 1] = 0;
  cr_expect_eq(edge_dev_socket_path(longdir, EDGE_DEV_ROS, p, sizeof p), -1);
}

/* ------------------------------------------------------------- peers */

/* A stand-in shim: forks a child that connects to path and waits. */
static pid_t
shim_with_caller(const char path[64]) {
  pid_t shim = fork();
  cr_assert_geq(shim, 0);
  if (shim > 0)
    return shim;
  setsid(); /* the caller may make its own session: still the pod's */
  if (fork() == 0) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
      pause();
    _exit(1);
  }
  pause();
  _exit(0);
}

static int
listener(const char path[64]) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  unlink(path);
  cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(fd, 4), 0);
  return fd;
}

static void
run_put(edge_store *s, const char *pod, pid_t pid, uint64_t ticks, int state) {
  edge_run r = {.attempt = 0, .state = state, .pid = pid, .start_ticks = ticks};
  cr_assert_eq(edge_store_run_put(s, pod, &r, NULL), 0);
}

Test(peer, the_pod_whose_shim_is_an_ancestor) {
  char dir[] = "/tmp/lark-peer-XXXXXX", sock[64];
  cr_assert(mkdtemp(dir));
  snprintf(sock, sizeof sock, "%s/ctl.sock", dir);
  edge_agent a = {0};
  cr_assert_eq(edge_store_open(&a.store, dir), 0, "%s", bus_last_error());
  int lfd = listener(sock);
  pid_t shim = shim_with_caller(sock), other = shim_with_caller(sock);
  int c1 = accept(lfd, NULL, NULL), c2 = accept(lfd, NULL, NULL);
  cr_assert(c1 >= 0 && c2 >= 0);
  char pod[EDGE_POD_SZ];
  /* no run records: nobody's */
  cr_expect_eq(edge_peer_pod(&a, c1, pod, sizeof pod), -1);
  /* a record whose start time is not the process's: an ended shim */
  run_put(a.store, "job-a-0", shim, edge_proc_start_ticks(shim) + 1,
          EDGE_RUN_RUNNING);
  cr_expect_eq(edge_peer_pod(&a, c1, pod, sizeof pod), -1);
  /* an ended run */
  run_put(a.store, "job-a-0", shim, edge_proc_start_ticks(shim),
          EDGE_RUN_ENDED);
  cr_expect_eq(edge_peer_pod(&a, c1, pod, sizeof pod), -1);
  run_put(a.store, "job-a-0", shim, edge_proc_start_ticks(shim),
          EDGE_RUN_RUNNING);
  run_put(a.store, "job-b-0", other, edge_proc_start_ticks(other),
          EDGE_RUN_RUNNING);
  /* which connection came first is the kernel's: ask by pid too */
  char p1[EDGE_POD_SZ] = "", p2[EDGE_POD_SZ] = "";
  cr_expect_eq(edge_peer_pod(&a, c1, p1, sizeof p1), 0);
  cr_expect_eq(edge_peer_pod(&a, c2, p2, sizeof p2), 0);
  cr_expect(strcmp(p1, p2), "both %s", p1);
  cr_expect(!strcmp(p1, "job-a-0") || !strcmp(p1, "job-b-0"), "%s", p1);
  cr_expect(!strcmp(p2, "job-a-0") || !strcmp(p2, "job-b-0"), "%s", p2);
  cr_expect_eq(edge_peer_pod_of_pid(&a, shim, pod, sizeof pod), 0);
  cr_expect_str_eq(pod, "job-a-0");
  cr_expect_eq(edge_peer_pod_of_pid(&a, getpid(), pod, sizeof pod), -1);
  cr_expect_eq(edge_peer_pod_of_pid(&a, shim, pod, 4), -1); /* too small */
  /* the shim gone: its pod no longer owns the caller */
  kill(-shim, SIGKILL); /* the shim's group: it and its caller */
  waitpid(shim, NULL, 0);
  cr_expect_eq(edge_peer_pod_of_pid(&a, shim, pod, sizeof pod), -1);
  kill(-other, SIGKILL);
  waitpid(other, NULL, 0);
  close(c1);
  close(c2);
  close(lfd);
  edge_store_close(a.store);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

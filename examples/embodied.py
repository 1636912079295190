#!/usr/bin/env python3
"""A rollout's view of its devices: drive the arm, read the camera.

Run in a pod of examples/embodied.yaml, it finds the controller sockets
its node gave it in the RLINF_EMBODIED_* variables.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "libbus", "python"))
import larkbus  # noqa: E402


def main():
    for k in sorted(os.environ):
        if k.startswith(("RLINF_EMBODIED_", "ROS_")) or k == "LARK_DEVICES":
            print("%s=%s" % (k, os.environ[k]), flush=True)
    robot = larkbus.RobotClient()
    print("modes of arm-1:", robot.modes("arm-1"), flush=True)
    print("started:", robot.start("arm-1", "impedance"), flush=True)
    cam = larkbus.CameraClient()
    cam.open("wrist")
    for header, jpeg in cam.capture("wrist", count=3):
        print("frame %d: %dx%d, %d bytes of JPEG" % (
            header["seq"], header["width"], header["height"], len(jpeg)),
            flush=True)
    print("closed:", cam.close("wrist"), flush=True)
    print("switched:", robot.switch("arm-1", "joint"), flush=True)
    print("stopped:", robot.stop("arm-1"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

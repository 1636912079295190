"""A pod's side of the camera tests (tests/test_edge_camera.c,
tests/test_camera_platform.c): larkbus.CameraClient against the node's
camera socket, found through RLINF_EMBODIED_CAMERA_SOCKET_PATH.

    python3 camera_pod.py frames|refused OUTDIR SOURCE_DIR

writes the frames it took into OUTDIR and what it saw into
OUTDIR/result.json ("fatal" when something went wrong). It decodes
nothing (the standard library has no JPEG): it checks each frame's SOI and
EOI markers and that its bytes are the header's size.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[3], "libbus", "python"))
import larkbus  # noqa: E402

MODE, OUT = sys.argv[1], sys.argv[2]


def save(name, frames):
    for i, (head, data) in enumerate(frames):
        assert data[:2] == b"\xff\xd8", "no SOI"
        assert data[-2:] == b"\xff\xd9", "no EOI"
        assert len(data) == head["size"], "not the header's size"
        with open(os.path.join(OUT, "%s-%d.jpg" % (name, i)), "wb") as f:
            f.write(data)
    return [head for head, _ in frames]


def frames(c, res):
    """Both cameras: list, open, capture 3 each, watch 5, close; 4 frames
    of the paced one where there is one."""
    res["list"] = c.list()
    res["open"] = c.open("wrist")
    res["wrist"] = save("wrist", c.capture("wrist", count=3))
    res["shelf"] = save("shelf", c.capture("shelf", count=3))
    watched = []
    for f in c.watch("wrist"):
        watched.append(f)
        if len(watched) == 5:
            break
    res["watch"] = save("watch", watched)
    res["after"] = save("after", c.capture("wrist"))
    res["close_wrist"] = c.close("wrist")
    res["close_shelf"] = c.close("shelf")
    if any(cam["name"] == "slow" for cam in res["list"]):
        res["slow"] = save("slow", c.capture("slow", count=4))


def refused(c, res):
    """A camera it does not hold, one the node lacks, one it holds, and no
    socket at all."""
    for cam in ("wrist", "nope"):
        try:
            c.capture(cam)
            res[cam] = "taken"
        except larkbus.LarkError as e:
            res[cam] = str(e)
    res["shelf"] = save("p2shelf", c.capture("shelf"))
    os.environ.pop("RLINF_EMBODIED_CAMERA_SOCKET_PATH", None)
    try:
        larkbus.CameraClient()
        res["noenv"] = "made"
    except larkbus.LarkError as e:
        res["noenv"] = str(e)


def main():
    res = {"env": os.environ.get("RLINF_EMBODIED_CAMERA_SOCKET_PATH")}
    try:
        with larkbus.CameraClient() as c:
            (frames if MODE == "frames" else refused)(c, res)
    except Exception as e:  # the test reads it from result.json
        res["fatal"] = "%s: %s" % (type(e).__name__, e)
    with open(os.path.join(OUT, "result.tmp"), "w") as f:
        json.dump(res, f)
    os.rename(os.path.join(OUT, "result.tmp"),
              os.path.join(OUT, "result.json"))


main()

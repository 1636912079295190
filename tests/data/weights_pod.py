#!/usr/bin/env python3
"""A pod of test_edge_weights: one weights request on its LARK_SOCKET.

  weights_pod.py publish VERSION SIZE SEED OUT
      writes SIZE bytes, byte i being (i * 31 + SEED) & 255, to w<VERSION>.bin
      in its working directory and publishes them as VERSION
  weights_pod.py wait MIN OUT
      waits for a version >= MIN and hashes the file it was handed
  weights_pod.py load MIN OUT
      the same without the hash (bench/weights_fetch.c: 1 GiB each)

OUT gets {"answer": <the socket's answer>, "file_sha256": ...}, or
{"fatal": why}.
"""
import hashlib
import json
import os
import socket
import sys


def request(obj):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.environ["LARK_SOCKET"])
    s.sendall((json.dumps(obj) + "\n").encode())
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf)


def main():
    op, out = sys.argv[1], sys.argv[-1]
    res = {}
    try:
        if op == "publish":
            version, size, seed = (int(x) for x in sys.argv[2:5])
            block = bytes((i * 31 + seed) & 255 for i in range(256)) * 4096
            name = "w%d.bin" % version
            with open(name, "wb") as f:
                for _ in range(size // len(block)):
                    f.write(block)
                f.write(block[:size % len(block)])
            res["answer"] = request({"op": "publish_weights",
                                     "version": version, "path": name})
        else:
            res["answer"] = request({"op": "wait_weights",
                                     "min_version": int(sys.argv[2]),
                                     "timeout": 600})
            path = res["answer"].get("path")
            if path and op == "wait":
                with open(path, "rb") as f:
                    res["file_sha256"] = hashlib.sha256(f.read()).hexdigest()
    except Exception as e:  # the test reads why
        res = {"fatal": "%s: %s" % (type(e).__name__, e)}
    with open(out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(out + ".tmp", out)


main()

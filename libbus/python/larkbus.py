"""larkbus - training-script reports to the larkbus control plane.

Standard library only; put this directory on sys.path (or PYTHONPATH)::

    import larkbus
    larkbus.emit("metric", step=100, reward=0.5)
    larkbus.emit("checkpoint", step=1000, path="/ckpt/1000")

A report becomes one ``run.reported {kind, values}`` event on
``lark.run.<job>`` (LARK_RUNS), which ``larkctl tail lark.run.<job>`` shows.

Inside a pod (``LARK_SOCKET`` is set by lark-edge)
    The pod has no broker credentials. ``emit`` connects to the Unix stream
    socket at ``$LARK_SOCKET`` and speaks this protocol:

    * the client writes one JSON object on one line, UTF-8, ended by
      ``"\\n"``: ``{"kind": "<kind>", "values": {...}}`` (no newline inside:
      the JSON is compact and strings escape their newlines);
    * the server answers one line: ``"ok\\n"`` when the report was accepted,
      or ``"error: <message>\\n"``;
    * a client may send several lines on one connection, each answered in
      order; ``emit`` sends one and closes.

    lark-edge stamps the pod's identity (job, pod, node) on what arrives on
    the socket; the script never names its job.

Outside a pod
    ``emit`` runs ``larkctl emit JOB KIND --data JSON`` with the user's own
    credentials (LARK_URL, LARK_CREDS, LARK_DATA as for larkctl). JOB is the
    ``job=`` argument, else ``$LARK_JOB``. larkctl is ``$LARKCTL``, else
    ``larkctl`` on PATH. larkctl publishes the report on
    ``lark.rep.<user>.<job>``, where the broker lets only that user publish,
    and waits for the broker's ack; lark-reports appends it to
    ``lark.run.<job>`` with the user as its actor.

Errors raise ``LarkError`` with the reason (the server's or larkctl's
message); nothing is retried silently.
"""

import json
import os
import re
import shutil
import socket
import subprocess

__all__ = ["emit", "LarkError"]

_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_TIMEOUT_S = 10.0


class LarkError(Exception):
    """A report was not accepted; str() says why."""


def _check(kind, values):
    if not isinstance(kind, str) or not kind or len(kind) > 32 \
            or not _NAME.match(kind):
        raise LarkError("kind %r must be a name: lowercase letters, digits "
                        "and '-', at most 32" % (kind,))
    try:
        return json.dumps({"kind": kind, "values": values},
                          separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise LarkError("values must be JSON numbers, strings, lists or "
                        "maps: %s" % e) from None


def _via_socket(path, line):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(_TIMEOUT_S)
            s.connect(path)
            s.sendall(line.encode("utf-8") + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError as e:
        raise LarkError("LARK_SOCKET %s: %s" % (path, e)) from None
    text = reply.decode("utf-8", "replace").rstrip("\n")
    if text == "ok":
        return
    if text.startswith("error:"):
        raise LarkError(text[6:].strip() or "refused")
    raise LarkError("LARK_SOCKET %s: unexpected reply %r" % (path, text))


def _via_larkctl(job, kind, values):
    job = job or os.environ.get("LARK_JOB")
    if not job:
        raise LarkError("outside a pod, give job= or set LARK_JOB")
    if not _NAME.match(job):
        raise LarkError("job %r is not a job name" % (job,))
    larkctl = os.environ.get("LARKCTL") or shutil.which("larkctl")
    if not larkctl:
        raise LarkError("larkctl not found: set LARKCTL or put it on PATH")
    data = json.dumps(values, separators=(",", ":"), allow_nan=False)
    try:
        p = subprocess.run([larkctl, "emit", job, kind, "--data", data],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LarkError("%s: %s" % (larkctl, e)) from None
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip()
        raise LarkError(msg or "larkctl emit exited %d" % p.returncode)


def emit(kind, job=None, **values):
    """Report ``values`` under ``kind`` ("metric", "progress", ...).

    Inside a pod through ``$LARK_SOCKET``; elsewhere through ``larkctl
    emit`` for ``job`` (default ``$LARK_JOB``). Raises LarkError when the
    report is refused or cannot be sent.
    """
    line = _check(kind, values)
    path = os.environ.get("LARK_SOCKET")
    if path:
        _via_socket(path, line)
    else:
        _via_larkctl(job, kind, values)

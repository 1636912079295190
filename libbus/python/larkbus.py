"""larkbus - training-script reports to the larkbus control plane.

Standard library only (plus libsodium through ctypes for the nkey
signature); put this directory on sys.path (or PYTHONPATH)::

    import larkbus
    larkbus.emit("metric", step=100, reward=0.5)
    larkbus.emit("checkpoint", step=1000, path="/ckpt/1000")
    larkbus.flush()          # every report so far is stored

A report becomes one ``run.reported {kind, values}`` event on
``lark.run.<job>`` (LARK_RUNS), which ``larkctl tail lark.run.<job>`` shows.
Importing the module prints nothing and connects to nothing. It is one
file over 600 lines on purpose: a training script's whole dependency is
this file on its path, copied where it runs, with nothing to install.

Inside a pod (``LARK_SOCKET`` is set by lark-edge)
    The pod has no broker credentials. ``emit`` connects to the Unix stream
    socket at ``$LARK_SOCKET`` and speaks this protocol:

    * the client writes one JSON object on one line, UTF-8, ended by
      ``"\\n"``: ``{"kind": "<kind>", "values": {...}}`` (no newline inside:
      the JSON is compact and strings escape their newlines);
    * the server answers one line: ``"ok\\n"`` when the report was accepted,
      or ``"error: <message>\\n"``;
    * a client may send several lines on one connection, each answered in
      order, and may send more before the answers come (pipelining); the
      node stores a line before it answers ``ok``, and answers all it has
      read at once after storing them together.

    ``emit`` keeps its connection open across calls (a new one after
    fork() or once the server has closed it), writes the line and returns
    without waiting for its answer, reading the answers that have come; at
    most 1024 lines wait for theirs (emit then waits). ``flush`` returns
    once every line written is answered ``ok``, and raises naming those
    answered ``error:`` and those left unanswered when a connection ended
    (a node's agent restarted: whether it stored them is not known, and
    they are not sent again, which could double them). What the node
    would refuse (more than 256 values, a value that is not a number,
    string of at most 1024 bytes, boolean or null) is refused at emit.
    At exit the module flushes as outside a pod.

    lark-edge stamps the pod's identity (job, pod, node) on what arrives on
    the socket; the script never names its job.

Outside a pod
    The module speaks the NATS client protocol to the broker itself, on one
    connection per process, with the user's own credentials as larkctl
    finds them: the URL is ``$LARK_URL``, else the first line of
    ``$LARK_DATA/url``, else ``nats://127.0.0.1:4222``; the nkey seed file
    is ``$LARK_CREDS``, else ``$LARK_DATA/creds/admin.nk`` when it exists
    (``$LARK_DATA`` defaults to ``./.lark``); the user is ``$LARK_USER``,
    else the seed file's name without its extension. The server's nonce is
    signed with Ed25519 through libsodium (``libsodium.so``, loaded with
    ctypes); replies come to the inbox ``_INBOX_<public key>``.

    Each report is published like ``larkctl emit JOB KIND`` publishes it:
    the event ``run.reported`` (msgpack envelope, actor = the user) on
    ``lark.rep.<user>.<job>``, where the broker lets only that user
    publish, with headers ``Nats-Msg-Id`` (the event's id) and
    ``Lark-Type``, as a JetStream publish whose ack comes to the inbox.
    JOB is the ``job=`` argument, else ``$LARK_JOB``. lark-reports appends
    it to ``lark.run.<job>`` with the user as its actor.

    ``emit`` returns once the report is handed to the connection; many are
    in flight at once (at most 8192: emit then waits for acks). ``flush``
    returns once the broker has acknowledged every report emitted so far.
    When the connection drops (a broker restart), the module connects again
    and sends every unacknowledged report again with the same
    ``Nats-Msg-Id``, which LARK_REPORTS' duplicate window drops if it had
    landed: nothing is lost or doubled. A report without an ack after 5 s,
    or refused as unavailable (no stream yet), is sent again the same way.
    At exit the module flushes for up to ``$LARK_FLUSH_TIMEOUT`` seconds
    (30 by default) and says on stderr what was not stored. A child made by
    fork() opens its own connection on its first report; the parent's
    reports stay the parent's.

Errors raise ``LarkError`` with the reason: a refused kind or value at
``emit``, no connection at the first ``emit``, a report the broker refused
for good (too big, not permitted) or reports not stored in time at
``flush``.

Robots (inside a pod that holds one)
    ``RobotClient()`` talks to the node's robot controller socket
    (``$RLINF_EMBODIED_ROS_SOCKET_PATH``, else
    ``$RLINF_EMBODIED_ROS2_SOCKET_PATH``)::

        robots = larkbus.RobotClient()
        robots.start("arm-1", mode="joint")   # once the node started it
        robots.switch("arm-1", "impedance")
        robots.status("arm-1")["state"]       # "Running"

    ``list``, ``status``, ``modes`` answer at once; ``start``, ``stop``,
    ``reset`` and ``switch`` go through the log (a robot.request the
    node stamps with the pod, decided by lark-devices) and return the
    robot once the node has applied the decision. Only the pod holding
    the robot may drive it; refusals raise ``LarkError`` with the node's
    message.

The RL loop (inside a pod of a Job lark-engine drives)
    ``Run()`` is the pod's handle on its Job's stages and weights, on a
    connection of its own to ``$LARK_SOCKET``::

        run = larkbus.Run()
        r = run.wait("rollout", step)          # {"step", "weights", ...}
        path = run.wait_weights(r["weights"])  # the node's local copy
        run.done("rollout", r["step"], reward=0.5)
        run.publish_weights(version, "weights.bin")   # the learner
        run.peers()                            # the Job's pods

    Requests are JSON objects with ``"op"``, one per line, each answered
    by one JSON line; see ``Run``.
"""

import atexit
import base64
import ctypes
import ctypes.util
import json
import math
import os
import re
import select
import socket
import struct
import sys
import threading
import time

__all__ = ["emit", "flush", "LarkError", "CameraClient", "RobotClient",
           "Run"]

_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_TIMEOUT_S = 10.0       # connecting, and a pod's answer
_ACK_WAIT_S = 5.0       # a report without an ack is sent again after this
_RETRY_S = 0.5          # after "unavailable" (503), send again after this
_MAX_INFLIGHT = 8192
_POD_WINDOW = 1024      # a pod's lines written and not yet answered


class LarkError(Exception):
    """A report was not accepted; str() says why."""


def _check_kind(kind):
    if not isinstance(kind, str) or not kind or len(kind) > 32 \
            or not _NAME.match(kind):
        raise LarkError("kind %r must be a name: lowercase letters, digits "
                        "and '-', at most 32" % (kind,))


# ------------------------------------------------------------------ msgpack

def _pack_len(n, fix, m16, m32, out):
    """The header of an array or map of n entries: fix, 16 or 32 bits."""
    if n < 16:
        out.append(fix | n)
    elif n < 1 << 16:
        out += m16 + struct.pack(">H", n)
    else:
        out += m32 + struct.pack(">I", n)


def _pack(o, out):
    """Append o's msgpack to the bytearray out (dict/list/str/int/float/
    bool/None; what JSON has)."""
    if o is None:
        out.append(0xc0)
    elif o is True:
        out.append(0xc3)
    elif o is False:
        out.append(0xc2)
    elif isinstance(o, int):
        if 0 <= o < 128:
            out.append(o)
        elif -32 <= o < 0:
            out.append(o & 0xff)
        elif 0 <= o < 1 << 8:
            out += b"\xcc" + struct.pack(">B", o)
        elif 0 <= o < 1 << 16:
            out += b"\xcd" + struct.pack(">H", o)
        elif 0 <= o < 1 << 32:
            out += b"\xce" + struct.pack(">I", o)
        elif 0 <= o < 1 << 64:
            out += b"\xcf" + struct.pack(">Q", o)
        elif -(1 << 7) <= o:
            out += b"\xd0" + struct.pack(">b", o)
        elif -(1 << 15) <= o:
            out += b"\xd1" + struct.pack(">h", o)
        elif -(1 << 31) <= o:
            out += b"\xd2" + struct.pack(">i", o)
        elif -(1 << 63) <= o:
            out += b"\xd3" + struct.pack(">q", o)
        else:
            raise ValueError("integer %d does not fit in 64 bits" % o)
    elif isinstance(o, float):
        if math.isnan(o) or math.isinf(o):
            raise ValueError("Out of range float values are not JSON "
                             "compliant: %r" % o)
        out += b"\xcb" + struct.pack(">d", o)
    elif isinstance(o, str):
        b = o.encode("utf-8")
        n = len(b)
        if n < 32:
            out.append(0xa0 | n)
        elif n < 1 << 8:
            out += b"\xd9" + struct.pack(">B", n)
        elif n < 1 << 16:
            out += b"\xda" + struct.pack(">H", n)
        else:
            out += b"\xdb" + struct.pack(">I", n)
        out += b
    elif isinstance(o, (list, tuple)):
        _pack_len(len(o), 0x90, b"\xdc", b"\xdd", out)
        for x in o:
            _pack(x, out)
    elif isinstance(o, dict):
        _pack_len(len(o), 0x80, b"\xde", b"\xdf", out)
        for k, v in o.items():
            if not isinstance(k, str):
                raise TypeError("keys must be str, not %s"
                                % type(k).__name__)
            _pack(k, out)
            _pack(v, out)
    else:
        raise TypeError("Object of type %s is not JSON serializable"
                        % type(o).__name__)


def _values_mp(values):
    out = bytearray()
    try:
        _pack(values, out)
    except (TypeError, ValueError, RecursionError) as e:
        raise LarkError("values must be JSON numbers, strings, lists or "
                        "maps: %s" % e) from None
    return bytes(out)


# -------------------------------------------------------------------- nkeys

_B32_PAD = "=" * 8


def _crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xffff
    return crc


_sodium = None


def _libsodium():
    global _sodium
    if _sodium is None:
        name = ctypes.util.find_library("sodium")
        lib = None
        for cand in ([name] if name else []) + ["libsodium.so.23",
                                                "libsodium.so"]:
            try:
                lib = ctypes.CDLL(cand)
                break
            except OSError:
                continue
        if lib is None:
            raise LarkError("libsodium not found: the nkey signature needs "
                            "it (apt-get install libsodium23)")
        if lib.sodium_init() < 0:
            raise LarkError("libsodium failed to initialise")
        _sodium = lib
    return _sodium


class _NKey:
    """A user nkey from its seed file: the public key and a signer."""

    def __init__(self, path):
        try:
            with open(path, "r", encoding="ascii", errors="replace") as f:
                text = f.read()
        except OSError as e:
            raise LarkError("credentials %s: %s" % (path, e.strerror)) \
                from None
        seed = None
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("SU"):
                seed = line
                break
        if seed is None:
            raise LarkError("credentials %s: no user nkey seed (SU...)"
                            % path)
        try:
            raw = base64.b32decode(seed + _B32_PAD[:(-len(seed)) % 8])
        except (ValueError, TypeError):
            raise LarkError("credentials %s: not an nkey seed" % path) \
                from None
        if len(raw) != 36 or _crc16(raw[:34]) != raw[34] | raw[35] << 8:
            raise LarkError("credentials %s: nkey seed checksum mismatch"
                            % path)
        if raw[0] & 0xf8 != 18 << 3 or \
                ((raw[0] & 7) << 5 | raw[1] >> 3) != 20 << 3:
            raise LarkError("credentials %s: not a user seed (SU...)" % path)
        lib = _libsodium()
        pk = ctypes.create_string_buffer(32)
        self._sk = ctypes.create_string_buffer(64)
        lib.crypto_sign_seed_keypair(pk, self._sk, raw[2:34])
        pub = bytes([20 << 3]) + pk.raw
        crc = _crc16(pub)
        pub += bytes([crc & 0xff, crc >> 8])
        self.public = base64.b32encode(pub).decode("ascii").rstrip("=")

    def sign(self, data):
        lib = _libsodium()
        sig = ctypes.create_string_buffer(64)
        n = ctypes.c_ulonglong(0)
        lib.crypto_sign_detached(sig, ctypes.byref(n), data,
                                 ctypes.c_ulonglong(len(data)), self._sk)
        return base64.urlsafe_b64encode(sig.raw[:n.value]) \
            .decode("ascii").rstrip("=")


# ------------------------------------------------------------- the settings

def _settings():
    data = os.environ.get("LARK_DATA") or "./.lark"
    url = os.environ.get("LARK_URL")
    if not url:
        try:
            with open(os.path.join(data, "url"), "r") as f:
                url = f.readline().strip() or None
        except OSError:
            url = None
    url = url or "nats://127.0.0.1:4222"
    creds = os.environ.get("LARK_CREDS")
    if not creds:
        cand = os.path.join(data, "creds", "admin.nk")
        if os.path.isfile(cand):
            creds = cand
    user = os.environ.get("LARK_USER")
    if not user:
        user = "admin"
        if creds:
            base = os.path.basename(creds)
            if "." in base:
                base = base[:base.rindex(".")]
            if len(base) <= 63 and _NAME.match(base):
                user = base
    return url, creds, user


def _addresses(url):
    out = []
    for u in url.split(","):
        u = u.strip()
        if "://" in u:
            u = u.split("://", 1)[1]
        u = u.rsplit("@", 1)[-1].rstrip("/")
        if not u:
            continue
        if u.startswith("["):
            host, _, port = u[1:].partition("]")
            port = port.lstrip(":")
        elif u.count(":") == 1:
            host, port = u.split(":")
        else:
            host, port = u, ""
        out.append((host, int(port) if port else 4222))
    return out


# ----------------------------------------------------- the broker connection

class _Broker:
    """One NATS connection, its reader thread and the reports in flight."""

    def __init__(self):
        self.url, self.creds, self.user = _settings()
        if len(self.user) > 63 or not _NAME.match(self.user):
            raise LarkError("'%s' is not a user name" % self.user)
        self.key = _NKey(self.creds) if self.creds else None
        token = os.urandom(8).hex()
        if self.key:
            self.inbox = "_INBOX_%s.%s" % (self.key.public, token)
        else:
            self.inbox = "_INBOX.%s" % token
        self.pid = os.getpid()
        self.mu = threading.Lock()          # pending, failed, state
        self.cond = threading.Condition(self.mu)
        self.wmu = threading.Lock()         # writes to the socket
        self.pending = {}                   # reply -> [subject, frame, sent]
        self.failed = []                    # reasons, for flush
        self.seq = 0
        self.sock = None
        self.gen = 0                        # connections made so far
        self.max_payload = 1 << 20
        self.last_error = ""
        self.closed = False
        self._connect()                     # the first one, or LarkError
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name="larkbus")
        self.thread.start()

    # -- connecting

    def _handshake(self, host, port):
        s = socket.create_connection((host, port), timeout=_TIMEOUT_S)
        try:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            f = s.makefile("rb")
            line = f.readline(1 << 16)
            if not line.startswith(b"INFO "):
                raise LarkError("%s:%d is not a NATS server" % (host, port))
            info = json.loads(line[5:])
            if info.get("tls_required"):
                raise LarkError("%s:%d requires TLS, which this module does "
                                "not speak" % (host, port))
            opts = {"verbose": False, "pedantic": False, "protocol": 1,
                    "headers": True, "no_responders": True,
                    "lang": "python-larkbus", "version": "1",
                    "name": "larkbus-py"}
            if self.key:
                nonce = info.get("nonce", "")
                opts["nkey"] = self.key.public
                opts["sig"] = self.key.sign(nonce.encode("ascii"))
            s.sendall(b"CONNECT " + json.dumps(opts).encode() + b"\r\n"
                      + b"PING\r\n")
            self._await_pong(f, host, port)
            s.sendall(b"SUB " + self.inbox.encode() + b".* 1\r\nPING\r\n")
            self._await_pong(f, host, port)
            f.close()
            s.settimeout(None)
            self.max_payload = int(info.get("max_payload", 1 << 20))
            return s
        except BaseException:
            s.close()
            raise

    @staticmethod
    def _await_pong(f, host, port):
        while True:
            line = f.readline(1 << 16)
            if not line:
                raise LarkError("%s:%d closed the connection" % (host, port))
            if line.startswith(b"PONG"):
                return
            if line.startswith(b"-ERR"):
                raise LarkError("%s:%d: %s" % (host, port, line[4:].strip()
                                .decode("utf-8", "replace").strip("'")))
            # +OK, PING before PONG, INFO updates: nothing to do here

    def _connect(self):
        errors = []
        for host, port in _addresses(self.url):
            try:
                s = self._handshake(host, port)
            except (OSError, ValueError, LarkError) as e:
                errors.append(str(e) if isinstance(e, LarkError)
                              else "%s:%d: %s" % (host, port, e))
                continue
            with self.mu:
                self.sock = s
                self.gen += 1
            return
        raise LarkError("cannot connect to %s%s: %s"
                        % (self.url, " with " + self.creds if self.creds
                           else " without credentials", "; ".join(errors)))

    # -- sending

    def send(self, job, kind, values_mp):
        subject = "lark.rep.%s.%s" % (self.user, job)
        eid = os.urandom(16).hex()
        body = bytearray(b"\x88\xa1v\x01\xa4type\xacrun.reported\xa2id\xd9\x20")
        body += eid.encode()
        body += b"\xa2ts"
        _pack(time.time_ns(), body)
        body += b"\xa5actor"
        _pack(self.user, body)
        body += b"\xa5cause\xa0\xa4prev\x00\xa4data\x82\xa4kind"
        _pack(kind, body)
        body += b"\xa6values"
        body += values_mp
        hdr = ("NATS/1.0\r\nNats-Msg-Id: %s\r\nLark-Type: run.reported"
               "\r\n\r\n" % eid).encode()
        if len(hdr) + len(body) > self.max_payload:
            raise LarkError("report of %d bytes: more than the broker takes "
                            "(%d)" % (len(body), self.max_payload))
        with self.cond:
            while len(self.pending) >= _MAX_INFLIGHT and not self.closed:
                self.cond.wait(1.0)
            self.seq += 1
            reply = "%s.%d" % (self.inbox, self.seq)
            frame = b"HPUB %s %s %d %d\r\n%s%s\r\n" % (
                subject.encode(), reply.encode(), len(hdr),
                len(hdr) + len(body), hdr, body)
            self.pending[reply] = [subject, frame, time.monotonic()]
            sock = self.sock
        if sock is not None:
            self._write(sock, frame)

    def _write(self, sock, data):
        with self.wmu:
            try:
                sock.sendall(data)
            except OSError:
                # the reader notices the broken connection, reconnects and
                # sends everything unacknowledged again
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def flush(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            while self.pending:
                left = None if deadline is None \
                    else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self.cond.wait(left if left is not None and left < 1 else 1)
            failed, self.failed = self.failed, []
            n = len(self.pending)
            why = self.last_error
        if failed:
            raise LarkError("%d report(s) refused: %s"
                            % (len(failed), failed[0]))
        if n:
            raise LarkError("%d report(s) not stored after %gs%s"
                            % (n, timeout, ": " + why if why else ""))

    # -- the reader thread: acks, PING, reconnecting

    def _run(self):
        while not self.closed:
            sock = self.sock
            try:
                self._read(sock)
                self.last_error = "the broker closed the connection"
            except OSError as e:
                self.last_error = "connection lost: %s" % e
            except Exception as e:  # a protocol surprise: start over
                self.last_error = "connection dropped: %r" % (e,)
            with self.mu:
                self.sock = None
            try:
                sock.close()
            except OSError:
                pass
            backoff = 0.05
            while not self.closed:
                try:
                    self._connect()
                    break
                except LarkError as e:
                    self.last_error = str(e)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 1.0)
            self._resend(all_of_them=True)

    def _resend(self, all_of_them):
        now = time.monotonic()
        with self.mu:
            sock = self.sock
            if sock is None:
                return
            todo = []
            for reply, p in list(self.pending.items()):
                if all_of_them or now - p[2] >= _ACK_WAIT_S:
                    p[2] = now
                    todo.append(p[1])
                    del self.pending[reply]
                    self.pending[reply] = p     # to the end: sent last
        if todo:
            self._write(sock, b"".join(todo))

    def _read(self, sock):
        sock.settimeout(0.25)
        buf = bytearray()
        last_scan = time.monotonic()
        while not self.closed:
            try:
                chunk = sock.recv(1 << 16)
            except socket.timeout:
                chunk = None
            if chunk == b"":
                return
            if chunk:
                buf += chunk
                self._parse(sock, buf)
            now = time.monotonic()
            if now - last_scan >= 0.25:
                last_scan = now
                self._resend(all_of_them=False)

    def _parse(self, sock, buf):
        acks = []
        pos = 0
        while True:
            end = buf.find(b"\r\n", pos)
            if end < 0:
                break
            line = bytes(buf[pos:end])
            if line.startswith(b"MSG ") or line.startswith(b"HMSG "):
                parts = line.split()
                size = int(parts[-1])
                hlen = int(parts[-2]) if parts[0] == b"HMSG" else 0
                if len(buf) < end + 2 + size + 2:
                    break
                data = bytes(buf[end + 2:end + 2 + size])
                pos = end + 2 + size + 2
                acks.append((parts[1].decode(), data[:hlen], data[hlen:]))
                continue
            pos = end + 2
            if line.startswith(b"PING"):
                self._write(sock, b"PONG\r\n")
            elif line.startswith(b"-ERR"):
                self._server_error(line[4:].strip().decode("utf-8",
                                                           "replace"))
        del buf[:pos]
        if acks:
            self._settle(acks)

    def _server_error(self, text):
        text = text.strip("'")
        self.last_error = text
        m = re.search(r'Permissions Violation for Publish to "([^"]+)"', text)
        if not m:
            return
        with self.cond:
            for reply, p in list(self.pending.items()):
                if p[0] == m.group(1):
                    del self.pending[reply]
                    self.failed.append("%s: permission denied" % p[0])
            self.cond.notify_all()

    def _settle(self, acks):
        now = time.monotonic()
        with self.cond:
            for reply, hdr, data in acks:
                p = self.pending.get(reply)
                if p is None:
                    continue                    # a second ack of a resend
                status = hdr.split(b"\r\n", 1)[0].split(None, 2)
                if len(status) > 1:             # 503: no responders
                    self.last_error = "no stream takes %s yet (%s)" % (
                        p[0], b" ".join(status[1:]).decode("ascii",
                                                           "replace"))
                    p[2] = now - _ACK_WAIT_S + _RETRY_S
                    continue
                if b'"error"' in data:
                    try:
                        err = json.loads(data).get("error", {})
                    except ValueError:
                        err = {}
                    desc = err.get("description", data.decode("utf-8",
                                                              "replace"))
                    if err.get("code") in (503, 408, 500):
                        self.last_error = "%s: %s" % (p[0], desc)
                        p[2] = now - _ACK_WAIT_S + _RETRY_S
                        continue
                    self.failed.append("%s: %s" % (p[0], desc))
                del self.pending[reply]
            self.cond.notify_all()

    def close(self):
        self.closed = True
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# ------------------------------------------------------------ a pod's socket

def _check_pod_values(values):
    """What the node refuses, refused here at emit: at most 256 values,
    names of 1 to 253 bytes, each a number, a string of at most 1024
    bytes, a boolean or null."""
    if len(values) > 256:
        raise LarkError("values must be at most 256 entries")
    for k, v in values.items():
        if not k:
            raise LarkError("a value's name is empty")
        if len(k.encode("utf-8")) > 253:
            raise LarkError("the name %r is longer than 253 bytes" % (k,))
        if v is None or isinstance(v, (bool, float)):
            continue
        if isinstance(v, int):
            if not -(1 << 63) <= v < 1 << 63:
                raise LarkError("%s=%d does not fit in 64 bits" % (k, v))
        elif isinstance(v, str):
            if len(v.encode("utf-8")) > 1024:
                raise LarkError("%s: a string value is longer than 1024 "
                                "bytes" % k)
        else:
            raise LarkError("%s: values must be numbers, strings, booleans "
                            "or null" % k)


class _Pod:
    """The connection to $LARK_SOCKET, kept open across reports. Lines are
    pipelined: each is written at once, at most _POD_WINDOW wait for their
    answers, which come in order; flush waits for every answer."""

    def __init__(self, path):
        self.path = path
        self.pid = os.getpid()
        self.sock = None
        self.rbuf = b""
        self.waiting = 0        # lines on this connection not yet answered
        self.refused = 0        # answered "error: ...", since the last flush
        self.unsure = 0         # unanswered when their connection ended
        self.why = ""           # the first reason of either

    def _open(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(_TIMEOUT_S)
            s.connect(self.path)
            s.settimeout(None)      # blocking; waits go through select
        except OSError:
            s.close()
            raise
        self.sock, self.rbuf, self.waiting = s, b"", 0

    def _lost(self, why):
        # the connection ended with lines unanswered: whether the node
        # stored them is not known, so they are neither sent again (that
        # could double them) nor taken as stored
        if self.waiting:
            self.unsure += self.waiting
            self.why = self.why or "LARK_SOCKET %s: %s" % (self.path, why)
        if self.sock is not None:
            self.sock.close()
        self.sock, self.rbuf, self.waiting = None, b"", 0

    def _answers(self, chunk):
        self.rbuf += chunk
        while self.sock is not None:
            reply, nl, rest = self.rbuf.partition(b"\n")
            if not nl:
                return
            self.rbuf = rest
            text = reply.decode("utf-8", "replace")
            if self.waiting and text == "ok":
                self.waiting -= 1
            elif self.waiting and text.startswith("error:"):
                self.waiting -= 1
                self.refused += 1
                self.why = self.why or (text[6:].strip() or "refused")
            else:
                self._lost("unexpected reply %r" % text)

    def _read(self, wait):
        """Take the answers there are, waiting up to wait seconds for some
        (0: not at all). False when none came."""
        try:
            if wait:
                r, _, _ = select.select([self.sock], [], [], wait)
                if not r:
                    return False
                chunk = self.sock.recv(65536)
            else:
                chunk = self.sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError as e:
            self._lost(str(e))
            return True
        if not chunk:
            self._lost("the node closed the connection")
        else:
            self._answers(chunk)
        return True

    def _write(self, data):
        if self.sock is not None:
            self._read(0)                   # answers, or the end of it
        if self.sock is None:
            self._open()
        while self.sock is not None and self.waiting >= _POD_WINDOW:
            if not self._read(_TIMEOUT_S):
                raise LarkError("LARK_SOCKET %s: no answer in %gs"
                                % (self.path, _TIMEOUT_S))
        if self.sock is None:
            self._open()
        self.sock.sendall(data)
        self.waiting += 1

    def send(self, line):
        data = line.encode("utf-8") + b"\n"
        try:
            self._write(data)
        except OSError as e:
            # a failed sendall never wrote the newline: the node has not
            # taken this line, so it goes once on a new connection
            self._lost(str(e))
            try:
                self._open()
                self.sock.sendall(data)
                self.waiting += 1
            except OSError as e2:
                self._lost(str(e2))
                raise LarkError("LARK_SOCKET %s: %s" % (self.path, e2)) \
                    from None

    def flush(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.sock is not None and self.waiting:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            self._read(min(left, _TIMEOUT_S) if left is not None
                       else _TIMEOUT_S)
        refused, unsure, why = self.refused, self.unsure, self.why
        self.refused, self.unsure, self.why = 0, 0, ""
        if refused:
            raise LarkError("%d report(s) refused: %s" % (refused, why))
        if unsure:
            raise LarkError("%d report(s) not confirmed: %s"
                            % (unsure, why))
        if self.waiting:
            raise LarkError("%d report(s) not answered after %gs"
                            % (self.waiting, timeout))


# --------------------------------------------------------------- the module

_lock = threading.Lock()
_broker = None
_pod = None


def _after_fork():
    global _lock, _broker, _pod
    _lock = threading.Lock()
    if _broker is not None and _broker.sock is not None:
        try:
            _broker.sock.close()    # this process's copy of the descriptor
        except OSError:
            pass
    _broker = None      # the parent's: its reports are the parent's to send
    if _pod is not None and _pod.pid != os.getpid():
        _pod = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _get_broker():
    global _broker
    b = _broker
    if b is not None and b.pid == os.getpid():
        return b
    with _lock:
        if _broker is None or _broker.pid != os.getpid():
            _broker = _Broker()
        return _broker


def _via_socket(path, kind, values):
    global _pod
    try:
        line = json.dumps({"kind": kind, "values": values},
                          separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise LarkError("values must be JSON numbers, strings, lists or "
                        "maps: %s" % e) from None
    _check_pod_values(values)
    with _lock:
        if _pod is None or _pod.path != path or _pod.pid != os.getpid():
            _pod = _Pod(path)
        _pod.send(line)


def _pod_flush(timeout):
    p = _pod
    if p is None or p.pid != os.getpid():
        return
    with _lock:
        p.flush(timeout)


def emit(kind, job=None, **values):
    """Report ``values`` under ``kind`` ("metric", "progress", ...).

    Inside a pod through ``$LARK_SOCKET``, elsewhere on the module's
    broker connection for ``job`` (default ``$LARK_JOB``); either way it
    returns once the report is sent, and ``flush`` waits until it is
    stored. Raises LarkError when the report is refused here or cannot be
    sent.
    """
    _check_kind(kind)
    path = os.environ.get("LARK_SOCKET")
    if path:
        _via_socket(path, kind, values)
        return
    job = job or os.environ.get("LARK_JOB")
    if not job:
        raise LarkError("outside a pod, give job= or set LARK_JOB")
    if not isinstance(job, str) or not _NAME.match(job):
        raise LarkError("job %r is not a job name" % (job,))
    mp = _values_mp(values)
    _get_broker().send(job, kind, mp)


def flush(timeout=None):
    """Return once every report emitted so far by this process is stored
    (its JetStream ack received; in a pod, the node's ``ok``); wait at
    most ``timeout`` seconds (None: as long as it takes). Raises LarkError
    naming reports refused, or how many are still unacknowledged when time
    ran out (in a pod also those whose connection ended unanswered)."""
    _pod_flush(timeout)
    b = _broker
    if b is None or b.pid != os.getpid():
        return
    b.flush(timeout)


class CameraClient:
    """The cameras a pod holds, through the node's camera socket
    (``$RLINF_EMBODIED_CAMERA_SOCKET_PATH``, set by lark-edge for a pod
    bound to a camera; lark-edge tells the pod by its process, so the
    socket needs no credentials). One JSON object per line each way; a
    frame is a header line ``{"ok": true, "frame": {"seq", "ts", "width",
    "height", "format": "jpeg", "size"}}`` followed by ``size`` bytes of
    JPEG. Errors raise ``LarkError`` with the node's message (``pod P does
    not hold camera C``, ...)::

        cams = larkbus.CameraClient()
        cams.open("wrist")
        for head, jpeg in cams.capture("wrist", count=4):
            ...
        for head, jpeg in cams.watch("wrist"):   # until the loop leaves
            break
        cams.close("wrist")      # {"frames": n, "bytes": b}
    """

    def __init__(self, socket_path=None, timeout=_TIMEOUT_S):
        path = socket_path or os.environ.get(
            "RLINF_EMBODIED_CAMERA_SOCKET_PATH")
        if not path:
            raise LarkError("no camera socket: "
                            "RLINF_EMBODIED_CAMERA_SOCKET_PATH is not set")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except OSError as e:
            self._sock.close()
            raise LarkError("cannot connect to %s: %s" % (path, e))
        self._buf = b""

    def _fill(self):
        try:
            chunk = self._sock.recv(1 << 20)
        except OSError as e:
            raise LarkError("camera socket: %s" % e)
        if not chunk:
            raise LarkError("camera socket: the node closed the connection")
        self._buf += chunk

    def _line(self):
        while b"\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            raise LarkError("camera socket: not JSON: %r" % line[:200])
        if isinstance(msg, dict) and "error" in msg:
            raise LarkError(str(msg["error"]))
        if not isinstance(msg, dict) or msg.get("ok") is not True:
            raise LarkError("camera socket: unexpected answer %r" % (msg,))
        return msg

    def _bytes(self, n):
        while len(self._buf) < n:
            self._fill()
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _send(self, req):
        line = json.dumps(req, separators=(",", ":")).encode() + b"\n"
        try:
            self._sock.sendall(line)
        except OSError as e:
            raise LarkError("camera socket: %s" % e)

    def _ask(self, req):
        self._send(req)
        return self._line()

    def _frame(self, msg):
        head = msg.get("frame")
        if not isinstance(head, dict) or not isinstance(head.get("size"), int):
            raise LarkError("camera socket: not a frame: %r" % (msg,))
        return head, self._bytes(head["size"])

    def list(self):
        """The node's cameras: dicts with name, width, height, fps, source
        and holder (the pod that holds it, or None)."""
        return self._ask({"op": "list"})["cameras"]

    def open(self, camera):
        """Open camera (the node reports camera.opened); its dict."""
        return self._ask({"op": "open", "camera": camera})["camera"]

    def capture(self, camera, count=1):
        """``count`` frames, as a list of (header dict, JPEG bytes)."""
        self._send({"op": "capture", "camera": camera, "count": int(count)})
        return [self._frame(self._line()) for _ in range(int(count))]

    def watch(self, camera):
        """Frames as they come, (header dict, JPEG bytes) each, until the
        iteration stops (the node is then told, and what it had sent
        already is read and dropped)."""
        self._send({"op": "watch", "camera": camera})
        try:
            while True:
                msg = self._line()
                if msg.get("stopped"):
                    return
                yield self._frame(msg)
        except GeneratorExit:
            self._send({"op": "stop"})
            while True:
                msg = self._line()
                if msg.get("stopped"):
                    return
                self._frame(msg)

    def close(self, camera):
        """Close camera (camera.closed); {"frames": n, "bytes": b} it
        delivered since opened."""
        r = self._ask({"op": "close", "camera": camera})
        return {"frames": r.get("frames", 0), "bytes": r.get("bytes", 0)}

    def disconnect(self):
        """Close the connection (an open camera closes with it)."""
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.disconnect()


# ------------------------------------------------------------------- robots

class RobotClient:
    """The robots a pod holds, through its node's robot controller socket.

    ``socket_path`` defaults to ``$RLINF_EMBODIED_ROS_SOCKET_PATH``, else
    ``$RLINF_EMBODIED_ROS2_SOCKET_PATH`` (set by lark-edge for a pod that
    holds a ros or ros2 robot). One JSON object per line each way; a robot
    is a dict ``{name, kind, state, mode, modes, holder, restarts, pid}``.
    ``start``, ``stop``, ``reset`` and ``switch`` return once the node has
    applied the decision (the request goes through the log first); only
    the pod holding the robot may call them. Every refusal or failure
    raises LarkError with the node's message.
    """

    def __init__(self, socket_path=None, timeout=30.0):
        path = socket_path or os.environ.get(
            "RLINF_EMBODIED_ROS_SOCKET_PATH") or os.environ.get(
            "RLINF_EMBODIED_ROS2_SOCKET_PATH")
        if not path:
            raise LarkError("no robot socket: give socket_path or set "
                            "RLINF_EMBODIED_ROS_SOCKET_PATH or "
                            "RLINF_EMBODIED_ROS2_SOCKET_PATH")
        self.path = path
        self._timeout = timeout
        self._sock = None
        self._buf = b""

    def _call(self, req):
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self._timeout)
            try:
                s.connect(self.path)
            except OSError as e:
                s.close()
                raise LarkError("robot socket %s: %s" % (self.path, e)) \
                    from None
            self._sock, self._buf = s, b""
        line = json.dumps(req, separators=(",", ":")) + "\n"
        try:
            self._sock.sendall(line.encode())
            while b"\n" not in self._buf:
                chunk = self._sock.recv(65536)
                if not chunk:
                    raise OSError("the node closed the connection")
                self._buf += chunk
        except OSError as e:
            self.close()
            raise LarkError("robot socket %s: %s" % (self.path, e)) from None
        out, self._buf = self._buf.split(b"\n", 1)
        ans = json.loads(out)
        if "error" in ans:
            raise LarkError(ans["error"])
        return ans

    def close(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def list(self):
        return self._call({"op": "list"})["robots"]

    def status(self, robot):
        return self._call({"op": "status", "robot": robot})["robot"]

    def modes(self, robot):
        return self._call({"op": "modes", "robot": robot})["modes"]

    def start(self, robot, mode=None):
        req = {"op": "start", "robot": robot}
        if mode is not None:
            req["mode"] = mode
        return self._call(req)["robot"]

    def stop(self, robot):
        return self._call({"op": "stop", "robot": robot})["robot"]

    def reset(self, robot):
        return self._call({"op": "reset", "robot": robot})["robot"]

    def switch(self, robot, mode):
        return self._call({"op": "switch", "robot": robot,
                           "mode": mode})["robot"]


class Run:
    """The pod's handle on its Job's RL loop, through ``$LARK_SOCKET``.

    lark-engine drives the loop's stages (rollout, update_dataset, train,
    sync_weights) step after step; a pod waits for a stage's step to
    start, does its part and says it is done::

        run = larkbus.Run()
        step = run.wait("rollout", 0)["step"]
        run.done("rollout", step, reward=0.5)

    Each call is one JSON line to the node on a connection of the Run's
    own, answered by one JSON line: ``{"ok": true, ...}``, or ``{"ok":
    false, "error": ...}``, which raises ``LarkError`` with the node's
    reason. The node knows the pod by its socket: the calls never name the
    pod or its Job.

    ``socket_path`` defaults to ``$LARK_SOCKET``; ``timeout`` (seconds) is
    the default of ``wait`` and ``wait_weights`` (None: as long as it
    takes). When the connection drops (the node's agent restarted), the
    Run connects again, for up to ``reconnect`` seconds, and sends the
    request it was waiting on again: each is safe to repeat (``done`` is
    queued once per step by the node, and lark-engine counts a pod once
    per step in any case; a version published again gets the same
    answer).
    """

    def __init__(self, socket_path=None, timeout=None, reconnect=60.0):
        path = socket_path or os.environ.get("LARK_SOCKET")
        if not path:
            raise LarkError("no pod socket: give socket_path or run in a "
                            "pod (LARK_SOCKET)")
        self.path = path
        self.timeout = timeout
        self.reconnect = reconnect
        self.last_weights = None
        self._sock = None
        self._buf = b""

    def _connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            raise
        self._sock, self._buf = s, b""

    def _exchange(self, line, wait_s):
        """One request and its answer line, or OSError."""
        if self._sock is None:
            self._connect()
        # the node answers a wait when it ends or times out; a dead node
        # is noticed by the connection, not by a clock
        self._sock.settimeout(None if wait_s is None else wait_s + 30.0)
        self._sock.sendall(line)
        while b"\n" not in self._buf:
            chunk = self._sock.recv(65536)
            if not chunk:
                raise OSError("the node closed the connection")
            self._buf += chunk
        out, self._buf = self._buf.split(b"\n", 1)
        return out

    def _call(self, req, wait_s=_TIMEOUT_S):
        line = (json.dumps(req, separators=(",", ":")) + "\n").encode()
        lost = None  # since when the node cannot be reached
        while True:
            try:
                out = self._exchange(line, wait_s)
                break
            except OSError as e:
                self.close()
                now = time.monotonic()
                lost = lost or now
                if now - lost >= self.reconnect:
                    raise LarkError("pod socket %s: %s" % (self.path, e)) \
                        from None
                time.sleep(0.2)
        try:
            ans = json.loads(out)
        except ValueError:
            raise LarkError("the node answered %r" % out[:200]) from None
        if not isinstance(ans, dict) or ans.get("ok") is not True:
            raise LarkError(ans.get("error", "refused")
                            if isinstance(ans, dict) else "refused")
        del ans["ok"]
        return ans

    def _timeout(self, timeout):
        return self.timeout if timeout is None else timeout

    def close(self):
        """Close the connection (the next call opens another)."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def done(self, stage, step, **metrics):
        """Report this pod's part of stage's step done, with metrics
        (numbers, strings, booleans; at most 64). The node stores the
        report before it answers; reporting the same step again is
        harmless. A pod that loads weights must have loaded the version
        sync_weights started with (wait_weights) before it reports
        sync_weights done, else LarkError."""
        self._call({"op": "done", "stage": stage, "step": step,
                    "metrics": metrics})

    def wait(self, stage, step, timeout=None):
        """Wait until stage has started at step or later; returns
        ``{"stage", "step", "weights", "mode"}``: the latest step started
        (a pod that joins late gets the current one) and the weights
        version it works with. LarkError when the run ended or after
        timeout seconds (0: just look)."""
        t = self._timeout(timeout)
        req = {"op": "wait", "stage": stage, "step": step}
        if t is not None:
            req["timeout"] = t
        return self._call(req, t)

    def publish_weights(self, version, path):
        """Publish the file at path (inside the pod's working directory)
        as this Job's weights version (versions grow). Returns ``{"version",
        "sha256", "size"}`` once the node holds it; only the reference
        goes on the bus."""
        return self._call({"op": "publish_weights", "version": version,
                           "path": os.path.abspath(path)}, None)

    def wait_weights(self, min_version, timeout=None):
        """The path of the node's copy of the newest weights version >=
        min_version (fetched from another node first when needed); the
        answer ``{"version", "path", "sha256", "size"}`` is kept in
        ``last_weights``. The file is read-only and shared: do not
        change it."""
        t = self._timeout(timeout)
        req = {"op": "wait_weights", "min_version": min_version}
        if t is not None:
            req["timeout"] = t
        self.last_weights = self._call(req, t)
        return self.last_weights["path"]

    def peers(self):
        """The Job's pods as the node knows them: a list of ``{"pod",
        "task", "role", "node", "cluster", "address", "attempt",
        "phase"}`` (empty before the engine has told the node)."""
        return self._call({"op": "peers"})["peers"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _at_exit():
    try:
        t = float(os.environ.get("LARK_FLUSH_TIMEOUT", "30"))
    except ValueError:
        t = 30.0
    try:
        _pod_flush(t)
    except LarkError as e:
        print("larkbus: %s" % e, file=sys.stderr)
    b = _broker
    if b is None or b.pid != os.getpid():
        return
    try:
        b.flush(t)
    except LarkError as e:
        print("larkbus: %s" % e, file=sys.stderr)
    b.close()


atexit.register(_at_exit)

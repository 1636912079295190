#!/usr/bin/env python3
"""test_dashboard.py - the dashboard in a real browser.

Starts `larkctl up --nodes 1` in a temporary directory, reads the address
it prints on its `dashboard:` line and opens it in headless Chromium,
driven through chromedriver's WebDriver HTTP API with python3's standard
library alone. It checks that:

  - every page (overview, a Job, a Workflow, audit) loads without a
    JavaScript error (window.onerror and unhandled rejections, caught from
    before the page's own scripts run, and the browser's console log);
  - a Job applied through the REST API goes Running -> Succeeded on its
    page without a reload, its run's values drawn as charts that grow and
    its logs shown;
  - moving the time slider back shows the Job Running again, as does the
    page opened at ?at=; Live returns to Succeeded;
  - a Workflow's DAG is drawn with its Jobs coloured by phase.

Screenshots are kept in <build>/artifacts/dashboard/. Chromium missing is a
failure, not a skip. Environment: LARK_BIN_DIR (larkctl and the services),
LARK_SOURCE_DIR (examples/train.py), LARK_BUILD_DIR (default: the parent of
LARK_BIN_DIR); LARK_KEEP=1 keeps the platform's directory on failure.
"""
import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = os.environ.get("LARK_BIN_DIR", "")
SRC = os.environ.get("LARK_SOURCE_DIR", "")
BUILD = os.environ.get("LARK_BUILD_DIR") or os.path.dirname(BIN.rstrip("/"))
ART = os.path.join(BUILD, "artifacts", "dashboard")
API = "/api/v1/rlinf.io/v1alpha1/"

# Installed before any of the page's scripts: what they throw is kept.
CATCH = """
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(
    String(e.message) + ' at ' + e.filename + ':' + e.lineno));
window.addEventListener('unhandledrejection', e => window.__errors.push(
    'unhandled rejection: ' + String(e.reason && (e.reason.stack || e.reason))));
"""


class Failed(Exception):
    pass


def wait_for(what, fn, timeout=30.0, every=0.2):
    """fn's first true value within timeout, else Failed naming what."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Failed:
            raise
        except Exception as e:  # a page still building: try again
            last = e
        time.sleep(every)
    raise Failed("timed out waiting for %s%s" % (what, " (%s)" % last if last else ""))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    """The few WebDriver commands the test needs, over HTTP."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port
        self.sid = None

    def call(self, method, path, body=None):
        data = json.dumps(body if body is not None else {}).encode() \
            if method == "POST" else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            raise Failed("webdriver %s %s: %s" % (method, path, e.read()[:500]))

    def start(self, chromium, profile):
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000",
                         "--user-data-dir=" + profile, "--no-first-run"]}}}}
        self.sid = self.call("POST", "/session", caps)["sessionId"]
        self.cmd("POST", "/goog/cdp/execute", {
            "cmd": "Page.addScriptToEvaluateOnNewDocument",
            "params": {"source": CATCH}})

    def cmd(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.sid, path), body)

    def open(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def console(self):
        try:
            return self.cmd("POST", "/se/log", {"type": "browser"}) or []
        except Failed:
            return self.cmd("POST", "/log", {"type": "browser"}) or []

    def screenshot(self, name):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        path = os.path.join(ART, name + ".png")
        with open(path, "wb") as f:
            f.write(png)
        print("  screenshot %s" % path)

    def quit(self):
        if self.sid:
            try:
                self.call("DELETE", "/session/" + self.sid)
            except Exception:
                pass


class Platform:
    """`larkctl up --nodes 1` in a directory of its own."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="lark-dashboard-")
        self.log = os.path.join(self.dir, "up.log")
        self.proc = None
        self.url = self.base = self.token = None

    def start(self):
        larkctl = os.path.join(BIN, "larkctl")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [larkctl, "--data", os.path.join(self.dir, "data"), "up",
                 "--port", "0", "--nodes", "1"],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for("`larkctl up` ready", lambda: self.says("larkbus ready"), 90)
        m = wait_for("a dashboard: line", lambda: re.search(
            r"dashboard:?\s+(http://\S+)", self.text()), 5)
        self.url = m.group(1)
        m = re.match(r"(http://[^/]+)/\?token=([^&#\s]+)", self.url)
        if not m:
            raise Failed("dashboard line without ?token=: " + self.url)
        self.base, self.token = m.group(1), m.group(2)

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def says(self, what):
        if self.proc.poll() is not None:
            raise Failed("larkctl up exited %s:\n%s" % (self.proc.returncode, self.text()))
        return what in self.text()

    def request(self, method, path, body=None):
        req = urllib.request.Request(
            self.base + path, method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": "Bearer " + self.token,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def stop(self, keep):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if keep:
            print("kept %s" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def check_clean(wd, page):
    """No JavaScript error on the page so far, none in the console."""
    errs = wd.js("return window.__errors || ['the error catcher is missing'];")
    severe = [e["message"] for e in wd.console() if e.get("level") == "SEVERE"]
    if errs or severe:
        raise Failed("%s: JavaScript errors %s, console %s" % (page, errs, severe))
    print("  %s: no JavaScript error" % page)


def text_of(wd, css):
    return wd.js("const e = document.querySelector(arguments[0]);"
                 "return e ? e.textContent : null;", css)


def phase_of(wd, css):
    return wd.js("const e = document.querySelector(arguments[0]);"
                 "return e ? e.dataset.phase : null;", css)


def train_job(name, steps, sleep):
    """A Job running examples/train.py: steps lines, values reported."""
    script = os.path.join(SRC, "examples", "train.py")
    return {"apiVersion": "rlinf.io/v1alpha1", "kind": "Job",
            "metadata": {"name": name},
            "spec": {"workingDir": "/tmp", "tasks": [{
                "name": "learner", "role": "Actor", "replicas": 1,
                "resources": {"cpu": 1, "memory": 128},
                "runtime": {"raw": {
                    "entrypoint": ["python3", script],
                    "environment": [{"name": "TRAIN_STEPS", "value": str(steps)},
                                    {"name": "TRAIN_SLEEP", "value": str(sleep)}]}}}]}}


def overview(wd, p):
    wd.open(p.url)
    wait_for("the token out of the address bar",
             lambda: "token=" not in wd.js("return location.href;"), 10)
    wait_for("node-1 Ready on the overview", lambda: wd.js(
        "return [...document.querySelectorAll('main td')]"
        ".some(td => td.textContent === 'node-1');"), 30)
    wait_for("services listed", lambda: wd.js(
        "return document.querySelectorAll('main section')[0]"
        ".querySelectorAll('tbody tr').length;"), 30)
    wd.screenshot("overview")
    check_clean(wd, "overview")


def job_live(wd, p, name):
    """Applies the Job, opens its page, watches it run; returns the times
    (browser clock, ms) it was first seen Running and Succeeded."""
    st, body = p.request("POST", API + "jobs", train_job(name, 24, 0.25))
    if st not in (200, 201):
        raise Failed("POST jobs: %s %s" % (st, body))
    print("  applied Job %s: %s %s" % (name, st, body))
    wd.js("location.hash = arguments[0]; window.__page = 'job';", "#/jobs/" + name)
    seen = {}
    def step():
        ph = phase_of(wd, "#job-phase")
        if wd.js("return window.__page;") != "job":
            raise Failed("the page reloaded while the Job ran")
        if ph and ph not in seen:
            seen[ph] = wd.js("return Date.now();")
            print("  job page shows %s" % ph)
            if ph == "Running":
                wait_for("a chart", lambda: wd.js(
                    "return document.querySelectorAll('svg.chart').length;"), 15)
                wd.screenshot("job-running")
        return ph in ("Succeeded", "Failed")
    wait_for("the Job to end on its page", step, 120, 0.1)
    if "Running" not in seen or "Succeeded" not in seen or \
            seen["Running"] > seen["Succeeded"]:
        raise Failed("job page phases %s: want Running then Succeeded" % seen)
    pts = wd.js("return [...document.querySelectorAll('svg.chart')]"
                ".map(c => c.dataset.series + '=' + c.dataset.points);")
    if not any(x.startswith("reward=") for x in pts):
        raise Failed("no reward chart: %s" % pts)
    wait_for("the logs", lambda: "done: 24 steps" in (text_of(wd, "#logs") or ""), 20)
    wd.screenshot("job-succeeded")
    print("  charts %s" % pts)
    check_clean(wd, "job")
    return seen["Running"], seen["Succeeded"], reward_points(wd)


def reward_points(wd):
    return wd.js("const c = document.querySelector('svg.chart[data-series=reward]');"
                 "return c ? Number(c.dataset.points) : 0;")


def job_past(wd, p, name, t_run, t_done, points):
    # A moment inside the run, on the slider's whole seconds.
    at = (t_run + 1500) // 1000 * 1000
    if at >= t_done - 500:
        raise Failed("the Job ran too briefly to go back into it")
    wd.js("const s = document.getElementById('at-slider');"
          "s.value = arguments[0];"
          "s.dispatchEvent(new Event('input', {bubbles: true}));"
          "s.dispatchEvent(new Event('change', {bubbles: true}));", at)
    wait_for("the Job Running again after the slider moved back",
             lambda: phase_of(wd, "#job-phase") == "Running", 20)
    if wd.js("return window.__page;") != "job":
        raise Failed("moving the slider reloaded the page")
    if "at=" not in wd.js("return location.hash;"):
        raise Failed("the slider did not set ?at=")
    wait_for("the pod Running then", lambda: wd.js(
        "return [...document.querySelectorAll('#pods td span.phase')]"
        ".some(s => s.dataset.phase === 'Running');"), 10)
    then = reward_points(wd)
    if then >= points:
        raise Failed("the past shows %d reward points of %d: want fewer" % (then, points))
    print("  at a past moment: Running, %d reward points of %d" % (then, points))
    wd.screenshot("job-past")
    check_clean(wd, "job at a past moment")
    # The same moment from the address: served at ?at=, no watch.
    iso = wd.js("return new Date(arguments[0]).toISOString();", at)
    wd.open("%s/?at=%s#/jobs/%s" % (p.base, iso, name))
    wait_for("the Job Running at ?at=",
             lambda: phase_of(wd, "#job-phase") == "Running", 20)
    check_clean(wd, "job opened at ?at=")
    wd.js("document.getElementById('live').click();")
    wait_for("Live: the Job Succeeded",
             lambda: phase_of(wd, "#job-phase") == "Succeeded", 20)
    if "at=" in wd.js("return location.href;"):
        raise Failed("Live left ?at= in the address")


def workflow(wd, p):
    tpl = train_job("x", 4, 0.05)["spec"]
    wf = {"apiVersion": "rlinf.io/v1alpha1", "kind": "Workflow",
          "metadata": {"name": "wfd"},
          "spec": {"jobTemplates": [
              {"name": "eval", "dependencies": ["train"], "spec": tpl},
              {"name": "train", "spec": tpl}]}}
    st, body = p.request("POST", API + "workflows", wf)
    if st not in (200, 201):
        raise Failed("POST workflows: %s %s" % (st, body))
    wd.js("location.hash = '#/workflows/wfd';")
    wait_for("the DAG's two nodes", lambda: wd.js(
        "return document.querySelectorAll('svg.dag .dagnode').length == 2 && "
        "document.querySelectorAll('svg.dag path.edge').length == 1;"), 20)
    wait_for("the Workflow Succeeded, its nodes coloured",
             lambda: phase_of(wd, "#wf-phase") == "Succeeded" and wd.js(
                 "return [...document.querySelectorAll('svg.dag .dagnode')]"
                 ".every(g => g.dataset.phase === 'Succeeded');"), 90)
    wd.screenshot("workflow")
    check_clean(wd, "workflow")


def audit(wd):
    wd.js("location.hash = '#/audit';")
    wait_for("audit rows", lambda: wd.js(
        "return document.querySelectorAll('#audit-rows tr').length;"), 20)
    wd.js("document.querySelector('input[name=type]').value = 'job.*';"
          "document.querySelector('form.filters button').click();")
    wait_for("only job.* rows", lambda: wd.js(
        "const r = [...document.querySelectorAll('#audit-rows tr')];"
        "return location.hash.includes('type=') && r.length > 0 &&"
        " r.every(tr => tr.children[3].textContent.startsWith('job.'));"), 20)
    wd.screenshot("audit")
    check_clean(wd, "audit")


def main():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        print("FAIL: needs chromium and chromedriver (ops/setup installs them)")
        return 1
    if not BIN or not os.path.exists(os.path.join(BIN, "larkctl")):
        print("FAIL: LARK_BIN_DIR does not hold larkctl")
        return 1
    os.makedirs(ART, exist_ok=True)
    for f in os.listdir(ART):  # the artifacts are this run's alone
        if f.endswith(".png"):
            os.remove(os.path.join(ART, f))
    p = Platform()
    port = free_port()
    drv = subprocess.Popen([driver, "--port=%d" % port], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    wd = WebDriver(port)
    ok = False
    try:
        p.start()
        print("dashboard %s/?token=..." % p.base)
        wait_for("chromedriver", lambda: wd.call("GET", "/status")["ready"], 20)
        wd.start(chromium, os.path.join(p.dir, "profile"))
        overview(wd, p)
        t_run, t_done, points = job_live(wd, p, "dash-train")
        job_past(wd, p, "dash-train", t_run, t_done, points)
        workflow(wd, p)
        audit(wd)
        ok = True
    except Failed as e:
        print("FAIL: %s" % e)
        try:
            wd.screenshot("failure")
        except Exception:
            pass
    finally:
        wd.quit()
        drv.terminate()
        drv.wait()
        p.stop(keep=not ok and os.environ.get("LARK_KEEP"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

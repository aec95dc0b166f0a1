#!/usr/bin/env python3
"""Collect the tool lists of the MCP servers in servers.json.

For every server in servers.json this script starts the server over stdio,
performs the MCP handshake (``initialize`` with protocolVersion 2025-06-18,
then ``notifications/initialized``), pages through ``tools/list`` following
``nextCursor``, writes the tool objects exactly as the server returned them
to ``tools/<name>.json`` and then kills the server's whole process group.

Python 3 standard library only.

Where the servers' executables come from:

  --install DIR   install every selected server into DIR first
                  (npm: ``npm install --prefix DIR/<name> PKG@VERSION``;
                  PyPI: a venv in ``DIR/<name>/venv`` and
                  ``pip install PKG==VERSION`` into it), then run from there.
  --prefix DIR    run from a DIR that an earlier ``--install DIR`` filled,
                  installing nothing.
  (neither)       run the executables found on PATH; installs nothing.

Other options:
  --only NAME     collect only these servers (repeatable)
  --timeout S     seconds allowed per server for start, handshake and listing
                  (default 90)
  --out DIR       where to write the tool files (default: tools/ beside this
                  script)

Each server entry's ``command`` is [executable, args...]. In args the
placeholder ``{scratch}`` stands for a fresh temporary directory made for
that server (the filesystem server's allowed root, the sqlite database's
folder...), in env values too. ``install_with`` lists further package specs
installed beside the server (a pin of a dependency that a newer release
broke). ``env`` lists variables needed only to start and list tools
(dummy values); they are added to a small clean environment (PATH, HOME,
LANG, TMPDIR, and PYTHONHASHSEED=0 so that a Python server's set-ordered
defaults come out the same each time), so stray variables of the caller do
not change what a server lists.

Exit status: 0 when every selected server was collected, 1 otherwise (the
servers that failed are listed with the reason and the tail of their
stderr).
"""

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOCOL_VERSION = "2025-06-18"


class ServerError(Exception):
    pass


def load_servers(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data["servers"]


def install(server, root):
    """Install one server into root/<name>. Returns nothing; raises on failure."""
    d = os.path.join(root, server["name"])
    os.makedirs(d, exist_ok=True)
    env = dict(os.environ)
    # Browser servers: the browser itself is not needed to list tools, and
    # only the package registries are reachable.
    env.setdefault("PUPPETEER_SKIP_DOWNLOAD", "1")
    env.setdefault("PUPPETEER_SKIP_CHROMIUM_DOWNLOAD", "1")
    env.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    if server["registry"] == "npm":
        cmd = ["npm", "install", "--prefix", d, "--no-audit", "--no-fund",
               "--loglevel=error", "%s@%s" % (server["package"], server["version"])]
        cmd += server.get("install_with", [])
        run_checked(cmd, env)
    elif server["registry"] == "pypi":
        venv = os.path.join(d, "venv")
        if not os.path.exists(os.path.join(venv, "bin", "python")):
            run_checked([sys.executable, "-m", "venv", venv], env)
        run_checked([os.path.join(venv, "bin", "python"), "-m", "pip", "install",
                     "--quiet", "--disable-pip-version-check",
                     "%s==%s" % (server["package"], server["version"])]
                    + server.get("install_with", []), env)
    else:
        raise ServerError("unknown registry %r" % server["registry"])


def run_checked(cmd, env):
    print("  $ " + " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, env=env)
    if r.returncode != 0:
        raise ServerError("install command failed (exit %d): %s" % (r.returncode, " ".join(cmd)))


def resolve_executable(server, prefix):
    exe = server["command"][0]
    if prefix is None:
        found = shutil.which(exe)
        if not found:
            raise ServerError("executable %r not on PATH (use --install DIR or --prefix DIR)" % exe)
        return found
    d = os.path.join(prefix, server["name"])
    if server["registry"] == "npm":
        cand = os.path.join(d, "node_modules", ".bin", exe)
    else:
        cand = os.path.join(d, "venv", "bin", exe)
    if not os.path.exists(cand):
        raise ServerError("executable %s not found (was %s installed there?)" % (cand, server["name"]))
    return cand


def clean_env(server, exe):
    env = {}
    for k in ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.setdefault("LANG", "C.UTF-8")
    # A Python server may build a default from a set (mcp-atlassian's
    # default Jira fields): a fixed hash seed keeps its order, and so the
    # file, the same from one collection to the next.
    env["PYTHONHASHSEED"] = "0"
    # The executable's own folder first, so a venv's python is the one found.
    env["PATH"] = os.path.dirname(exe) + os.pathsep + env.get("PATH", "")
    env.update(server.get("env", {}))
    return env


class Connection:
    """Newline-delimited JSON-RPC over a child's stdin/stdout."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = queue.Queue()
        self.next_id = 1
        t = threading.Thread(target=self._reader, daemon=True)
        t.start()

    def _reader(self):
        for raw in self.proc.stdout:
            self.lines.put(raw)
        self.lines.put(None)

    def send(self, msg):
        data = (json.dumps(msg) + "\n").encode("utf-8")
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise ServerError("could not write to the server: %s" % e)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def request(self, method, params, deadline):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerError("timed out waiting for the answer to %s" % method)
            try:
                raw = self.lines.get(timeout=left)
            except queue.Empty:
                raise ServerError("timed out waiting for the answer to %s" % method)
            if raw is None:
                raise ServerError("the server closed its stdout (exit status %s) before answering %s"
                                  % (self.proc.poll(), method))
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                # Some servers log to stdout; skip what is not JSON.
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg and "id" in msg and "result" not in msg and "error" not in msg:
                # A request from the server (roots/list, ping...): answer it.
                if msg["method"] == "roots/list":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}})
                elif msg["method"] == "ping":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                else:
                    self.send({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "method not found"}})
                continue
            if msg.get("id") != rid:
                continue  # a notification (logging, list_changed...)
            if "error" in msg:
                raise ServerError("%s answered an error: %s" % (method, json.dumps(msg["error"])))
            return msg.get("result", {})


def kill_group(proc):
    # SIGKILL after SIGTERM: the group may still hold children once the leader is gone.
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def collect_one(server, prefix, timeout):
    exe = resolve_executable(server, prefix)
    scratch = tempfile.mkdtemp(prefix="search-eval-%s-" % server["name"])
    args = [a.replace("{scratch}", scratch) for a in server["command"][1:]]
    server = dict(server, env={k: v.replace("{scratch}", scratch) for k, v in server.get("env", {}).items()})
    env = clean_env(server, exe)
    stderr_file = tempfile.TemporaryFile()
    proc = subprocess.Popen([exe] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=stderr_file, env=env, cwd=scratch,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        conn = Connection(proc)
        init = conn.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "switchboard-search-eval", "version": "0.1"},
        }, deadline)
        conn.notify("notifications/initialized")
        tools = []
        cursor = None
        pages = 0
        while True:
            params = {} if cursor is None else {"cursor": cursor}
            page = conn.request("tools/list", params, deadline)
            pages += 1
            tools.extend(page.get("tools", []))
            cursor = page.get("nextCursor")
            if not cursor:
                break
            if pages > 1000:
                raise ServerError("more than 1000 pages of tools/list")
        return init, tools, pages
    except ServerError as e:
        stderr_file.seek(0)
        tail = stderr_file.read()[-2000:].decode("utf-8", "replace")
        raise ServerError("%s\n    --- stderr tail ---\n    %s" % (e, tail.replace("\n", "\n    ")))
    finally:
        kill_group(proc)
        stderr_file.close()
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default=os.path.join(HERE, "servers.json"))
    ap.add_argument("--install", metavar="DIR")
    ap.add_argument("--prefix", metavar="DIR")
    ap.add_argument("--only", action="append", metavar="NAME")
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--out", default=os.path.join(HERE, "tools"))
    a = ap.parse_args()
    if a.install and a.prefix:
        ap.error("--install DIR already runs from DIR; give one of the two")
    prefix = a.install or a.prefix
    if prefix:
        prefix = os.path.abspath(prefix)

    servers = load_servers(a.servers)
    if a.only:
        names = {s["name"] for s in servers}
        for n in a.only:
            if n not in names:
                ap.error("no server named %r in %s" % (n, a.servers))
        servers = [s for s in servers if s["name"] in a.only]
    os.makedirs(a.out, exist_ok=True)

    failed = []
    total = 0
    for s in servers:
        print("%s (%s %s %s)" % (s["name"], s["registry"], s["package"], s["version"]), file=sys.stderr)
        try:
            if a.install:
                install(s, prefix)
            init, tools, pages = collect_one(s, prefix, a.timeout)
        except ServerError as e:
            print("  FAILED: %s" % e, file=sys.stderr)
            failed.append(s["name"])
            continue
        with open(os.path.join(a.out, s["name"] + ".json"), "w", encoding="utf-8") as f:
            json.dump(tools, f, indent=1, ensure_ascii=False)
            f.write("\n")
        info = init.get("serverInfo", {})
        total += len(tools)
        print("  ok: %d tools in %d page(s); serverInfo %s %s; protocol %s"
              % (len(tools), pages, info.get("name"), info.get("version"),
                 init.get("protocolVersion")), file=sys.stderr)
    print("collected %d tools from %d of %d servers" % (total, len(servers) - len(failed), len(servers)),
          file=sys.stderr)
    if failed:
        print("FAILED: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

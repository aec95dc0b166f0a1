#!/usr/bin/env python3
"""What a client's first call costs on a server isolated per client (issue 34).

Starts `switchboard serve --listen 0 --auth` over server-everything (from .ci/peers), once
with "isolation": "client" and once shared, and times, for each of eight clients, its first
`get-sum` call, its next five, and its 21st to 30th (2026-07-28 requests over HTTP). Beside them, the floor: the
server's own start (spawn, initialize, tools/list) without Switchboard.

    python3 benches/scripts/isolation_first_call.py [target/release/switchboard]
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EVERYTHING = os.path.join(ROOT, ".ci/peers/node_modules/.bin/mcp-server-everything")
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/switchboard")
KEYS = [{"name": f"user{i}", "key": f"isolation-bench-key-{i:02d}-0123456789abcdefgh"} for i in range(8)]


def spread(ms):
    ms = sorted(ms)
    return f"min {ms[0]:.1f} median {ms[len(ms) // 2]:.1f} max {ms[-1]:.1f} ms"


def floor():
    times = []
    for _ in range(6):
        start = time.perf_counter()
        child = subprocess.Popen([EVERYTHING, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "floor", "version": "1"}}}) + "\n")
        child.stdin.flush()
        child.stdout.readline()
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        child.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}) + "\n")
        child.stdin.flush()
        while '"id":2' not in child.stdout.readline():
            pass
        times.append((time.perf_counter() - start) * 1000)
        child.kill()
        child.wait()
    return times


def served(folder, settings):
    config = os.path.join(folder, "servers.json")
    server = {"command": EVERYTHING, "args": ["stdio"], **settings}
    with open(config, "w") as f:
        json.dump({"mcpServers": {"everything": server}}, f)
    auth = os.path.join(folder, "auth.json")
    with open(auth, "w") as f:
        json.dump({"resource": "http://mcp.test/mcp", "keys": KEYS}, f)
    child = subprocess.Popen([BIN, "serve", "-c", config, "--listen", "0", "--auth", auth],
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while True:
        found = re.search(r"(http://[0-9.:]+/mcp)", child.stderr.readline())
        if found:
            return child, found.group(1)


def call(url, key):
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}, "_meta": meta}})
    request = urllib.request.Request(url, data=body.encode(), headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream",
        "authorization": "Bearer " + key, "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call", "mcp-name": "get-sum"})
    start = time.perf_counter()
    answer = urllib.request.urlopen(request).read()
    elapsed = (time.perf_counter() - start) * 1000
    assert b"3" in answer, answer
    return elapsed


def run(settings):
    with tempfile.TemporaryDirectory() as folder:
        child, url = served(folder, settings)
        first, later, warm = [], [], []
        for key in KEYS:
            first.append(call(url, key["key"]))
            calls = [call(url, key["key"]) for _ in range(29)]
            later += calls[:5]
            warm += calls[19:]
        child.terminate()
        child.wait()
    return first, later, warm


for _ in range(2):
    print("floor, server-everything's own start:", spread(floor()))
    for name, settings in [("client", {"isolation": "client"}), ("shared", {})]:
        first, later, warm = run(settings)
        print(f"{name}: first call of a client {spread(first)}; its next five {spread(later)}; "
              f"its 21st to 30th {spread(warm)}")

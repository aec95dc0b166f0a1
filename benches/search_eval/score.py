#!/usr/bin/env python3
"""Score tool-search rankings against the search eval set (stdlib only).

The corpus is tools/<server>.json (the tool lists that collect.py gathered);
a tool's id is "<server>/<tool name>". The queries are queries.jsonl, one
{"id", "query", "relevant": [tool ids]} object a line.

Modes:

  score.py validate
      Checks the set: every relevant tool exists in the corpus, ids are
      unique, every query has at least one relevant tool, no tool name is
      listed twice by one server, at least 150 queries and 300 tools, and
      every server with 8 or more tools has at least 8 queries naming one of
      its tools. Prints the per-server counts. Exit 1 on any error.

  score.py bm25 [--verbose]
      A plain BM25 baseline: one document per tool, its text being the tool's
      name and description (nothing else: no server name, no title, no
      schema), tokenised naively (lowercase, split on every non-alphanumeric
      character, no stemming, no stop words). k1 = 1.2, b = 0.75,
      idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)) (the non-negative
      variant), each query token counted as often as it occurs in the query.
      Ties are broken by corpus order (servers by file name, tools in the
      order the server listed them).

  score.py rankings FILE [--verbose]
      Scores rankings made by someone else: FILE holds JSON lines
      {"id": "q001", "ranked": ["server/tool", ...]}, best first. A query
      missing from FILE counts as a miss (and is reported); an unknown query
      id or tool id in FILE is an error; a tool repeated in one ranking
      counts at its first place.

Metrics (bm25 and rankings):
  recall@1, recall@5  fraction of queries with at least one relevant tool
                      in the top 1 / top 5.
  MRR@10              mean over queries of 1/rank of the first relevant tool,
                      0 when none is in the top 10 (cut-off: 10).

--verbose lists the queries whose first relevant tool is not at rank 1
(with its rank, or "-" past 10, and the top 3 returned). --json prints one
JSON object instead of text, in every mode.
"""

import argparse
import collections
import glob
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_QUERIES = 150
MIN_TOOLS = 300
MIN_PER_SERVER = 8
MRR_CUTOFF = 10
K1 = 1.2
B = 0.75


def load_corpus(tools_dir):
    """Returns ([tool id...], {tool id: tool object}, errors)."""
    ids, tools, errors = [], {}, []
    for path in sorted(glob.glob(os.path.join(tools_dir, "*.json"))):
        server = os.path.basename(path)[:-len(".json")]
        with open(path, encoding="utf-8") as f:
            listed = json.load(f)
        if not isinstance(listed, list):
            errors.append("%s: not a JSON list of tools" % path)
            continue
        for t in listed:
            tid = "%s/%s" % (server, t.get("name"))
            if tid in tools:
                errors.append("%s: tool %r listed twice" % (path, t.get("name")))
                continue
            ids.append(tid)
            tools[tid] = t
    return ids, tools, errors


def json_lines(path, errors):
    """Yields (line number, value) for each non-empty line of `path`; a line that is not
    JSON goes to `errors` instead."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield n, json.loads(line)
            except ValueError as e:
                errors.append("%s:%d: not JSON: %s" % (path, n, e))


def load_queries(path):
    """Returns ([query dict...], errors)."""
    queries, errors = [], []
    for n, q in json_lines(path, errors):
        if not isinstance(q.get("id"), str) or not isinstance(q.get("query"), str) \
                or not isinstance(q.get("relevant"), list):
            errors.append("%s:%d: needs string id, string query and a relevant list" % (path, n))
            continue
        queries.append(q)
    return queries, errors


def validate(queries, tool_ids, tools):
    errors = []
    seen_ids, seen_text = set(), {}
    for q in queries:
        if q["id"] in seen_ids:
            errors.append("duplicate query id %s" % q["id"])
        seen_ids.add(q["id"])
        text = q["query"].strip().lower()
        if text in seen_text:
            errors.append("%s: same query text as %s" % (q["id"], seen_text[text]))
        seen_text.setdefault(text, q["id"])
        if not q["relevant"]:
            errors.append("%s: no relevant tool" % q["id"])
        if len(set(q["relevant"])) != len(q["relevant"]):
            errors.append("%s: a relevant tool is listed twice" % q["id"])
        for r in q["relevant"]:
            if r not in tools:
                errors.append("%s: unknown tool %s" % (q["id"], r))
    if len(queries) < MIN_QUERIES:
        errors.append("%d queries, fewer than %d" % (len(queries), MIN_QUERIES))
    if len(tool_ids) < MIN_TOOLS:
        errors.append("%d tools, fewer than %d" % (len(tool_ids), MIN_TOOLS))
    per_server_tools = collections.Counter(t.split("/", 1)[0] for t in tool_ids)
    per_server_queries = collections.Counter()
    per_server_used = collections.defaultdict(set)
    for q in queries:
        for s in {r.split("/", 1)[0] for r in q["relevant"]}:
            per_server_queries[s] += 1
        for r in q["relevant"]:
            per_server_used[r.split("/", 1)[0]].add(r)
    servers = []
    for s in sorted(per_server_tools):
        need = min(MIN_PER_SERVER, per_server_tools[s])
        if per_server_queries[s] < need:
            errors.append("server %s: %d queries, fewer than %d" % (s, per_server_queries[s], need))
        servers.append({"server": s, "tools": per_server_tools[s], "queries": per_server_queries[s],
                        "tools_used": len(per_server_used[s])})
    return errors, servers


TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text):
    return TOKEN.findall(text.lower())


class BM25:
    def __init__(self, docs, k1=K1, b=B):
        self.k1, self.b = k1, b
        self.tf = [collections.Counter(d) for d in docs]
        self.len = [len(d) for d in docs]
        self.avg = sum(self.len) / len(docs)
        df = collections.Counter()
        for c in self.tf:
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - m + 0.5) / (m + 0.5)) for t, m in df.items()}

    def scores(self, query_tokens):
        out = [0.0] * len(self.tf)
        for t in query_tokens:
            idf = self.idf.get(t)
            if idf is None:
                continue
            for i, c in enumerate(self.tf):
                f = c.get(t)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                    out[i] += idf * f * (self.k1 + 1) / (f + norm)
        return out


def bm25_rankings(queries, tool_ids, tools):
    docs = [tokens("%s %s" % (tools[t].get("name", ""), tools[t].get("description") or ""))
            for t in tool_ids]
    index = BM25(docs)
    ranked = {}
    for q in queries:
        s = index.scores(tokens(q["query"]))
        order = sorted(range(len(tool_ids)), key=lambda i: (-s[i], i))
        ranked[q["id"]] = [tool_ids[i] for i in order[:max(MRR_CUTOFF, 5)]]
    return ranked


def evaluate(queries, ranked):
    """Returns (metrics dict, per-query list)."""
    per = []
    r1 = r5 = rr = 0.0
    for q in queries:
        rel = set(q["relevant"])
        got = ranked.get(q["id"], [])
        seen, dedup = set(), []
        for t in got:
            if t not in seen:
                seen.add(t)
                dedup.append(t)
        rank = None
        for i, t in enumerate(dedup[:MRR_CUTOFF], 1):
            if t in rel:
                rank = i
                break
        if rank == 1:
            r1 += 1
        if rank is not None and rank <= 5:
            r5 += 1
        if rank is not None:
            rr += 1.0 / rank
        per.append({"id": q["id"], "query": q["query"], "relevant": q["relevant"],
                    "rank": rank, "top3": dedup[:3], "ranked": q["id"] in ranked})
    n = len(queries)
    metrics = {"queries": n, "recall@1": r1 / n, "recall@5": r5 / n, "mrr@10": rr / n}
    return metrics, per


def report(metrics, per, header, verbose, as_json, extra=None):
    if as_json:
        out = dict(header)
        out["metrics"] = metrics
        if extra:
            out.update(extra)
        if verbose:
            out["misses"] = [p for p in per if p["rank"] != 1]
        print(json.dumps(out, indent=2))
        return
    for k, v in header.items():
        print("%s: %s" % (k, v))
    for k, v in (extra or {}).items():
        if isinstance(v, list):
            more = " ..." if len(v) > 10 else ""
            v = "%d (%s%s)" % (len(v), ", ".join(v[:10]), more)
        print("%s: %s" % (k, v))
    print("queries:   %d" % metrics["queries"])
    print("recall@1:  %.3f" % metrics["recall@1"])
    print("recall@5:  %.3f" % metrics["recall@5"])
    print("MRR@10:    %.3f" % metrics["mrr@10"])
    if verbose:
        print()
        for p in per:
            if p["rank"] == 1:
                continue
            rank = "-" if p["rank"] is None else str(p["rank"])
            note = "" if p["ranked"] else "  (no ranking given)"
            print("%s rank %s%s: %s" % (p["id"], rank, note, p["query"]))
            print("    relevant: %s" % ", ".join(p["relevant"]))
            print("    top 3:    %s" % ", ".join(p["top3"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=["validate", "bm25", "rankings"])
    ap.add_argument("file", nargs="?", help="rankings JSON lines (rankings mode)")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tools", default=os.path.join(HERE, "tools"), help="corpus folder")
    ap.add_argument("--queries", default=os.path.join(HERE, "queries.jsonl"))
    a = ap.parse_args()
    if (a.mode == "rankings") != (a.file is not None):
        ap.error("FILE is given with the rankings mode and only with it")

    tool_ids, tools, errors = load_corpus(a.tools)
    queries, qerrors = load_queries(a.queries)
    errors += qerrors
    verrors, servers = validate(queries, tool_ids, tools)
    errors += verrors
    if errors:
        if a.json:
            print(json.dumps({"mode": a.mode, "ok": False, "errors": errors}, indent=2))
        else:
            for e in errors:
                print("error: " + e, file=sys.stderr)
            print("%d error(s)" % len(errors), file=sys.stderr)
        return 1

    if a.mode == "validate":
        if a.json:
            print(json.dumps({"mode": "validate", "ok": True, "queries": len(queries),
                              "tools": len(tool_ids), "servers": servers}, indent=2))
        else:
            print("%-20s %6s %8s %11s" % ("server", "tools", "queries", "tools used"))
            for s in servers:
                print("%-20s %6d %8d %11d" % (s["server"], s["tools"], s["queries"], s["tools_used"]))
            print("ok: %d queries, %d tools, %d servers" % (len(queries), len(tool_ids), len(servers)))
        return 0

    if a.mode == "bm25":
        ranked = bm25_rankings(queries, tool_ids, tools)
        metrics, per = evaluate(queries, ranked)
        header = {"mode": "bm25", "k1": K1, "b": B, "fields": "name + description", "tools": len(tool_ids)}
        report(metrics, per, header, a.verbose, a.json)
        return 0

    ranked, rerrors = {}, []
    known = {q["id"] for q in queries}
    for n, r in json_lines(a.file, rerrors):
        if not isinstance(r.get("id"), str) or not isinstance(r.get("ranked"), list):
            rerrors.append("%s:%d: needs a string id and a ranked list" % (a.file, n))
            continue
        if r["id"] not in known:
            rerrors.append("%s:%d: unknown query id %s" % (a.file, n, r["id"]))
        if r["id"] in ranked:
            rerrors.append("%s:%d: query %s ranked twice" % (a.file, n, r["id"]))
        for t in r["ranked"]:
            if t not in tools:
                rerrors.append("%s:%d: unknown tool %s" % (a.file, n, t))
        ranked[r["id"]] = r["ranked"]
    if rerrors:
        if a.json:
            print(json.dumps({"mode": "rankings", "ok": False, "errors": rerrors}, indent=2))
        else:
            for e in rerrors:
                print("error: " + e, file=sys.stderr)
        return 1
    missing = [q["id"] for q in queries if q["id"] not in ranked]
    metrics, per = evaluate(queries, ranked)
    header = {"mode": "rankings", "file": a.file, "tools": len(tool_ids)}
    extra = {"missing_queries": missing} if missing else None
    if missing and not a.json:
        print("warning: %d queries have no ranking and count as misses" % len(missing), file=sys.stderr)
    report(metrics, per, header, a.verbose, a.json, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())

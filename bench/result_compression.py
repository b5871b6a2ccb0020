#!/usr/bin/env python3
"""What result compression saves and costs on an IR set (the claim of the design
notes result compression follows, docs/design.md "Result compression": 40-60% fewer
tokens at no accuracy loss).

    python3 bench/result_compression.py --qrels qrels.tsv --plain plain.jsonl --compressed default.jsonl

plain: `condense query` output with compression off and topN 5 (the first five chunks of the
ranking, as they are); compressed: the same queries with the default options. For each judged
query: tokens of the returned contents (stats.tokensAfter) and nDCG@5 over the documents of the
results (a document counts once, at its first result). Standard library only.
"""
import argparse
import json
import math

from ir_eval import read_qrels  # bench/ir_eval.py, beside this file


def load(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        o = json.loads(line)
        out[str(o.get("id"))] = o
    return out


def ndcg5(docs, rel):
    seen, dcg = [], 0.0
    for d in docs:
        if d in seen:
            continue
        seen.append(d)
        if len(seen) > 5:
            break
        if d in rel:
            dcg += 1.0 / math.log2(len(seen) + 1)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(5, len(rel))))
    return dcg / ideal if ideal else 0.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--qrels", required=True)
    p.add_argument("--plain", required=True)
    p.add_argument("--compressed", required=True)
    a = p.parse_args()
    rel = read_qrels(a.qrels)  # {query id: {relevant doc id: gain}}
    plain, comp = load(a.plain), load(a.compressed)
    qs = [q for q in plain if q in rel and q in comp]
    n = len(qs) or 1
    tp = sum(plain[q]["stats"]["tokensAfter"] for q in qs) / n
    tc = sum(comp[q]["stats"]["tokensAfter"] for q in qs) / n
    rp = sum(len(plain[q]["results"]) for q in qs) / n
    rc = sum(len(comp[q]["results"]) for q in qs) / n
    np_ = sum(ndcg5([r["docId"] for r in plain[q]["results"]], rel[q]) for q in qs) / n
    nc = sum(ndcg5([r["docId"] for r in comp[q]["results"]], rel[q]) for q in qs) / n
    print(json.dumps({"queries": len(qs), "tokensPlain": round(tp, 1), "tokensCompressed": round(tc, 1),
                      "saved": round(1 - tc / tp, 3) if tp else 0, "resultsPlain": round(rp, 2),
                      "resultsCompressed": round(rc, 2), "ndcg5Plain": round(np_, 4), "ndcg5Compressed": round(nc, 4)}))


if __name__ == "__main__":
    main()

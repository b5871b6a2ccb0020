#!/usr/bin/env python3
"""How minScore trades relevant results kept against non-relevant ones dropped.

    python3 bench/calibration.py --qrels qrels.tsv --run run.jsonl [--at 10]

run: `condense query` output with compression off (minScore 0, one chunk per document), so every
result carries its calibrated score. For each threshold, over the top `--at` results of every
judged query: the share of relevant results kept (score >= threshold), the share of non-relevant
ones dropped, and the mean number of results left per query. Standard library only.
"""
import argparse
import json

from ir_eval import read_qrels  # bench/ir_eval.py, beside this file


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--at", type=int, default=10)
    a = p.parse_args()
    rel = read_qrels(a.qrels)  # {query id: {relevant doc id: gain}}
    rows = []
    for line in open(a.run, encoding="utf-8"):
        o = json.loads(line)
        qid = str(o.get("id"))
        if qid not in rel:
            continue
        for r in o.get("results", [])[: a.at]:
            rows.append((qid, r["docId"] in rel[qid], r["score"]))
    queries = len({q for q, _, _ in rows}) or 1
    nrel = sum(1 for _, r, _ in rows if r) or 1
    nnon = sum(1 for _, r, _ in rows if not r) or 1
    print(f"top {a.at} of {queries} judged queries: {nrel} relevant, {nnon} non-relevant results")
    print("| minScore | relevant kept | non-relevant dropped | results left / query |")
    print("|---|---|---|---|")
    for t in [0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]:
        kept_rel = sum(1 for _, r, s in rows if r and s >= t)
        drop_non = sum(1 for _, r, s in rows if not r and s < t)
        left = sum(1 for _, _, s in rows if s >= t)
        print(f"| {t:.2f} | {kept_rel / nrel:.3f} | {drop_non / nnon:.3f} | {left / queries:.2f} |")


if __name__ == "__main__":
    main()

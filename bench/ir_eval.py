#!/usr/bin/env python3
"""IR metrics for a run file against BEIR qrels (Python 3 standard library only).

    python3 bench/ir_eval.py --qrels data/ir/cisi/qrels.tsv --run run.jsonl [--json]

qrels: TSV with header `query-id corpus-id score`; pairs with score > 0 are relevant.
run:   JSONL, one line per query: {"id": queryId, "results": [{"docId": ..., "score": ...}, ...]},
       results best first. The given order is the ranking (ties are not re-sorted).

Metrics, averaged over judged queries only (queries with at least one relevant document in
the qrels; a judged query missing from the run scores 0):
  nDCG@10  trec_eval's ndcg_cut_10: linear gains (the qrel score), discount log2(rank + 1),
           ideal DCG from the judged relevant documents sorted by gain
  R@10, R@100  relevant documents retrieved in the top k / relevant documents
  MRR@10   1 / rank of the first relevant document in the top 10 (0 if none)
"""

import argparse
import json
import math
import sys


def read_qrels(path):
    qrels = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            if n == 0 and parts[0] == "query-id":
                continue
            qid, did, score = parts[0], parts[1], parts[2]
            try:
                gain = float(score)
            except ValueError:
                continue
            if gain > 0:
                qrels.setdefault(qid, {})[did] = gain
    return qrels


def read_run(path):
    run = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            obj = json.loads(line)
            qid = str(obj.get("id", obj.get("_id")))
            docs = []
            seen = set()
            for r in obj.get("results", []):
                did = str(r.get("docId", r.get("doc_id")))
                if did not in seen:
                    seen.add(did)
                    docs.append(did)
            run[qid] = docs
    return run


def evaluate(qrels, run):
    per_query = {}
    for qid, rel in sorted(qrels.items()):
        ranked = run.get(qid, [])
        top10 = ranked[:10]
        dcg = sum(rel.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(top10))
        ideal = sorted(rel.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        rr = 0.0
        for i, d in enumerate(top10):
            if d in rel:
                rr = 1.0 / (i + 1)
                break
        per_query[qid] = {
            "ndcg@10": dcg / idcg if idcg > 0 else 0.0,
            "r@10": sum(1 for d in top10 if d in rel) / len(rel),
            "r@100": sum(1 for d in ranked[:100] if d in rel) / len(rel),
            "mrr@10": rr,
        }
    n = len(per_query)
    names = ["ndcg@10", "r@10", "r@100", "mrr@10"]
    mean = {m: (sum(q[m] for q in per_query.values()) / n if n else 0.0) for m in names}
    return mean, per_query, n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--qrels", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--per-query", action="store_true", help="include per-query values (JSON)")
    args = p.parse_args()
    qrels = read_qrels(args.qrels)
    run = read_run(args.run)
    mean, per_query, n = evaluate(qrels, run)
    if args.json:
        out = {"queries": n, **{k: round(v, 4) for k, v in mean.items()}}
        if args.per_query:
            out["perQuery"] = per_query
        print(json.dumps(out))
    else:
        print(f"queries {n}")
        for k, v in mean.items():
            print(f"{k:8} {v:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

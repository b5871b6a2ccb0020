#!/usr/bin/env bash
# Retrieval quality of query() on the dev IR sets (docs/design.md, "Targets"): builds an index per set with
# the native CLI, runs every query with result compression off and one chunk per document, and
# scores the run with bench/ir_eval.py.
#
#   bench/ir.sh [--lexical] [SET ...]        (SET: cisi, med; default both)
#
# Rows: lexical only (denseWeight 0), dense only (lexicalWeight 0), hybrid (the default fusion,
# both weights 1, with pseudo-relevance feedback), hybrid-nofb (the same with feedback false),
# lexical-nofb (lexical only without feedback), and hybrid-rrf (fusion "rrf", the fusion before
# the convex one).
# Needs the model files (scripts/fetch-models) unless --lexical (the lexical fallback embedder).
# Data: ../shared/data/ir/<set>/ (override with IR_DATA=dir).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${IR_DATA:-$root/../shared/data/ir}
embed=(--features embed)
model=()
if [[ ${1:-} == --lexical ]]; then model=(--lexical); embed=(); shift; fi
sets=("$@"); [[ ${#sets[@]} -eq 0 ]] && sets=(cisi med)
out=$root/bench/out/ir; mkdir -p "$out"
cargo build --release --quiet "${embed[@]}" --bin condense
bin=${CARGO_TARGET_DIR:-$root/target}/release/condense
off='"minScore":0,"ngramThreshold":1,"similarityThreshold":1,"maxChunksPerDoc":1,"topN":100,"truncate":false'
kind=${model[0]:-minilm}; kind=${kind#--}
printf '| set | embedder | system | nDCG@10 | R@10 | R@100 | MRR@10 |\n|---|---|---|---|---|---|---|\n'
for set in "${sets[@]}"; do
  idx=$out/$set-$kind.bin
  "$bin" index --docs "$data/$set/corpus.jsonl" --out "$idx" "${model[@]}"
  for sys in lexical lexical-nofb dense hybrid hybrid-nofb hybrid-rrf; do
    case $sys in
      lexical) w='"lexicalWeight":1,"denseWeight":0' ;;
      lexical-nofb) w='"lexicalWeight":1,"denseWeight":0,"feedback":false' ;;
      hybrid-nofb) w='"lexicalWeight":1,"denseWeight":1,"feedback":false' ;;
      dense) w='"lexicalWeight":0,"denseWeight":1' ;;
      hybrid) w='"lexicalWeight":1,"denseWeight":1' ;;
      hybrid-rrf) w='"lexicalWeight":1,"denseWeight":1,"fusion":"rrf"' ;;
    esac
    run=$out/$set-$kind-$sys.jsonl
    "$bin" query --index "$idx" --options "{$off,$w}" < "$data/$set/queries.jsonl" > "$run"
    python3 "$root/bench/ir_eval.py" --qrels "$data/$set/qrels.tsv" --run "$run" --json |
      python3 -c "import json,sys; m=json.load(sys.stdin); print('| $set | $kind | $sys | %.4f | %.4f | %.4f | %.4f |' % (m['ndcg@10'], m['r@10'], m['r@100'], m['mrr@10']))"
  done
done

#!/usr/bin/env bash
# The compress scores of issue 5 in one command: the metric's tasks for each dev set and config, run
# through the native CLI (`condense compress`), round trip checked with `condense uncompress`, scored
# with ../shared/eval/metrics_compress.ts.
#
#   bench/compress_eval.sh [config …]     configs: default budget budget-query (default: all three)
#   env: EVAL_DIR (a writable copy of ../shared/eval, made and `npm ci`-ed if missing; /tmp/eval),
#        CONDENSE (the binary; default $CARGO_TARGET_DIR/release/condense, built if missing),
#        SETS (default: sharegpt_dev tool_sessions_dev_openai tool_sessions_dev_anthropic;
#        user_facts_dev is bench/data/user_facts/user_facts_dev.jsonl; a set
#        named <set>_next is made from <set> by compress_next_turn.ts: the prefix before the last
#        user turn, that turn as the query, and the keys its reply reuses from the old part as
#        the metric's QA questions — where budget vs budget-query shows what a query adds),
#        BUDGET_RATIO (0.25), CONDENSE_ARGS (extra arguments of `condense compress`, e.g. --lexical)
# Outputs and score JSON go to $EVAL_DIR/runs/<set>.<config>.*; the scores are printed, and for
# budget configs whether every result condense says fits is within its budget in o200k tokens.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=$(cd "$ROOT/../shared" 2>/dev/null && pwd || echo /work/shared)
EVAL_DIR=${EVAL_DIR:-/tmp/eval}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CONDENSE=${CONDENSE:-$TARGET/release/condense}
SETS=${SETS:-"sharegpt_dev tool_sessions_dev_openai tool_sessions_dev_anthropic"}
CONFIGS=${*:-"default budget budget-query"}

if [ ! -f "$EVAL_DIR/node_modules/gpt-tokenizer/package.json" ]; then
  mkdir -p "$EVAL_DIR"
  cp "$SHARED/eval/"* "$EVAL_DIR/"
  chmod -R u+w "$EVAL_DIR"
  (cd "$EVAL_DIR" && npm ci --no-audit --no-fund >/dev/null)
fi
cp "$ROOT/bench/compress_tasks.ts" "$ROOT/bench/compress_fits.ts" "$ROOT/bench/compress_next_turn.ts" "$EVAL_DIR/"
[ -x "$CONDENSE" ] || (cd "$ROOT" && nice cargo build --release --bin condense)
mkdir -p "$EVAL_DIR/runs"
cd "$EVAL_DIR"
for set in $SETS; do
  data="$SHARED/data/conversations/$set.jsonl"
  # The repository's own sets (bench/data/*/<set>.jsonl: user_facts_dev).
  for own in "$ROOT"/bench/data/*/"$set.jsonl"; do
    [ -f "$data" ] || [ ! -f "$own" ] || data=$own
  done
  if [ ! -f "$data" ] && [ "${set%_next}" != "$set" ]; then
    mkdir -p "$EVAL_DIR/data"
    npx tsx compress_next_turn.ts "$SHARED/data/conversations/${set%_next}.jsonl" "$EVAL_DIR/data/$set.jsonl"
    data="$EVAL_DIR/data/$set.jsonl"
  fi
  for config in $CONFIGS; do
    base="runs/$set.$config"
    npx tsx compress_tasks.ts tasks "$data" "$config" "$base.tasks.jsonl"
    # shellcheck disable=SC2086
    "$CONDENSE" compress ${CONDENSE_ARGS:-} < "$base.tasks.jsonl" > "$base.raw.jsonl"
    node -e 'const fs=require("fs");for(const l of fs.readFileSync(0,"utf8").split("\n")){if(!l.trim())continue;const o=JSON.parse(l);console.log(JSON.stringify({id:o.task_id,messages:o.messages,verbatim:o.verbatim}))}' \
      < "$base.raw.jsonl" | "$CONDENSE" uncompress > "$base.restored.jsonl"
    TASKS="$base.tasks.jsonl" npx tsx compress_tasks.ts merge "$base.raw.jsonl" "$base.restored.jsonl" "$base.out.jsonl"
    npx tsx metrics_compress.ts score --set "$data" --outputs "$base.out.jsonl" --label "$set $config" \
      | tee "$base.score.json"
    # Budget runs: does every result condense says fits fit in o200k tokens?
    [ "$config" = default ] || npx tsx compress_fits.ts "$base" | tee "$base.fits.json"
  done
done

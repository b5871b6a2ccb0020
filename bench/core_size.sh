#!/usr/bin/env bash
# The size of the shipped core wasm module, built as `scripts/build-pkg --dist` builds it (profile
# dist-core, wasm-bindgen with the same flags, wasm-opt -O3), without building the engine module
# or the package: raw and gzip -9 bytes, and the module's largest crates by code (twiggy, if
# installed). Run it in two checkouts to compare commits.
#
#   bench/core_size.sh [out-dir]        (default: bench/out/core-size; needs scripts/setup's tools)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${1:-bench/out/core-size}
target_dir=${CARGO_TARGET_DIR:-target}
cargo build --quiet --lib --target wasm32-unknown-unknown --profile dist-core --no-default-features
rm -rf "$out"
mkdir -p "$out"
wasm-bindgen --target web --out-dir "$out" --out-name condense --no-typescript \
  --experimental-reset-state-function \
  "$target_dir/wasm32-unknown-unknown/dist-core/condense.wasm"
tools/node_modules/.bin/wasm-opt -O3 "$out/condense_bg.wasm" -o "$out/condense_bg.wasm"
raw=$(wc -c < "$out/condense_bg.wasm")
gz=$(gzip -9 -c "$out/condense_bg.wasm" | wc -c)
echo "core module: $raw bytes, gzip -9 $gz bytes ($(git rev-parse --short HEAD))"
if command -v twiggy > /dev/null; then
  twiggy top -n 12 "$out/condense_bg.wasm"
fi

#!/usr/bin/env python3
"""Embedding speed, the onnxruntime side (Python, CPU, 1 thread), and the shared inputs.

  python3 bench/embed_ort.py inputs OUT.json   writes the bench inputs (used by every engine)
  python3 bench/embed_ort.py run IN.json       prints one JSON line per case

Inputs: 32 texts, text i = CISI documents i..i+4 joined (long enough for 256 tokens), each
case truncating them to 16, 128 or 256 tokens with the same tokenizer.json (padding off).
A case is "embed/{tokens}tok/batch{1|32}/{engine}": batch 1 runs the 32 texts one call each,
batch 32 runs them in one call (all the same length: no padding). Sentences per second over
repeats until at least 2 s have passed. Pooling and L2 norm are included in the timed loop, and
every run checks its vectors have unit norm (a benchmark is also a test).
"""

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKENS = [16, 128, 256]
BATCHES = [1, 32]
MIN_SECONDS = 2.0


def make_inputs(out):
    import tokenizers

    path = os.path.join(ROOT, "..", "shared", "data", "ir", "cisi", "corpus.jsonl")
    with open(path, encoding="utf-8") as f:
        docs = [json.loads(line)["text"] for line in f][:40]
    texts = [" ".join(docs[i:i + 5]) for i in range(32)]
    # Token ids per length, for engines without a tokenizer of their own (onnxruntime-web in
    # bench/embed.mjs): the same tokenizer.json, padding off, truncated to n.
    models = os.environ.get("CONDENSE_MODEL_DIR", os.path.join(ROOT, "models"))
    tok = tokenizers.Tokenizer.from_file(os.path.join(models, "tokenizer.json"))
    tok.no_padding()
    ids = {}
    for n in TOKENS:
        tok.enable_truncation(n)
        ids[str(n)] = [e.ids for e in tok.encode_batch(texts)]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"tokens": TOKENS, "batches": BATCHES, "texts": texts, "ids": ids}, f)


def run(inputs):
    import numpy as np
    import onnxruntime as ort
    import tokenizers

    models = os.environ.get("CONDENSE_MODEL_DIR", os.path.join(ROOT, "models"))
    texts = json.load(open(inputs, encoding="utf-8"))["texts"]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    t0 = time.perf_counter()
    sess = ort.InferenceSession(os.path.join(models, "model.onnx"), opts,
                                providers=["CPUExecutionProvider"])
    load_ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({"case": "embed/load/onnxruntime-py-1t", "ms": round(load_ms, 1)}), flush=True)
    tok = tokenizers.Tokenizer.from_file(os.path.join(models, "tokenizer.json"))
    tok.no_padding()

    def embed(batch):
        encs = tok.encode_batch(batch)
        n = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), n), dtype=np.int64)
        mask = np.zeros_like(ids)
        for i, e in enumerate(encs):
            ids[i, :len(e.ids)] = e.ids
            mask[i, :len(e.ids)] = 1
        (h,) = sess.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        m = mask[:, :, None].astype(np.float32)
        v = (h * m).sum(1) / m.sum(1)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    for n in TOKENS:
        tok.enable_truncation(n)
        assert all(len(e.ids) == n for e in tok.encode_batch(texts)), "inputs too short"
        for b in BATCHES:
            for i in range(0, len(texts), b):  # one untimed pass, as every engine gets
                embed(texts[i:i + b])
            done, start = 0, time.perf_counter()
            while True:
                for i in range(0, len(texts), b):
                    v = embed(texts[i:i + b])
                    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
                    done += len(v)
                elapsed = time.perf_counter() - start
                if elapsed >= MIN_SECONDS:
                    break
            print(json.dumps({"case": f"embed/{n}tok/batch{b}/onnxruntime-py-1t",
                              "sentences_per_s": round(done / elapsed, 2)}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inputs", "run"):
        sys.exit(__doc__)
    (make_inputs if sys.argv[1] == "inputs" else run)(sys.argv[2])

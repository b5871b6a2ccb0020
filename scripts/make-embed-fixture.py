#!/usr/bin/env python3
"""Makes tests/fixtures/embed/reference.json: reference token ids and vectors for the embedder.

The reference is what a user of the model in Python gets:
  - token ids: the Python `tokenizers` package loading models/tokenizer.json, padding off,
    truncation at 256 tokens (the shipped file pads to a fixed 128 and truncates at 128);
  - vectors: onnxruntime (CPU, 1 thread) running models/model.onnx on one text at a time
    (batch 1, no padding), mean pooling over the attention mask, L2 normalisation.

Texts: a deterministic selection from ../shared/data (conversations and the IR corpora), cut at
1500 characters (long ones still pass the 256-token truncation), plus hand-written edge cases.
Vectors are rounded to 7 significant digits (float32 has ~7.2).

Usage: pip install onnxruntime tokenizers numpy
       scripts/fetch-models && python3 scripts/make-embed-fixture.py [--data DIR] [--models DIR]
"""

import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnxruntime as ort
import tokenizers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LEN = 256
CUT = 1500

EDGE_CASES = [
    ("edge/empty", ""),
    ("edge/whitespace", "   \n\t  "),
    ("edge/ascii", "The quick brown fox jumps over the lazy dog."),
    ("edge/accents", "Café naïve résumé: Ærøskøbing, Øresund, São Paulo, Zürich, façade, jalapeño, Dvořák."),
    ("edge/turkish-german", "İstanbul ISTANBUL ıi Straße STRASSE ﬁnance ﬂow"),
    ("edge/cjk-chinese", "自然语言处理很有趣，我们用它来压缩上下文。"),
    ("edge/cjk-japanese", "東京で寿司を食べました。カタカナとひらがなも。"),
    ("edge/korean", "한국어 문장도 토큰화합니다: 안녕하세요!"),
    ("edge/emoji", "Ship it 🚀🎉 — tests pass ✅, mood 🥲, family 👨‍👩‍👧, flag 🇫🇷, hi😀there"),
    ("edge/code", 'fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!("{:?} {}", v, v.len()); // done\n}'),
    ("edge/python", "def f(x):\n\treturn {'a': x ** 2, \"b\": [1, 2, 3]}  # TODO(bob): fix off-by-one @ line 42"),
    ("edge/urls", "See https://example.com/path/to/page?query=1&lang=en#section and http://localhost:8080/api/v1/users/42 or mailto:someone@example.org"),
    ("edge/paths", "error[E0308]: mismatched types --> src/embed/model.rs:120:17 at /usr/local/lib/python3.11/site-packages/numpy/__init__.py"),
    ("edge/long-word", "Pneumonoultramicroscopicsilicovolcanoconiosis " + "x" * 120 + " end"),
    ("edge/long-word-100", "a" * 100 + " " + "b" * 101),
    ("edge/special-tokens", "[CLS] literal special tokens [SEP] inside text [MASK] and [UNK] [PAD] or [sep]"),
    ("edge/control", "null\u0000byte zero\u200bwidth soft\u00adhyphen bell\u0007 nbsp\u00a0space bom\ufeff replacement\ufffd end"),
    ("edge/scripts", "Ελληνικά κείμενα, русский текст, العربية, עברית, हिन्दी, ไทย"),
    ("edge/symbols", "x² + y³ ≤ ∞ ± 5% → €100 ≈ $108; ©®™ ½ ¾ α·β ∑∫√ ＡＢＣ１２３"),
    ("edge/numbers", "v1.2.3 3.14159 1,000,000 0xDEADBEEF 2024-01-31T12:00:00Z +44 20 7946 0958"),
    ("edge/repeat", "buffalo " * 300),
]


def conv_texts(path, every, limit, prefix):
    """Text of one message per `every`-th conversation (string content or text-like blocks)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i % every:
                continue
            conv = json.loads(line)
            msgs = conv.get("messages", [])
            # The first message with more than 400 characters, else the longest one.
            best = ""
            for m in msgs:
                t = message_text(m)
                if len(t) > len(best):
                    best = t
                if len(best) > 400:
                    break
            if best:
                out.append((f"{prefix}/{conv.get('id', i)}", best[:CUT]))
            if len(out) >= limit:
                break
    return out


def message_text(m):
    c = m.get("content")
    if isinstance(c, str):
        return c
    parts = []
    if isinstance(c, list):
        for b in c:
            if not isinstance(b, dict):
                continue
            if isinstance(b.get("text"), str):
                parts.append(b["text"])
            inner = b.get("content")
            if isinstance(inner, str):
                parts.append(inner)
            elif isinstance(inner, list):
                parts.extend(x.get("text", "") for x in inner if isinstance(x, dict))
    return "\n".join(p for p in parts if p)


def ir_texts(path, every, limit, prefix):
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i % every:
                continue
            d = json.loads(line)
            t = (d.get("title", "") + "\n" + d["text"]).strip() if d.get("title") else d["text"]
            out.append((f"{prefix}/{d['_id']}", t[:CUT]))
            if len(out) >= limit:
                break
    return out


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    ap.add_argument("--models", default=os.environ.get("CONDENSE_MODEL_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "embed", "reference.json"))
    a = ap.parse_args()

    conv = os.path.join(a.data, "conversations")
    ir = os.path.join(a.data, "ir")
    texts = []
    texts += conv_texts(os.path.join(conv, "sharegpt_dev.jsonl"), 15, 10, "sharegpt")
    texts += conv_texts(os.path.join(conv, "tool_sessions_dev_anthropic.jsonl"), 8, 5, "anthropic")
    texts += conv_texts(os.path.join(conv, "tool_sessions_dev_openai.jsonl"), 10, 3, "openai")
    texts += conv_texts(os.path.join(conv, "watermark_sessions_dev.jsonl"), 5, 2, "watermark")
    texts += ir_texts(os.path.join(ir, "cisi", "corpus.jsonl"), 200, 6, "cisi/doc")
    texts += ir_texts(os.path.join(ir, "cisi", "queries.jsonl"), 30, 3, "cisi/query")
    texts += ir_texts(os.path.join(ir, "med", "corpus.jsonl"), 200, 4, "med/doc")
    texts += ir_texts(os.path.join(ir, "med", "queries.jsonl"), 10, 3, "med/query")
    texts += EDGE_CASES

    model_path = os.path.join(a.models, "model.onnx")
    tok_path = os.path.join(a.models, "tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(tok_path)
    tok.no_padding()
    tok.enable_truncation(MAX_LEN)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])

    cases = []
    for name, text in texts:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.ones_like(ids)
        (hidden,) = sess.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        v = hidden[0].astype(np.float64).mean(axis=0)
        v = v / np.linalg.norm(v)
        cases.append({
            "name": name,
            "text": text,
            "ids": enc.ids,
            "vector": [float(f"{x:.7g}") for x in v],
        })

    doc = {
        "about": "Reference token ids and vectors for condense's embedder; made by scripts/make-embed-fixture.py",
        "model_sha256": sha256(model_path),
        "tokenizer_sha256": sha256(tok_path),
        "tokenizers_version": tokenizers.__version__,
        "onnxruntime_version": ort.__version__,
        "max_length": MAX_LEN,
        "pooling": "mean over attention mask, L2-normalised, batch 1",
        "cases": cases,
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        # One case per line: diffs stay readable, the file stays small.
        f.write("{\n")
        for k, v in doc.items():
            if k != "cases":
                f.write(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n")
        f.write('  "cases": [\n')
        f.write(",\n".join("    " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) for c in cases))
        f.write("\n  ]\n}\n")
    print(f"{a.out}: {len(cases)} cases, {os.path.getsize(a.out)} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()

//! The checks of the fuzz targets (`fuzz_targets/*.rs` call one each). A check fails by
//! panicking, which libFuzzer reports as a crash and saves as an input to reproduce it
//! (`scripts/fuzz TARGET SECONDS`; docs/hardening.md).
//!
//! What every target asserts, besides "no panic, no overflow, no abort": no call answers
//! `internal` (the code of a broken invariant), and each operation keeps its documented laws on
//! whatever input it accepts.

#![forbid(unsafe_code)]

use condense::compress::{
    compress_json, prepare_context, uncompress_json, CompressCache, CompressContext,
    CompressOptions, PrepareContextOptions,
};
use condense::embed::Embedder;
use condense::message::{validate_json, Format, RawDocument, ValidateOptions};
use condense::retrieve::index::{Document, Index, IndexOptions};
use condense::retrieve::options::QueryOptions;
use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
use condense::{Error, ErrorKind};

mod cli;

/// Panics when `result` is an `internal` error; otherwise gives the value, if any.
fn typed<T>(what: &str, result: Result<T, Error>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) if e.kind() == ErrorKind::Internal => panic!("{what}: internal error: {e}"),
        Err(_) => None,
    }
}

/// A little-endian reader of knobs from the front of the input.
struct Knobs<'a>(&'a [u8]);

impl Knobs<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn pick<'s>(&mut self, from: &[&'s str]) -> &'s str {
        from[usize::from(self.byte()) % from.len()]
    }
}

/// The messages of a document, each as its exact text (`None` when it does not parse).
fn message_texts(json: &str) -> Option<Vec<String>> {
    let doc = RawDocument::parse(json).ok()?;
    Some(doc.messages.iter().map(|m| m.get().to_string()).collect())
}

/// Whether `json` is valid under `format`'s rules (`None`: detected).
fn valid(json: &str, format: Option<Format>) -> Option<(bool, Format)> {
    let report = typed("validate", validate_json(json, &ValidateOptions { format }))?;
    Some((report.valid, report.format))
}

/// `messages`: one JSON document of messages (an array or a request body) after eight bytes of
/// knobs. validate → compress with options from the knobs → uncompress (the original messages
/// byte for byte) → compress again (no change) → applyWatermark twice (no change the second
/// time, the messages from the watermark on untouched), each output valid when the input was.
pub fn messages(data: &[u8]) {
    let (knobs, text) = data.split_at(data.len().min(8));
    let mut k = Knobs(knobs);
    let json = String::from_utf8_lossy(text);
    let json = json.as_ref();
    let format = k.pick(&["", "anthropic", "openai"]);
    let forced = match format {
        "anthropic" => Some(Format::Anthropic),
        "openai" => Some(Format::OpenAi),
        _ => None,
    };
    let before = valid(json, forced);

    // compress
    let mut options = serde_json::Map::new();
    let mut set = |key: &str, value: serde_json::Value| {
        options.insert(key.to_string(), value);
    };
    if !format.is_empty() {
        set("format", format.into());
    }
    match k.byte() % 4 {
        1 => set("tokenBudget", 40.into()),
        2 => set("tokenBudget", 300.into()),
        3 => set("targetRatio", 0.3.into()),
        _ => {}
    }
    set("recencyWindow", (k.byte() % 4).into());
    let flags = k.byte();
    set("dedup", (flags & 1 != 0).into());
    set("fuzzyDedup", (flags & 2 != 0).into());
    set("prefixStable", (flags & 4 != 0).into());
    set("importanceScoring", (flags & 8 != 0).into());
    set("contradictionDetection", (flags & 16 != 0).into());
    if flags & 32 != 0 {
        set("query", "build error in the parser".into());
    }
    set("lossyToolOutput", (flags & 64 != 0).into());
    set("minChars", [0, 20, 200][usize::from(k.byte() % 3)].into());
    set(
        "method",
        k.pick(&["extractive", "hierarchical", "abstractive"])
            .into(),
    );
    let options = serde_json::Value::Object(options);
    let options = match CompressOptions::from_value(&options) {
        Ok(o) => o,
        Err(e) => panic!("the fuzz target's own compress options were refused: {e}"),
    };
    if let Some(out) = typed(
        "compress",
        compress_json(json, &options, CompressContext::new()),
    ) {
        let original = message_texts(json).expect("compress accepted what RawDocument refuses");
        let back = uncompress_json(&out.json, &out.verbatim)
            .unwrap_or_else(|e| panic!("uncompress of compress's own output: {e}"));
        assert_eq!(
            message_texts(&back),
            Some(original),
            "uncompress(compress(m)) != m"
        );
        if let Some((true, f)) = before {
            let after = valid(&out.json, Some(f)).is_some_and(|(ok, _)| ok);
            assert!(after, "compress made a valid conversation invalid");
        }
    }

    // applyWatermark, twice.
    let mut wm = serde_json::Map::new();
    if !format.is_empty() {
        wm.insert("format".into(), format.into());
    }
    let wflags = k.byte();
    wm.insert("placeholder".into(), (wflags & 1 != 0).into());
    wm.insert("clearToolInputs".into(), (wflags & 2 != 0).into());
    wm.insert("keepThinking".into(), (wflags & 4 != 0).into());
    wm.insert("keepLastToolResults".into(), ((wflags >> 3) % 3).into());
    if wflags & 64 != 0 {
        wm.insert(
            "excludeTools".into(),
            serde_json::json!(["mcp__memory__*", "ls"]),
        );
    }
    let wm = WatermarkOptions::from_value(&serde_json::Value::Object(wm))
        .unwrap_or_else(|e| panic!("the fuzz target's own watermark options were refused: {e}"));
    let state = WatermarkState::default();
    if let Some(out) = typed("watermark", apply_watermark_json(json, &state, &wm)) {
        let input = message_texts(json).expect("watermark accepted what RawDocument refuses");
        let output = message_texts(&out.json).expect("watermark wrote an unreadable document");
        if let Some(w) = out.stats.watermark_index {
            let kept = input.len() - w;
            assert!(output.len() >= kept, "watermark dropped the suffix");
            assert_eq!(
                output[output.len() - kept..],
                input[w..],
                "the messages from the watermark on changed"
            );
        }
        if let Some((true, f)) = before {
            let after = valid(&out.json, Some(f)).is_some_and(|(ok, _)| ok);
            assert!(after, "applyWatermark made a valid conversation invalid");
        }
        let again = apply_watermark_json(&out.json, &out.state, &wm)
            .unwrap_or_else(|e| panic!("applyWatermark of its own output: {e}"));
        assert_eq!(
            again.json, out.json,
            "a second applyWatermark changed the output"
        );
        assert_eq!(
            again.state, out.state,
            "a second applyWatermark moved the watermark"
        );
    }
}

/// The embedder of every index target (no model files).
fn lexical() -> &'static Embedder {
    thread_local! {
        static LEXICAL: &'static Embedder = Box::leak(Box::new(Embedder::lexical()));
    }
    LEXICAL.with(|e| *e)
}

/// `index`: bytes of a serialised index. With the first byte odd, the rest is an index body
/// and gets the `CNDX` header and a valid checksum (so mutations reach the decoder instead of
/// failing the checksum); else the bytes are read as they are. deserialize → query with a few
/// options → add → remove → serialize → deserialize → serialize (the same bytes).
pub fn index(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 1 {
        let mut b = Vec::with_capacity(rest.len() + 16);
        b.extend_from_slice(b"CNDX");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(rest);
        b.extend_from_slice(&condense::text::hash::fnv1a(rest).to_le_bytes());
        b
    } else {
        rest.to_vec()
    };
    let mut index = match Index::deserialize(&bytes) {
        Ok(index) => index,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidIndex, "deserialize: {e}");
            return;
        }
    };
    let embedder = lexical();
    for options in [
        r#"{}"#,
        r#"{"denseWeight":1,"minScore":0}"#,
        r#"{"denseWeight":1,"lexicalWeight":0,"minScore":0,"topN":100,"maxChunksPerDoc":0}"#,
        r#"{"minScore":0,"similarityThreshold":1,"ngramThreshold":1,"format":"json"}"#,
    ] {
        let options = QueryOptions::from_json(options).expect("the target's query options");
        typed(
            "query",
            index.query("how do I configure the parser", &options, embedder),
        );
    }
    let docs = [Document::new(
        "fuzz-added",
        "# Parser\n\nThe parser reads tokens.\n\n## Errors\n\nA build error names the file.",
    )];
    typed("add", index.add(&docs, embedder, &mut |_| {}));
    let first = index.ids().first().map(|s| s.to_string());
    if let Some(id) = first {
        typed("remove", index.remove(&[id.as_str()]));
    }
    let Some(bytes) = typed("serialize", index.serialize()) else {
        return;
    };
    let again = Index::deserialize(&bytes)
        .unwrap_or_else(|e| panic!("deserialize of serialize's own bytes: {e}"));
    let bytes2 = again.serialize().expect("serialize");
    assert!(
        bytes == bytes2,
        "serialize → deserialize → serialize changed the bytes"
    );
}

/// A conversation every options target runs its options on.
const CONVERSATION: &str = r#"[
 {"role":"user","content":"The build fails in src/parser.rs: error[E0308] at line 42. Please look."},
 {"role":"assistant","content":[{"type":"text","text":"Reading the file."},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"src/parser.rs"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn parse() { let x: u32 = \"a\"; }\nfn main() { parse(); }\n"}]},
 {"role":"assistant","content":[{"type":"text","text":"The literal is a string. Checkpointing."},{"type":"tool_use","id":"t2","name":"compress_to_checkpoint","input":{}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"},{"type":"text","text":"Thanks. Now the tests: cargo test fails with 3 errors."}]},
 {"role":"assistant","content":"The three errors come from the same literal; fixing it fixes them all."}
]"#;

/// A small index every options target queries.
fn small_index() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let mut index = Index::new(lexical(), IndexOptions::default()).expect("index");
        let docs = [
            Document::new(
                "a",
                "# Parser\n\nThe parser reads tokens and builds a tree.",
            ),
            Document::new(
                "b",
                "# Errors\n\nA build error names the file and the line.",
            ),
            Document::new(
                "c",
                "Plain text about configuration of the parser and its options.",
            ),
        ];
        index.add(&docs, lexical(), &mut |_| {}).expect("add");
        index.serialize().expect("serialize")
    })
}

/// `options`: one JSON text read as the options of every function (and as watermark state),
/// each accepted one used in a call: compress, applyWatermark, validate, query, an index, and
/// prepareContext.
pub fn options(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let json = text.as_ref();
    if let Some(o) = typed("CompressOptions", CompressOptions::from_json(json)) {
        typed(
            "compress",
            compress_json(CONVERSATION, &o, CompressContext::new()),
        );
    }
    if let Some(o) = typed("WatermarkOptions", WatermarkOptions::from_json(json)) {
        typed(
            "watermark",
            apply_watermark_json(CONVERSATION, &WatermarkState::default(), &o),
        );
    }
    if let Some(s) = typed("WatermarkState", WatermarkState::from_json(json)) {
        typed(
            "watermark with state",
            apply_watermark_json(CONVERSATION, &s, &WatermarkOptions::default()),
        );
    }
    let validate: Option<ValidateOptions> = typed(
        "ValidateOptions",
        condense::error::read_json(json, ErrorKind::InvalidOptions, "options"),
    );
    if let Some(o) = validate {
        typed("validate", validate_json(CONVERSATION, &o));
    }
    if let Some(o) = typed("QueryOptions", QueryOptions::from_json(json)) {
        let index = Index::deserialize(small_index()).expect("the small index");
        typed("query", index.query("parser errors", &o, lexical()));
    }
    if let Some(o) = typed("IndexOptions", IndexOptions::from_json(json)) {
        if let Some(mut index) = typed("Index::new", Index::new(lexical(), o)) {
            let docs = [Document::new(
                "d",
                "# Title\n\nSome text.\n\nMore text here.",
            )];
            typed("add", index.add(&docs, lexical(), &mut |_| {}));
        }
    }
    if let Some(o) = typed("PrepareContextOptions", PrepareContextOptions::from_json(json)) {
        let chunks = serde_json::json!([
            "The parser reads tokens.",
            {"id": "b", "text": "A build error names the file and the line of the error."}
        ]);
        typed("prepareContext", prepare_context(&chunks, &o, None));
    }
}

/// `cache`: a compress cache as JSON text; with the first byte odd its checksum is made valid
/// (as someone editing a stored unkeyed cache would: its checksum is FNV-1a, not a MAC), so the
/// entries reach compress. from_json → compress with it (twice, the second with what the first
/// left) → to_json → from_json (the same cache).
pub fn cache(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let json = if mode & 1 == 1 {
        fix_cache_checksum(&text).unwrap_or_else(|| text.to_string())
    } else {
        text.to_string()
    };
    let Some(mut cache) = typed(
        "CompressCache::from_json",
        CompressCache::from_json(&json, "cache"),
    ) else {
        return;
    };
    for options in [
        r#"{}"#,
        r#"{"tokenBudget":60,"prefixStable":true,"recencyWindow":1}"#,
    ] {
        let o = CompressOptions::from_json(options).expect("the target's compress options");
        typed(
            "compress with a cache",
            compress_json(
                CONVERSATION,
                &o,
                CompressContext::new().with_cache(&mut cache),
            ),
        );
    }
    let written = cache.to_json();
    let read = CompressCache::from_json(&written, "cache")
        .unwrap_or_else(|e| panic!("from_json of to_json's own text: {e}"));
    assert_eq!(
        read.to_json(),
        written,
        "a cache changed through to_json → from_json"
    );
}

/// The checksum `CompressCache` writes (see src/compress/cache.rs): FNV-1a over the format
/// version, the generation and every entry in key order.
fn fix_cache_checksum(json: &str) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(json).ok()?;
    let obj = v.as_object_mut()?;
    let generation = obj.get("generation")?.as_u64()?;
    let mut entries: Vec<(String, String, u64)> = obj
        .get("entries")?
        .as_array()?
        .iter()
        .filter_map(|e| {
            Some((
                e.get("key")?.as_str()?.to_string(),
                e.get("value")?.as_str()?.to_string(),
                e.get("used")?.as_u64()?,
            ))
        })
        .collect();
    entries.sort();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&generation.to_le_bytes());
    for (k, value, used) in &entries {
        bytes.extend_from_slice(k.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(&(value.len() as u64).to_le_bytes());
        bytes.extend_from_slice(value.as_bytes());
        bytes.extend_from_slice(&used.to_le_bytes());
    }
    let sum = format!("{:016x}", condense::text::hash::fnv1a(&bytes));
    obj.insert("checksum".into(), sum.into());
    obj.insert(
        "engine".into(),
        format!("condense-ctx {}", condense::VERSION).into(),
    );
    Some(v.to_string())
}

/// `cli_jsonl`: the CLI's JSONL reader and line handlers, in memory: the first byte picks a
/// command (validate, watermark, compress, uncompress, prepare, embed), the rest is its stdin
/// (any bytes: lines that are not UTF-8 or not JSON included). One output line per non-empty
/// input line, each JSON, none `internal`; the exit code 0 or 1.
pub fn cli_jsonl(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let args: &[&str] = match pick % 6 {
        0 => &["condense", "validate"],
        1 => &["condense", "watermark"],
        2 => &["condense", "compress"],
        3 => &["condense", "uncompress"],
        4 => &["condense", "prepare"],
        _ => &["condense", "embed", "--lexical"],
    };
    let mut reader = input;
    let mut out = Vec::new();
    let code = cli::run_cli(args.iter().copied(), &mut reader, &mut out);
    assert!(
        code == std::process::ExitCode::SUCCESS || code == std::process::ExitCode::from(1),
        "exit code {code:?}"
    );
    let lines = input
        .split(|&b| b == b'\n')
        .filter(|l| match std::str::from_utf8(l) {
            Ok(s) => !s.trim().is_empty(),
            Err(_) => true,
        })
        .count();
    let out = String::from_utf8(out).expect("the CLI wrote text that is not UTF-8");
    let written: Vec<&str> = out.lines().collect();
    assert_eq!(written.len(), lines, "output lines != input lines");
    for line in written {
        let v: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("an output line is not JSON ({e}): {line}"));
        if let Some(code) = v.pointer("/error/code").and_then(|c| c.as_str()) {
            assert_ne!(code, "internal", "{line}");
        }
    }
}

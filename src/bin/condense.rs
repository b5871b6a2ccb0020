//! The `condense` CLI (docs/design.md, "The CLI"): JSONL in, JSONL out, one output line per
//! input line.
//!
//! A bad line stops nothing: its output line is `{"id": …, "error": {code, path, message}}`
//! and the exit code is 1 at the end; usage errors exit 2. A line that is not UTF-8, or whose
//! JSON has a key twice in one object, is such a bad line (`invalid_json`), as is one that is
//! not JSON at all.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(not(target_arch = "wasm32"))]
pub(crate) mod cli {
    use std::io::{self, BufRead, BufWriter, Write};
    use std::process::ExitCode;

    use clap::{Parser, Subcommand, ValueEnum};
    use condense::compress::{
        compress_json, prepare_context, uncompress_json, CompressCache, CompressContext,
        CompressOptions, PrepareContextOptions,
    };
    use condense::embed::Embedder;
    use condense::message::{validate_json, Format, ValidateOptions};
    use condense::retrieve::index::{Document, Index, IndexOptions};
    use condense::retrieve::options::QueryOptions;
    use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
    use condense::{Error, ErrorKind};
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use serde_json::{json, Map, Value};
    use std::cell::RefCell;

    /// Deterministic context compression for LLM agents.
    #[derive(Parser)]
    #[command(name = "condense", version, about, long_about = None)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(Subcommand)]
    enum Command {
        /// Compress conversations.
        /// Lines: {task_id|id?, messages, options?} → {task_id, messages, verbatim, stats, ms}.
        Compress {
            /// Default options (JSON); a line's own `options` override them key by key.
            #[arg(long, value_name = "JSON")]
            options: Option<String>,
            /// With `query`: sentence relevance by embedding cosine with the model in this
            /// directory (model.onnx, tokenizer.json) instead of query-term overlap.
            #[arg(long, value_name = "DIR", conflicts_with = "lexical")]
            model_dir: Option<std::path::PathBuf>,
            /// With `query`: sentence relevance by cosine with the lexical fallback embedder.
            #[arg(long)]
            lexical: bool,
            /// Which tokens budgets and stats count: `estimate` (the fast estimator, the
            /// default) or `model` (the exact count with the model's tokenizer; loads the model
            /// from --model-dir, `$CONDENSE_MODEL_DIR` or `models/`, which then also serves
            /// `query`). Sets the `tokenCounter` option of every line.
            #[arg(long, value_name = "KIND", value_parser = ["estimate", "model"], conflicts_with = "lexical")]
            token_counter: Option<String>,
            /// An incremental cache file shared by every line (read if it exists, written at
            /// the end). A line's own `cache` (JSON) is used instead, and returned as `cache`.
            /// With `$CONDENSE_CACHE_KEY` set, caches are bound to that secret key (an
            /// HMAC-SHA256 checksum: a cache written without it, or forged, is ignored and
            /// rebuilt with a warning).
            #[arg(long, value_name = "FILE")]
            cache: Option<std::path::PathBuf>,
        },
        /// Share a token budget across chunks by relevance, each compressed to its share.
        /// Lines: {id?, chunks, options?} → {id, text, chunks, stats, ms}.
        Prepare {
            /// Default options (JSON); a line's own `options` override them key by key.
            #[arg(long, value_name = "JSON")]
            options: Option<String>,
            /// With `query`: chunk relevance by embedding cosine with the model in this
            /// directory instead of BM25.
            #[arg(long, value_name = "DIR", conflicts_with = "lexical")]
            model_dir: Option<std::path::PathBuf>,
            /// With `query`: chunk relevance by cosine with the lexical fallback embedder.
            #[arg(long)]
            lexical: bool,
        },
        /// Restore compressed conversations.
        /// Lines: {id?, messages, verbatim} → {id, messages}.
        Uncompress,
        /// Prune tool history before the newest checkpoint.
        /// Lines: {id?, messages, state?, options?} → {id, messages, state, stats, warnings}.
        Watermark {
            /// Default options (JSON); a line's own `options` override them key by key.
            #[arg(long, value_name = "JSON")]
            options: Option<String>,
        },
        /// Check messages against a provider's rules.
        /// Lines: {id?, messages} → {id, valid, format, violations}.
        Validate {
            /// The provider whose rules apply (default: detected per line).
            #[arg(long, value_enum)]
            format: Option<FormatArg>,
        },
        /// Embed texts. Lines: {id?, text} → {id, vector}.
        Embed {
            #[command(flatten)]
            model: ModelArgs,
        },
        /// Build an index from a JSONL corpus ({id|_id, path?, title?, text, metadata?} per
        /// line; BEIR corpus files work as they are) and write it to a file.
        Index {
            /// The corpus (JSONL).
            #[arg(long, value_name = "FILE")]
            docs: std::path::PathBuf,
            /// Where to write the index.
            #[arg(long, value_name = "FILE")]
            out: std::path::PathBuf,
            #[command(flatten)]
            model: ModelArgs,
            /// Index settings (JSON): {"chunk": {"minChars", "maxChars"}, "bm25": {"k1", "b"}}.
            #[arg(long, value_name = "JSON")]
            index_options: Option<String>,
            /// Report progress on stderr.
            #[arg(long)]
            progress: bool,
        },
        /// Query an index. Lines: {id|_id, text|question, options?} →
        /// {id, results, text, stats, queryKind, ms}.
        Query {
            /// The index file (from `condense index`).
            #[arg(long, value_name = "FILE")]
            index: std::path::PathBuf,
            /// Default options (JSON); a line's own `options` override them key by key.
            #[arg(long, value_name = "JSON")]
            options: Option<String>,
            /// Where the model files are, if the index was built with the model.
            #[arg(long, value_name = "DIR")]
            model_dir: Option<std::path::PathBuf>,
            /// Threads for the model's matrix products (a question's embedding); the results
            /// are the same for any count.
            #[arg(long, value_name = "N", default_value_t = 1)]
            threads: usize,
        },
    }

    /// Which embedder: the model files in a directory, or the lexical fallback.
    #[derive(clap::Args)]
    struct ModelArgs {
        /// Directory with model.onnx and tokenizer.json (default: $CONDENSE_MODEL_DIR, then
        /// models/ at the repository root).
        #[arg(long, value_name = "DIR", conflicts_with = "lexical")]
        model_dir: Option<std::path::PathBuf>,
        /// Use the lexical fallback embedder (no model files).
        #[arg(long)]
        lexical: bool,
        /// Threads for the model's matrix products; the vectors are the same for any count.
        #[arg(long, value_name = "N", default_value_t = 1)]
        threads: usize,
    }

    #[derive(Clone, Copy, ValueEnum)]
    enum FormatArg {
        Anthropic,
        Openai,
    }

    /// One input line, with `messages` kept raw so untouched messages stay byte-identical.
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
        #[serde(default, borrow)]
        task_id: Option<&'a RawValue>,
        #[serde(borrow)]
        messages: Option<&'a RawValue>,
        #[serde(default)]
        state: Option<Value>,
        #[serde(default)]
        options: Option<Value>,
        #[serde(default)]
        cache: Option<Value>,
        #[serde(default)]
        chunks: Option<Value>,
        #[serde(default, borrow)]
        verbatim: Option<&'a RawValue>,
    }

    pub fn main() -> ExitCode {
        run_cli(
            std::env::args_os(),
            &mut io::stdin().lock(),
            &mut io::stdout().lock(),
        )
    }

    /// The CLI with these arguments (the program name first), reading its JSONL lines from
    /// `input` and writing one output line per input line to `output` (what `main` does with
    /// stdin and stdout; the fuzz target `cli_jsonl` drives it in memory).
    pub fn run_cli<I, T>(args: I, input: &mut dyn BufRead, output: &mut dyn Write) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) => {
                let _ = e.print();
                return if e.use_stderr() {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                };
            }
        };
        let mut lines = Lines { input, output };
        let lines = &mut lines;
        match cli.command {
            Command::Compress {
                options,
                model_dir,
                lexical,
                token_counter,
                cache,
            } => compress_command(lines, options, model_dir, lexical, token_counter, cache),
            Command::Prepare {
                options,
                model_dir,
                lexical,
            } => prepare_command(lines, options, model_dir, lexical),
            Command::Uncompress => finish(run(lines, &mut uncompress)),
            Command::Watermark { options } => match parse_defaults(options.as_deref()) {
                Ok(defaults) => finish(run(lines, &mut |line| watermark(line, &defaults))),
                Err(e) => usage(&e),
            },
            Command::Validate { format } => {
                let format = format.map(|f| match f {
                    FormatArg::Anthropic => Format::Anthropic,
                    FormatArg::Openai => Format::OpenAi,
                });
                finish(run(lines, &mut |line| validate(line, format)))
            }
            Command::Embed { model } => match load_embedder(&model) {
                Ok(embedder) => finish(run(lines, &mut |line| embed(line, &embedder))),
                Err(e) => fatal(&e),
            },
            Command::Index {
                docs,
                out,
                model,
                index_options,
                progress,
            } => match index_options.as_deref().map(IndexOptions::from_json) {
                None => build_index(&docs, &out, &model, IndexOptions::default(), progress),
                Some(Ok(o)) => build_index(&docs, &out, &model, o, progress),
                Some(Err(e)) => usage(&e),
            },
            Command::Query {
                index,
                options,
                model_dir,
                threads,
            } => query_command(lines, &index, options, model_dir, threads),
        }
    }

    /// `condense compress`: the default options checked once, the cache file read before the
    /// lines and written after them.
    fn compress_command(
        lines: &mut Lines<'_>,
        options: Option<String>,
        model_dir: Option<std::path::PathBuf>,
        lexical: bool,
        token_counter: Option<String>,
        cache: Option<std::path::PathBuf>,
    ) -> ExitCode {
        let model_counter = token_counter.as_deref() == Some("model");
        let shared = match open_cache(cache.as_deref()) {
            Ok(shared) => shared,
            Err(e) => return usage(&e),
        };
        let embedder = match optional_embedder(model_dir, lexical, model_counter) {
            Ok(e) => e,
            Err(e) => return fatal(&e),
        };
        let mut defaults = match parse_object(options.as_deref()) {
            Ok(d) => d,
            Err(e) => return usage(&e),
        };
        if let Some(kind) = token_counter {
            defaults.insert("tokenCounter".into(), Value::String(kind));
        }
        if let Err(e) = CompressOptions::from_value(&Value::Object(defaults.clone())) {
            return usage(&e);
        }
        let r = run(lines, &mut |line| {
            compress(line, &defaults, embedder.as_ref(), shared.as_ref())
        });
        if let (Some(path), Some(c)) = (&cache, &shared) {
            if let Err(e) = std::fs::write(path, c.borrow().to_json()) {
                eprintln!("condense: --cache {}: {e}", path.display());
                return ExitCode::from(1);
            }
        }
        finish(r)
    }

    /// The `--cache` file: read if it exists (keyed by `CONDENSE_CACHE_KEY` when set), a new
    /// cache if not, none without the flag.
    fn open_cache(path: Option<&std::path::Path>) -> Result<Option<RefCell<CompressCache>>, Error> {
        let key = cache_key();
        let Some(path) = path else {
            return Ok(None);
        };
        let cache = if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "--cache",
                    format!("{}: {e}", path.display()),
                )
            })?;
            match &key {
                Some(k) => CompressCache::from_json_keyed(&text, "--cache", k)?,
                None => CompressCache::from_json(&text, "--cache")?,
            }
        } else {
            match &key {
                Some(k) => CompressCache::with_key(k),
                None => CompressCache::new(),
            }
        };
        Ok(Some(RefCell::new(cache)))
    }

    /// `condense prepare`.
    fn prepare_command(
        lines: &mut Lines<'_>,
        options: Option<String>,
        model_dir: Option<std::path::PathBuf>,
        lexical: bool,
    ) -> ExitCode {
        let embedder = match optional_embedder(model_dir, lexical, false) {
            Ok(e) => e,
            Err(e) => return fatal(&e),
        };
        match parse_object(options.as_deref()) {
            Ok(defaults) => finish(run(lines, &mut |line| {
                prepare(line, &defaults, embedder.as_ref())
            })),
            Err(e) => usage(&e),
        }
    }

    /// `condense query`: the index read once, then the embedder of its kind.
    fn query_command(
        lines: &mut Lines<'_>,
        index: &std::path::Path,
        options: Option<String>,
        model_dir: Option<std::path::PathBuf>,
        threads: usize,
    ) -> ExitCode {
        let defaults = match parse_object(options.as_deref()) {
            Ok(d) => d,
            Err(e) => return usage(&e),
        };
        if let Err(e) = QueryOptions::from_value(&Value::Object(defaults.clone())) {
            return usage(&e);
        }
        let loaded = std::fs::read(index)
            .map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "--index",
                    format!("{}: {e}", index.display()),
                )
            })
            .and_then(|bytes| Index::deserialize(&bytes));
        let index = match loaded {
            Ok(i) => i,
            Err(e) => return fatal(&e),
        };
        let model = ModelArgs {
            model_dir,
            lexical: index.identity().kind == condense::embed::EmbedderKind::Lexical,
            threads,
        };
        match load_embedder(&model) {
            Ok(embedder) => finish(run(lines, &mut |line| {
                query(line, &index, &embedder, &defaults)
            })),
            Err(e) => fatal(&e),
        }
    }

    /// The embedder of `compress` and `prepare`, on one thread: loaded only when asked for
    /// (`--model-dir`, `--lexical`, or `needed`: the model's token counter), else none.
    fn optional_embedder(
        model_dir: Option<std::path::PathBuf>,
        lexical: bool,
        needed: bool,
    ) -> Result<Option<Embedder>, Error> {
        if !(needed || lexical || model_dir.is_some()) {
            return Ok(None);
        }
        load_embedder(&ModelArgs {
            model_dir,
            lexical,
            threads: 1,
        })
        .map(Some)
    }

    /// The exit code after the lines: 0 if every line answered, 1 if some line failed or
    /// output failed.
    fn finish(result: io::Result<bool>) -> ExitCode {
        match result {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("condense: {e}");
                ExitCode::from(1)
            }
        }
    }

    fn fatal(e: &Error) -> ExitCode {
        eprintln!("condense: {e}");
        ExitCode::from(1)
    }

    fn usage(e: &Error) -> ExitCode {
        eprintln!("condense: {e}");
        ExitCode::from(2)
    }

    fn parse_defaults(options: Option<&str>) -> Result<Map<String, Value>, Error> {
        let map = parse_object(options)?;
        // Check the defaults alone, so a typo is a usage error, not one per line.
        WatermarkOptions::from_value(&Value::Object(map.clone()))?;
        Ok(map)
    }

    fn parse_object(options: Option<&str>) -> Result<Map<String, Value>, Error> {
        let Some(text) = options else {
            return Ok(Map::new());
        };
        condense::message::check_json(text, "options", condense::message::MAX_DEPTH)?;
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(Error::new(
                ErrorKind::InvalidOptions,
                "options",
                "expected a JSON object",
            )),
            Err(e) => Err(Error::new(ErrorKind::InvalidJson, "options", e.to_string())),
        }
    }

    /// Where the JSONL lines come from and go.
    struct Lines<'a> {
        input: &'a mut dyn BufRead,
        output: &'a mut dyn Write,
    }

    /// A line handler: the output line, or the line's id (raw JSON) and its error.
    type LineResult = Result<String, (Option<String>, Error)>;

    /// Runs `f` over every non-empty input line, one output line for each: what `f` answers,
    /// or an error line. `Ok(false)` when some line failed. A line that is not UTF-8 or whose
    /// JSON repeats a key gets an `invalid_json` error line, and the next lines go on.
    fn run(lines: &mut Lines<'_>, f: &mut dyn FnMut(&str) -> LineResult) -> io::Result<bool> {
        let mut out = BufWriter::new(&mut *lines.output);
        let mut ok = true;
        let mut buf = Vec::new();
        let mut n = 0usize;
        loop {
            buf.clear();
            if lines.input.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            n += 1;
            // As `BufRead::lines`: without the `\n` and a `\r` before it.
            if buf.last() == Some(&b'\n') {
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
            }
            let result = match std::str::from_utf8(&buf) {
                Ok(line) if line.trim().is_empty() => continue,
                Ok(line) => match condense::message::check_json(line, "", LINE_DEPTH) {
                    Ok(()) => f(line),
                    Err(e) => Err((line_id(line), e)),
                },
                Err(e) => Err((
                    None,
                    Error::new(
                        ErrorKind::InvalidJson,
                        "",
                        format!(
                            "line {n} is not UTF-8 (invalid byte at offset {}); JSON text is UTF-8",
                            e.valid_up_to()
                        ),
                    ),
                )),
            };
            match result {
                Ok(text) => writeln!(out, "{text}")?,
                Err((id, e)) => {
                    ok = false;
                    let id: Value = id
                        .and_then(|raw| serde_json::from_str(&raw).ok())
                        .unwrap_or(json!(n));
                    let err = json!({"id": id, "error": {"code": e.code(), "path": e.path(), "message": e.reason()}});
                    writeln!(out, "{err}")?;
                }
            }
        }
        out.flush()?;
        Ok(ok)
    }

    /// How deep a line nests: a message's own limit, plus the line object and its `messages`.
    const LINE_DEPTH: usize = condense::message::MAX_MESSAGE_DEPTH + 2;

    /// The id of a line refused before its handler read it (raw JSON), when it has a readable one.
    fn line_id(text: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct Ids<'a> {
            #[serde(default, borrow)]
            id: Option<&'a RawValue>,
            #[serde(default, borrow)]
            task_id: Option<&'a RawValue>,
            #[serde(default, borrow, rename = "_id")]
            under_id: Option<&'a RawValue>,
        }
        let ids: Ids<'_> = serde_json::from_str(text).ok()?;
        ids.id
            .or(ids.task_id)
            .or(ids.under_id)
            .map(|r| r.get().to_string())
    }

    fn read_line(text: &str) -> Result<(Line<'_>, String), (Option<String>, Error)> {
        let line: Line<'_> = serde_json::from_str(text).map_err(|e| {
            let kind = if e.is_syntax() || e.is_eof() {
                ErrorKind::InvalidJson
            } else {
                ErrorKind::InvalidInput
            };
            (None, Error::new(kind, "", e.to_string()))
        })?;
        let id = line
            .id
            .or(line.task_id)
            .map(|r| r.get().to_string())
            .unwrap_or_else(|| "null".into());
        Ok((line, id))
    }

    /// A line, its id (raw JSON) and its required `messages`.
    #[allow(clippy::type_complexity)]
    fn read_messages(text: &str) -> Result<(Line<'_>, String, &RawValue), (Option<String>, Error)> {
        let (line, id) = read_line(text)?;
        match line.messages {
            Some(messages) => Ok((line, id, messages)),
            None => Err((
                Some(id),
                Error::new(ErrorKind::InvalidInput, "messages", "missing"),
            )),
        }
    }

    fn watermark(
        text: &str,
        defaults: &Map<String, Value>,
    ) -> Result<String, (Option<String>, Error)> {
        let (line, id, messages) = read_messages(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let options = merged(defaults, line.options).map_err(fail)?;
        let options = WatermarkOptions::from_value(&options).map_err(fail)?;
        let state = match &line.state {
            None => WatermarkState::default(),
            Some(v) => WatermarkState::from_value(v).map_err(fail)?,
        };
        let out = apply_watermark_json(messages.get(), &state, &options).map_err(fail)?;
        Ok(format!(
            "{{\"id\":{id},\"messages\":{},\"state\":{},\"stats\":{},\"warnings\":{}}}",
            out.json,
            to_json(&out.state),
            to_json(&out.stats),
            to_json(&out.warnings),
        ))
    }

    /// The defaults with a line's own options over them, key by key.
    fn merged(defaults: &Map<String, Value>, own: Option<Value>) -> Result<Value, Error> {
        let mut options = defaults.clone();
        match own {
            None | Some(Value::Null) => {}
            Some(Value::Object(own)) => options.extend(own),
            Some(_) => {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "options",
                    "expected a JSON object",
                ))
            }
        }
        Ok(Value::Object(options))
    }

    fn compress(
        text: &str,
        defaults: &Map<String, Value>,
        embedder: Option<&Embedder>,
        shared: Option<&RefCell<CompressCache>>,
    ) -> Result<String, (Option<String>, Error)> {
        let (line, id, messages) = read_messages(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let options = CompressOptions::from_value(&merged(defaults, line.options).map_err(fail)?)
            .map_err(fail)?;
        let key = cache_key();
        let mut own = match (&line.cache, &key) {
            (Some(v), Some(k)) => {
                Some(CompressCache::from_value_keyed(v, "cache", k).map_err(fail)?)
            }
            (Some(v), None) => Some(CompressCache::from_value(v, "cache").map_err(fail)?),
            (None, _) => None,
        };
        let mut shared = shared.map(RefCell::borrow_mut);
        let cache = match (&mut own, &mut shared) {
            (Some(c), _) => Some(c),
            (None, Some(c)) => Some(&mut **c),
            (None, None) => None,
        };
        let ctx = CompressContext::new()
            .with_embedder(embedder)
            .with_cache(cache);
        let start = std::time::Instant::now();
        let out = compress_json(messages.get(), &options, ctx).map_err(fail)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let key = if line.task_id.is_some() {
            "task_id"
        } else {
            "id"
        };
        let mut trace = match &out.trace {
            Some(t) => format!(",\"trace\":{}", to_json(t)),
            None => String::new(),
        };
        if let Some(fits) = out.stats.fits {
            // The metric reads `fits` at the top level.
            trace.push_str(&format!(",\"fits\":{fits}"));
        }
        if let Some(c) = &own {
            trace.push_str(&format!(",\"cache\":{}", c.to_json()));
        }
        Ok(format!(
            "{{\"{key}\":{id},\"messages\":{},\"verbatim\":{},\"stats\":{},\"ms\":{ms:.3}{trace}}}",
            out.json,
            out.verbatim,
            to_json(&out.stats),
        ))
    }

    /// The secret key caches are bound to: `$CONDENSE_CACHE_KEY`, when set and not empty.
    fn cache_key() -> Option<Vec<u8>> {
        std::env::var("CONDENSE_CACHE_KEY")
            .ok()
            .filter(|k| !k.is_empty())
            .map(String::into_bytes)
    }

    fn prepare(
        text: &str,
        defaults: &Map<String, Value>,
        embedder: Option<&Embedder>,
    ) -> Result<String, (Option<String>, Error)> {
        let (line, id) = read_line(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let options =
            PrepareContextOptions::from_value(&merged(defaults, line.options).map_err(fail)?)
                .map_err(fail)?;
        let chunks = line
            .chunks
            .ok_or_else(|| fail(Error::new(ErrorKind::InvalidInput, "chunks", "missing")))?;
        let start = std::time::Instant::now();
        let out = prepare_context(&chunks, &options, embedder).map_err(fail)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(format!(
            "{{\"id\":{id},\"text\":{},\"chunks\":{},\"stats\":{},\"ms\":{ms:.3}}}",
            to_json(&out.text),
            to_json(&out.chunks),
            to_json(&out.stats),
        ))
    }

    fn uncompress(text: &str) -> Result<String, (Option<String>, Error)> {
        let (line, id, messages) = read_messages(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let verbatim = line.verbatim.map(|v| v.get()).unwrap_or("{}");
        let json = uncompress_json(messages.get(), verbatim).map_err(fail)?;
        Ok(format!("{{\"id\":{id},\"messages\":{json}}}"))
    }

    fn validate(text: &str, format: Option<Format>) -> Result<String, (Option<String>, Error)> {
        let (_, id, messages) = read_messages(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let report = validate_json(messages.get(), &ValidateOptions { format }).map_err(fail)?;
        let body = serde_json::to_string(&report)
            .map_err(|e| fail(Error::new(ErrorKind::Internal, "", e.to_string())))?;
        // {"valid":…} → {"id":…,"valid":…}
        Ok(format!("{{\"id\":{id},{}", &body[1..]))
    }

    fn model_dir(args: &ModelArgs) -> std::path::PathBuf {
        args.model_dir
            .clone()
            .or_else(|| std::env::var_os("CONDENSE_MODEL_DIR").map(Into::into))
            .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models"))
    }

    fn load_embedder(args: &ModelArgs) -> Result<Embedder, Error> {
        if args.lexical {
            return Ok(Embedder::lexical());
        }
        let dir = model_dir(args);
        load_model(&dir, args.threads)
    }

    #[cfg(feature = "embed")]
    fn load_model(dir: &std::path::Path, threads: usize) -> Result<Embedder, Error> {
        let read = |name: &str| {
            std::fs::read(dir.join(name)).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidModel,
                    name,
                    format!(
                        "{}: {e} (run scripts/fetch-models, pass --model-dir, or --lexical)",
                        dir.join(name).display()
                    ),
                )
            })
        };
        let options = condense::embed::EmbedOptions {
            threads,
            ..condense::embed::EmbedOptions::default()
        };
        Embedder::from_bytes_with(&read("model.onnx")?, &read("tokenizer.json")?, options)
    }

    #[cfg(not(feature = "embed"))]
    fn load_model(_dir: &std::path::Path, _threads: usize) -> Result<Embedder, Error> {
        Err(Error::new(
            ErrorKind::InvalidModel,
            "model",
            "this condense was built without the `embed` feature: pass --lexical, or build with \
             `cargo build --release --features embed`",
        ))
    }

    fn embed(text: &str, embedder: &Embedder) -> Result<String, (Option<String>, Error)> {
        #[derive(Deserialize)]
        struct EmbedLine<'a> {
            #[serde(default, borrow)]
            id: Option<&'a RawValue>,
            text: Option<String>,
        }
        let line: EmbedLine<'_> = serde_json::from_str(text)
            .map_err(|e| (None, Error::new(ErrorKind::InvalidInput, "", e.to_string())))?;
        let id = line
            .id
            .map(|r| r.get().to_string())
            .unwrap_or_else(|| "null".into());
        let Some(t) = line.text else {
            return Err((
                Some(id),
                Error::new(ErrorKind::InvalidInput, "text", "missing"),
            ));
        };
        let v = embedder.embed_one(&t).map_err(|e| (Some(id.clone()), e))?;
        Ok(format!(
            "{{\"id\":{id},\"vector\":{}}}",
            to_json(&v.to_vec())
        ))
    }

    fn build_index(
        docs: &std::path::Path,
        out: &std::path::Path,
        model: &ModelArgs,
        options: IndexOptions,
        progress: bool,
    ) -> ExitCode {
        let result = (|| -> Result<Index, Error> {
            let embedder = load_embedder(model)?;
            let text = std::fs::read_to_string(docs).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "--docs",
                    format!("{}: {e}", docs.display()),
                )
            })?;
            let mut documents = Vec::new();
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let doc: Document =
                    condense::error::read_json(line, ErrorKind::InvalidInput, "document")
                        .map_err(|e| e.with_path_prefix(&format!("--docs line {}", n + 1)))?;
                documents.push(doc);
            }
            let mut index = Index::new(&embedder, options)?;
            let start = std::time::Instant::now();
            let mut last = String::new();
            index.add(&documents, &embedder, &mut |p| {
                if progress {
                    let line = format!("{} {}/{}", p.phase, p.done, p.total);
                    if line != last {
                        eprintln!(
                            "condense index: {line} ({:.1} s)",
                            start.elapsed().as_secs_f64()
                        );
                        last = line;
                    }
                }
            })?;
            if progress {
                eprintln!(
                    "condense index: {} documents, {} chunks, {} graphs in {:.1} s",
                    index.len(),
                    index.chunks(),
                    index.graphs(),
                    start.elapsed().as_secs_f64()
                );
            }
            Ok(index)
        })();
        let written = result.and_then(|index| {
            let bytes = index.serialize()?;
            std::fs::write(out, &bytes).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidInput,
                    "--out",
                    format!("{}: {e}", out.display()),
                )
            })
        });
        match written {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fatal(&e),
        }
    }

    fn query(
        text: &str,
        index: &Index,
        embedder: &Embedder,
        defaults: &Map<String, Value>,
    ) -> Result<String, (Option<String>, Error)> {
        #[derive(Deserialize)]
        struct QueryLine<'a> {
            #[serde(default, borrow, alias = "_id")]
            id: Option<&'a RawValue>,
            #[serde(default, alias = "question")]
            text: Option<String>,
            #[serde(default)]
            options: Option<Value>,
        }
        let line: QueryLine<'_> = serde_json::from_str(text)
            .map_err(|e| (None, Error::new(ErrorKind::InvalidInput, "", e.to_string())))?;
        let id = line
            .id
            .map(|r| r.get().to_string())
            .unwrap_or_else(|| "null".into());
        let fail = |e: Error| (Some(id.clone()), e);
        let options = QueryOptions::from_value(&merged(defaults, line.options).map_err(fail)?)
            .map_err(fail)?;
        let Some(question) = line.text else {
            return Err(fail(Error::new(ErrorKind::InvalidInput, "text", "missing")));
        };
        let start = std::time::Instant::now();
        let out = index.query(&question, &options, embedder).map_err(fail)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        let body = to_json(&out);
        // {"results":…} → {"id":…,"results":…,"ms":…}
        Ok(format!(
            "{{\"id\":{id},{},\"ms\":{ms:.3}}}",
            body.get(1..body.len().saturating_sub(1)).unwrap_or("")
        ))
    }

    /// Our result types are plain data: serialising them cannot fail.
    fn to_json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    }
}

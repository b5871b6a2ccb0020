//! The `condense` CLI (DESIGN.md §7): JSONL in, JSONL out, one output line per input line.
//!
//! A bad line stops nothing: its output line is `{"id": …, "error": {code, path, message}}`
//! and the exit code is 1 at the end; usage errors exit 2.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(not(target_arch = "wasm32"))]
mod cli {
    use std::io::{self, BufRead, BufWriter, Write};
    use std::process::ExitCode;

    use clap::{Parser, Subcommand, ValueEnum};
    use condense::compress::{compress_json, uncompress_json, CompressOptions};
    use condense::message::{validate_json, Format, ValidateOptions};
    use condense::watermark::{apply_watermark_json, WatermarkOptions, WatermarkState};
    use condense::{Error, ErrorKind};
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use serde_json::{json, Map, Value};

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
        #[serde(default, borrow)]
        verbatim: Option<&'a RawValue>,
    }

    pub fn main() -> ExitCode {
        let cli = match Cli::try_parse() {
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
        let result = match cli.command {
            Command::Compress { options } => match parse_object(options.as_deref()) {
                Ok(defaults) => match CompressOptions::from_value(&Value::Object(defaults.clone()))
                {
                    Ok(_) => run(|line| compress(line, &defaults)),
                    Err(e) => return usage(&e),
                },
                Err(e) => return usage(&e),
            },
            Command::Uncompress => run(uncompress),
            Command::Watermark { options } => match parse_defaults(options.as_deref()) {
                Ok(defaults) => run(|line| watermark(line, &defaults)),
                Err(e) => return usage(&e),
            },
            Command::Validate { format } => {
                let format = format.map(|f| match f {
                    FormatArg::Anthropic => Format::Anthropic,
                    FormatArg::Openai => Format::OpenAi,
                });
                run(|line| validate(line, format))
            }
        };
        match result {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("condense: {e}");
                ExitCode::from(1)
            }
        }
    }

    fn usage(e: &Error) -> ExitCode {
        eprintln!("condense: --options: {e}");
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

    /// Runs `f` over every non-empty stdin line; `Ok(false)` when some line failed.
    fn run(mut f: impl FnMut(&str) -> Result<String, (Option<String>, Error)>) -> io::Result<bool> {
        let stdin = io::stdin().lock();
        let mut out = BufWriter::new(io::stdout().lock());
        let mut ok = true;
        for (n, line) in stdin.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            match f(&line) {
                Ok(text) => writeln!(out, "{text}")?,
                Err((id, e)) => {
                    ok = false;
                    let id: Value = id
                        .and_then(|raw| serde_json::from_str(&raw).ok())
                        .unwrap_or(json!(n + 1));
                    let err = json!({"id": id, "error": {"code": e.code(), "path": e.path(), "message": e.reason()}});
                    writeln!(out, "{err}")?;
                }
            }
        }
        out.flush()?;
        Ok(ok)
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
    ) -> Result<String, (Option<String>, Error)> {
        let (line, id, messages) = read_messages(text)?;
        let fail = |e: Error| (Some(id.clone()), e);
        let options = CompressOptions::from_value(&merged(defaults, line.options).map_err(fail)?)
            .map_err(fail)?;
        let start = std::time::Instant::now();
        let out = compress_json(messages.get(), &options).map_err(fail)?;
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
        Ok(format!(
            "{{\"{key}\":{id},\"messages\":{},\"verbatim\":{},\"stats\":{},\"ms\":{ms:.3}{trace}}}",
            out.json,
            out.verbatim,
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

    /// Our result types are plain data: serialising them cannot fail.
    fn to_json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap_or_else(|_| "null".into())
    }
}

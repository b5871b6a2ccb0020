//! Options and state of `applyWatermark`: one struct each, shared by Rust, wasm and the CLI.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use crate::error::{read_json, read_value, Error, ErrorKind};
use crate::message::Format;

/// The checkpoint tools recognised by default (with or without an `mcp__<server>__` prefix).
pub const DEFAULT_CHECKPOINT_TOOLS: [&str; 2] = ["compress_to_checkpoint", "deactivate_augments"];

/// The caller-kept state: the id of the tool call that is the current watermark.
///
/// JSON: `{"watermark": "toolu_01…"}` or `{"watermark": null}` (also `{}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatermarkState {
    /// The tool call id of the checkpoint everything before which is pruned; `None` before the
    /// first checkpoint.
    #[serde(default)]
    pub watermark: Option<String>,
}

impl WatermarkState {
    /// Reads a state from JSON text; errors name the field (`state.watermark`).
    pub fn from_json(json: &str) -> Result<WatermarkState, Error> {
        let state: WatermarkState = read_json(json, ErrorKind::InvalidState, "state")?;
        state.check()
    }

    /// Reads a state from a JSON value (`null` is the empty state).
    pub fn from_value(value: &serde_json::Value) -> Result<WatermarkState, Error> {
        if value.is_null() {
            return Ok(WatermarkState::default());
        }
        let state: WatermarkState = read_value(value, ErrorKind::InvalidState, "state")?;
        state.check()
    }

    fn check(self) -> Result<WatermarkState, Error> {
        if self.watermark.as_deref() == Some("") {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "state.watermark",
                "the watermark is a tool call id and cannot be empty (use null for none)",
            ));
        }
        Ok(self)
    }
}

/// Options of `applyWatermark`. JSON keys are camelCase; unknown keys are refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WatermarkOptions {
    /// Tool names that set a checkpoint. A call named `NAME` or `mcp__<server>__NAME` matches.
    /// Default: `["compress_to_checkpoint", "deactivate_augments"]`.
    pub checkpoint_tools: Vec<String>,
    /// Keep the last N tool call/result pairs before the watermark whole. Default 0.
    pub keep_last_tool_results: usize,
    /// Tool names or globs (`*`, `?`, `[abc]`, `{a,b}`) whose pairs are kept whole, e.g.
    /// `"mcp__memory__*"`. Matched against the full name. Default: none.
    pub exclude_tools: Vec<String>,
    /// Instead of removing a pair, keep the call and replace the result's content with a short
    /// marker naming the tool, the id and the size — only where the marker is shorter.
    /// Server tool pairs are always removed whole. Default false.
    pub placeholder: bool,
    /// With `placeholder`, replace the inputs (arguments) of the kept calls by `{}`.
    /// Default false.
    pub clear_tool_inputs: bool,
    /// Keep thinking blocks before the watermark (Anthropic). By default they are removed with
    /// the tool history they reasoned about; the current tool turn's thinking is always kept.
    /// Default false.
    pub keep_thinking: bool,
    /// Force a provider's shape instead of detecting it.
    pub format: Option<Format>,
}

impl Default for WatermarkOptions {
    fn default() -> Self {
        WatermarkOptions {
            checkpoint_tools: DEFAULT_CHECKPOINT_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            keep_last_tool_results: 0,
            exclude_tools: Vec::new(),
            placeholder: false,
            clear_tool_inputs: false,
            keep_thinking: false,
            format: None,
        }
    }
}

impl WatermarkOptions {
    /// Reads options from JSON text; errors name the field (`options.excludeTools[1]`).
    pub fn from_json(json: &str) -> Result<WatermarkOptions, Error> {
        let o: WatermarkOptions = read_json(json, ErrorKind::InvalidOptions, "options")?;
        o.matchers()?;
        Ok(o)
    }

    /// Reads options from a JSON value (`null` is the defaults).
    pub fn from_value(value: &serde_json::Value) -> Result<WatermarkOptions, Error> {
        if value.is_null() {
            return Ok(WatermarkOptions::default());
        }
        let o: WatermarkOptions = read_value(value, ErrorKind::InvalidOptions, "options")?;
        o.matchers()?;
        Ok(o)
    }

    /// Compiles the name matchers, checking every glob.
    pub(crate) fn matchers(&self) -> Result<Matchers, Error> {
        let mut builder = GlobSetBuilder::new();
        for (i, pattern) in self.exclude_tools.iter().enumerate() {
            let glob = Glob::new(pattern).map_err(|e| {
                Error::new(
                    ErrorKind::InvalidOptions,
                    format!("options.excludeTools[{i}]"),
                    format!("invalid glob: {e}"),
                )
            })?;
            builder.add(glob);
        }
        let exclude = builder.build().map_err(|e| {
            Error::new(
                ErrorKind::InvalidOptions,
                "options.excludeTools",
                e.to_string(),
            )
        })?;
        for (i, name) in self.checkpoint_tools.iter().enumerate() {
            if name.is_empty() {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    format!("options.checkpointTools[{i}]"),
                    "a checkpoint tool name cannot be empty",
                ));
            }
        }
        Ok(Matchers {
            checkpoints: self.checkpoint_tools.clone(),
            exclude,
        })
    }
}

/// Compiled name tests.
pub(crate) struct Matchers {
    checkpoints: Vec<String>,
    exclude: GlobSet,
}

impl Matchers {
    /// `name` is a checkpoint tool: equal to one, or `mcp__<server>__<one>` with a non-empty
    /// server.
    pub(crate) fn is_checkpoint(&self, name: &str) -> bool {
        self.checkpoints.iter().any(|c| {
            name == c
                || name
                    .strip_prefix("mcp__")
                    .and_then(|rest| rest.strip_suffix(c.as_str()))
                    .and_then(|server| server.strip_suffix("__"))
                    .is_some_and(|server| !server.is_empty())
        })
    }

    /// `name` matches an `excludeTools` entry.
    pub(crate) fn is_excluded(&self, name: &str) -> bool {
        !self.exclude.is_empty() && self.exclude.is_match(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_names() {
        let m = WatermarkOptions::default().matchers().unwrap();
        assert!(m.is_checkpoint("compress_to_checkpoint"));
        assert!(m.is_checkpoint("mcp__nisaba__deactivate_augments"));
        assert!(m.is_checkpoint("mcp__my_server__compress_to_checkpoint"));
        assert!(!m.is_checkpoint("mcp____compress_to_checkpoint"));
        assert!(!m.is_checkpoint("xcompress_to_checkpoint"));
        assert!(!m.is_checkpoint("mcp__s__xcompress_to_checkpoint"));
        assert!(!m.is_checkpoint("activate_augments"));
    }

    #[test]
    fn globs() {
        let o = WatermarkOptions {
            exclude_tools: vec!["mcp__memory__*".into(), "read_file".into()],
            ..Default::default()
        };
        let m = o.matchers().unwrap();
        assert!(m.is_excluded("mcp__memory__store"));
        assert!(m.is_excluded("read_file"));
        assert!(!m.is_excluded("read_files"));
    }

    #[test]
    fn option_errors_name_the_field() {
        let e = WatermarkOptions::from_json(r#"{"excludeTools": ["a", 3]}"#).unwrap_err();
        assert_eq!(
            (e.code(), e.path()),
            ("invalid_options", "options.excludeTools[1]")
        );
        let e = WatermarkOptions::from_json(r#"{"keepLast": 3}"#).unwrap_err();
        assert_eq!(e.code(), "invalid_options");
        assert!(e.reason().contains("keepLast"), "{}", e.reason());
        let e = WatermarkOptions::from_json(r#"{"excludeTools": ["a[", "b"]}"#).unwrap_err();
        assert_eq!(e.path(), "options.excludeTools[0]");
        let e = WatermarkOptions::from_json(r#"{"keepLastToolResults": -1}"#).unwrap_err();
        assert_eq!(e.path(), "options.keepLastToolResults");
        let e = WatermarkOptions::from_json(r#"{"format": "gemini"}"#).unwrap_err();
        assert_eq!(e.path(), "options.format");
        let e = WatermarkOptions::from_json("{").unwrap_err();
        assert_eq!(e.code(), "invalid_json");
    }

    #[test]
    fn state_errors() {
        let e = WatermarkState::from_json(r#"{"watermark": 5}"#).unwrap_err();
        assert_eq!((e.code(), e.path()), ("invalid_state", "state.watermark"));
        let e = WatermarkState::from_json(r#"{"watermark": ""}"#).unwrap_err();
        assert_eq!(e.code(), "invalid_state");
        let e = WatermarkState::from_json(r#"{"waterMark": "x"}"#).unwrap_err();
        assert_eq!(e.code(), "invalid_state");
        assert_eq!(
            WatermarkState::from_json("{}").unwrap(),
            WatermarkState::default()
        );
        assert_eq!(
            WatermarkState::from_value(&serde_json::Value::Null).unwrap(),
            WatermarkState::default()
        );
    }
}

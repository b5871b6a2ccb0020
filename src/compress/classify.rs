//! Stage 2, classify: what each message and each unit *is*, decided once per call (in the order
//! of docs/design.md, "The compress pipeline") — and, for a given plan, which messages stay
//! verbatim.
//!
//! Static, per unit ([`UnitInfo`], computed on first use): short, already compressed, a
//! caller's pattern, code fences, JSON tool output (parsed once; a Python literal read as JSON),
//! line-structured tool output, hard verbatim content. Per message: importance (opt-in).
//! Per conversation: duplicates (exact; near-duplicates with `fuzzyDedup` or under a budget),
//! the large JSON values repeated in newer tool outputs, corrections (opt-in).
//!
//! Per plan ([`Classes::preserve`]): preserved roles, the recency window, tool-call carriers
//! (unless the budget condenses their arguments), importance; and the range the budget folds.

use std::borrow::Cow;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::Value;

use super::dedup::{self, DedupMemo};
use super::fold;
use super::json::SeenValues;
use super::options::CompressOptions;
use super::parse::{message_text, Parsed, UnitKind, Units};
use super::pylit;
use super::{contradiction, importance};
use crate::message::Role;
use crate::text::hash::FastMap;
use crate::text::{count_chars, detect, fences};

/// The texts that mark content `compress` already rewrote: kept as they are.
pub(super) const MARKERS: [&str; 5] = ["[summary", "[dup#", "[dup of", "[truncated", "[condense:"];

/// What a unit is, independent of how hard a plan compresses.
#[derive(Clone, Debug, Default)]
pub(super) struct UnitInfo {
    /// Characters.
    pub chars: usize,
    /// Shorter than `minChars`.
    pub short: bool,
    /// Starts with a marker of an earlier compression.
    pub marker: bool,
    /// Matches one of `preservePatterns`.
    pub pattern: bool,
    /// Has a code fence (with `preserveCode`): the characters of its prose.
    pub fence: Option<usize>,
    /// Tool output that is a JSON object or array (or a Python literal of one): its index in
    /// [`Classes::json`].
    pub json: Option<usize>,
    /// Tool output of lines (grep, test and log output).
    pub structured: bool,
    /// Hard verbatim content (code, JSON, SQL, diffs, stack traces, secrets, tables).
    pub hard: Option<&'static str>,
    /// Prose of a `user` message: its facts are kept ([`crate::text::facts`]).
    pub user: bool,
}

/// Which messages a plan keeps verbatim and why, and the range it folds.
pub(super) struct Preservation {
    /// Per message: the reason it is kept verbatim, if it is.
    pub kept: Vec<Option<Cow<'static, str>>>,
    /// Per message: its tool-call arguments are condensed.
    pub condense: Vec<bool>,
    /// The oldest messages folded into one summary.
    pub fold: Range<usize>,
}

/// The per-call classification (see the module docs).
pub(super) struct Classes<'v> {
    infos: Vec<OnceCell<UnitInfo>>,
    /// Parsed JSON tool outputs, by the index in [`UnitInfo::json`].
    pub json: Vec<Value>,
    /// For each unit, its JSON (parsed once here, whatever its kind).
    json_of_unit: Vec<Option<usize>>,
    /// The JSON tool outputs serde_json parsed (not Python literals), by their text's address
    /// and length: [`Classes::output_json`].
    json_of_text: FastMap<(usize, usize), usize>,
    /// Large values of JSON tool outputs and the newest message holding each.
    pub seen: SeenValues<'v>,
    /// Importance scores (with `importanceScoring`).
    importance: Vec<Option<f64>>,
    /// Message texts (for importance and contradiction detection, opt-in).
    texts: Vec<String>,
    dedup_memo: DedupMemo,
    exact: OnceCell<Vec<Dup>>,
    fuzzy: OnceCell<Vec<Dup>>,
    /// Corrections by eligibility (which messages may be superseded).
    superseded: RefCell<BTreeMap<Vec<bool>, std::rc::Rc<Corrections>>>,
    _units: std::marker::PhantomData<&'v ()>,
}

/// The messages later corrections supersede: superseded index → (correcting index, signal).
pub(super) type Corrections = BTreeMap<usize, (usize, String)>;

/// A unit's newer copy: the message and, for a near-duplicate, the similarity in percent.
pub(super) type Dup = Option<(usize, Option<u32>)>;

impl<'v> Classes<'v> {
    /// Classifies what does not depend on a plan (see the module docs).
    pub(super) fn new(
        parsed: &Parsed<'v>,
        units: &Units<'v>,
        options: &CompressOptions,
    ) -> Classes<'v> {
        // JSON tool outputs, parsed once: for their renderings and for the large values
        // repeated in newer outputs.
        let mut json = Vec::new();
        // Which values were parsed as JSON (a Python literal's numbers are kept only where
        // serde_json writes them as the tool did: `pylit`).
        let mut is_json = Vec::new();
        let mut json_of_unit = vec![None; units.all.len()];
        for (u, unit) in units.all.iter().enumerate() {
            if unit.kind != UnitKind::ToolOutput {
                continue;
            }
            let value = match serde_json::from_str::<Value>(unit.text) {
                Ok(v @ (Value::Object(_) | Value::Array(_))) => Some((v, true)),
                Ok(_) => None,
                Err(_) => pylit::parse(unit.text).map(|v| (v, false)),
            };
            if let Some((v, from_json)) = value {
                json_of_unit[u] = Some(json.len());
                json.push(v);
                is_json.push(from_json);
            }
        }
        // Recorded once every value is in place (SeenValues remembers nodes by address).
        let mut seen = SeenValues::default();
        let mut json_of_text = FastMap::default();
        for (u, j) in json_of_unit.iter().enumerate() {
            if let Some(j) = j {
                let msg = units.all[u].msg;
                seen.add(&json[*j], msg, &parsed.name(msg));
                if is_json[*j] {
                    let text = units.all[u].text;
                    seen.add_written(text, &json[*j]);
                    json_of_text.insert((text.as_ptr() as usize, text.len()), *j);
                }
            }
        }
        let texts: Vec<String> = if options.importance_scoring || options.contradiction_detection {
            parsed.values.iter().map(message_text).collect()
        } else {
            Vec::new()
        };
        let importance = (0..parsed.len())
            .map(|i| {
                if !options.importance_scoring {
                    return None;
                }
                let t = texts.get(i)?;
                if count_chars(t) < options.min_chars
                    || MARKERS.iter().any(|m| t.trim_start().starts_with(m))
                {
                    return None;
                }
                let score = importance::score(&texts, i);
                (score >= options.importance_threshold).then_some(score)
            })
            .collect();
        Classes {
            infos: (0..units.all.len()).map(|_| OnceCell::new()).collect(),
            json,
            json_of_unit,
            json_of_text,
            seen,
            importance,
            texts,
            dedup_memo: DedupMemo::default(),
            exact: OnceCell::new(),
            fuzzy: OnceCell::new(),
            superseded: RefCell::default(),
            _units: std::marker::PhantomData,
        }
    }

    /// The JSON serde_json parsed from the tool output `text` (a unit's own text, by address),
    /// if it did: its numbers as written are in [`Classes::seen`].
    pub(super) fn output_json(&self, text: &str) -> Option<&Value> {
        let j = self
            .json_of_text
            .get(&(text.as_ptr() as usize, text.len()))?;
        self.json.get(*j)
    }

    /// What unit `u` is (computed on first use, in the classification's order: a short text is
    /// not examined further).
    pub(super) fn info(
        &self,
        u: usize,
        parsed: &Parsed<'v>,
        units: &Units<'v>,
        options: &CompressOptions,
    ) -> &UnitInfo {
        self.infos[u].get_or_init(|| {
            let unit = units.all[u];
            let t = unit.text;
            let chars = count_chars(t);
            let mut info = UnitInfo {
                chars,
                short: chars < options.min_chars,
                ..UnitInfo::default()
            };
            if info.short {
                return info;
            }
            info.marker = MARKERS.iter().any(|m| t.trim_start().starts_with(m));
            if info.marker {
                return info;
            }
            info.pattern = parsed.patterns.iter().any(|p| p.is_match(t));
            if options.preserve_code && fences::has_fence(t) {
                info.fence = Some(fences::prose_chars(t));
            }
            info.json = self.json_of_unit[u];
            match unit.kind {
                UnitKind::ToolOutput => {
                    if info.json.is_none() {
                        info.structured = detect::is_structured(t);
                        if !info.structured {
                            info.hard = detect::hard(t).map(|h| h.as_str());
                        }
                    }
                }
                UnitKind::Prose => {
                    info.hard = detect::hard(t).map(|h| h.as_str());
                    info.user = parsed.views[unit.msg].role() == Some(Role::User);
                }
            }
            info
        })
    }

    /// The newer copy of every unit: exact duplicates, or with `fuzzy` near-duplicates too
    /// (line Jaccard ≥ `fuzzyThreshold`). Computed once per kind.
    pub(super) fn dups(
        &self,
        fuzzy: bool,
        parsed: &Parsed<'v>,
        units: &Units<'v>,
        options: &CompressOptions,
    ) -> &[Dup] {
        let cell = if fuzzy { &self.fuzzy } else { &self.exact };
        cell.get_or_init(|| {
            dedup::find(
                &units.all,
                parsed.values,
                options.min_chars,
                fuzzy.then_some(options.fuzzy_threshold),
                &self.dedup_memo,
            )
        })
    }

    /// The messages a later correction supersedes, among the `eligible` ones (with
    /// `contradictionDetection`; empty without).
    pub(super) fn superseded(
        &self,
        eligible: Vec<bool>,
        parsed: &Parsed<'v>,
        options: &CompressOptions,
    ) -> std::rc::Rc<Corrections> {
        if !options.contradiction_detection {
            return std::rc::Rc::default();
        }
        if let Some(found) = self.superseded.borrow().get(&eligible) {
            return std::rc::Rc::clone(found);
        }
        let roles: Vec<&str> = parsed.views.iter().map(|v| v.role.as_ref()).collect();
        let found = std::rc::Rc::new(contradiction::find(&self.texts, &roles, &eligible));
        self.superseded
            .borrow_mut()
            .insert(eligible, std::rc::Rc::clone(&found));
        found
    }

    /// Which messages a plan keeps verbatim (preserved roles, the recency window, tool-call
    /// carriers unless `condense_calls`, important messages when `importance`), which get
    /// condensed tool-call arguments, and the range it folds (`fold` messages at most; see
    /// [`fold::range`]).
    pub(super) fn preserve(
        &self,
        parsed: &Parsed<'v>,
        options: &CompressOptions,
        recency_window: usize,
        condense_calls: bool,
        importance: bool,
        fold: usize,
    ) -> Preservation {
        let n = parsed.len();
        let recency_from = n.saturating_sub(recency_window);
        let fold = fold::range(parsed, options, fold);
        let mut kept = Vec::with_capacity(n);
        let mut condense = vec![false; n];
        for (i, view) in parsed.views.iter().enumerate() {
            let reason: Option<Cow<'static, str>> = if fold.contains(&i) {
                None
            } else if parsed.preserved_role(i, options) {
                Some(format!("preserved role {}", view.role).into())
            } else if i >= recency_from {
                Some("recency window".into())
            } else if condense_calls && parsed.calls_tools(i) {
                condense[i] = true;
                None
            } else if parsed.has_openai_calls(i) {
                Some("carries tool calls".into())
            } else {
                self.importance
                    .get(i)
                    .copied()
                    .flatten()
                    .filter(|_| importance)
                    .map(|score| {
                        format!(
                            "importance {score:.2} ≥ threshold {}",
                            options.importance_threshold
                        )
                        .into()
                    })
            };
            kept.push(reason);
        }
        Preservation {
            kept,
            condense,
            fold,
        }
    }
}

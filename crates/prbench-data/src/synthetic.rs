//! A synthetic benchmark the size of the real one, for measuring the harness:
//! the three LaMP-QA configs with the real row counts (767 + 989 + 1,074 = 2,830), the real
//! parquet schema (PROTOCOL.md §1, Hugging Face layout `<config>/test-00000-of-00001.parquet`)
//! and about 100 MB of profile text.
//!
//! Text is made of pseudo-words drawn from a fixed vocabulary with a Zipf-like law, so BM25
//! retrieval sees a realistic term distribution. Every row is drawn from a ChaCha8 stream
//! seeded by (seed, row id), so a row depends only on those and the mean profile size
//! (`profile_bytes / total_rows`), not on the other rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder, StructBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use crate::error::DataError;

/// The real configs and their row counts (PROTOCOL.md §1).
pub const REAL_CONFIGS: [(&str, usize); 3] = [
    ("Art_and_Entertainment", 767),
    ("Lifestyle_and_Personal_Development", 989),
    ("Society_and_Culture", 1074),
];

/// Shape of a synthetic benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Rows per config, in [`REAL_CONFIGS`] order.
    pub rows: [usize; 3],
    /// Target profile text in bytes over all rows (the mean profile size is this / rows).
    pub profile_bytes: usize,
    /// Seed of every draw.
    pub seed: u64,
}

impl SyntheticSpec {
    /// The real benchmark's size: 2,830 rows and 100 MB (10^8 bytes) of profile text.
    pub fn full_scale(seed: u64) -> Self {
        Self { rows: REAL_CONFIGS.map(|(_, n)| n), profile_bytes: 100_000_000, seed }
    }

    /// The same shape scaled by `fraction` (rows and text, at least one row per config): for a
    /// quick run that exercises the same code.
    pub fn scaled(seed: u64, fraction: f64) -> Self {
        let full = Self::full_scale(seed);
        Self {
            rows: full.rows.map(|n| ((n as f64 * fraction).round() as usize).max(1)),
            profile_bytes: (full.profile_bytes as f64 * fraction) as usize,
            seed,
        }
    }

    /// Total rows.
    pub fn total_rows(&self) -> usize {
        self.rows.iter().sum()
    }
}

/// What [`write_synthetic`] wrote.
#[derive(Debug, Clone)]
pub struct SyntheticSummary {
    /// The parquet files, one per config.
    pub files: Vec<PathBuf>,
    /// Rows written.
    pub rows: usize,
    /// Profile posts written.
    pub posts: usize,
    /// Bytes of profile post text (UTF-8), the "data itself" of the memory target.
    pub profile_bytes: usize,
    /// Bytes of all string values (ids, questions, answers, rubric, profile).
    pub text_bytes: usize,
    /// Bytes on disk (snappy-compressed parquet).
    pub file_bytes: u64,
}

/// Version of what [`write_synthetic`] writes for a spec; a folder written by another version
/// holds other rows (callers put it in the folder name). Version 2: answers of
/// [`ANSWER_WORDS`] words (version 1 drew 600–1,800 bytes, 100–300 words, longer than PRB's).
pub const GENERATOR_VERSION: u32 = 2;

/// Words of a `chosen` or `rejected` answer: under PRB's 100 (PROTOCOL.md §1).
pub const ANSWER_WORDS: std::ops::Range<usize> = 40..100;

const VOCAB: usize = 20_000;
const SYLLABLES: [&str; 24] = [
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "an", "el", "or", "is", "um", "pra", "ste",
    "gli", "bor", "den", "fal", "hum", "jor", "ply", "que", "wen",
];

/// The pseudo-word vocabulary: word `i` spells `i` in base 24 with the syllables above.
fn vocabulary() -> Vec<String> {
    (0..VOCAB)
        .map(|i| {
            let mut n = i + 24;
            let mut w = String::new();
            while n > 0 {
                w.push_str(SYLLABLES[n % 24]);
                n /= 24;
            }
            w
        })
        .collect()
}

struct Words {
    vocab: Vec<String>,
    /// Cumulative Zipf(1) weights over `vocab`.
    cdf: Vec<f64>,
}

impl Words {
    fn new() -> Self {
        let vocab = vocabulary();
        let mut acc = 0.0;
        let cdf = (1..=VOCAB)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        Self { vocab, cdf }
    }

    fn word(&self, rng: &mut ChaCha8Rng) -> &str {
        let x = rng.random::<f64>() * self.cdf[VOCAB - 1];
        let i = self.cdf.partition_point(|&c| c < x).min(VOCAB - 1);
        &self.vocab[i]
    }

    /// About `bytes` bytes of sentences.
    fn text(&self, rng: &mut ChaCha8Rng, bytes: usize) -> String {
        self.sentences(rng, |s, _| s.len() >= bytes)
    }

    /// Sentences of exactly `n` words.
    fn text_words(&self, rng: &mut ChaCha8Rng, n: usize) -> String {
        self.sentences(rng, |_, words| words >= n)
    }

    /// Sentences of Zipf-drawn words (8 or more per sentence, then a full stop with chance
    /// 1/6), until `done(text, words)`.
    fn sentences(&self, rng: &mut ChaCha8Rng, done: impl Fn(&str, usize) -> bool) -> String {
        let mut s = String::new();
        let mut in_sentence = 0;
        let mut words = 0;
        while !done(&s, words) {
            if !s.is_empty() {
                s.push(' ');
            }
            let w = self.word(rng);
            if in_sentence == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    s.extend(f.to_uppercase());
                    s.push_str(c.as_str());
                }
            } else {
                s.push_str(w);
            }
            words += 1;
            in_sentence += 1;
            if in_sentence >= 8 && rng.random_range(0..6) == 0 {
                s.push('.');
                in_sentence = 0;
            }
        }
        if in_sentence > 0 {
            s.push('.');
        }
        s
    }
}

/// A ChaCha8 stream for one row: seeded by the first 8 bytes of sha256(seed, row id).
fn row_rng(seed: u64, id: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(id.as_bytes());
    let d = h.finalize();
    ChaCha8Rng::seed_from_u64(u64::from_le_bytes(d[..8].try_into().expect("8 bytes")))
}

fn string_fields(names: &[&str]) -> Fields {
    names.iter().map(|n| Field::new(*n, DataType::Utf8, false)).collect::<Vec<_>>().into()
}

/// The PRB parquet schema (PROTOCOL.md §1) with `Utf8` strings and `List` lists.
fn prb_schema() -> Schema {
    let item = |fields: &[&str]| Field::new("item", DataType::Struct(string_fields(fields)), true);
    Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("question", DataType::Utf8, false),
        Field::new("profile", DataType::List(Arc::new(item(&["category", "id", "text"]))), false),
        Field::new(
            "rubric_aspects",
            DataType::List(Arc::new(item(&["aspect", "evidence", "reason"]))),
            false,
        ),
        Field::new("narrative", DataType::Utf8, false),
        Field::new("category", DataType::Utf8, false),
        Field::new("chosen", DataType::Utf8, false),
        Field::new("rejected", DataType::Utf8, false),
    ])
}

fn list_of_structs(fields: &[&str]) -> ListBuilder<StructBuilder> {
    ListBuilder::new(StructBuilder::from_fields(string_fields(fields), 0)).with_field(Field::new(
        "item",
        DataType::Struct(string_fields(fields)),
        true,
    ))
}

/// Appends one struct of strings to a list builder's current list.
fn push_struct(list: &mut ListBuilder<StructBuilder>, values: [&str; 3]) {
    let s = list.values();
    for (i, v) in values.iter().enumerate() {
        s.field_builder::<StringBuilder>(i).expect("string field").append_value(v);
    }
    s.append(true);
}

fn write_err(path: &Path, e: impl std::fmt::Display) -> DataError {
    DataError::Write { file: path.display().to_string(), detail: e.to_string() }
}

const CATEGORIES: [&str; 6] = ["Movies", "Music", "Books", "Fitness", "Careers", "Community"];

/// Writes a synthetic benchmark under `dir` in the Hugging Face layout and returns what it wrote.
///
/// Per row: 2–6 rubric aspects, a question of 280–840 bytes, answers of [`ANSWER_WORDS`]
/// words (under 100, as PROTOCOL.md §1 has them), and a profile of posts of 200–1,500 bytes
/// whose total is drawn around the spec's mean profile size (uniform in [0.25, 1.75] × mean).
///
/// # Errors
/// [`DataError::Write`] naming the file when a folder or file cannot be written.
pub fn write_synthetic(dir: &Path, spec: &SyntheticSpec) -> Result<SyntheticSummary, DataError> {
    let words = Words::new();
    let mean_profile = spec.profile_bytes as f64 / spec.total_rows().max(1) as f64;
    let schema = Arc::new(prb_schema());
    let mut summary = SyntheticSummary {
        files: Vec::new(),
        rows: 0,
        posts: 0,
        profile_bytes: 0,
        text_bytes: 0,
        file_bytes: 0,
    };
    for ((config, _), &n_rows) in REAL_CONFIGS.iter().zip(&spec.rows) {
        let sub = dir.join(config);
        std::fs::create_dir_all(&sub).map_err(|e| write_err(&sub, e))?;
        let path = sub.join("test-00000-of-00001.parquet");
        let file = std::fs::File::create(&path).map_err(|e| write_err(&path, e))?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props))
            .map_err(|e| write_err(&path, e))?;
        let batch_rows = 128;
        let mut start = 0;
        while start < n_rows {
            let end = (start + batch_rows).min(n_rows);
            let mut cols: Vec<StringBuilder> = (0..6).map(|_| StringBuilder::new()).collect();
            let mut profile = list_of_structs(&["category", "id", "text"]);
            let mut rubric = list_of_structs(&["aspect", "evidence", "reason"]);
            for r in start..end {
                let id = format!("{config}-{r:05}");
                let mut rng = row_rng(spec.seed, &id);
                let target = (mean_profile * rng.random_range(0.25..1.75)) as usize;
                let mut got = 0;
                let mut p = 0;
                while got < target {
                    let len = rng.random_range(200..1500).min(target - got + 50);
                    let text = words.text(&mut rng, len);
                    got += text.len();
                    summary.posts += 1;
                    summary.profile_bytes += text.len();
                    summary.text_bytes += text.len();
                    let cat = CATEGORIES[rng.random_range(0..CATEGORIES.len())];
                    push_struct(&mut profile, [cat, &format!("{id}-p{p}"), &text]);
                    p += 1;
                }
                profile.append(true);
                for _ in 0..rng.random_range(2..=6) {
                    let a = [
                        words.text(&mut rng, 30),
                        words.text(&mut rng, 80),
                        words.text(&mut rng, 120),
                    ];
                    summary.text_bytes += a.iter().map(String::len).sum::<usize>();
                    push_struct(&mut rubric, [&a[0], &a[1], &a[2]]);
                }
                rubric.append(true);
                let q_bytes = rng.random_range(40..120) * 7;
                let (chosen_words, rejected_words) =
                    (rng.random_range(ANSWER_WORDS), rng.random_range(ANSWER_WORDS));
                let values = [
                    id.clone(),
                    format!("{}?", words.text(&mut rng, q_bytes).trim_end_matches('.')),
                    words.text(&mut rng, 400),
                    CATEGORIES[rng.random_range(0..CATEGORIES.len())].to_string(),
                    words.text_words(&mut rng, chosen_words),
                    words.text_words(&mut rng, rejected_words),
                ];
                for (b, v) in cols.iter_mut().zip(&values) {
                    summary.text_bytes += v.len();
                    b.append_value(v);
                }
                summary.rows += 1;
            }
            let [id, question, narrative, category, chosen, rejected] =
                cols.try_into().unwrap_or_else(|_| unreachable!("six builders"));
            let arrays: Vec<ArrayRef> = vec![
                Arc::new({
                    let mut b = id;
                    b.finish()
                }),
                Arc::new({
                    let mut b = question;
                    b.finish()
                }),
                Arc::new(profile.finish()),
                Arc::new(rubric.finish()),
                Arc::new({
                    let mut b = narrative;
                    b.finish()
                }),
                Arc::new({
                    let mut b = category;
                    b.finish()
                }),
                Arc::new({
                    let mut b = chosen;
                    b.finish()
                }),
                Arc::new({
                    let mut b = rejected;
                    b.finish()
                }),
            ];
            let batch =
                RecordBatch::try_new(schema.clone(), arrays).map_err(|e| write_err(&path, e))?;
            writer.write(&batch).map_err(|e| write_err(&path, e))?;
            start = end;
        }
        writer.close().map_err(|e| write_err(&path, e))?;
        summary.file_bytes += std::fs::metadata(&path).map_err(|e| write_err(&path, e))?.len();
        summary.files.push(path);
    }
    Ok(summary)
}

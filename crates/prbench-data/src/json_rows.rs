//! JSON (an array of row objects) and JSONL (one row object per line) readers.
//!
//! Rows are read into `serde_json::Value` and then checked field by field, so every message names
//! the exact field path. Unknown extra fields are ignored (they may carry the producer's own
//! metadata); missing required fields and wrong types are errors. Two optional fields written by
//! `prbench retrieve` are checked: `profile_ranking` (its `post_ids` must be the row's profile ids
//! in order, its `scores` one number per post, best first) and `dataset_kind`; that all rows or
//! none carry them is checked when the dataset is finished (see `rows::finish`).
//!
//! A UTF-8 byte-order mark at the start of a file is skipped; blank JSONL lines at the end of a
//! file are skipped, and blank lines between rows are errors (they usually mean a truncated or
//! hand-edited file).
//! A `.jsonl` file holding a JSON array, or a `.json` file holding JSON lines, is an error that
//! says so and names the extension to use.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::DataError;
use crate::load::RowShape;
use crate::rows::{ContentHash, RawRow, RowExtra};
use crate::schema::{
    Example, ProfilePost, RubricAspect, DATASET_KIND_FIELD, PROFILE_RANKING_FIELD, USER_ID_FIELD,
};

/// Where a row is, for error messages.
#[derive(Clone, Copy)]
pub(crate) struct RowCtx<'a> {
    pub file: &'a str,
    pub row: usize,
}

/// Short description of a JSON value's type, for "must be X but is Y" messages.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => {
            let head: String = s.chars().take(40).collect();
            let more = if s.chars().count() > 40 { "…" } else { "" };
            format!("a string ({head:?}{more})")
        }
        Value::Array(a) => format!("a list of {} items", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

impl<'a> RowCtx<'a> {
    /// A [`DataError::MissingField`] for `field` of this row.
    pub fn missing(&self, field: &str) -> DataError {
        DataError::MissingField {
            file: self.file.to_string(),
            row: self.row,
            field: field.to_string(),
        }
    }

    /// A [`DataError::WrongType`] for `field` of this row, which holds `found`.
    pub fn wrong(&self, field: &str, expected: &str, found: &Value) -> DataError {
        DataError::WrongType {
            file: self.file.to_string(),
            row: self.row,
            field: field.to_string(),
            expected: expected.to_string(),
            found: describe(found),
        }
    }

    /// The value as an object (`path` names it in messages).
    pub fn object<'v>(
        &self,
        v: &'v Value,
        path: &str,
    ) -> Result<&'v Map<String, Value>, DataError> {
        v.as_object().ok_or_else(|| self.wrong(path, "an object", v))
    }

    /// Required string field `key` of `obj`; `path` is its full name for messages.
    pub fn string(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<String, DataError> {
        match obj.get(key) {
            None => Err(self.missing(path)),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(self.wrong(path, "a string", v)),
        }
    }

    /// Optional top-level string field (absent is fine, any other type is an error; null counts
    /// as absent).
    pub fn opt_string(
        &self,
        obj: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<String>, DataError> {
        self.opt_string_at(obj, key, key)
    }

    /// As [`Self::opt_string`] for a field whose full name for messages is `path`.
    pub fn opt_string_at(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<String>, DataError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.wrong(path, "a string", v)),
        }
    }

    /// A [`DataError::InvalidField`] for `field` of this row; `detail` starts with a verb
    /// phrase and says what to do.
    pub fn invalid(&self, field: &str, detail: impl Into<String>) -> DataError {
        DataError::InvalidField {
            file: self.file.to_string(),
            row: self.row,
            field: field.to_string(),
            detail: detail.into(),
        }
    }

    /// A [`DataError::EmptyField`] for `field` of this row.
    pub fn empty(&self, field: &str) -> DataError {
        DataError::EmptyField {
            file: self.file.to_string(),
            row: self.row,
            field: field.to_string(),
        }
    }

    /// Required string field that must hold more than whitespace.
    pub fn text(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<String, DataError> {
        let s = self.string(obj, key, path)?;
        if s.trim().is_empty() {
            return Err(self.empty(path));
        }
        Ok(s)
    }

    /// Required boolean field.
    pub fn boolean(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<bool, DataError> {
        match obj.get(key) {
            None => Err(self.missing(path)),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.wrong(path, "a boolean (true or false)", v)),
        }
    }

    /// Optional field that must be a boolean when present (null counts as absent).
    pub fn opt_boolean(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<bool>, DataError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.wrong(path, "a boolean (true or false)", v)),
        }
    }

    /// Required integer field (a JSON number with no fractional part).
    pub fn integer(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<i64, DataError> {
        match obj.get(key) {
            None => Err(self.missing(path)),
            Some(v) => v.as_i64().ok_or_else(|| self.wrong(path, "an integer", v)),
        }
    }

    /// Optional field that must be an integer when present (null counts as absent).
    pub fn opt_integer(
        &self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<i64>, DataError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| self.wrong(path, "an integer", v)),
        }
    }

    /// Required list field.
    pub fn list<'v>(
        &self,
        obj: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v [Value], DataError> {
        match obj.get(key) {
            None => Err(self.missing(path)),
            Some(Value::Array(a)) => Ok(a),
            Some(v) => Err(self.wrong(path, "a list", v)),
        }
    }
}

/// The row's `profile` list. Each post needs string `id` and `text`; its `category` is required
/// when `category_required`, else optional (absent or null = empty string).
pub(crate) fn profile_posts(
    ctx: RowCtx,
    obj: &Map<String, Value>,
    category_required: bool,
) -> Result<Vec<ProfilePost>, DataError> {
    let mut profile = Vec::new();
    for (i, p) in ctx.list(obj, "profile", "profile")?.iter().enumerate() {
        let path = format!("profile[{i}]");
        let o = ctx.object(p, &path)?;
        let category_path = format!("{path}.category");
        let category = if category_required {
            ctx.string(o, "category", &category_path)?
        } else {
            ctx.opt_string_at(o, "category", &category_path)?.unwrap_or_default()
        };
        profile.push(ProfilePost {
            id: ctx.string(o, "id", &format!("{path}.id"))?,
            category,
            text: ctx.string(o, "text", &format!("{path}.text"))?,
        });
    }
    Ok(profile)
}

/// The row's `rubric_aspects` list: objects with string `aspect`, `evidence` and `reason`.
pub(crate) fn rubric(
    ctx: RowCtx,
    obj: &Map<String, Value>,
) -> Result<Vec<RubricAspect>, DataError> {
    let mut rubric_aspects = Vec::new();
    for (i, a) in ctx.list(obj, "rubric_aspects", "rubric_aspects")?.iter().enumerate() {
        let path = format!("rubric_aspects[{i}]");
        let o = ctx.object(a, &path)?;
        rubric_aspects.push(RubricAspect {
            aspect: ctx.string(o, "aspect", &format!("{path}.aspect"))?,
            evidence: ctx.string(o, "evidence", &format!("{path}.evidence"))?,
            reason: ctx.string(o, "reason", &format!("{path}.reason"))?,
        });
    }
    Ok(rubric_aspects)
}

/// `chosen` or `rejected`: required for [`RowShape::Pairs`]; for [`RowShape::Questions`] absent
/// or null gives an empty string. Either way a present value must be a string.
fn answer(
    ctx: RowCtx,
    obj: &Map<String, Value>,
    key: &str,
    shape: RowShape,
) -> Result<String, DataError> {
    match shape {
        RowShape::Pairs => ctx.string(obj, key, key),
        RowShape::Questions => Ok(ctx.opt_string(obj, key)?.unwrap_or_default()),
    }
}

/// Builds an example (subset left empty) from one PRB-schema row object of `shape`; also
/// returns the optional `subset` field.
pub(crate) fn example_from_value(
    v: &Value,
    ctx: RowCtx,
    shape: RowShape,
) -> Result<(Example, Option<String>), DataError> {
    let obj = ctx.object(v, "(row)")?;
    let profile = profile_posts(ctx, obj, true)?;
    let rubric_aspects = rubric(ctx, obj)?;
    let example = Example {
        id: ctx.string(obj, "id", "id")?,
        subset: String::new(),
        question: ctx.string(obj, "question", "question")?,
        profile,
        rubric_aspects,
        narrative: ctx.string(obj, "narrative", "narrative")?,
        category: ctx.string(obj, "category", "category")?,
        chosen: answer(ctx, obj, "chosen", shape)?,
        rejected: answer(ctx, obj, "rejected", shape)?,
        user_id: user_id(ctx, obj)?,
    };
    Ok((example, ctx.opt_string(obj, "subset")?))
}

/// The optional [`USER_ID_FIELD`]: absent or null is `None`; a present value must be a
/// non-empty string.
pub(crate) fn user_id(ctx: RowCtx, obj: &Map<String, Value>) -> Result<Option<String>, DataError> {
    let id = ctx.opt_string(obj, USER_ID_FIELD)?;
    if id.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(DataError::EmptyField {
            file: ctx.file.to_string(),
            row: ctx.row,
            field: USER_ID_FIELD.into(),
        });
    }
    Ok(id)
}

/// Reads a file, adds it to the hash under `name`, and decodes it as UTF-8 (skipping a BOM).
pub(crate) fn read_text(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
) -> Result<String, DataError> {
    let file = path.display().to_string();
    let mut bytes =
        std::fs::read(path).map_err(|source| DataError::Io { file: file.clone(), source })?;
    hash.add_bytes(name, &bytes);
    let bom = if bytes.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
    bytes.drain(..bom);
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1;
        DataError::NotUtf8 { file, line, offset: offset + bom }
    })
}

fn malformed(file: &str, line: usize, e: &serde_json::Error) -> DataError {
    DataError::MalformedJson {
        file: file.to_string(),
        line,
        column: e.column(),
        detail: e.to_string(),
    }
}

/// Parses `text` as a JSON array and returns its elements.
pub(crate) fn parse_array(text: &str, file: &str) -> Result<Vec<Value>, DataError> {
    let v: Value = serde_json::from_str(text).map_err(|e| malformed(file, e.line(), &e))?;
    match v {
        Value::Array(items) => Ok(items),
        other => Err(DataError::MalformedJson {
            file: file.to_string(),
            line: 1,
            column: 1,
            detail: format!(
                "the file must be a JSON array of row objects, but its top level is {} (use .jsonl \
                 for one object per line)",
                describe(&other)
            ),
        }),
    }
}

/// Reads the optional fields `prbench retrieve` writes: `profile_ranking` (whose `post_ids` must
/// be the row's profile ids in order, and whose `scores` must be as many numbers, best first) and
/// `dataset_kind`.
fn row_extra(v: &Value, example: &Example, ctx: RowCtx) -> Result<RowExtra, DataError> {
    let obj = ctx.object(v, "(row)")?;
    let mut extra =
        RowExtra { dataset_kind: ctx.opt_string(obj, DATASET_KIND_FIELD)?, ..RowExtra::default() };
    if extra.dataset_kind.as_deref().is_some_and(|k| k.trim().is_empty()) {
        return Err(DataError::EmptyField {
            file: ctx.file.to_string(),
            row: ctx.row,
            field: DATASET_KIND_FIELD.into(),
        });
    }
    let Some(ranking) = obj.get(PROFILE_RANKING_FIELD).filter(|r| !r.is_null()) else {
        return Ok(extra);
    };
    let f = |k: &str| format!("{PROFILE_RANKING_FIELD}.{k}");
    let bad = |field: String, detail: String| DataError::Ranking {
        file: ctx.file.to_string(),
        row: ctx.row,
        field,
        detail,
    };
    let r = ctx.object(ranking, PROFILE_RANKING_FIELD)?;
    let retriever = ctx.string(r, "retriever", &f("retriever"))?;
    if retriever.trim().is_empty() {
        return Err(DataError::EmptyField {
            file: ctx.file.to_string(),
            row: ctx.row,
            field: f("retriever"),
        });
    }
    let mut ids = Vec::new();
    for (i, id) in ctx.list(r, "post_ids", &f("post_ids"))?.iter().enumerate() {
        match id {
            Value::String(s) => ids.push(s.as_str()),
            other => return Err(ctx.wrong(&format!("{}[{i}]", f("post_ids")), "a string", other)),
        }
    }
    let profile_ids: Vec<&str> = example.profile.iter().map(|p| p.id.as_str()).collect();
    if ids != profile_ids {
        let at = ids
            .iter()
            .zip(&profile_ids)
            .position(|(a, b)| a != b)
            .unwrap_or(ids.len().min(profile_ids.len()));
        return Err(bad(
            f("post_ids"),
            format!(
                "does not match the row's profile: {} ids vs {} posts, first difference at position {at} (ranking {:?}, profile {:?}); the ranking's ids must be the profile's ids in order, each attached to its own post: re-run `prbench retrieve` instead of editing the file",
                ids.len(),
                profile_ids.len(),
                ids.get(at).copied().unwrap_or("(none)"),
                profile_ids.get(at).copied().unwrap_or("(none)"),
            ),
        ));
    }
    let mut scores = Vec::new();
    for (i, s) in ctx.list(r, "scores", &f("scores"))?.iter().enumerate() {
        match s.as_f64() {
            Some(x) => scores.push(x),
            None => return Err(ctx.wrong(&format!("{}[{i}]", f("scores")), "a number", s)),
        }
    }
    if scores.len() != ids.len() {
        return Err(bad(
            f("scores"),
            format!(
                "has {} scores for {} post ids; give one score per post",
                scores.len(),
                ids.len()
            ),
        ));
    }
    if let Some(i) = scores.windows(2).position(|w| w[1] > w[0]) {
        return Err(bad(
            f("scores"),
            format!(
                "is not best first: score {} at position {} exceeds {} at position {i}; the profile must be in ranked order: re-run `prbench retrieve`",
                scores[i + 1],
                i + 1,
                scores[i]
            ),
        ));
    }
    extra.profile_ranking = Some(retriever);
    Ok(extra)
}

/// Validates one row object of `shape` and records where it came from (`row` is 1-based).
fn raw_row(v: &Value, file: &str, row: usize, shape: RowShape) -> Result<RawRow, DataError> {
    let ctx = RowCtx { file, row };
    let (example, subset_field) = example_from_value(v, ctx, shape)?;
    let extra = row_extra(v, &example, ctx)?;
    Ok(RawRow { example, subset_field, file: file.to_string(), row, extra })
}

/// Whether `text` (meant to be a JSON array) is JSON lines instead: it starts with `{`, is not
/// one JSON value, and its first line is a whole JSON object. (One object alone is left to
/// [`parse_array`]'s "top level is an object" message.)
fn looks_like_jsonl(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{')
        && serde_json::from_str::<Value>(t).is_err()
        && t.lines()
            .next()
            .is_some_and(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object()))
}

/// Reads a JSON file holding an array of row objects and hands each to `f` with its 1-based row
/// (array index + 1), in order, stopping at the first error.
pub(crate) fn visit_json(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    mut f: impl FnMut(usize, Value) -> Result<(), DataError>,
) -> Result<(), DataError> {
    let file = path.display().to_string();
    let text = read_text(path, name, hash)?;
    if looks_like_jsonl(&text) {
        return Err(DataError::WrongJsonLayout {
            file,
            detail: "this looks like JSONL (one row object per line), but a .json file holds one JSON array of rows; rename the file to .jsonl".into(),
        });
    }
    for (i, v) in parse_array(&text, &file)?.into_iter().enumerate() {
        f(i + 1, v)?;
    }
    Ok(())
}

/// Reads a JSONL file (one row object per line) and hands each row to `f` with its 1-based row
/// (= line) as soon as the line is parsed, stopping at the first error. Blank lines (nothing
/// but whitespace) at the end of the file are fine, as editors and `echo >>` leave them; a
/// blank line between rows is an error naming its line, since it usually marks a row lost to
/// a bad edit or a broken concatenation.
pub(crate) fn visit_jsonl(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    mut f: impl FnMut(usize, Value) -> Result<(), DataError>,
) -> Result<(), DataError> {
    let file = path.display().to_string();
    let text = read_text(path, name, hash)?;
    if text.trim_start().starts_with('[') {
        return Err(DataError::WrongJsonLayout {
            file,
            detail: "this looks like a JSON array (it starts with `[`), but a .jsonl file holds one row object per line; rename the file to .json".into(),
        });
    }
    // Everything after the last row: trailing blank lines and the final newline.
    let body = text.trim_end();
    if body.is_empty() {
        return Ok(());
    }
    for (i, line) in body.split('\n').enumerate() {
        let line_no = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            return Err(DataError::MalformedJson {
                file: file.clone(),
                line: line_no,
                column: 1,
                detail: "blank line between rows (JSONL needs one row object per line; blank lines are allowed only at the end of the file): remove the line"
                    .into(),
            });
        }
        let v: Value = serde_json::from_str(line).map_err(|e| malformed(&file, line_no, &e))?;
        f(line_no, v)?;
    }
    Ok(())
}

/// Reads a JSON file holding an array of PRB rows of `shape`. Row n = array element n (1-based).
pub(crate) fn read_json(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    shape: RowShape,
) -> Result<Vec<RawRow>, DataError> {
    let file = path.display().to_string();
    let mut rows = Vec::new();
    visit_json(path, name, hash, |row, v| {
        rows.push(raw_row(&v, &file, row, shape)?);
        Ok(())
    })?;
    Ok(rows)
}

/// Reads a JSONL file: one PRB row object of `shape` per line; row n = line n.
pub(crate) fn read_jsonl(
    path: &Path,
    name: &str,
    hash: &mut ContentHash,
    shape: RowShape,
) -> Result<Vec<RawRow>, DataError> {
    let file = path.display().to_string();
    let mut rows = Vec::new();
    visit_jsonl(path, name, hash, |row, v| {
        rows.push(raw_row(&v, &file, row, shape)?);
        Ok(())
    })?;
    Ok(rows)
}

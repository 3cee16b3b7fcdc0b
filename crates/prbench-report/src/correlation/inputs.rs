//! Score files as `correlate` inputs: CSVs `model,score` and `prbench bon` tables.

use std::path::Path;

use super::{invalid, CorrelationError, Entry, Result};

/// A file's text, the error naming it.
pub(super) fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| CorrelationError::Read { path: path.to_path_buf(), source })
}

/// A CSV `model,score` (header required; quotes not supported; blank lines skipped).
pub(super) fn read_csv(path: &Path) -> Result<Vec<Entry>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, h)) if h.split(',').map(str::trim).collect::<Vec<_>>() == ["model", "score"] => {}
        _ => invalid!("`{}`: the first line must be the header `model,score`", path.display()),
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let Some((model, score)) = line.rsplit_once(',') else {
            invalid!("`{}` line {}: expected `model,score`", path.display(), i + 1);
        };
        let score: f64 = score
            .trim()
            .parse()
            .map_err(|source| CorrelationError::Score { path: path.to_path_buf(), line: i + 1, text: score.trim().to_string(), source })?;
        if !score.is_finite() {
            invalid!("`{}` line {}: score must be finite", path.display(), i + 1);
        }
        out.push(Entry { model: model.trim().to_string(), aliases: vec![], score, condition: None, source: format!("{} line {}", path.display(), i + 1), implicit: false });
    }
    Ok(out)
}

/// The reward-model rows of a `prbench bon` table at best-of-`k` (default: the table's N), or a
/// CSV.
pub(super) fn read_downstream(path: &Path, k: Option<usize>) -> Result<Vec<Entry>> {
    if path.extension().is_some_and(|e| e == "csv") {
        return read_csv(path);
    }
    let v: serde_json::Value = serde_json::from_str(&read_text(path)?).map_err(|source| CorrelationError::Json { path: path.to_path_buf(), source })?;
    let Some(n) = v.get("n").and_then(|n| n.as_u64()) else {
        invalid!("`{}`: not a `prbench bon` table (no `n`)", path.display());
    };
    let k = k.unwrap_or(n as usize);
    let mut out = Vec::new();
    for row in v["rows"].as_array().into_iter().flatten() {
        if row.get("kind").and_then(|k| k.as_str()) != Some("reward model") {
            continue;
        }
        let name = row["name"].as_str().unwrap_or_default().to_string();
        let point = row["curve"].as_array().into_iter().flatten().find(|p| p["k"].as_u64() == Some(k as u64));
        let Some(score) = point.and_then(|p| p["overall"].as_f64()) else {
            invalid!("`{}`: row `{name}` has no finite best-of-{k} score (is k in the table's k values, and does the row have examples?)", path.display());
        };
        let spec = row.get("spec").and_then(|s| s.as_str()).map(String::from);
        out.push(Entry {
            model: spec.clone().unwrap_or_else(|| name.clone()),
            aliases: vec![name],
            score,
            condition: row.get("condition").and_then(|c| c.as_str()).map(String::from),
            source: format!("{} (best-of-{k} rubric score)", path.display()),
            implicit: false,
        });
    }
    if out.is_empty() {
        invalid!("`{}` has no reward-model rows; score samples with `prbench bon score` first", path.display());
    }
    Ok(out)
}

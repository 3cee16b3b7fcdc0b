//! Score files as `correlate` inputs: CSVs `model,score` and `prbench bon` tables.

use std::path::Path;

use prbench_records::bon::BonTable;

use super::{invalid, CorrelationError, Entry, Result};

/// A file's text, the error naming it.
pub(super) fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|source| CorrelationError::Read { path: path.to_path_buf(), source })
}

/// A CSV `model,score`: header required, each line's fields read as RFC 4180 (a quoted model
/// name may hold commas and quotes, as pandas or a spreadsheet writes it; not line breaks),
/// spaces around fields trimmed, blank lines skipped. An unquoted name with commas is also
/// read: the score is the last field. Errors name the file's 1-based line.
pub(super) fn read_csv(path: &Path) -> Result<Vec<Entry>> {
    let text = read_text(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines =
        text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| (i + 1, l));
    let fields = |line: usize, text: &str| -> Result<Vec<String>> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        match reader.records().next() {
            Some(Ok(r)) => Ok(r.iter().map(String::from).collect()),
            Some(Err(e)) => {
                invalid!("`{}` line {line}: not a readable CSV line: {e}", path.display())
            }
            None => Ok(Vec::new()),
        }
    };
    match lines.next() {
        Some((n, h)) if fields(n, h)? == ["model", "score"] => {}
        Some(_) => {
            invalid!("`{}`: the first line must be the header `model,score`", path.display())
        }
        None => invalid!(
            "`{}`: the file is empty: expected the header `model,score` and one line per model",
            path.display()
        ),
    }
    let mut out = Vec::new();
    for (line, text) in lines {
        let record = fields(line, text)?;
        let Some((score_text, names)) = record.split_last().filter(|(_, names)| !names.is_empty())
        else {
            invalid!("`{}` line {line}: expected `model,score`", path.display());
        };
        let model = names.join(",");
        let score: f64 = score_text.parse().map_err(|source| CorrelationError::Score {
            path: path.to_path_buf(),
            line,
            text: score_text.to_string(),
            source,
        })?;
        if !score.is_finite() {
            invalid!("`{}` line {line}: score must be finite", path.display());
        }
        out.push(Entry {
            model: model.trim().to_string(),
            aliases: vec![],
            score,
            condition: None,
            source: format!("{} line {line}", path.display()),
            implicit: false,
        });
    }
    if out.is_empty() {
        invalid!("`{}`: the file has a header and no model line", path.display());
    }
    Ok(out)
}

/// The reward-model rows of a `prbench bon` table at best-of-`k` (default: the table's N), or a
/// CSV.
pub(super) fn read_downstream(path: &Path, k: Option<usize>) -> Result<Vec<Entry>> {
    if path.extension().is_some_and(|e| e == "csv") {
        return read_csv(path);
    }
    let table: BonTable = serde_json::from_str(&read_text(path)?).map_err(|source| {
        if source.is_data() {
            // JSON, but not a table: say what the file should have been.
            CorrelationError::Invalid(format!(
                "`{}`: not a `prbench bon` table ({source})",
                path.display()
            ))
        } else {
            CorrelationError::Json { path: path.to_path_buf(), source }
        }
    })?;
    let k = k.unwrap_or(table.n);
    let mut out = Vec::new();
    for row in table.rows.into_iter().filter(|r| r.kind == "reward model") {
        let point = row.curve.iter().find(|p| p.k == k);
        let Some(score) = point.map(|p| p.overall).filter(|s| s.is_finite()) else {
            invalid!("`{}`: row `{}` has no finite best-of-{k} score (is k in the table's k values, and does the row have examples?)", path.display(), row.name);
        };
        out.push(Entry {
            model: row.spec.clone().unwrap_or_else(|| row.name.clone()),
            aliases: vec![row.name],
            score,
            condition: row.condition,
            source: format!("{} (best-of-{k} rubric score)", path.display()),
            implicit: false,
        });
    }
    if out.is_empty() {
        invalid!(
            "`{}` has no reward-model rows; score samples with `prbench bon score` first",
            path.display()
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Entry>> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.csv");
        std::fs::write(&p, text).unwrap();
        read_csv(&p)
    }

    #[test]
    fn quoted_names_unquoted_commas_lines_and_errors() {
        let e = read("\u{feff}model,score\n\n\"openai:m@http://h1,http://h2\",0.5\n\"say \"\"hi\"\"\" , 1e-1\nplain:a,b,0.25\r\n m2 ,2\n").unwrap();
        let got: Vec<(&str, f64, &str)> =
            e.iter().map(|x| (x.model.as_str(), x.score, x.source.as_str())).collect();
        let names: Vec<&str> = got.iter().map(|g| g.0).collect();
        assert_eq!(names, ["openai:m@http://h1,http://h2", "say \"hi\"", "plain:a,b", "m2"]);
        assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [0.5, 0.1, 0.25, 2.0]);
        assert!(got[0].2.ends_with("line 3") && got[3].2.ends_with("line 6"), "{got:?}");
        let err = read("model,score\nm1,abc\n").unwrap_err().to_string();
        assert!(err.contains("line 2") && err.contains("abc"), "{err}");
        assert!(read("model,score\n")
            .unwrap_err()
            .to_string()
            .contains("header and no model line"));
        assert!(read("").unwrap_err().to_string().contains("empty"));
        assert!(read("name,value\nm,1\n")
            .unwrap_err()
            .to_string()
            .contains("header `model,score`"));
        assert!(read("model,score\nlonely\n")
            .unwrap_err()
            .to_string()
            .contains("line 2: expected `model,score`"));
        assert!(read("model,score\nm,inf\n").unwrap_err().to_string().contains("finite"));
    }

    /// A `prbench bon` table read as `BonTable`: a row over no example has `null` means, read
    /// as NaN and refused as having no finite score; the other rows give the spec, the file
    /// name as an alias and the condition; JSON that is no table says so.
    #[test]
    fn bon_tables_are_read_as_the_typed_table() {
        use prbench_records::bon::{BonPoint, BonRow, BonTable, Exclusions};
        use std::collections::BTreeMap;
        let point = |k: usize, overall: f64| BonPoint {
            k,
            per_subset: BTreeMap::new(),
            overall,
            overall_normalized: overall / 2.0,
            macro_mean: overall,
            overall_ci: None,
        };
        let row = |name: &str, overall: f64| BonRow {
            name: name.into(),
            kind: "reward model".into(),
            spec: Some(format!("gguf:{name}.gguf")),
            condition: Some("none".into()),
            examples: 3,
            subset_examples: BTreeMap::new(),
            excluded_for_score_errors: 0,
            curve: vec![point(1, 1.0), point(2, overall)],
        };
        let mut table = BonTable {
            n: 2,
            ks: vec![1, 2],
            judge: "j".into(),
            subsets: vec![],
            examples: 3,
            judged_examples: 3,
            excluded: Exclusions::default(),
            unparsed_judgements: 0,
            failed_judgements: 0,
            rows: vec![row("good", 1.5), row("empty", f64::NAN)],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bon-j.json");
        let write = |t: &BonTable| std::fs::write(&p, serde_json::to_string(t).unwrap()).unwrap();
        write(&table);
        assert!(std::fs::read_to_string(&p).unwrap().contains(r#""overall":null"#));
        let err = read_downstream(&p, None).unwrap_err().to_string();
        assert!(err.contains("row `empty` has no finite best-of-2 score"), "{err}");
        table.rows.pop();
        write(&table);
        let e = read_downstream(&p, None).unwrap();
        assert_eq!((e[0].model.as_str(), e[0].score), ("gguf:good.gguf", 1.5));
        assert_eq!(
            (e[0].aliases.as_slice(), e[0].condition.as_deref()),
            (&["good".to_string()][..], Some("none"))
        );
        assert_eq!(read_downstream(&p, Some(1)).unwrap()[0].score, 1.0);
        std::fs::write(&p, r#"{"model": "m"}"#).unwrap();
        let err = read_downstream(&p, None).unwrap_err().to_string();
        assert!(err.contains("not a `prbench bon` table"), "{err}");
        std::fs::write(&p, "{").unwrap();
        assert!(read_downstream(&p, None).unwrap_err().to_string().contains("is not JSON"));
    }
}

//! The report as Markdown. Text from the data or from raters is hostile: in table cells and
//! headings it is escaped (HTML's `& < >` as entities, Markdown's punctuation with `\`), and
//! long texts go in fenced blocks whose fence is longer than any backtick run inside.

use std::fmt::Write;

use crate::agreement::{markdown_table, AlphaUndefined, CiUndefined};
use crate::dims::Dimension;
use sha2::{Digest, Sha256};

use super::tables::{AnnotationReport, MeanCi};

/// Escapes `s` for a table cell or a line of Markdown.
pub(crate) fn cell(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\n' | '\r' => o.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                o.push('\\');
                o.push(ch);
            }
            _ => o.push(ch),
        }
    }
    o
}

/// `s` as a fenced block (its content is literal in every CommonMark renderer).
pub(crate) fn fenced(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for ch in s.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{}\n{fence}\n", s.trim_end_matches('\n'))
}

/// The anchor (HTML id) of an item's view in the report: `item-` + the id's ASCII letters and
/// digits lower-cased (others become `-`) + `-` + the first 4 bytes of sha256(id) in hex.
pub fn anchor(item_id: &str) -> String {
    let slug: String = item_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect();
    // Different ids can share a slug (`Item_1`, `item-1`), and a bare slug could equal an id
    // of the page around it: a short hash of the id keeps every anchor distinct.
    let h = Sha256::digest(item_id.as_bytes());
    format!("item-{slug}-{}", hex::encode(&h[..4]))
}

fn mean(m: &Option<MeanCi>) -> String {
    match m {
        Some(m) => format!("{:.2} [{:.2}, {:.2}]", m.mean, m.lo, m.hi),
        None => "–".into(),
    }
}

fn pct(m: &Option<MeanCi>) -> String {
    match m {
        Some(m) => {
            format!("{:.1}% [{:.1}, {:.1}] (n={})", 100.0 * m.mean, 100.0 * m.lo, 100.0 * m.hi, m.n)
        }
        None => "–".into(),
    }
}

/// The report as Markdown (see the [module docs](super)).
pub fn markdown(r: &AnnotationReport) -> String {
    let mut o = String::new();
    o.push_str(crate::export::REPORT_FIRST_LINE);
    o.push('\n');
    let _ = writeln!(
        o,
        "Dataset `{}` (sha256 `{}`), {} items, {} annotator(s) per item, assignment seed {}. Bootstrap: {} resamples over items, seed {}.\n",
        cell(&r.source),
        r.dataset_hash,
        r.items,
        r.per_item,
        r.seed,
        r.config.resamples,
        r.config.seed
    );
    let _ = writeln!(o, "| annotator | rated | assigned |\n|---|---:|---:|");
    for (name, done, total) in &r.annotators {
        let _ = writeln!(o, "| {} | {done} | {total} |", cell(name));
    }

    let _ = writeln!(o, "\n## Ratings, chosen vs rejected\n");
    let _ = writeln!(o, "Mean score (1–5) with its 95% CI, per subset. The benchmark's pairs should differ in rubric fit and not in the other three.\n");
    let _ = write!(o, "| subset | items | answer |");
    for d in Dimension::ALL {
        let _ = write!(o, " {} |", d.title());
    }
    let _ = writeln!(o, "\n|---|---:|---|{}", "---:|".repeat(4));
    for row in &r.human_eval {
        for (i, label) in ["chosen", "rejected"].iter().enumerate() {
            let _ = write!(
                o,
                "| {} | {} | {label} |",
                if i == 0 { cell(&row.subset) } else { String::new() },
                if i == 0 { row.items.to_string() } else { String::new() }
            );
            for (_, c, rj) in &row.dims {
                let _ = write!(o, " {} |", mean(if i == 0 { c } else { rj }));
            }
            let _ = writeln!(o);
        }
    }

    let _ = writeln!(o, "\n## Agreement between annotators\n");
    let _ = writeln!(
        o,
        "A unit is one answer of one item; its values are the annotators' scores of that answer.\n"
    );
    match &r.agreement {
        Some(a) => o.push_str(&markdown_table(a)),
        None => o.push_str("No ratings yet.\n"),
    }
    let p = &r.preference;
    let alpha = match &p.alpha {
        Ok(a) => format!("{:.3}", a.alpha),
        Err(AlphaUndefined::NoPairableUnit { .. }) => {
            "undefined (no item rated by two annotators)".into()
        }
        Err(e) => format!("undefined ({e})"),
    };
    let ci = match &p.bootstrap.interval {
        Ok(i) => format!(" [{:.3}, {:.3}]", i.lo, i.hi),
        Err(CiUndefined::AlphaUndefined) => String::new(),
        Err(e) => format!(" (CI undefined: {e})"),
    };
    let _ = writeln!(o, "\n\"Which answer fits this user better\": nominal alpha {alpha}{ci} over {} items rated by two or more annotators.", r.preference_units);

    let _ = writeln!(o, "\n## Raters' choice vs the benchmark's label\n");
    let _ = writeln!(o, "| subset | judgements picking chosen | items | majority chosen | majority rejected | split |\n|---|---:|---:|---:|---:|---:|");
    for l in &r.label {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&l.subset),
            pct(&l.prefers_chosen),
            l.items,
            l.majority_chosen,
            l.majority_rejected,
            l.split
        );
    }

    let _ = writeln!(o, "\n## Items where the raters disagree with the label\n");
    if r.disagreements.is_empty() {
        let _ =
            writeln!(o, "None: on every rated item the raters' majority picks the chosen answer.");
        return o;
    }
    let _ = writeln!(o, "The raters' majority picks the rejected answer, or splits evenly.\n");
    let _ = writeln!(o, "| item | subset | votes chosen : rejected | rubric fit chosen | rubric fit rejected |\n|---|---|---:|---:|---:|");
    for d in &r.disagreements {
        let _ = writeln!(
            o,
            "| [{}](#{}) | {} | {} : {} | {:.2} | {:.2} |",
            cell(&d.item_id),
            anchor(&d.item_id),
            cell(&d.subset),
            d.votes_chosen,
            d.votes_rejected,
            d.fit_chosen,
            d.fit_rejected
        );
    }
    for d in &r.disagreements {
        let _ = writeln!(
            o,
            "\n<a id=\"{}\"></a>\n\n### Item {}\n",
            anchor(&d.item_id),
            cell(&d.item_id)
        );
        let _ = writeln!(o, "Question:\n\n{}", fenced(&d.question));
        let _ = writeln!(o, "Rubric aspects:\n");
        for a in &d.aspects {
            let _ = writeln!(o, "- {}", cell(a));
        }
        let _ =
            writeln!(o, "\nChosen:\n\n{}\nRejected:\n\n{}", fenced(&d.chosen), fenced(&d.rejected));
        let _ = writeln!(o, "| annotator | picked | rubric fit chosen | rubric fit rejected | comment on chosen | comment on rejected |\n|---|---|---:|---:|---|---|");
        for (name, chose, fc, fr, cc, cr) in &d.raters {
            let _ = writeln!(
                o,
                "| {} | {} | {fc} | {fr} | {} | {} |",
                cell(name),
                if *chose { "chosen" } else { "rejected" },
                cell(cc),
                cell(cr)
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_or_fenced() {
        assert_eq!(cell("<script>a|b</script>"), "&lt;script&gt;a\\|b&lt;/script&gt;");
        assert_eq!(cell("[x](http://e) *y*"), "\\[x\\](http://e) \\*y\\*");
        assert_eq!(cell("two\nlines"), "two lines");
        let f = fenced("a ```` b");
        assert!(f.starts_with("`````text\n") && f.ends_with("\n`````\n"), "{f}");
        assert_eq!(fenced("plain"), "```text\nplain\n```\n");
        assert!(anchor("Art/12 x").starts_with("item-art-12-x-"));
        assert_ne!(anchor("Item_1"), anchor("item-1"));
        assert_eq!(anchor("q"), anchor("q"));
    }
}

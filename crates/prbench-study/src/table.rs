//! One table, three forms: Markdown, CSV and LaTeX (booktabs), from the same cells, so the
//! forms never disagree. Cells come from files and plans and are escaped for each form.

use prbench_report::leaderboard::latex_cell;
use serde::Serialize;

/// A titled table of text cells; columns from `numeric_from` on are right-aligned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Its title (a Markdown heading, a LaTeX caption).
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows, each as long as the header.
    pub rows: Vec<Vec<String>>,
    /// First right-aligned column.
    pub numeric_from: usize,
}

impl Table {
    /// Markdown: `### title`, then a pipe table (`|` escaped, line breaks as spaces).
    pub fn markdown(&self) -> String {
        let cell = |t: &str| t.replace('|', "\\|").replace(['\n', '\r'], " ");
        let mut s = format!("### {}\n\n", cell(&self.title));
        s += &format!(
            "| {} |\n",
            self.header.iter().map(|h| cell(h)).collect::<Vec<_>>().join(" | ")
        );
        s += &format!(
            "|{}|\n",
            (0..self.header.len())
                .map(|i| if i >= self.numeric_from { "---:" } else { "---" })
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in &self.rows {
            s += &format!("| {} |\n", r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | "));
        }
        s
    }

    /// CSV (RFC 4180): the header, then the rows; the title is not part of it.
    pub fn csv(&self) -> String {
        let mut w =
            csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(vec![]);
        w.write_record(&self.header).expect("writing to memory");
        for r in &self.rows {
            w.write_record(r).expect("writing to memory");
        }
        String::from_utf8(w.into_inner().expect("writing to memory")).expect("cells are UTF-8")
    }

    /// LaTeX: a `table` with a booktabs `tabular` and the title as caption; cells escaped as the
    /// leaderboard's ([`latex_cell`]).
    pub fn latex(&self) -> String {
        let esc = |t: &str| latex_cell(&t.replace(['\n', '\r'], " "));
        let align: String = (0..self.header.len())
            .map(|i| if i >= self.numeric_from { 'r' } else { 'l' })
            .collect();
        let row =
            |r: &[String]| r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" & ") + " \\\\\n";
        let mut s = format!("\\begin{{table}}\n\\centering\n\\caption{{{}}}\n\\begin{{tabular}}{{{align}}}\n\\toprule\n", esc(&self.title));
        s += &row(&self.header);
        s += "\\midrule\n";
        for r in &self.rows {
            s += &row(r);
        }
        s += "\\bottomrule\n\\end{tabular}\n\\end{table}\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Table {
        Table {
            title: "A & B_1".into(),
            header: vec!["model".into(), "acc".into()],
            rows: vec![vec!["x|y".into(), "50.0".into()], vec!["a,\"b\"".into(), "1%".into()]],
            numeric_from: 1,
        }
    }

    #[test]
    fn markdown_escapes_pipes_and_aligns_numbers() {
        assert_eq!(
            t().markdown(),
            "### A & B_1\n\n| model | acc |\n|---|---:|\n| x\\|y | 50.0 |\n| a,\"b\" | 1% |\n"
        );
    }

    #[test]
    fn csv_quotes_commas_and_quotes() {
        assert_eq!(t().csv(), "model,acc\nx|y,50.0\n\"a,\"\"b\"\"\",1%\n");
    }

    #[test]
    fn latex_escapes_specials() {
        let l = t().latex();
        assert!(l.contains("\\caption{A \\& B\\_1}"), "{l}");
        assert!(l.contains("\\begin{tabular}{lr}"), "{l}");
        assert!(l.contains("a,\"b\" & 1\\% \\\\"), "{l}");
    }
}

//! The documentation's links resolve: every relative Markdown link and image in README.md,
//! docs/ARCHITECTURE.md and every `.md` file under docs/ (the user guide's pages included) names a
//! file or folder that exists, and the guide's SUMMARY.md lists exactly the pages under
//! docs/guide/src. Links with a scheme (`https:`, `mailto:`) and pure `#anchor` links are not
//! checked; for `file.md#anchor` the file is. Text in code spans and fenced code blocks is not a
//! link. docs/guide/book/ (what `mdbook build` writes) is not read.

mod common;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

/// Every link and image target of Markdown `text`, in order: inline `[text](target)` and
/// `![alt](target "title")` (also `<target>`), and reference definitions `[label]: target`.
/// Fenced code blocks and code spans are skipped.
fn link_targets(text: &str) -> Vec<String> {
    let prose = without_code(text);
    let mut out = Vec::new();
    let b = prose.as_bytes();
    let mut i = 0;
    while let Some(at) = prose[i..].find("](") {
        let start = i + at + 2;
        let (target, end) = if b.get(start) == Some(&b'<') {
            match prose[start + 1..].find('>') {
                Some(e) => (&prose[start + 1..start + 1 + e], start + 1 + e),
                None => break,
            }
        } else {
            // Up to whitespace or the `)` that closes the link, balancing parentheses.
            let mut depth = 0usize;
            let mut e = start;
            while e < b.len() {
                match b[e] {
                    b'(' => depth += 1,
                    b')' if depth == 0 => break,
                    b')' => depth -= 1,
                    c if c.is_ascii_whitespace() => break,
                    _ => {}
                }
                e += 1;
            }
            (&prose[start..e], e)
        };
        if !target.is_empty() {
            out.push(target.to_string());
        }
        i = end.max(start);
    }
    for line in prose.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix('[') {
            if let Some(close) = rest.find("]:") {
                if !rest[..close].contains(']') && !rest[..close].is_empty() {
                    let target = rest[close + 2..].split_whitespace().next().unwrap_or("");
                    let target = target.trim_start_matches('<').trim_end_matches('>');
                    if !target.is_empty() {
                        out.push(target.to_string());
                    }
                }
            }
        }
    }
    out
}

/// `text` with fenced code blocks removed and every code span replaced by a space. A code span
/// may run over line ends (as in CommonMark); a backtick run with no closing run of the same
/// length is literal text.
fn without_code(text: &str) -> String {
    let mut prose = String::new();
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let run = |c: char| t.chars().take_while(|&x| x == c).count();
        match fence {
            Some((c, n)) => {
                if run(c) >= n && t[run(c) * c.len_utf8()..].trim().is_empty() {
                    fence = None;
                }
            }
            None => {
                if let Some(c) = ['`', '~'].into_iter().find(|&c| run(c) >= 3) {
                    fence = Some((c, run(c)));
                } else {
                    prose.push_str(line);
                }
            }
        }
    }
    let mut out = String::with_capacity(prose.len());
    let mut rest = prose.as_str();
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let n = rest[at..].chars().take_while(|&c| c == '`').count();
        let after = &rest[at + n..];
        // The next run of exactly n backticks closes the span.
        let mut search = 0;
        let mut close = None;
        while let Some(p) = after[search..].find('`') {
            let p = search + p;
            let m = after[p..].chars().take_while(|&c| c == '`').count();
            if m == n {
                close = Some(p);
                break;
            }
            search = p + m;
        }
        match close {
            Some(p) => {
                out.push(' ');
                rest = &after[p + n..];
            }
            None => {
                out.push_str(&rest[at..at + n]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The path a relative link target names, from the file `from`; `None` for what is not checked
/// (a scheme such as `https:`, a pure `#anchor`).
fn local_path(from: &Path, target: &str) -> Option<PathBuf> {
    let scheme = target.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !s.contains('/')
    });
    if scheme || target.starts_with('#') {
        return None;
    }
    let path = target.split(['#', '?']).next().unwrap_or("");
    let path = path.replace("%20", " ");
    if path.starts_with('/') {
        // A site-absolute path means nothing in a clone: report it as broken.
        return Some(PathBuf::from(format!("/nonexistent{path}")));
    }
    Some(from.parent().unwrap().join(path))
}

/// `path` with `.` and `..` folded (without touching the file system).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Every `.md` file under `dir`, skipping any folder named in `skip`.
fn markdown_under(dir: &Path, skip: &[PathBuf], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if !skip.contains(&p) {
                markdown_under(&p, skip, out);
            }
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

/// The documents checked: README.md, docs/ARCHITECTURE.md if present, every `.md` under docs/
/// except the built book.
fn documents(repo: &Path) -> Vec<PathBuf> {
    let mut files = vec![repo.join("README.md")];
    markdown_under(&repo.join("docs"), &[repo.join("docs/guide/book")], &mut files);
    files
}

/// Every broken link of `files`, as `file: target`.
fn broken_links(repo: &Path, files: &[PathBuf]) -> (Vec<String>, usize) {
    let mut broken = Vec::new();
    let mut checked = 0;
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        for target in link_targets(&text) {
            let Some(path) = local_path(f, &target) else { continue };
            checked += 1;
            if !path.exists() {
                let shown = f.strip_prefix(repo).unwrap_or(f);
                broken.push(format!("{}: {target}", shown.display()));
            }
        }
    }
    (broken, checked)
}

#[test]
fn every_relative_link_and_image_in_the_docs_resolves() {
    let repo = common::repo();
    let files = documents(&repo);
    assert!(files.iter().any(|f| f.ends_with("docs/guide/src/SUMMARY.md")), "{files:?}");
    if repo.join("docs/ARCHITECTURE.md").exists() {
        assert!(files.contains(&repo.join("docs/ARCHITECTURE.md")));
    }
    let (broken, checked) = broken_links(&repo, &files);
    assert!(
        broken.is_empty(),
        "{} broken relative link(s) in the docs (a link is relative to the file it is in):\n{}",
        broken.len(),
        broken.join("\n")
    );
    // The README alone links to every guide page it lists; a checker that finds no links is broken.
    assert!(checked > 100, "only {checked} relative links found in {} files", files.len());
}

#[test]
fn summary_lists_exactly_the_pages_of_the_guide() {
    let repo = common::repo();
    let src = repo.join("docs/guide/src");
    let summary_path = src.join("SUMMARY.md");
    let summary = std::fs::read_to_string(&summary_path).unwrap();
    let listed: BTreeSet<PathBuf> = link_targets(&summary)
        .iter()
        .filter_map(|t| local_path(&summary_path, t))
        .map(|p| normal(&p))
        .collect();
    let missing: Vec<_> = listed.iter().filter(|p| !p.is_file()).collect();
    assert!(missing.is_empty(), "SUMMARY.md lists pages that do not exist: {missing:?}");
    let mut pages = Vec::new();
    markdown_under(&src, &[], &mut pages);
    let unlisted: Vec<_> = pages
        .iter()
        .map(|p| normal(p))
        .filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(p))
        .collect();
    assert!(
        unlisted.is_empty(),
        "pages under docs/guide/src that SUMMARY.md does not list (mdBook would not build them): {unlisted:?}"
    );
    assert!(listed.len() >= 10, "{listed:?}");
}

#[test]
fn the_checker_sees_links_and_images_and_skips_code_urls_and_anchors() {
    let text = "# T\n\nSee [a](a.md#part), ![img](pics/x.png \"title\") and [b](<b c.md>).\n\
                `[not](code.md)` and ``[not] (`x`)(y.md)``, a span over\n\
                two lines: `[no](\nwrap.md)`.\n\n\
                ```sh\n[no](fenced.md)\n```\n\n  ~~~~\n  [no](tilde.md)\n  ~~~~\n\n\
                [web](https://example.org/x.md), [top](#top), [mail](mailto:a@b.c), \
                [p](f(1).md) and a lone ` backtick [after](after.md).\n\n[ref]: refs/r.md\n";
    assert_eq!(
        link_targets(text),
        [
            "a.md#part",
            "pics/x.png",
            "b c.md",
            "https://example.org/x.md",
            "#top",
            "mailto:a@b.c",
            "f(1).md",
            "after.md",
            "refs/r.md"
        ]
    );

    // Resolution: relative to the linking file; a missing target is reported with its file.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("docs/guide/src")).unwrap();
    std::fs::create_dir_all(root.join("docs/results")).unwrap();
    std::fs::write(root.join("docs/results/r.md"), "# R\n").unwrap();
    std::fs::write(root.join("docs/guide/src/SUMMARY.md"), "- [P](p.md)\n").unwrap();
    std::fs::write(
        root.join("docs/guide/src/p.md"),
        "[ok](../../results/r.md#x) [gone](../../results/gone.md) [here](#h) [web](https://x.y/z.md)\n",
    )
    .unwrap();
    std::fs::write(root.join("README.md"), "[ok](docs/results/r.md) [bad](docs/r.md)\n").unwrap();
    let (broken, checked) = broken_links(root, &documents(root));
    assert_eq!(checked, 5);
    assert_eq!(broken, ["README.md: docs/r.md", "docs/guide/src/p.md: ../../results/gone.md"]);
}

//! Dataset specs as files record them. A run folder's manifest names the data it was made on;
//! a path typed relative to the folder the command ran in would not resolve from anywhere else,
//! so [`absolute`] records it absolute, and [`is_relative`] tells a spec recorded before that.
//!
//! The path of a spec is the whole spec for a plain `PATH`, the part after `psoups:`, `prism:`,
//! `synthesizeme:` or `lampqa:` (without the `#SPLIT` of the last two); `hf:` specs name no
//! local path and are kept as written.

use std::path::Path;

/// Prefixes followed by a path, and whether a `#SPLIT` may follow it.
const PATH_PREFIXES: [(&str, bool); 4] =
    [("psoups:", false), ("prism:", false), ("synthesizeme:", true), ("lampqa:", true)];

/// `spec` as (prefix, path, tail): `psoups:` + `data/x` + ``, `synthesizeme:` + `d` + `#test`;
/// `None` for specs without a local path (`hf:`).
fn parts(spec: &str) -> Option<(&str, &str, &str)> {
    if spec.starts_with("hf:") {
        return None;
    }
    for (prefix, split) in PATH_PREFIXES {
        if let Some(rest) = spec.strip_prefix(prefix) {
            let cut = if split { rest.rfind('#').unwrap_or(rest.len()) } else { rest.len() };
            return Some((prefix, &rest[..cut], &rest[cut..]));
        }
    }
    Some(("", spec, ""))
}

/// `spec` with its path made absolute (resolved against the current folder, symbolic links and
/// `..` resolved when the path exists), so it names the same data from any folder. Specs
/// without a local path (`hf:ORG/NAME`) and absolute paths that cannot be resolved are returned
/// as given; so is a path whose absolute form is not UTF-8 (a spec is text).
pub fn absolute(spec: &str) -> String {
    let Some((prefix, path, tail)) = parts(spec) else { return spec.to_string() };
    if path.is_empty() {
        return spec.to_string();
    }
    let resolved = std::fs::canonicalize(path).or_else(|_| std::path::absolute(path));
    match resolved.as_deref().ok().and_then(Path::to_str) {
        Some(abs) => format!("{prefix}{abs}{tail}"),
        None => spec.to_string(),
    }
}

/// True when `spec` names a local path that is relative: it resolves only from the folder the
/// command that recorded it ran in.
pub fn is_relative(spec: &str) -> bool {
    parts(spec).is_some_and(|(_, path, _)| !path.is_empty() && Path::new(path).is_relative())
}

#[cfg(test)]
mod tests {
    use super::{absolute, is_relative};

    #[test]
    fn a_relative_spec_is_recorded_absolute_with_its_prefix_and_split() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d");
        std::fs::create_dir(&data).unwrap();
        let canon = std::fs::canonicalize(&data).unwrap().to_str().unwrap().to_string();
        // From the folder holding `d`, as a user would type it.
        let rel = pathdiff(&data);
        assert_eq!(absolute(&rel), canon);
        assert_eq!(absolute(&format!("psoups:{rel}")), format!("psoups:{canon}"));
        assert_eq!(
            absolute(&format!("synthesizeme:{rel}#train")),
            format!("synthesizeme:{canon}#train")
        );
        assert_eq!(absolute("hf:org/name@v1"), "hf:org/name@v1");
        assert!(
            is_relative("data/sample") && is_relative("psoups:x") && is_relative("lampqa:x#dev")
        );
        assert!(
            !is_relative(&canon)
                && !is_relative("hf:org/name")
                && !is_relative(&format!("prism:{canon}"))
        );
    }

    /// `path` relative to the current folder, through `..` as needed.
    fn pathdiff(path: &std::path::Path) -> String {
        let cwd = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
        let target = std::fs::canonicalize(path).unwrap();
        let common = cwd.ancestors().find(|a| target.starts_with(a)).unwrap();
        let ups = cwd.strip_prefix(common).unwrap().components().count();
        let mut rel = std::path::PathBuf::new();
        for _ in 0..ups {
            rel.push("..");
        }
        rel.push(target.strip_prefix(common).unwrap());
        rel.to_str().unwrap().to_string()
    }
}

//! The test that every numeric flag of every verb has a bounded parser. The parsers themselves
//! are [`prbench_flags::bounds`], re-exported here for the binary's own clap groups.

pub use prbench_flags::bounds::*;

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use crate::cli::Cli;

    /// The type id a parser yielding `T` reports.
    fn id_of<T: std::str::FromStr + Clone + Send + Sync + 'static>() -> clap::builder::ValueParser {
        clap::builder::ValueParser::new(|s: &str| s.parse::<T>().map_err(|_| "no"))
    }

    /// Args whose value is a number, by the type their parser yields.
    fn is_numeric(vp: &clap::builder::ValueParser) -> bool {
        let numeric = [
            id_of::<usize>(),
            id_of::<u64>(),
            id_of::<u32>(),
            id_of::<u16>(),
            id_of::<u8>(),
            id_of::<i64>(),
            id_of::<i32>(),
            id_of::<f64>(),
            id_of::<f32>(),
        ];
        numeric.iter().any(|n| n.type_id() == vp.type_id())
    }

    /// Every subcommand path (`["eval"]`, `["bench", "rm"]`, …) with its command.
    fn leaves(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
        out.push((path.clone(), cmd.clone()));
        for sub in cmd.get_subcommands() {
            let mut p = path.clone();
            p.push(sub.get_name().to_string());
            leaves(sub, p, out);
        }
    }

    /// Whether parsing `path --flag value` fails on the value (not on a missing required arg).
    fn refused(path: &[String], flag: &str, value: &str) -> Option<String> {
        let mut argv = vec!["prbench".to_string()];
        argv.extend(path.iter().cloned());
        argv.push(format!("--{flag}"));
        argv.push(value.to_string());
        match Cli::command().try_get_matches_from(argv) {
            Err(e)
                if matches!(
                    e.kind(),
                    clap::error::ErrorKind::ValueValidation | clap::error::ErrorKind::InvalidValue
                ) =>
            {
                Some(e.to_string())
            }
            _ => None,
        }
    }

    /// Walks clap's command tree: every arg whose value is a number must refuse 2^32 − 1 and
    /// 2^64 − 1 (a count that big never fits in memory or time) and a negative number with a
    /// message, except seeds, whose every u64 value is valid; and accept its default. A numeric
    /// flag added later without a range fails here.
    #[test]
    fn every_numeric_flag_has_a_bounded_parser() {
        let mut cmds = Vec::new();
        leaves(&Cli::command(), Vec::new(), &mut cmds);
        let mut checked = 0;
        let mut problems = Vec::new();
        for (path, cmd) in &cmds {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if !arg.get_action().takes_values() || !is_numeric(arg.get_value_parser()) {
                    // A string-typed arg whose default is a number is numeric-looking: flag it.
                    let numeric_default = arg
                        .get_default_values()
                        .iter()
                        .any(|v| v.to_str().is_some_and(|s| s.parse::<f64>().is_ok()));
                    if numeric_default && arg.get_action().takes_values() {
                        problems.push(format!(
                            "{} --{long}: numeric default but a non-numeric parser",
                            path.join(" ")
                        ));
                    }
                    continue;
                }
                checked += 1;
                let name = format!("{} --{long}", path.join(" "));
                if refused(path, long, "-5").is_none() {
                    problems.push(format!(
                        "{name}: `-5` is not refused by its parser (add allow_negative_numbers)"
                    ));
                }
                if long == "seed" {
                    assert!(arg.get_value_parser().type_id() == id_of::<u64>().type_id(), "{name}");
                    continue;
                }
                for huge in ["4294967295", "18446744073709551615", "1e300"] {
                    if refused(path, long, huge).is_none() {
                        problems.push(format!("{name}: `{huge}` is accepted"));
                    }
                }
                for d in arg.get_default_values() {
                    let d = d.to_str().unwrap();
                    if let Some(e) = refused(path, long, d) {
                        problems.push(format!("{name}: its default `{d}` is refused: {e}"));
                    }
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        assert!(checked > 60, "only {checked} numeric args found: is the walk broken?");
    }

    /// Out-of-range values of eval's numeric flags (`--bootstrap` too large for memory,
    /// `--max-error-rate`, `--limit`, `--concurrency`, `--max-new-tokens`), refused at parse time
    /// with the range in the message.
    #[test]
    fn bootstrap_flag_refuses_values_that_do_not_fit_in_memory() {
        let e = refused(&["eval".into()], "bootstrap", "4294967295").expect("refused");
        assert!(e.contains("--bootstrap") && e.contains("from 100 to 1000000"), "{e}");
        assert!(refused(&["eval".into()], "bootstrap", "1000000").is_none());
        let e = refused(&["eval".into()], "max-error-rate", "5").expect("refused");
        assert!(e.contains("[0, 1]"), "{e}");
        let e = refused(&["eval".into()], "limit", "0").expect("refused");
        assert!(e.contains("--limit"), "{e}");
        let e = refused(&["eval".into()], "concurrency", "100000").expect("refused");
        assert!(e.contains("from 1 to 4096"), "{e}");
        let e = refused(&["eval".into()], "max-new-tokens", "0").expect("refused");
        assert!(e.contains("--max-new-tokens"), "{e}");
    }

    #[test]
    fn negative_seed_says_it_takes_a_non_negative_integer() {
        for path in [
            vec!["eval".to_string()],
            vec!["train".into(), "bt".into()],
            vec!["bench".into(), "rm".into()],
        ] {
            let e = refused(&path, "seed", "-5").expect("refused");
            assert!(e.contains("--seed") && e.contains("takes a non-negative integer"), "{e}");
            assert!(!e.contains("unexpected argument"), "{e}");
        }
    }
}

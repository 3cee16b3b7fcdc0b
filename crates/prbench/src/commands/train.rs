//! `prbench train bt` and `prbench train pal`: [`prbench_engines::train`] does the work.
//! Progress goes to stderr unless `--quiet`, the closing line to stdout.

use anyhow::Result;
use prbench_train::bt::pipeline::TrainReporter;

use crate::cli::TrainCommand;

/// Runs a `train` sub-verb.
pub fn run(cmd: TrainCommand) -> Result<()> {
    let line = match cmd {
        TrainCommand::Bt(args) => prbench_engines::train::train_bt(
            &args,
            crate::code_version(),
            &Say { quiet: args.run.quiet },
        )?,
        TrainCommand::Pal(args) => prbench_engines::train::train_pal(
            &args,
            crate::code_version(),
            &Say { quiet: args.run.quiet },
        )?,
    };
    println!("{line}");
    Ok(())
}

/// Progress on stderr unless `--quiet`; warnings always.
struct Say {
    quiet: bool,
}

impl TrainReporter for Say {
    fn progress(&self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }

    fn warning(&self, line: &str) {
        eprintln!("prbench: warning: {line}");
    }
}

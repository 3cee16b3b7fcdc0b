//! `prbench export`: training data for TRL / OpenRLHF reward models and planner SFT, rendered by
//! `prbench_eval::training_export` exactly as `eval` renders its inputs. Flags →
//! [`prbench_engines::export::run`]; its notes go to stderr (stdout stays empty: the rows are in
//! the file), progress to the bar.

use anyhow::Result;

use crate::cli::ExportArgs;
use crate::progress::Bar;

/// Runs `prbench export`.
pub fn run(args: ExportArgs) -> Result<()> {
    let bar = Bar::new(args.quiet);
    prbench_engines::export::run(&args, crate::code_version(), &bar, &mut |line| {
        eprintln!("prbench: {line}")
    })
}

//! `prbench bon {sample,judge,score,report}`: Best-of-N (PROTOCOL.md §6) over one folder, run by
//! `prbench_downstream::bon::stages` with the progress bar as its reporter.

use anyhow::Result;
use prbench_downstream::bon::stages::{report, BonReporter, Judging, Sampling, Scoring};

use crate::cli::BonCommand;
use crate::progress::Bar;

impl BonReporter for Bar {
    fn set_done(&self, done: u64) {
        Bar::set_done(self, done)
    }

    fn table(&self, text: &str) {
        println!("{text}");
    }
}

/// Runs `prbench bon`.
pub fn run(cmd: BonCommand) -> Result<()> {
    let version = crate::code_version();
    match cmd {
        BonCommand::Sample(o) => {
            let bar = Bar::new(o.stage.quiet);
            Sampling::plan(o, version, &bar)?.run(&bar)?;
        }
        BonCommand::Judge(o) => {
            let bar = Bar::new(o.stage.quiet);
            Judging::plan(o, version)?.run(&bar)?;
        }
        BonCommand::Score(o) => {
            let bar = Bar::new(o.stage.quiet);
            Scoring::plan(o, version)?.run(&bar)?;
        }
        BonCommand::Report(o) => {
            report(&o, &Bar::new(true))?;
        }
    }
    Ok(())
}

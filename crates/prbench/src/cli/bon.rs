//! `bon` command-line types: the verbs; their flags are the steps' options, defined beside the
//! steps in `prbench_downstream::bon::options`.

use clap::Subcommand;
use prbench_downstream::bon::options::{JudgeOptions, ReportOptions, SampleOptions, ScoreOptions};

/// `prbench bon` verbs.
#[derive(Subcommand, Debug)]
pub enum BonCommand {
    /// Sample N answers per question from a policy that sees the user's top-k posts.
    Sample(SampleOptions),
    /// Score every sample against its example's hidden rubric (0/1/2 per aspect).
    Judge(JudgeOptions),
    /// Score every sample with a reward model (a judge model rates each answer on 1–9).
    Score(ScoreOptions),
    /// Write the best-of-k table for k = 1, 2, 4, … N from the judgements and scores present.
    Report(ReportOptions),
}

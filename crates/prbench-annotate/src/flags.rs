//! The flags of `prbench annotate` and its sub-verbs, as clap groups: the binary parses them and
//! [`crate::front`] turns them into the work. `serve`'s data flags are
//! [`prbench_flags::data::DataArgs`]; every numeric flag has a bounded parser from
//! [`prbench_flags::bounds`].

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use prbench_flags::bounds::whole;
use prbench_flags::data::DataArgs;

/// `annotate` subcommands.
#[derive(Subcommand, Debug)]
pub enum AnnotateCommand {
    /// Serve the rating page: each annotator gets a secret link; every item is rated by
    /// --per-item annotators, who never see which answer is chosen. Ratings go to
    /// `<out>/annotate.sqlite`; restarting on the same --out resumes. Stops on Ctrl-C or
    /// SIGTERM.
    Serve(AnnotateServeArgs),
    /// Every saved rating, one row per annotator × item × answer × dimension, with the
    /// answer's true label.
    Export(AnnotateExportArgs),
    /// Krippendorff's alpha per dimension (interval, ordinal, nominal) with bootstrap CIs over
    /// units, for a CSV of ratings from any source (header `annotator,unit,dimension,score`).
    Agreement(AnnotateAgreementArgs),
    /// The human-evaluation report of an annotation folder, in Markdown.
    Report(AnnotateReportArgs),
}

/// `annotate serve` arguments.
#[derive(Args, Debug)]
pub struct AnnotateServeArgs {
    /// The pairs to rate (any `--data` spec of eval).
    #[command(flatten)]
    pub data: DataArgs,
    /// The annotation folder: new or empty, or one this command made before (it holds
    /// `annotate.sqlite`), which is resumed; a folder of other files is refused.
    #[arg(long)]
    pub out: PathBuf,
    /// Annotator names, comma-separated (A-Z, a-z, 0-9, `_`, `.`, `-`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub annotators: Vec<String>,
    /// Annotators per item (default: 2, or 1 with a single annotator).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000))]
    pub per_item: Option<usize>,
    /// At most this many items per subset (dataset order).
    #[arg(long, allow_negative_numbers = true, value_parser = whole::<usize>(1, 10_000_000))]
    pub limit: Option<usize>,
    /// Seed of the assignment and of each annotator's answer order. Raters who can read
    /// prbench's code and know the seed could work out the order: use a seed of your own.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
    /// Address to listen on (an IP address, or `localhost`); a non-loopback one is warned
    /// about (links are secret, but the traffic is plain HTTP).
    #[arg(long, default_value = "127.0.0.1", value_parser = host)]
    pub host: IpAddr,
    /// The address annotators reach this server at, when it differs from --host:--port (a
    /// proxy, TLS in front, another machine's name): printed links are it followed by
    /// `/r/TOKEN`, e.g. `https://rate.example.org` or `https://host/prefix/` (a trailing `/`
    /// is dropped).
    #[arg(long)]
    pub public_url: Option<String>,
    /// Port (0: any free port; the printed links say which).
    #[arg(long, default_value_t = 8377, allow_negative_numbers = true, value_parser = whole::<u16>(0, 65_535))]
    pub port: u16,
    /// Issue new links for every annotator (the old ones stop working). Links are printed
    /// only when issued: the store keeps only their sha256.
    #[arg(long)]
    pub new_tokens: bool,
}

fn host(s: &str) -> Result<IpAddr, String> {
    if s == "localhost" {
        return Ok(IpAddr::from([127, 0, 0, 1]));
    }
    s.parse().map_err(|e| {
        format!("`{s}` is not an IP address ({e}); use e.g. 127.0.0.1, 0.0.0.0 or localhost")
    })
}

/// Export formats.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ExportFormat {
    /// CSV with a header row.
    Csv,
    /// One JSON object per line.
    Jsonl,
}

impl From<ExportFormat> for crate::export::Format {
    fn from(f: ExportFormat) -> Self {
        match f {
            ExportFormat::Csv => crate::export::Format::Csv,
            ExportFormat::Jsonl => crate::export::Format::Jsonl,
        }
    }
}

/// `annotate export` arguments.
#[derive(Args, Debug)]
pub struct AnnotateExportArgs {
    /// The annotation folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
    pub format: ExportFormat,
    /// Where to write (`-` for stdout); default `<out>/ratings.csv` or `<out>/ratings.jsonl`.
    #[arg(long)]
    pub to: Option<PathBuf>,
}

/// `annotate agreement` arguments.
#[derive(Args, Debug)]
pub struct AnnotateAgreementArgs {
    /// Ratings CSV: columns `annotator,unit,dimension,score` (others are ignored and named).
    #[arg(long)]
    pub ratings: PathBuf,
    /// Print one JSON object (dimension → statistics) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Bootstrap resamples of each CI.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub resamples: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
}

/// `annotate report` arguments.
#[derive(Args, Debug)]
pub struct AnnotateReportArgs {
    /// The annotation folder.
    #[arg(long)]
    pub out: PathBuf,
    /// Where to write the Markdown (`-` for stdout); default `<out>/annotate-report.md`.
    #[arg(long)]
    pub to: Option<PathBuf>,
    /// Bootstrap resamples of each CI.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true, value_parser = whole::<usize>(1, 1_000_000))]
    pub resamples: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 42, allow_negative_numbers = true, value_parser = prbench_flags::bounds::seed)]
    pub seed: u64,
}

//! The load-time check every served reward model shares (`vllm-classify:`, `sglang-classify:`,
//! `tei:`, `openrlhf:`, `reward-server:`): one small scoring request to each server URL in turn,
//! retried as any request is, so that a dead or wrong URL stops the run before it starts
//! instead of filling it with per-item "connection failed" outcomes. Each backend's `probe`
//! sends its own endpoint's request for [`probe_request`] and reads the reply with the same code
//! that reads an item's; this module runs it once per URL and words the failure.
//!
//! A probe request is retried exactly as an item's is (`RemoteClient::post_json`): a 2xx whose
//! body is not JSON or ends early is retried (a reply cut in transit), well-formed JSON of the
//! wrong shape is not (the server would send it again), and either fails the probe as an answer
//! that cannot be used. "Did not answer" is kept for requests that got no HTTP response at all
//! (connection refused or reset, timeouts).
//!
//! The `openai:` judge's own test request ([`crate::OpenAiChat::probe_logprobs`]) words a server
//! that did not answer with the same `did_not_answer`, so every engine says "is the server up"
//! alike; a 404 to a reward model's probe adds what it means (`not_found_hint`).
//!
//! Probe requests go through a client of that one URL (so the retries cannot move to another
//! replica and a dead replica is named as such), built for the probe and dropped after it: they
//! are not counted in the backend's [`prbench_models::RewardModel::call_stats`].

use prbench_models::{ChatMessage, ChatPrompt, ModelError, RmInput, RmRequest, Role};

use crate::client::{CallError, RemoteClient};

/// The question of the probe item: short, no profile, nothing from any dataset.
pub const PROBE_QUESTION: &str = "prbench connection check: is this answer fine?";

/// The answer of the probe item.
pub const PROBE_ANSWER: &str = "Yes.";

/// The example id the probe item carries (it appears in a probe's error messages).
pub const PROBE_EXAMPLE_ID: &str = "prbench-probe";

/// The item every probe scores: user turn [`PROBE_QUESTION`], assistant turn [`PROBE_ANSWER`].
pub fn probe_request() -> RmRequest {
    RmRequest {
        input: RmInput {
            example_id: PROBE_EXAMPLE_ID.into(),
            question: PROBE_QUESTION.into(),
            context: None,
            answer: PROBE_ANSWER.into(),
        },
        prompt: ChatPrompt {
            messages: vec![
                ChatMessage::new(Role::User, PROBE_QUESTION),
                ChatMessage::new(Role::Assistant, PROBE_ANSWER),
            ],
            assistant_prefix: String::new(),
        },
    }
}

/// How one URL's probe failed.
pub(crate) enum ProbeFailure {
    /// The request failed: [`CallError::answered`] tells a server that answered (an error status,
    /// a reply that is not the endpoint's JSON, worded "answered …, but its answer cannot be
    /// used") from one that did not (connection refused, timeouts: "did not answer", most likely
    /// a wrong URL or port, or a server that is down).
    NoAnswer(CallError),
    /// The server answered the endpoint, but the answer cannot be used (e.g. a head with several
    /// outputs and no `--label-index`): the URL is right, the model or the flags are not.
    Unusable(ModelError),
}

impl From<CallError> for ProbeFailure {
    fn from(e: CallError) -> Self {
        ProbeFailure::NoAnswer(e)
    }
}

impl From<ModelError> for ProbeFailure {
    fn from(e: ModelError) -> Self {
        ProbeFailure::Unusable(e)
    }
}

/// Runs `check(one)` for each URL of `client`, where `one` is a client of that URL alone with
/// the same options, and stops at the first failure.
///
/// `server` names the kind of server in messages (e.g. `vLLM server`); `root_hint` says what
/// the URL must point at (e.g. "the server's root, where `/classify` hangs").
///
/// # Errors
/// [`ModelError::Engine`] naming the URL and the cause (with the server's status and message
/// when it answered); when no HTTP answer came back it also says to check that the server is
/// up and that the host, port and path of the URL are right.
pub(crate) fn each_url(
    client: &RemoteClient,
    server: &str,
    root_hint: &str,
    check: impl Fn(&RemoteClient) -> Result<(), ProbeFailure>,
) -> Result<(), ModelError> {
    for url in client.urls() {
        let one = RemoteClient::new(std::slice::from_ref(&url), client.options().clone())?;
        let answered = |why: &str| {
            format!(
                "{server} `{url}` answered a test request, but its answer cannot be used: {}",
                one.redact(&strip_engine_prefix(why))
            )
        };
        match check(&one) {
            Ok(()) => {}
            Err(ProbeFailure::NoAnswer(CallError {
                message,
                answered: true,
                fatal_status: Some(404),
                ..
            })) => {
                return Err(ModelError::Engine(format!(
                    "{}. {}",
                    answered(&message),
                    not_found_hint(root_hint)
                )))
            }
            Err(ProbeFailure::NoAnswer(CallError { message, answered: true, .. })) => {
                return Err(ModelError::Engine(answered(&message)))
            }
            Err(ProbeFailure::NoAnswer(e)) => {
                return Err(did_not_answer(server, &url, &e.message, root_hint))
            }
            Err(ProbeFailure::Unusable(e)) => {
                let why = match e {
                    ModelError::Engine(m) => m,
                    other => prbench_models::error::chain(&other),
                };
                return Err(ModelError::Engine(answered(&why)));
            }
        }
    }
    Ok(())
}

/// The error of a load-time test request that got no HTTP answer at all (connection refused or
/// reset, timeouts: [`CallError::answered`] false): the server and URL, the cause, and what to
/// check. The one wording of "is the server up" for every engine (the reward models' probes
/// and the `openai:` judge's), so the hint reads the same whichever engine a user starts with.
/// `root_hint` says what the URL must point at.
pub(crate) fn did_not_answer(server: &str, url: &str, cause: &str, root_hint: &str) -> ModelError {
    ModelError::Engine(format!(
        "{server} `{url}` did not answer a test request: {cause}. Check that the server is up and reachable at that URL, that the host and port are right, and that the URL is {root_hint}"
    ))
}

/// What a 404 to a test request means: the server is up, but has no such path (a URL with an
/// extra `/v1`, a server of another kind) or no such model (vLLM answers 404 for a model name it
/// does not serve).
pub(crate) fn not_found_hint(root_hint: &str) -> String {
    format!("A 404 means the server is up but has no such path or no such model: check that the URL is {root_hint}, and that the model name is the one the server serves")
}

/// `text` without the `engine error: ` prefix a nested [`ModelError::Engine`] adds when it is
/// shown inside another (the outer error says it once).
pub(crate) fn strip_engine_prefix(text: &str) -> String {
    text.replace("engine error: ", "")
}

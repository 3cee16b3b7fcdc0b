//! What the server does: normal answers, scripted faults, and what it records.

use std::time::Duration;

/// How the server is configured for its whole life.
///
/// `ServerConfig::default()` answers every request normally, at once, keeps the request log,
/// decides verdicts by [`VerdictRule::Hash`] and returns logprobs when a request asks for them.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Every successful answer to a POST endpoint waits this long before it is sent (simulated
    /// inference latency). Fault answers (errors, drops) are sent at once. `GET /v1/models` is
    /// never delayed: it is metadata, and clients probe it at start-up.
    pub delay: Option<Duration>,
    /// Keep a [`RequestRecord`](crate::RequestRecord) of every request. The log is the only
    /// structure that grows with the number of requests; turn it off for load benches and for
    /// long-running servers.
    pub record: bool,
    /// Scripted faults, tried in order before the normal answer of every POST endpoint; see
    /// [`FaultRule`].
    pub rules: Vec<FaultRule>,
    /// How `POST /v1/chat/completions` decides the judge's verdict.
    pub verdict: VerdictRule,
    /// Return `choices[0].logprobs` when a chat request sets `"logprobs": true`. When `false`
    /// the server behaves like one that ignores the parameter (`"logprobs": null`).
    pub logprobs: bool,
    /// Scripted chat replies, tried in order before the verdict rule: the first whose marker
    /// occurs in the request's concatenated message contents is the reply text (a generator
    /// stand-in, e.g. for `prbench build`'s answers and audits).
    pub replies: Vec<ScriptedReply>,
    /// Next-token requests (a logprob verdict through a server): a chat request whose last
    /// message is the assistant's is answered as a prefill to continue. When `false` such a
    /// request gets `400` (as from a server that cannot continue an assistant turn).
    pub prefill: bool,
    /// Serve `POST /v1/completions` and `GET /props`. When `false` both are `404`.
    pub completions: bool,
    /// Next-token requests whose text holds one of these markers get only the chosen letter
    /// among their top log-probabilities: the other letter is missing.
    pub lone_letter_markers: Vec<String>,
}

/// A chat reply chosen by a marker in the request (see [`ServerConfig::replies`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptedReply {
    /// Substring of the concatenated message contents that selects this reply.
    pub marker: String,
    /// The reply's text.
    pub text: String,
    /// `choices[0].finish_reason` (`stop` or `length`).
    pub finish_reason: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            delay: None,
            record: true,
            rules: Vec::new(),
            verdict: VerdictRule::Hash,
            logprobs: true,
            replies: Vec::new(),
            prefill: true,
            completions: true,
            lone_letter_markers: Vec::new(),
        }
    }
}

impl ServerConfig {
    /// Adds a fault rule after the existing ones.
    pub fn with_rule(mut self, rule: FaultRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Sets the delay of every successful POST answer.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Turns the request log on or off.
    pub fn with_record(mut self, record: bool) -> Self {
        self.record = record;
        self
    }

    /// Sets the verdict rule of the chat endpoint.
    pub fn with_verdict(mut self, verdict: VerdictRule) -> Self {
        self.verdict = verdict;
        self
    }

    /// Adds a scripted reply (finish reason `stop`) after the existing ones.
    pub fn with_reply(mut self, marker: impl Into<String>, text: impl Into<String>) -> Self {
        self.replies.push(ScriptedReply {
            marker: marker.into(),
            text: text.into(),
            finish_reason: "stop".into(),
        });
        self
    }

    /// Adds a scripted reply that ends with `finish_reason: length` (cut at the token budget).
    pub fn with_truncated_reply(
        mut self,
        marker: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        self.replies.push(ScriptedReply {
            marker: marker.into(),
            text: text.into(),
            finish_reason: "length".into(),
        });
        self
    }

    /// Turns logprobs support on or off.
    pub fn with_logprobs(mut self, logprobs: bool) -> Self {
        self.logprobs = logprobs;
        self
    }

    /// Turns the chat prefill (a final assistant message continued) on or off.
    pub fn with_prefill(mut self, prefill: bool) -> Self {
        self.prefill = prefill;
        self
    }

    /// Turns `POST /v1/completions` and `GET /props` on or off.
    pub fn with_completions(mut self, completions: bool) -> Self {
        self.completions = completions;
        self
    }

    /// Adds a marker whose next-token requests get only the chosen letter in their top
    /// log-probabilities.
    pub fn with_lone_letter(mut self, marker: impl Into<String>) -> Self {
        self.lone_letter_markers.push(marker.into());
        self
    }
}

/// One scripted fault: which requests it hits, what they get, and how often.
///
/// Rules are tried in order; the first rule that matches the request and still has attempts left
/// serves its fault, and later rules are not consulted (nor counted) for that request. So
/// `[429 × 1, 500 × 1]` on the same marker gives: first attempt 429, second 500, third success.
///
/// Counting (`times`) is per rule and per distinct request body (SHA-256 of the raw bytes), so it
/// does not depend on concurrency or on the order in which different bodies arrive: with
/// `times: Some(2)` the first two attempts of *each* matching body fail and the third succeeds.
/// The counters grow with the number of distinct matching bodies, never with retries.
#[derive(Debug, Clone)]
pub struct FaultRule {
    /// The rule applies to requests whose raw body contains this text; `""` matches every POST.
    /// The match is on the JSON-encoded bytes, so keep markers plain ASCII without quotes,
    /// backslashes or control characters (which JSON would escape).
    pub marker: String,
    /// What a matching request gets.
    pub fault: Fault,
    /// Serve the fault to the first N matching requests of each distinct body, then let that body
    /// through; `None` = every matching request, forever.
    pub times: Option<u32>,
}

impl FaultRule {
    /// A rule for requests whose body contains `marker`, applied forever (`times: None`).
    pub fn new(marker: impl Into<String>, fault: Fault) -> Self {
        FaultRule { marker: marker.into(), fault, times: None }
    }

    /// A rule for every POST request, applied forever.
    pub fn always(fault: Fault) -> Self {
        FaultRule::new("", fault)
    }

    /// Limits the rule to the first `n` matching requests of each distinct body.
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }
}

/// A fault the server can serve instead of (or before) the normal answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// `429 Too Many Requests` with an OpenAI-style error body and, when given, a `Retry-After`
    /// header with this exact value (e.g. `"1"`, or an HTTP date).
    RateLimited {
        /// Value of the `Retry-After` header; `None` sends no header.
        retry_after: Option<String>,
    },
    /// `500 Internal Server Error` with an OpenAI-style error body.
    ServerError,
    /// Any status code (e.g. 400, 401, 503) with an OpenAI-style error body.
    Status(u16),
    /// Wait this long, then send the normal answer (to exercise client timeouts).
    Slow(Duration),
    /// `200`, `content-type: application/json`, a correct `content-length`, and a body that is
    /// the first half of the normal answer: the HTTP exchange succeeds, JSON parsing fails.
    TruncatedJson,
    /// Close the TCP connection without sending a single byte of response: the client sees a
    /// connection-level error (connection closed before message completed), never a status.
    DropConnection,
    /// Send the status line, headers (with the full `content-length`) and half of the normal
    /// body, then abort the connection: the client sees a status 200 and then a body error.
    DropMidBody,
    /// `500` whose body contains the received `Authorization` header verbatim, so tests can check
    /// that clients never copy error bodies holding secrets into their own errors or logs.
    EchoAuthorization,
}

impl Fault {
    /// A short stable name, used in [`RequestRecord::fault`](crate::RequestRecord::fault):
    /// `rate_limited`, `server_error`, `status_<code>`, `slow`, `truncated_json`,
    /// `drop_connection`, `drop_mid_body`, `echo_authorization`.
    pub fn name(&self) -> String {
        match self {
            Fault::RateLimited { .. } => "rate_limited".into(),
            Fault::ServerError => "server_error".into(),
            Fault::Status(code) => format!("status_{code}"),
            Fault::Slow(_) => "slow".into(),
            Fault::TruncatedJson => "truncated_json".into(),
            Fault::DropConnection => "drop_connection".into(),
            Fault::DropMidBody => "drop_mid_body".into(),
            Fault::EchoAuthorization => "echo_authorization".into(),
        }
    }
}

/// A judge verdict letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Letter {
    /// Slot A.
    A,
    /// Slot B.
    B,
}

impl Letter {
    /// `"A"` or `"B"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Letter::A => "A",
            Letter::B => "B",
        }
    }

    /// The other letter.
    pub fn other(self) -> Letter {
        match self {
            Letter::A => Letter::B,
            Letter::B => Letter::A,
        }
    }
}

/// How the chat endpoint picks the verdict of its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VerdictRule {
    /// SHA-256 of the concatenated message contents: first byte even → `A`, odd → `B`.
    /// Deterministic per prompt, and about half of distinct prompts get each letter.
    #[default]
    Hash,
    /// Always this letter.
    Always(Letter),
    /// A reply without any `Result:` line, which a judge parser must report as unparsed.
    Garbage,
}

impl VerdictRule {
    /// The verdict this rule gives for the concatenated message contents of a request
    /// (`None` for [`VerdictRule::Garbage`]). Tests use it to predict the server's answer.
    pub fn letter_for(self, concatenated_contents: &str) -> Option<Letter> {
        match self {
            VerdictRule::Always(letter) => Some(letter),
            VerdictRule::Garbage => None,
            VerdictRule::Hash => {
                use sha2::{Digest, Sha256};
                let digest = Sha256::digest(concatenated_contents.as_bytes());
                Some(if digest[0] % 2 == 0 { Letter::A } else { Letter::B })
            }
        }
    }
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRecord {
    /// HTTP method (`"GET"`, `"POST"`).
    pub method: String,
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Lowercase hex SHA-256 of the raw body bytes (of the empty string for bodiless requests).
    pub body_sha256: String,
    /// The body parsed as JSON; `Null` for an empty body, a JSON string holding the (lossy UTF-8)
    /// text when the body is not valid JSON.
    pub body: serde_json::Value,
    /// The `Authorization` header as received, if any.
    pub authorization: Option<String>,
    /// Name of the fault served ([`Fault::name`]); `None` for a normal answer.
    pub fault: Option<String>,
}

//! Logprob verdicts through a server, as the in-process `gguf:` judge reads them (PROTOCOL.md §4,
//! "Logprob verdict"): the judge's prompt plus the verdict prefix (`Result:`, or a judge
//! recipe's `[logprob]` prefix) as the start of the assistant turn, one token asked for
//! (`max_tokens: 1`, temperature 0, the top 20 log-probabilities), and log p(A), log p(B) read
//! at that one position. Nothing is generated and parsed.
//!
//! Two transports, decided once when the judge is built ([`ServerLogprobJudge::new`]):
//!
//! 1. [`LogprobTransport::ChatPrefill`]: `POST …/chat/completions` with the messages and a final
//!    `{"role": "assistant", "content": PREFIX}`, plus `"continue_final_message": true,
//!    "add_generation_prompt": false` (vLLM's spelling; llama.cpp's server continues a final
//!    assistant message on its own and ignores the two keys). The server applies its own chat
//!    template.
//! 2. [`LogprobTransport::Completions`]: `POST …/completions` with `prompt` = the conversation
//!    rendered by prbench with the model's chat template (add_generation_prompt, then the
//!    prefix, the text exactly as the template writes it, as the in-process engine tokenizes
//!    it) and `logprobs: 20`. The server tokenizes it whole, special tokens included; a server
//!    whose tokenizer adds a BOS token in front of a template that writes one itself gets two
//!    (llama.cpp's server warns of it): give `--chat-template` a template without it then. The template comes from `--chat-template`, or else from
//!    the server's `GET /props` (llama.cpp's server reports the GGUF's template there).
//!
//! By default the chat prefill is tried first and the completions endpoint second; a transport
//! "works" when its test request is answered with log-probabilities at the one generated
//! token. prbench cannot tell from the reply whether a chat server honoured the prefill or
//! opened a new assistant turn after it: force [`LogprobTransport::Completions`] for a server
//! that does the latter.
//!
//! At the verdict position, every distinct alternative (the top log-probabilities, plus the
//! generated token itself) whose text, with whitespace trimmed, is candidate A's (trimmed)
//! counts toward log p(A) by log-sum-exp, likewise for B. When a candidate is not among them
//! the verdict is [`Choice::Unparsed`] with no p(A), and [`ServerLogprobJudge::missing_letters`]
//! counts it: nothing is guessed.

use std::sync::atomic::{AtomicU64, Ordering};

use prbench_models::judge::{two_way_p_a, RESULT_PREFIX, SLOT_TOKENS};
use prbench_models::{
    CallStats, ChatMessage, ChatPrompt, Choice, ItemDone, Judge, JudgeRequest, ModelError,
    ModelIdentity, Role, TokenStats, Verdict,
};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::client::CallError;
use crate::logprobs::{TokenLogprob, TopLogprob};
use crate::openai::OpenAiChat;
use crate::openai_judge::TOP_LOGPROBS;
use crate::templated::ChatRenderer;

/// How a [`ServerLogprobJudge`] asks for the next-token log-probabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogprobTransport {
    /// The chat endpoint with the verdict prefix as a final assistant message to continue.
    ChatPrefill,
    /// The completions endpoint with the prompt rendered by prbench.
    Completions,
}

impl LogprobTransport {
    /// The name used in the decoding record, the flag and messages: `chat-prefill` or
    /// `completions`.
    pub fn name(self) -> &'static str {
        match self {
            LogprobTransport::ChatPrefill => "chat-prefill",
            LogprobTransport::Completions => "completions",
        }
    }

    /// The endpoint path below the base URL.
    fn path(self) -> &'static str {
        match self {
            LogprobTransport::ChatPrefill => "/chat/completions",
            LogprobTransport::Completions => "/completions",
        }
    }
}

/// Settings of a [`ServerLogprobJudge`].
#[derive(Debug)]
pub struct NextTokenConfig {
    /// Text appended to the assistant turn before the verdict token (default `Result:`).
    pub prefix: String,
    /// A's candidate, then B's (default ` A`, ` B`); matched with whitespace trimmed.
    pub candidates: [String; 2],
    /// `None`: try [`LogprobTransport::ChatPrefill`], then [`LogprobTransport::Completions`];
    /// `Some`: that transport only (its test request must succeed).
    pub transport: Option<LogprobTransport>,
    /// The chat template the completions transport renders with; `None`: the server's
    /// (`GET /props`, llama.cpp's server).
    pub template: Option<ChatRenderer>,
}

impl Default for NextTokenConfig {
    fn default() -> Self {
        Self {
            prefix: RESULT_PREFIX.into(),
            candidates: SLOT_TOKENS.map(String::from),
            transport: None,
            template: None,
        }
    }
}

/// A pairwise judge whose verdict is the next-token log-probabilities of A and B after the
/// verdict prefix, read through an OpenAI-compatible server. See the module docs.
#[derive(Debug)]
pub struct ServerLogprobJudge {
    chat: OpenAiChat,
    transport: LogprobTransport,
    /// Whether the transport was chosen by the construction probes (no transport forced).
    detected: bool,
    /// The renderer of the completions transport (`None` for the chat prefill).
    renderer: Option<ChatRenderer>,
    prefix: String,
    candidates: [String; 2],
    missing: AtomicU64,
}

/// `llama.cpp`'s `GET /props`: the fields the completions transport needs.
#[derive(Debug, Deserialize)]
struct Props {
    #[serde(default)]
    chat_template: Option<String>,
    #[serde(default)]
    bos_token: Option<String>,
    #[serde(default)]
    eos_token: Option<String>,
}

/// One reply, reduced to what a verdict needs.
struct NextToken {
    /// The alternatives at the first generated position, the generated token included.
    alternatives: Vec<TopLogprob>,
    tokens: TokenStats,
}

impl ServerLogprobJudge {
    /// A judge over `chat`. Sends one test request per transport tried (see
    /// [`NextTokenConfig::transport`]), and for the completions transport without a template,
    /// one `GET /props`.
    ///
    /// # Errors
    /// [`ModelError::Engine`] when the server cannot be reached, refuses the request with 401,
    /// 403 or 404 on the chat endpoint, or offers neither transport (or not the one forced),
    /// saying what each test request got; a template that does not render.
    pub fn new(chat: OpenAiChat, cfg: NextTokenConfig) -> Result<Self, ModelError> {
        let mut judge = Self {
            chat,
            transport: cfg.transport.unwrap_or(LogprobTransport::ChatPrefill),
            detected: cfg.transport.is_none(),
            renderer: None,
            prefix: cfg.prefix,
            candidates: cfg.candidates,
            missing: AtomicU64::new(0),
        };
        let mut refusals = Vec::new();
        if cfg.transport != Some(LogprobTransport::Completions) {
            match judge.try_transport(LogprobTransport::ChatPrefill) {
                Ok(()) => return Ok(judge),
                Err(Unoffered(why)) if cfg.transport.is_none() => refusals.push(why),
                Err(Unoffered(why)) => return Err(judge.none_offered(&[why])),
            }
        }
        // 401/403/404 on the chat endpoint were reported above as errors; here the completions
        // endpoint is tried.
        let renderer = match cfg.template {
            Some(r) => r,
            None => match judge.server_template() {
                Ok(r) => r,
                Err(why) => {
                    refusals.push(why);
                    return Err(judge.none_offered(&refusals));
                }
            },
        };
        judge.renderer = Some(renderer);
        judge.transport = LogprobTransport::Completions;
        match judge.try_transport(LogprobTransport::Completions) {
            Ok(()) => Ok(judge),
            Err(Unoffered(why)) => {
                refusals.push(why);
                Err(judge.none_offered(&refusals))
            }
        }
    }

    /// The transport in use.
    pub fn transport(&self) -> LogprobTransport {
        self.transport
    }

    /// Whether the transport was chosen by the construction probes rather than forced.
    pub fn detected(&self) -> bool {
        self.detected
    }

    /// Verdicts left unparsed because candidate A or B was not among the top
    /// log-probabilities at the verdict position, since construction.
    pub fn missing_letters(&self) -> u64 {
        self.missing.load(Ordering::Relaxed)
    }

    /// The chat engine underneath.
    pub fn chat(&self) -> &OpenAiChat {
        &self.chat
    }

    fn none_offered(&self, refusals: &[String]) -> ModelError {
        ModelError::Engine(format!(
            "`{}` gives no next-token log-probabilities for a logprob verdict: {}. Check, in this order: that the server is up and the spec's base URL is the OpenAI API's root (usually ending in `/v1`) and its model name is one the server serves (an HTTP 404 usually means one of the two); for the completions transport on a server without llama.cpp's `GET /props`, pass the model's template with `--chat-template dir:PATH`; a server that offers neither transport (vLLM and llama.cpp's server offer both) needs `--verdict generate` (the reply is generated and its `Result:` line parsed)",
            self.chat.model_identity().spec,
            refusals.join("; ")
        ))
    }

    /// The template llama.cpp's server reports at `GET /props` (next to the `/v1` base).
    fn server_template(&self) -> Result<ChatRenderer, String> {
        let client = self.chat.client();
        let props: Props = client.block_on(client.get_json("/../props")).map_err(|e| {
            format!("completions: no chat template to render with (`--chat-template` not given, and `GET /props` failed: {})", e.message)
        })?;
        let source = props.chat_template.filter(|t| !t.is_empty()).ok_or_else(|| {
            "completions: no chat template to render with (`--chat-template` not given, and the server's `GET /props` has no `chat_template`)".to_string()
        })?;
        let template = prbench_models::chat_template::ChatTemplate::new(
            source,
            props.bos_token.unwrap_or_default(),
            props.eos_token.unwrap_or_default(),
        )
        .map_err(|e| {
            format!("completions: the server's chat template (`GET /props`) does not compile: {e}")
        })?;
        Ok(ChatRenderer::new(template, "server (GET /props)"))
    }

    /// One test request through `t` (the item code path, on a short prompt): log-probabilities
    /// at the generated token, or why not.
    fn try_transport(&mut self, t: LogprobTransport) -> Result<(), Unoffered> {
        self.transport = t;
        let prompt = ChatPrompt {
            messages: vec![ChatMessage::new(
                Role::User,
                "Which letter comes first in the alphabet, A or B? End with `Result: A` or `Result: B`.",
            )],
            assistant_prefix: String::new(),
        };
        let body = self.body(&prompt).map_err(|e| Unoffered(format!("{}: {e}", t.name())))?;
        let client = self.chat.client();
        match client.block_on(client.post_json::<Value>(t.path(), &body)) {
            Ok(reply) => match read_reply(&reply, t) {
                Ok(n) if !n.alternatives.is_empty() => Ok(()),
                Ok(_) => Err(Unoffered(format!("{}: the reply has no top log-probabilities at the generated token", t.name()))),
                Err(e) => Err(Unoffered(format!("{}: {e}", t.name()))),
            },
            Err(CallError { fatal_status: Some(s @ (401 | 403)), message, .. }) => Err(Unoffered(format!(
                "{}: refused with HTTP {s} (check the API key's environment variable): {message}", t.name()
            ))),
            Err(CallError { fatal_status: Some(s), message, .. }) => Err(Unoffered(format!(
                "{}: HTTP {s}: {message}", t.name()
            ))),
            Err(CallError { answered: false, message, .. }) => Err(Unoffered(
                crate::probe::did_not_answer(
                    "OpenAI-compatible server",
                    &client.urls().join(","),
                    &message,
                    "the base URL where `/chat/completions` and `/completions` hang (usually ending in `/v1`, e.g. http://127.0.0.1:8080/v1 for `llama-server --port 8080`)",
                )
                .to_string(),
            )),
            Err(e) => Err(Unoffered(format!("{}: {}", t.name(), e.message))),
        }
    }

    /// The request body of `prompt` (the verdict prefix is appended here) for the transport in
    /// use. `extra` keys come first and the engine's keys override them.
    fn body(&self, prompt: &ChatPrompt) -> Result<Value, ModelError> {
        let mut body: Map<String, Value> = self.chat.extra().clone();
        body.insert("model".into(), json!(self.chat.model()));
        body.insert("max_tokens".into(), json!(1));
        body.insert("temperature".into(), json!(0.0));
        body.insert("stream".into(), json!(false));
        let prefill = format!("{}{}", prompt.assistant_prefix, self.prefix);
        match self.transport {
            LogprobTransport::ChatPrefill => {
                let mut messages: Vec<Value> = prompt
                    .messages
                    .iter()
                    .map(|m| json!({ "role": m.role.as_str(), "content": m.content }))
                    .collect();
                messages.push(json!({ "role": "assistant", "content": prefill }));
                body.insert("messages".into(), Value::Array(messages));
                body.insert("continue_final_message".into(), json!(true));
                body.insert("add_generation_prompt".into(), json!(false));
                body.insert("logprobs".into(), json!(true));
                body.insert("top_logprobs".into(), json!(TOP_LOGPROBS));
            }
            LogprobTransport::Completions => {
                let renderer = self.renderer.as_ref().ok_or_else(|| {
                    ModelError::Engine("the completions transport has no chat template".into())
                })?;
                let primed =
                    ChatPrompt { messages: prompt.messages.clone(), assistant_prefix: prefill };
                body.insert("prompt".into(), json!(render(renderer, &primed)?));
                body.insert("logprobs".into(), json!(TOP_LOGPROBS));
            }
        }
        Ok(Value::Object(body))
    }

    async fn judge_one(&self, item: &JudgeRequest) -> Result<Verdict, ModelError> {
        let body = self.body(&item.prompt)?;
        let path = self.transport.path();
        let reply: Value = self.chat.client().post_json(path, &body).await?;
        let n = read_reply(&reply, self.transport)
            .map_err(|e| ModelError::Engine(format!("POST …{path}: {e}")))?;
        let counted = usage(&reply);
        self.chat.client().add_usage(counted.0, counted.1);
        let verdict = letters_verdict(&n.alternatives, &self.candidates, n.tokens);
        if verdict.choice == Choice::Unparsed {
            self.missing.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Verdict { raw: self.chat.client().redact(&verdict.raw), ..verdict })
    }
}

/// Why a transport cannot be used (the text says which and what the server answered).
struct Unoffered(String);

/// `prompt` rendered with `renderer`'s template (generation prompt, then the assistant prefix),
/// the text exactly as the template writes it.
fn render(renderer: &ChatRenderer, prompt: &ChatPrompt) -> Result<String, ModelError> {
    renderer.template().render(prompt)
}

/// `(usage.prompt_tokens, usage.completion_tokens)`.
fn usage(reply: &Value) -> (Option<u64>, Option<u64>) {
    (reply["usage"]["prompt_tokens"].as_u64(), reply["usage"]["completion_tokens"].as_u64())
}

/// The alternatives at the first generated token of a chat or completions reply: the chat
/// shape `choices[0].logprobs.content[0]` (which llama.cpp's server also uses for
/// completions), or the completions shape `choices[0].logprobs.top_logprobs[0]` (a
/// `{token: logprob}` object) with `tokens[0]` / `token_logprobs[0]`.
fn read_reply(reply: &Value, t: LogprobTransport) -> Result<NextToken, String> {
    let choice = reply["choices"].get(0).ok_or("the reply has no `choices[0]`")?;
    let lp = &choice["logprobs"];
    let mut alternatives: Vec<TopLogprob> = Vec::new();
    if let Some(first) = lp["content"].get(0) {
        let tok: TokenLogprob = serde_json::from_value(first.clone())
            .map_err(|e| format!("`choices[0].logprobs.content[0]` is not a token entry: {e}"))?;
        alternatives.extend(tok.top_logprobs);
        alternatives.push(TopLogprob { token: tok.token, logprob: tok.logprob });
    } else if t == LogprobTransport::Completions && lp["top_logprobs"].get(0).is_some() {
        let top = lp["top_logprobs"][0]
            .as_object()
            .ok_or("`choices[0].logprobs.top_logprobs[0]` is not an object of token: logprob")?;
        for (token, v) in top {
            let logprob = v.as_f64().ok_or("a `top_logprobs` value is not a number")?;
            alternatives.push(TopLogprob { token: token.clone(), logprob });
        }
        if let (Some(token), Some(logprob)) =
            (lp["tokens"][0].as_str(), lp["token_logprobs"][0].as_f64())
        {
            alternatives.push(TopLogprob { token: token.into(), logprob });
        }
    } else {
        return Err("the reply has no log-probabilities at the generated token (`choices[0].logprobs` is missing or empty)".into());
    }
    let (p, c) = usage(reply);
    let tokens = TokenStats {
        input_tokens: p.unwrap_or(0) as usize,
        truncated_tokens: 0,
        output_tokens: c.unwrap_or(0) as usize,
    };
    Ok(NextToken { alternatives, tokens })
}

/// log-sum-exp of `xs` (natural logs); `None` when empty.
fn log_sum_exp(xs: &[f64]) -> Option<f64> {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        return None;
    }
    if !m.is_finite() {
        return Some(m);
    }
    Some(m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln())
}

/// The verdict from the alternatives at the verdict position: log p of each candidate is the
/// log-sum-exp over the distinct alternatives whose trimmed text is the trimmed candidate;
/// margin = log p(A) − log p(B), p(A) = sigmoid(margin), the choice by the margin's sign
/// (exactly 0: [`Choice::Tie`]), `raw` as the in-process judge writes it. A candidate with no
/// alternative gives [`Choice::Unparsed`] without p(A), `raw` naming what was missing and the
/// best alternatives seen.
pub fn letters_verdict(
    alternatives: &[TopLogprob],
    candidates: &[String; 2],
    tokens: TokenStats,
) -> Verdict {
    let mut seen: Vec<(&str, f64)> = Vec::new();
    for t in alternatives {
        if !seen.iter().any(|(s, _)| *s == t.token) {
            seen.push((t.token.as_str(), t.logprob));
        }
    }
    let pick = |c: &str| -> Option<f64> {
        let xs: Vec<f64> =
            seen.iter().filter(|(s, _)| s.trim() == c.trim()).map(|&(_, lp)| lp).collect();
        log_sum_exp(&xs)
    };
    match (pick(&candidates[0]), pick(&candidates[1])) {
        (Some(la), Some(lb)) => {
            let (la, lb) = (la as f32, lb as f32);
            let margin = la - lb;
            let choice = if margin > 0.0 {
                Choice::A
            } else if margin < 0.0 {
                Choice::B
            } else {
                Choice::Tie
            };
            Verdict {
                choice,
                p_a: Some(two_way_p_a(la, lb)),
                margin: Some(margin),
                raw: format!("logp(A)={la:.4} logp(B)={lb:.4}"),
                tokens,
            }
        }
        (a, b) => {
            let missing = match (a, b) {
                (None, None) => "A and B",
                (None, _) => "A",
                _ => "B",
            };
            let mut best = seen.clone();
            best.sort_by(|x, y| y.1.total_cmp(&x.1));
            let best: Vec<String> =
                best.iter().take(5).map(|(s, lp)| format!("{s:?} {lp:.3}")).collect();
            Verdict {
                choice: Choice::Unparsed,
                p_a: None,
                margin: None,
                raw: format!(
                    "missing letter: {missing} not among the server's top {} log-probabilities at the verdict token (best: {})",
                    seen.len(),
                    best.join(", ")
                ),
                tokens,
            }
        }
    }
}

impl Judge for ServerLogprobJudge {
    /// Fails with the first (in input order) item's error if any item fails after its retries.
    fn judge(&self, items: &[JudgeRequest]) -> Result<Vec<Verdict>, ModelError> {
        self.judge_each(items, &|_, _| {}).into_iter().collect()
    }

    /// Items run concurrently (up to the options' `concurrency`); `done` gets each verdict as it
    /// arrives.
    fn judge_each(
        &self,
        items: &[JudgeRequest],
        done: ItemDone<'_, Verdict>,
    ) -> Vec<Result<Verdict, ModelError>> {
        self.chat.client().run_each(items, done, |_, item| self.judge_one(item))
    }

    /// The chat engine's identity with the engine naming the transport, and for the
    /// completions transport the hash of the template prbench renders with.
    fn identity(&self) -> ModelIdentity {
        let mut id = self.chat.model_identity();
        id.engine =
            format!("{} ({} logprob verdict)", crate::openai::ENGINE, self.transport.name());
        if let Some(r) = &self.renderer {
            id.chat_template_hash = r.template().hash();
        }
        id
    }

    fn call_stats(&self) -> Option<CallStats> {
        Some(self.chat.call_stats())
    }

    /// `{"verdict": "next-token-logprob", "transport", "detected", "prefix", "candidates",
    /// "top_logprobs", "max_tokens": 1, "temperature": 0, "template" (completions: where the
    /// template came from), "extra"}`, keys sorted; no URL or key. Its `verdict` differs from
    /// the generating judge's (`logprob`/`text`), so the two modes never share cache entries.
    fn decoding(&self) -> Value {
        let mut d = Map::new();
        d.insert("verdict".into(), json!("next-token-logprob"));
        d.insert("transport".into(), json!(self.transport.name()));
        d.insert("detected".into(), json!(self.detected));
        d.insert("prefix".into(), json!(self.prefix));
        d.insert("candidates".into(), json!(self.candidates));
        d.insert("top_logprobs".into(), json!(TOP_LOGPROBS));
        d.insert("max_tokens".into(), json!(1));
        d.insert("temperature".into(), json!(0.0));
        if let Some(r) = &self.renderer {
            d.insert("template".into(), json!(r.origin()));
        }
        d.insert("extra".into(), Value::Object(self.chat.extra().clone()));
        crate::sorted(Value::Object(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(token: &str, logprob: f64) -> TopLogprob {
        TopLogprob { token: token.into(), logprob }
    }

    fn slots() -> [String; 2] {
        SLOT_TOKENS.map(String::from)
    }

    #[test]
    fn margin_and_p_a_from_trimmed_variants() {
        let alts =
            [alt(" A", -0.5), alt("A", -2.0), alt(" B", -1.3), alt(" C", -3.0), alt(" A", -0.5)];
        let v = letters_verdict(&alts, &slots(), TokenStats::default());
        let la = ((-0.5f64).exp() + (-2.0f64).exp()).ln();
        let m = la + 1.3;
        assert_eq!(v.choice, Choice::A);
        assert!((v.margin.unwrap() as f64 - m).abs() < 1e-5);
        assert!((v.p_a.unwrap() as f64 - 1.0 / (1.0 + (-m).exp())).abs() < 1e-6);
    }

    #[test]
    fn a_missing_letter_is_unparsed_never_guessed() {
        let v =
            letters_verdict(&[alt(" B", -0.1), alt(" C", -2.0)], &slots(), TokenStats::default());
        assert_eq!(v.choice, Choice::Unparsed);
        assert_eq!((v.p_a, v.margin), (None, None));
        assert!(v.raw.starts_with("missing letter: A not among"), "{}", v.raw);
        let v = letters_verdict(&[alt(" C", -0.1)], &slots(), TokenStats::default());
        assert!(v.raw.starts_with("missing letter: A and B"), "{}", v.raw);
    }

    #[test]
    fn equal_letters_tie_and_recipe_candidates_match() {
        let v = letters_verdict(&[alt("A", -0.7), alt("B", -0.7)], &slots(), TokenStats::default());
        assert_eq!(v.choice, Choice::Tie);
        assert_eq!(v.p_a, Some(0.5));
        let c = ["1".to_string(), "2".to_string()];
        let v = letters_verdict(&[alt("1", -2.0), alt("2", -0.2)], &c, TokenStats::default());
        assert_eq!(v.choice, Choice::B);
    }

    #[test]
    fn both_reply_shapes_are_read() {
        let chat = json!({"choices": [{"logprobs": {"content": [
            {"token": " A", "logprob": -0.4, "top_logprobs": [{"token": " B", "logprob": -1.2}]}
        ]}}], "usage": {"prompt_tokens": 9, "completion_tokens": 1}});
        let n = read_reply(&chat, LogprobTransport::ChatPrefill).unwrap();
        assert_eq!(n.alternatives, vec![alt(" B", -1.2), alt(" A", -0.4)]);
        assert_eq!(n.tokens.input_tokens, 9);
        let legacy = json!({"choices": [{"text": " B", "logprobs": {
            "tokens": [" B"], "token_logprobs": [-0.3], "top_logprobs": [{" B": -0.3, " A": -1.5}]
        }}]});
        let n = read_reply(&legacy, LogprobTransport::Completions).unwrap();
        assert!(
            n.alternatives.contains(&alt(" A", -1.5)) && n.alternatives.contains(&alt(" B", -0.3))
        );
        assert!(read_reply(&json!({"choices": [{"text": "B"}]}), LogprobTransport::Completions)
            .is_err());
    }
}

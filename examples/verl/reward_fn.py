"""A verl custom reward function backed by `prbench serve-reward` (PROTOCOL.md section 7).

Written for verl 0.9, whose reward settings live under `reward.*`:

    reward.custom_reward_function.path=examples/verl/reward_fn.py
    reward.custom_reward_function.name=compute_score
    reward.reward_manager.name=naive          (the default; `dapo` and `limited` call it the same way)

verl 0.9 loads the function with `verl.trainer.ppo.reward.get_custom_reward_fn` and its
reward managers (verl/experimental/reward_loop/reward_manager/naive.py) call it once per
response, by keyword, in a thread pool (several calls may be in flight at once):

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)

where `extra_info` is the row's `extra_info` plus `num_turns` and `rollout_reward_scores`
added by the manager, and `reward_kwargs` is `reward.custom_reward_function.reward_kwargs`
(empty unless set). The older top-level keys (`custom_reward_function.path`,
`reward_model.enable`) are still read by verl 0.9, which copies them under `reward.*`.
`compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)` sends one
`/score/batch` request for many responses; verl 0.9 has no `batch` reward manager, so it is
for a manager of your own (`reward.reward_manager.source=importlib`) or an older verl.

Each response is sent to the server with the question and the user's
profile text, taken from the row's `extra_info` (`make_dataset.py` writes both):

    POST {PRBENCH_REWARD_URL}/score   {"query", "profile", "response_text", "id"}  ->  {"score"}

The reward is the server's score as it is: normalization, if any, is the server's explicit
`--normalize` flag. There is no default reward: a failed request raises `RewardServerError`
and the training step stops (the authors' script returned 0.5 on any error and divided every
score by 10; PROTOCOL.md section 10, item 9). A 503 (the server's queue is full) or a refused
connection is retried a few times, waiting what the server's `Retry-After` asks.

Settings (environment variables, read at each call):
    PRBENCH_REWARD_URL      server base URL (default http://127.0.0.1:8000)
    PRBENCH_REWARD_TIMEOUT  seconds per HTTP request (default 120)
    PRBENCH_REWARD_RETRIES  retries after a 503 or a refused connection (default 5)
    PRBENCH_REWARD_BATCH    items per POST /score/batch in compute_score_batch (default 64)

Only the Python standard library is used.
"""

import json
import math
import os
import time
import urllib.error
import urllib.request

__all__ = ["RewardServerError", "compute_score", "compute_score_batch"]


class RewardServerError(RuntimeError):
    """The reward server could not give a reward; never replaced by a default value."""


def _settings():
    url = os.environ.get("PRBENCH_REWARD_URL", "http://127.0.0.1:8000").rstrip("/")
    timeout = float(os.environ.get("PRBENCH_REWARD_TIMEOUT", "120"))
    retries = int(os.environ.get("PRBENCH_REWARD_RETRIES", "5"))
    batch = int(os.environ.get("PRBENCH_REWARD_BATCH", "64"))
    if timeout <= 0 or retries < 0 or batch < 1:
        raise RewardServerError(
            "PRBENCH_REWARD_TIMEOUT must be > 0, PRBENCH_REWARD_RETRIES >= 0 and PRBENCH_REWARD_BATCH >= 1"
        )
    return url, timeout, retries, batch


def _item(solution_str, extra_info):
    """The protocol's item for one response; `extra_info` must name the question."""
    info = extra_info or {}
    question = info.get("question")
    if not isinstance(question, str) or not question:
        raise RewardServerError(
            "extra_info has no `question`: build the dataset with examples/verl/make_dataset.py "
            "(extra_info = {question, profile, id})"
        )
    profile = info.get("profile") or ""
    if not isinstance(profile, str):
        raise RewardServerError("extra_info `profile` must be the context text as a string ('' for none)")
    item = {"query": question, "profile": profile, "response_text": solution_str}
    if info.get("id") is not None:
        item["id"] = str(info["id"])
    return item


def _post(path, payload):
    """POSTs `payload` as JSON and returns the decoded reply, retrying 503 and refused connections."""
    url, timeout, retries, _ = _settings()
    body = json.dumps(payload).encode("utf-8")
    attempt = 0
    while True:
        request = urllib.request.Request(
            url + path, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as reply:
                return json.loads(reply.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")
            try:
                message = json.loads(text).get("error", text)
            except (ValueError, AttributeError):
                message = text
            if e.code == 503 and attempt < retries:
                attempt += 1
                time.sleep(_retry_after(e.headers.get("Retry-After"), attempt))
                continue
            raise RewardServerError("POST %s%s: HTTP %d: %s" % (url, path, e.code, message)) from None
        except urllib.error.URLError as e:
            refused = isinstance(e.reason, ConnectionRefusedError)
            if refused and attempt < retries:
                attempt += 1
                time.sleep(_retry_after(None, attempt))
                continue
            raise RewardServerError(
                "POST %s%s: %s (is `prbench serve-reward` running there?)" % (url, path, e.reason)
            ) from None
        except (TimeoutError, ConnectionError) as e:
            raise RewardServerError("POST %s%s: %s" % (url, path, e)) from None


def _retry_after(header, attempt):
    """Seconds to wait: the server's Retry-After (capped at 60 s), else 0.5 s doubling per attempt."""
    if header is not None:
        try:
            return min(max(float(header), 0.0), 60.0)
        except ValueError:
            pass
    return min(0.5 * 2 ** (attempt - 1), 30.0)


def _finite(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RewardServerError("%s: the server sent %r, not a finite number" % (what, value))
    return float(value)


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """The reward of one response: the server's `score`. `data_source` and `ground_truth`
    are not used (the reward model reads the question and the profile from `extra_info`).

    Raises RewardServerError on any failure; it never returns a default reward.
    """
    reply = _post("/score", _item(solution_str, extra_info))
    if not isinstance(reply, dict) or "score" not in reply:
        raise RewardServerError("POST /score: the reply has no `score`: %r" % (reply,))
    return _finite(reply["score"], "POST /score")


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    """Rewards of a batch, in order, through `POST /score/batch` (PRBENCH_REWARD_BATCH items per
    request). verl 0.9 has no batch reward manager; with a manager of your own (or an older
    verl's `batch` manager) check that it lets the exception through (some early-2025 versions
    turned any exception into a reward of 0.0, the very defect this shim avoids).

    Raises RewardServerError on any failure; it never returns a default reward.
    """
    _, _, _, chunk = _settings()
    if len(solution_strs) != len(extra_infos):
        raise RewardServerError("%d responses but %d extra_info rows" % (len(solution_strs), len(extra_infos)))
    items = [_item(s, e) for s, e in zip(solution_strs, extra_infos)]
    scores = []
    for start in range(0, len(items), chunk):
        part = items[start : start + chunk]
        reply = _post("/score/batch", {"items": part})
        got = reply.get("scores") if isinstance(reply, dict) else None
        if not isinstance(got, list) or len(got) != len(part):
            raise RewardServerError("POST /score/batch: expected %d scores, got %r" % (len(part), got))
        scores.extend(_finite(v, "POST /score/batch item %d" % (start + i)) for i, v in enumerate(got))
    return scores

"""Checks reward_fn.py against a running `prbench serve-reward` (it starts nothing itself).

    target/release/prbench serve-reward --model baseline:longer --port 8000 &
    PRBENCH_REWARD_URL=http://127.0.0.1:8000 python3 examples/verl/test_reward_fn.py

With `baseline:longer` (score = characters of the answer) every value is checked exactly; with
another model only that the scores are finite and the errors are raised. Exits 1 on a failure.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import reward_fn  # noqa: E402

INFO = {"id": "t-1", "question": "Which camera should I buy?", "profile": "Posts this user wrote before: I shoot sports."}


def check(name, ok, detail=""):
    print("%s %s %s" % ("ok  " if ok else "FAIL", name, detail))
    return ok


def main():
    url = os.environ.get("PRBENCH_REWARD_URL", "http://127.0.0.1:8000")
    import json
    import urllib.request

    with urllib.request.urlopen(url + "/health", timeout=10) as r:
        health = json.loads(r.read())
    exact = health.get("model") == "baseline:longer" and health.get("normalize") == "none"
    print("server %s: model %s, normalize %s" % (url, health.get("model"), health.get("normalize")))
    results = []

    s = reward_fn.compute_score("prbench", "A fast prime lens.", "", INFO)
    results.append(check("compute_score", isinstance(s, float) and (not exact or s == 18.0), repr(s)))

    answers = ["a", "bb", "ccc"]
    got = reward_fn.compute_score_batch(["prbench"] * 3, answers, [""] * 3, [INFO] * 3)
    results.append(check("compute_score_batch keeps order", len(got) == 3 and (not exact or got == [1.0, 2.0, 3.0]), repr(got)))

    try:
        reward_fn.compute_score("prbench", "x", "", {"profile": ""})
        results.append(check("missing question raises", False))
    except reward_fn.RewardServerError as e:
        results.append(check("missing question raises", True, str(e)[:60]))

    os.environ["PRBENCH_REWARD_URL"] = url.rstrip("/") + "/nope"
    try:
        reward_fn.compute_score("prbench", "x", "", INFO)
        results.append(check("HTTP error raises, no default reward", False))
    except reward_fn.RewardServerError as e:
        results.append(check("HTTP error raises, no default reward", "404" in str(e), str(e)[:80]))
    os.environ["PRBENCH_REWARD_URL"] = url

    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

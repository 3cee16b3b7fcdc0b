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


def check_verl_09_call(exact):
    """Loads reward_fn.py and calls it the way verl 0.9.0 does (tag v0.9.0, commit
    483b8a009ba3a97563edee3a19887e4862b8094a). verl/trainer/ppo/reward.py, get_custom_reward_fn:

        reward_fn_config = config.reward.get("custom_reward_function") or {}
        ...
        raw_fn = load_extern_object(module_path=module_path, object_name=fn_name)
        reward_kwargs = dict(reward_fn_config.get("reward_kwargs", {}))
        if not inspect.iscoroutinefunction(raw_fn):
            return partial(_call_with_kwargs, raw_fn, reward_kwargs)

    with `_call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs)` returning
    `raw_fn(*args, **{**kwargs, **extra_kwargs})`; and
    verl/experimental/reward_loop/reward_manager/naive.py, NaiveRewardManager.run_single:

        ground_truth = data_item.non_tensor_batch["reward_model"]["ground_truth"]
        extra_info = data_item.non_tensor_batch.get("extra_info", {})
        ...
        extra_info["num_turns"] = num_turns
        extra_info["rollout_reward_scores"] = rollout_reward_scores
        ...
        result = await self.loop.run_in_executor(
            None,
            lambda: self.compute_score(
                data_source=data_source,
                solution_str=response_str,
                ground_truth=ground_truth,
                extra_info=extra_info,
                **extra_reward_kwargs,
            ),
        )

    `extra_reward_kwargs` is empty unless a reward router (a reward model served by verl) is set.
    """
    import functools
    import importlib.util
    import inspect

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reward_fn.py")
    spec = importlib.util.spec_from_file_location("custom_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = getattr(module, "compute_score")
    out = []
    out.append(check("verl 0.9: compute_score is not a coroutine (run in the executor)", not inspect.iscoroutinefunction(raw_fn)))

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):
        merged_kwargs = {**kwargs, **extra_kwargs}
        return raw_fn(*args, **merged_kwargs)

    answer = "A fast prime lens, at f/1.8."
    for reward_kwargs in ({}, {"unused_setting": 1}):
        compute_score = functools.partial(_call_with_kwargs, raw_fn, reward_kwargs)
        extra_info = dict(INFO)  # a parquet row's extra_info, as make_dataset.py writes it
        extra_info["num_turns"] = None
        extra_info["rollout_reward_scores"] = {}
        try:
            inspect.signature(raw_fn).bind(
                data_source="prbench", solution_str=answer, ground_truth="", extra_info=extra_info, **reward_kwargs
            )
            bound = True
        except TypeError as e:
            bound = False
            print("     signature: %s" % e)
        out.append(check("verl 0.9: the keyword call binds (reward_kwargs %r)" % reward_kwargs, bound))
        result = compute_score(data_source="prbench", solution_str=answer, ground_truth="", extra_info=extra_info)
        ok = isinstance(result, float) and (not exact or result == float(len(answer)))
        out.append(check("verl 0.9: the call returns the server's score (reward_kwargs %r)" % reward_kwargs, ok, repr(result)))
    return out


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

    results.extend(check_verl_09_call(exact))

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

"""The Python package (`pip install .`, python/parplan) against the CLI it binds: every answer the
package gives must be the document `parplan CMD ... --json` prints, on 120 random cases and on
each command, and bad input must raise parplan.Error with the CLI's message.

    PARPLAN=build/src/parplan python -m pytest tests/python
"""
import json
import os
import random
import shutil
import subprocess

import pytest

import parplan

PARPLAN = os.environ.get("PARPLAN") or shutil.which("parplan")
if not PARPLAN:
    pytest.skip("no parplan binary to compare with (set PARPLAN)", allow_module_level=True)

MODELS = ["gpt3-1.3b", "gpt3-13b", "llama3-8b", "llama3-70b", "mixtral-8x7b", "qwen3-30b-a3b", "llama2-7b"]
GPUS = ["a100-80gb", "h100-sxm", "h200", "b200"]


def cli(command, kwargs):
    """The CLI's answer: (status, JSON document or None, the last stderr line)."""
    words = parplan._argv(command, dict(kwargs, json=True, quiet=True))
    p = subprocess.run([PARPLAN] + words[1:], capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    last = p.stderr.strip().split("\n")[-1] if p.stderr.strip() else ""
    return p.returncode, doc, last


CLOCK = ("search_time_s", "elapsed_s")  # wall-clock figures: the only fields two runs may differ in


def both(command, kwargs):
    """The package's and the CLI's answers (the package's error message, or its document)."""
    try:
        mine = ("ok", getattr(parplan, command)(**kwargs))
    except parplan.Error as e:
        mine = ("error", str(e))
    status, doc, last = cli(command, kwargs)
    for d in (mine[1], doc):
        if isinstance(d, dict):
            for k in CLOCK:
                d.pop(k, None)
    theirs = ("error", last[len("parplan: "):] if last.startswith("parplan: ") else last) if status == 2 else ("ok", doc)
    return mine, theirs


def random_case(rng):
    kw = {"model": rng.choice(MODELS), "gpu": rng.choice(GPUS), "gpus": rng.choice([8, 16, 32, 64])}
    kw["tp"] = rng.choice([1, 2, 4, 8])
    kw["pp"] = rng.choice([1, 1, 2, 4])
    kw["mbs"] = rng.choice([1, 2])
    if rng.random() < 0.6:
        kw["dist_opt"] = True
    if kw["tp"] > 1 and rng.random() < 0.7:
        kw["sp"] = True
    kw["recompute"] = rng.choice(["none", "selective", "full"])
    if rng.random() < 0.2:
        kw["seq"] = rng.choice([2048, 4096, 8192])
    if rng.random() < 0.1:
        kw["gpu"] = "hx100"  # bad input: the same one-line error
    return kw


CASES = [random_case(random.Random(20261128 + i)) for i in range(120)]


@pytest.mark.parametrize("kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_check_is_the_cli(kw):
    mine, theirs = both("check", kw)
    assert mine == theirs


def test_plan_estimate_models_launch_are_the_cli():
    for command, kw in [("plan", {"model": "llama3-8b", "gpu": "h100-sxm", "gpus": 16, "gpus_per_node": 8}),
                        ("plan", {"model": "llama3-8b", "gpu": ["h100-sxm", "h200"], "gpus": [8, 16], "tokens": 1e12}),
                        ("estimate", {"model": "llama3-8b", "gpu": "h100-sxm", "gpus": 64, "tokens": 1e12,
                                      "price_per_gpu_hour": 3}),
                        ("models", {}), ("models", {"model": "deepseek-v3"})]:
        mine, theirs = both(command, kw)
        assert mine[0] == "ok" and mine == theirs, command
    # launch: the config as text, what `parplan launch` prints
    kw = {"model": "llama3-8b", "gpu": "h100-sxm", "gpus": 8, "tp": 2, "dist_opt": True, "format": "megatron"}
    text = parplan.launch(**kw)
    p = subprocess.run([PARPLAN] + parplan._argv("launch", dict(kw, quiet=True))[1:], capture_output=True, text=True)
    assert p.returncode == 0 and text == p.stdout and "--tensor-model-parallel-size 2" in text


def test_bad_input_raises_error_a_valueerror():
    with pytest.raises(ValueError) as e:
        parplan.check(model="llama3-8b", gpu="h100-sxm", gpus=8, tp=3)
    assert isinstance(e.value, parplan.Error) and e.value.status == 2 and "does not divide --gpus 8" in str(e.value)
    with pytest.raises(parplan.Error, match="unknown option"):
        parplan.check(model="llama3-8b", gpu="h100-sxm", gpus=8, frobnicate=1)


def test_a_layout_that_does_not_fit_is_an_answer():
    d = parplan.check(model="llama3-70b", gpu="h100-sxm", gpus=8)
    assert d["fits"] is False and d["remedies"]


def test_the_example_runs():
    """examples/plan.py, as the README runs it."""
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    example = os.path.join(here, "..", "..", "examples", "plan.py")
    p = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "plan's #1" in p.stdout and "parplan.Error" in p.stdout

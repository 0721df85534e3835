"""The one rule that decides a ratio of two samples of trials (harness/analysis/effect.py), the trial
statistic every table and claim reads (analysis/points.py), and claims judged on intervals: a known
ratio decided, a ratio at a boundary undecided with the trials that would decide it, and one stalled
step that changes neither the statistic nor the verdict."""
from __future__ import annotations

import math

import pytest
from test_claims import GPT_TIME, PT, BT, verdict_of
from test_report import make_trial

from harness.analysis import effect
from harness.analysis.noise import ASSUMED, PLAIN, Noise
from harness.analysis.points import trial_time


def sample(value: float, spread: float, n: int = 6) -> dict:
    """{round: value} scattered by ±spread (relative), the same pattern every time."""
    pattern = [-1.0, 0.6, -0.2, 1.0, -0.6, 0.2, 0.8, -0.8]
    return {k: value * (1 + spread * pattern[k % len(pattern)]) for k in range(n)}


def test_a_clear_ratio_is_decided_with_an_interval_around_it():
    e = effect.effect(sample(1.0, 0.02), sample(3.0, 0.02, n=6))
    assert e.paired and e.n == 6
    assert e.low < 3.0 < e.high and e.high / e.low < 1.1
    assert effect.decide(e, (1.0, 2.5)).region == 2


def test_a_ratio_at_a_boundary_is_undecided_and_says_how_many_more_trials():
    # B is 5% slower with ±10% round-to-round noise: 4 rounds cannot tell it from ×1.
    def rounds(n: int) -> dict:
        return {k: 1.05 * (1 + 0.1 * (-1, 1, -0.5, 0.5)[k % 4]) for k in range(n)}

    decision = effect.decide(effect.effect(sample(1.0, 0.0, n=4), rounds(4)), (1.0,))
    assert not decision.decided and decision.straddles == (1.0,)
    assert decision.more is not None and decision.more > 0
    # That many more rounds of the same spread and ratio decide it; fewer do not.
    n = 4 + decision.more
    assert effect.decide(effect.effect(sample(1.0, 0.0, n=n), rounds(n)), (1.0,)).decided


def test_one_trial_a_side_gives_no_interval():
    e = effect.effect({0: 1.0}, {0: 2.0})
    assert e.estimate == pytest.approx(2.0) and e.low is None and "3 give an interval" in e.why
    assert effect.decide(e, (1.0,)).more == 2


def test_unpaired_samples_use_welch_on_logs():
    e = effect.effect({0: 1.0, 1: 1.1, 2: 0.9}, {10: 2.0, 11: 2.2, 12: 1.8})
    assert not e.paired and e.method().startswith("Welch")
    assert e.low < 2.0 < e.high
    assert effect.effect({0: 1.0, 1: 1.1, 2: 0.9}, {0: 2.0, 1: 2.2, 2: 1.8}, paired=False).paired is False


def test_identical_trials_give_a_zero_width_interval():
    e = effect.effect({0: 2.0, 1: 2.0, 2: 2.0}, {0: 6.0, 1: 6.0, 2: 6.0})
    assert (e.low, e.estimate, e.high) == pytest.approx((3.0, 3.0, 3.0))


# ----------------------------------------------------------------------------- one stalled step

def stalled(trial, factor: float):
    """The trial with its slowest block `factor` times slower (one stalled step of twenty)."""
    samples = list(trial.samples_s)
    samples[3] *= factor
    trial.samples_s = samples
    trial.per_iter_s = {**trial.per_iter_s, "mean": math.fsum(samples) / len(samples),
                        "median": sorted(samples)[len(samples) // 2 - 1: len(samples) // 2 + 1][1]}
    return trial


def test_one_stalled_step_moves_neither_the_statistic_nor_the_verdict(tmp_path):
    clean = make_trial(BT, "gpt", {"batch": 1}, 0, 5e-4)
    stall = stalled(make_trial(BT, "gpt", {"batch": 1}, 0, 5e-4), 40.0)
    assert stall.per_iter_s["mean"] > 4 * clean.per_iter_s["mean"]  # the mean would have moved by ×4 or more
    assert trial_time(stall.__dict__) == pytest.approx(trial_time(clean.__dict__), rel=0.01)
    base = [make_trial(BT, "gpt", {"batch": 1}, 0, 5e-4), make_trial(PT, "gpt", {"batch": 1}, 0, 1.6e-2)]
    with_stall = [stalled(make_trial(BT, "gpt", {"batch": 1}, 0, 5e-4), 40.0), base[1]]
    v_clean = verdict_of(tmp_path / "a", base, GPT_TIME)
    v_stall = verdict_of(tmp_path / "b", with_stall, GPT_TIME)
    assert v_clean.verdict == v_stall.verdict == "reproduced"
    assert v_stall.ours == pytest.approx(v_clean.ours, rel=0.01)


# ----------------------------------------------------------------------------- claims on intervals

def spread_trials(engine: str, seconds: float, spread: float, n: int) -> list:
    return [make_trial(engine, "gpt", {"batch": 1}, k, seconds * (1 + spread * (1 if k % 2 else -1)))
            for k in range(n)]


def judged_gpt(tmp_path, bt: list, pt: list, noise: Noise = PLAIN):
    """The GPT claim's verdict for ours on these trials, judged with `noise` as the run recorded it."""
    from harness.judging import claims
    from harness.analysis.tables import build_tables
    from harness.store.runs import load_run
    from test_claims import LINUX, claim
    from test_report import write_run

    run = load_run(write_run(tmp_path / "run", LINUX, bt + pt, noise=noise.record()))
    (v,) = claims.evaluate(run, build_tables(run), (claim(GPT_TIME),), subject="ours")
    return v


def test_a_factor_whose_interval_spans_the_papers_number_is_undecided_with_what_decides_it(tmp_path):
    # ×24 against the paper's ×20 (18 within the tolerance) with ±15% noise over 3 rounds.
    v = judged_gpt(tmp_path, spread_trials(BT, 5e-4, 0.0, 3), spread_trials(PT, 1.2e-2, 0.15, 3))
    assert v.verdict == "undecided" and v.low < 18 < v.high
    assert v.trials == (3, 3) and v.method.startswith("paired t")
    assert "spans ×18" in v.why and "more trials at gpt batch=1 (torch/eager/python/cpu and ours)" in v.why
    (need,) = v.needs
    assert need[:3] == ("gpt", {"batch": 1}, PT) and need[4] > 0


def test_the_machines_run_component_keeps_a_near_factor_undecided_and_says_another_run_can(tmp_path):
    v = judged_gpt(tmp_path, spread_trials(BT, 5e-4, 0.0, 3), spread_trials(PT, 9.5e-3, 0.02, 3), ASSUMED)
    assert v.verdict == "undecided" and "run-to-run component" in v.method
    assert "more rounds of this run cannot decide it" in v.why and "another run can" in v.why


def test_a_clear_factor_is_decided_over_its_whole_interval(tmp_path):
    v = judged_gpt(tmp_path, spread_trials(BT, 5e-4, 0.01, 5), spread_trials(PT, 1.5e-2, 0.01, 5))
    assert v.verdict == "reproduced" and 18 < v.low < 30 < v.high < 33
    assert "over its whole interval" in v.why

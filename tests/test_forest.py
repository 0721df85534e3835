"""The claims' forest plot (harness/report/forest.py): which claims become rows and what each subject
draws, from synthetic verdicts; the PNG of a synthetic run with both subjects, its size, and no file
where no claim has a factor."""
from __future__ import annotations

import math
import struct
from pathlib import Path

import pytest
from test_claims import LINUX, PT, exact_run, mlp_trials, repeated
from test_report import make_trial, write_run

from engines.base import AUTHORS, BASELINE
from harness.judging import claims
from harness.report import forest
from harness.analysis.tables import build_tables
from harness.store.runs import load_run

MB = 2**20
HEADER = ("id,claim,where,metric,tables,points,engines,rule,stated,stated_text,stated_os,tolerance,requires,"
          "source_cell,authors,authors_why,note\n")
LINES = ("time,up to ×20 faster,Abstract,step_time,gpt,batch=1,torch/eager/python/cpu,max,20,up to ×20,windows,0.1,,,"
         "same,,",
         "exact,exactly the same,captions,outputs,tiny;small,,*,same_outputs,0,exactly the same,,0,,,same,,",
         "b64,PyTorch ×1.4 faster,Sec. 2.5,step_time,gpt,batch=64,torch/eager/python/cpu,max,0.7,PyTorch ×1.4 faster,"
         "windows,0.1,,,same,,",
         "flat,memory flat in b,Sec. 2.5,paper_memory,gpt,batch=1;64,,flat,1,flat,windows,0.05,,,same,,")


def synthetic() -> list[claims.Judged]:
    time, exact, b64, flat = claims.parse_claims(HEADER + "\n".join(LINES) + "\n")
    V = claims.Verdict
    return [
        claims.Judged(time, V(time, claims.PARTLY, "authors", ours=12.0, low=11.0, high=13.0, paper=20.0),
                      V(time, claims.UNDECIDED, "ours", ours=25.0, paper=20.0, trials=(1, 1))),
        claims.Judged(exact, V(exact, claims.NOT_COMPARABLE, "authors"), V(exact, claims.REPRODUCED, "ours", ours=0.0)),
        claims.Judged(b64, V(b64, claims.NOT_MEASURABLE, "authors", ours=0.9, paper=0.7),
                      V(b64, claims.REPRODUCED, "ours", ours=0.5, low=0.45, high=0.55, paper=0.7)),
        claims.Judged(flat, V(flat, claims.NOT_MEASURABLE, "authors"),
                      V(flat, claims.NOT_REPRODUCED, "ours", ours=1.7, low=1.6, high=1.8, paper=1.0))]


def test_rows_are_the_factor_claims_in_order_both_subjects_each():
    rows = forest.rows(synthetic())
    assert [r.claim for r in rows] == ["time", "b64", "flat"]  # same_outputs is no factor: not a row
    assert all([m.subject for m in r.marks] == ["authors", "ours"] for r in rows)
    assert forest.not_factors(synthetic()) == [
        "exact (exactly the same: not a factor): authors ≠ not comparable, ours ✓ reproduced"]


def test_a_factor_with_an_interval_a_point_without_one_and_a_verdict_with_no_point():
    time, b64, flat = forest.rows(synthetic())
    authors, ours = time.marks
    assert (authors.factor, authors.low, authors.high, authors.has_interval) == (12.0, 11.0, 13.0, True)
    assert authors.text == "×12 [11, 13]"
    # One trial a side: drawn as a point, hollow, and saying so.
    assert (ours.factor, ours.has_interval, ours.text) == (25.0, False, "×25 (1 trial, no interval)")
    # Not measurable: its partial factor is not put on the axis, only its verdict named; the paper's number stays.
    assert (b64.marks[0].factor, b64.marks[0].text, b64.marks[0].paper) == (None, "not measurable here", 0.7)
    assert flat.marks[0].paper is None and flat.marks[0].reproduced is None


def test_the_region_that_reproduces_follows_the_rule_and_direction():
    assert forest.reproduced_span("max", 20.0, 0.1) == pytest.approx((18.0, math.inf))
    assert forest.reproduced_span("max", 0.7, 0.1) == pytest.approx((0.0, 0.7 / 0.9))
    assert forest.reproduced_span("flat", 1.0, 0.05) == pytest.approx((0.0, 1.05))
    time, b64, flat = forest.rows(synthetic())
    assert time.marks[0].reproduced == pytest.approx((18.0, math.inf))
    assert flat.marks[1].reproduced == pytest.approx((0.0, 1.05))


def test_slug_is_a_safe_file_name_and_tells_alike_names_apart():
    name = "Intel Xeon Gold 6248 (torch 2.4.0+cpu)"
    assert forest.slug(name).startswith("intel-xeon-gold-6248-torch-2.4.0+cpu-")
    assert forest.slug(name) != forest.slug("Intel Xeon Gold 6248 (torch 2.4.0-cpu)")
    assert forest.slug("../\x1b[31m").startswith("31m-") and "/" not in forest.slug("a/b")
    assert forest.slug("…").startswith("machine-")


def gpt(engine: str, batch: int, seconds: float, mib: float) -> object:
    return make_trial(engine, "gpt", {"batch": batch}, 0, seconds, peak_virtual_bytes=mib * MB)


def both_subjects_run(folder: Path) -> Path:
    """A run with the authors' BurTorch, ours and PyTorch on the GPT and the MLP, and the outputs' graphs."""
    trials = [gpt(AUTHORS, 1, 0.7e-3, 18.9), gpt(AUTHORS, 64, 42e-3, 18.9), gpt(BASELINE, 1, 0.5e-3, 3.8),
              gpt(BASELINE, 64, 9e-3, 6.5), gpt(PT, 1, 11e-3, 1300.0), gpt(PT, 64, 23.6e-3, 1400.0)]
    trials += mlp_trials({4: 40.0, 16: 20.0, 32: 12.0, 64: 7.0, 128: 4.0, 512: 1.4, 1024: 1.1})
    for hidden, seconds in {4: 1.5e-4, 64: 2e-4, 512: 4e-4, 1024: 9e-4}.items():
        trials.append(make_trial(AUTHORS, "mlp", {"hidden_dim": hidden, "batch": 1}, 0, seconds, init_time_s=0.03,
                                 peak_virtual_bytes=30 * MB))
    return write_run(folder, LINUX, repeated(trials + exact_run()))


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_png_of_a_run_and_none_where_no_claim_has_a_factor(tmp_path):
    run = load_run(both_subjects_run(tmp_path / "run"))
    judged = claims.judge(run, build_tables(run))
    path = forest.draw(judged, tmp_path / "out" / "claims-forest.png", "Synthetic CPU 9000, Linux")
    assert path == tmp_path / "out" / "claims-forest.png"
    assert sorted(p.name for p in path.parent.iterdir()) == ["claims-forest.png"]  # a PNG and nothing else
    width, height = png_size(path)
    rows = forest.rows(judged)
    assert 1000 <= width <= 1300 and 55 * len(rows) <= height <= 62 * len(rows) + 300
    # The same page re-rendered with nothing measured: no picture, and the older one gone.
    nothing = [claims.Judged(j.claim, *(claims.Verdict(j.claim, claims.NOT_MEASURABLE, s.key)
                                        for s in claims.SUBJECTS)) for j in judged]
    assert forest.draw(nothing, path, "Synthetic CPU 9000, Linux") is None and not path.exists()


def test_labels_readable_and_the_verdicts_clear_of_the_intervals_when_drawn():
    """Nine decades (×0.01 to ×100,000,000) and a long interval at the right end: the axis labels only decades
    whose labels stand apart, and each factor's text ends inside the axis, left of the verdicts' column."""
    time, exact, b64, flat = synthetic()
    V = claims.Verdict
    wide = claims.Judged(time.claim, V(time.claim, claims.REPRODUCED, "authors", ours=8.9e7, low=6.7e7, high=1.8e8,
                                       paper=20.0),
                         V(time.claim, claims.NOT_REPRODUCED, "ours", ours=0.012, low=0.008, high=0.02, paper=20.0))
    fig = forest.figure([wide, exact, b64, flat], "Synthetic CPU 9000, Linux")
    try:
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        ax = fig.axes[0]
        area = ax.get_window_extent(renderer)
        ticks = [t for t in ax.get_xticklabels() if t.get_text()]
        assert len(ticks) >= 3 and "×1" in [t.get_text() for t in ticks]
        boxes = [t.get_window_extent(renderer) for t in ticks]
        assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
        values = [t for t in ax.texts if t.get_gid() == forest.VALUE]
        verdicts = [t for t in ax.texts if t.get_gid() == forest.VERDICT]
        assert "×8.90e+07 [6.70e+07, 1.80e+08]" in [t.get_text() for t in values]
        assert len(verdicts) == 6  # both subjects on each of the three rows
        for text in values:
            box = text.get_window_extent(renderer)
            assert area.x0 <= box.x0 and box.x1 <= area.x1, text.get_text()
        assert not [t.get_text() for t in verdicts if t.get_window_extent(renderer).overlaps(area)]
    finally:
        forest._pyplot().close(fig)

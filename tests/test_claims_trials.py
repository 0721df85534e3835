"""Trials only where they answer: claims' trials and deciding rounds are planned only for claims the
run's engines can judge (a subject in no environment beside an engine the claim compares)."""
from __future__ import annotations

import pytest

from engines.base import BASELINE
from harness.commands.cli import build_parser, main
from harness.commands.request import ask_of, new_plan
from harness.planning.claim_points import NO_CLAIM_JUDGED, judges_any
from harness.planning.preview import INTERVAL
from harness.running import session


def plan_for(*argv: str) -> list:
    args = build_parser().parse_args(["run", *argv])
    return session.make_plan(new_plan(ask_of(args), None)[0])


@pytest.mark.parametrize("argv", [
    ["--engine", "micrograd", "--workload", "tiny"],
    # Two revisions of ours: a versions run's variants are not the subjects of the paper's claims.
    ["--engine", "burtorch", "--env", "burtorch@HEAD~1", "--env", "burtorch@HEAD", "--workload", "tiny"],
])
def test_engines_that_judge_no_claim_get_no_trials_for_the_claims(argv):
    plan = plan_for(*argv)
    # A versions run's trials for its own answers (preview.INTERVAL) are not the claims'.
    assert plan and not any(pt.why and pt.why != INTERVAL for pt in plan)
    assert not judges_any([pt.engine for pt in plan])


def test_a_subject_beside_another_framework_gets_the_claims_trials():
    plan = plan_for("--engine", "burtorch/eager/cpp,micrograd", "--workload", "tiny")
    assert judges_any([pt.engine for pt in plan])
    added = {pt.engine.id for pt in plan if pt.why}
    assert BASELINE in added and "micrograd/eager/python/cpu" in added


def test_the_subject_alone_gets_none_where_every_claim_compares():
    plan = plan_for("--engine", "burtorch/eager/cpp", "--workload", "tiny")
    assert not any(pt.why for pt in plan)


def test_the_dry_run_says_why_in_one_line_and_plans_no_deciding_rounds(capsys, tmp_path):
    assert main(["run", "--engine", "micrograd", "--workload", "tiny", "--dry-run", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert NO_CLAIM_JUDGED in out.splitlines()
    assert "added for the paper's claims" not in out and "--claims-budget" not in out


def test_a_judging_run_still_plans_its_deciding_rounds(capsys, tmp_path):
    assert main(["run", "--engine", "burtorch/eager/cpp,micrograd", "--workload", "tiny", "--dry-run",
                 "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert NO_CLAIM_JUDGED not in out and "--claims-budget" in out and "added for the paper's claims" in out

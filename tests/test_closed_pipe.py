"""Output that cannot be written never stops the work (issue 57): `burtbench run … | head -2` ran 1 trial of 6 and
exited 1 with nothing said, its manifest left "running"; `claims … | head -2` wrote none of its files. Here a
real pipe is closed by its reader after two lines, on the fault engines' fast engine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests_support import FAKES, ROOT

from harness.store import results

CUT = "standard output closed while the command ran; it went on to its end without it"


def burtbench_cut_after(argv: list[str], lines: int, tmp: Path) -> tuple[int, str]:
    """The command with its stdout read for `lines` lines, then closed (as `| head -N` does); (exit, stderr)."""
    env = {**os.environ, "BURTBENCH_ENGINE_MODULES": "fake_engines", "BURTBENCH_REPORTS": str(tmp / "reports"),
           "PYTHONPATH": os.pathsep.join([str(FAKES), str(ROOT)])}
    with open(tmp / "stderr", "w") as err:
        child = subprocess.Popen([sys.executable, "-m", "harness.commands.cli", *argv], stdout=subprocess.PIPE,
                                 stderr=err, env=env, cwd=tmp)
        for _ in range(lines):
            child.stdout.readline()
        child.stdout.close()
        code = child.wait(timeout=300)
    return code, (tmp / "stderr").read_text()


def test_a_run_whose_stdout_is_closed_finishes_its_trials_and_its_files_and_says_so_once(tmp_path):
    code, err = burtbench_cut_after(["run", "--engine", "fake/ok", "--workload", "tiny", "--profile", "smoke",
                                     "--trials", "3", "--no-report", "--out", str(tmp_path / "runs")], 2, tmp_path)
    (run,) = (tmp_path / "runs").iterdir()
    assert code == 0 and err.count(CUT) == 1 and "Traceback" not in err, err
    assert len(results.read_trials(run)) == 3
    assert json.loads((run / results.MANIFEST_FILE).read_text())["status"] == "complete"

    code, err = burtbench_cut_after(["claims", str(run), "--report-dir", str(tmp_path / "pooled")], 1, tmp_path)
    assert code == 0 and err.count(CUT) == 1, err
    assert sorted(p.name for p in (tmp_path / "pooled").iterdir()) == ["claims-pooled.json", "claims-pooled.md"]

    code, err = burtbench_cut_after(["report", str(run), "--report-dir", str(tmp_path / "again")], 0, tmp_path)
    assert code == 0 and "Traceback" not in err and (tmp_path / "again" / run.name / "index.html").is_file(), err

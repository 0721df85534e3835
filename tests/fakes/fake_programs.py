"""Test-only engines of kind "program" (a program that prints its own text), registered through
BURTBENCH_ENGINE_MODULES=fake_programs: a shell script stands for someone else's program.

Modes: ok (prints its iteration count, writes the tiny graph's answer into its working folder),
undecided (its check cannot decide: "not comparable"), garbled (prints nothing the spec can read),
unbuildable (its program cannot be had: command() raises), fails (exits 3).
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from engines.base import EngineSpec


class Unbuildable(RuntimeError):
    pass


class FakeProgram(EngineSpec):
    def command(self, pt, iterations, inputs, workdir):
        if self.mode == "unbuildable":
            raise Unbuildable("their program did not build: fake.cpp:1: error: nothing to see")
        answer = json.dumps(pt.workload.reference(pt.params, inputs))
        script = (f"echo \"iterations: {iterations}\"; echo 'not our JSON line'; "
                  f"printf '%s' {shlex.quote(answer)} > answer.json; pwd > where.txt; echo \"$FAKE_ENV\" > env.txt")
        if self.mode == "fails":
            script += "; exit 3"
        return ["/bin/sh", "-c", script], {"FAKE_ENV": "from-the-spec"}

    def payload(self, pt, iterations, stdout, workdir, inputs):
        workdir = Path(workdir)
        if self.mode == "garbled" or "iterations:" not in stdout:
            return {"status": "failed", "reason": "their program printed no 'iterations:' line"}
        printed = int(stdout.split("iterations:")[1].split()[0])
        outputs = json.loads((workdir / "answer.json").read_text())
        payload = {"status": "ok", "outputs": outputs, "iterations": printed, "warmup": 0,
                   "per_iter_s": {"mean": 1e-6, "std": None, "min": None, "median": None, "n": printed},
                   "loop_time_s": 1e-6 * printed, "framework_version": "fake program 1.0",
                   "ran_in": (workdir / "where.txt").read_text().strip(),
                   "env_seen": (workdir / "env.txt").read_text().strip()}
        if self.mode == "undecided":
            payload["check"] = {"ok": None, "status": "not comparable", "max_rel_err": None, "expected": {},
                                "got": {"losses": [3.2, 3.1]}, "reason": "its own weights and data"}
        return payload


BOTH = ("tiny", "small")
ENGINES = [FakeProgram("fakeprog", mode, "cpp", "cpu", workloads=BOTH, kind="program")
           for mode in ("ok", "undecided", "garbled", "unbuildable", "fails")]

"""Paired against unpaired: the 95% interval of B/A from the same trials of one run, both ways.

    python benchmarks/paired_widths.py RUN_DIR

For every engine run in two environments or more (and every A/A copy, --aa), each version against the
oldest: the paired interval (per-round ratios, BCa bootstrap: what the versions table uses) beside
the unpaired one (Welch's t over the trials, what compare did before rounds were paired), with their
widths (high/low - 1) and the width ratio.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines.base import split_id  # noqa: E402
from harness.analysis import compare  # noqa: E402
from harness.analysis.points import group, trial_time  # noqa: E402
from harness.store.runs import load_run  # noqa: E402


def width(ci) -> float | None:
    return ci[1] / ci[0] - 1 if ci else None


def main(run_dir: str) -> None:
    points = group(load_run(Path(run_dir)).trials)
    by_point: dict = {}
    for key, point in points.items():
        base, env = split_id(key.engine)
        if env:
            by_point.setdefault((key.workload, base, key.params), {})[env] = point
    print(f"{'workload':<8} {'B vs A':<36} {'rounds':>6} {'paired B/A [95%]':>26} {'width':>7} "
          f"{'unpaired B/A [95%]':>26} {'width':>7} {'unpaired/paired':>15}")
    for (workload, _, _), envs in sorted(by_point.items()):
        names = sorted(envs)
        for a_env in names[:1] + [n for n in names if n.endswith("#2")]:
            a = envs[a_env.removesuffix("#2")] if a_env.endswith("#2") else envs[a_env]
            for b_env in ([a_env] if a_env.endswith("#2") else [n for n in names[1:] if not n.endswith("#2")]):
                b = envs[b_env]
                p = compare.ratio_of(a, b, trial_time, pair=True)
                u = compare.ratio_of(a, b, trial_time, pair=False)
                label = f"{b_env} vs {a_env.removesuffix('#2')}"
                wp, wu = width(p.ci), width(u.ci)
                print(f"{workload:<8} {label:<36} {p.n:>6} {compare.ratio_text(p.ratio, p.ci):>26} "
                      f"{wp:>7.1%} {compare.ratio_text(u.ratio, u.ci):>26} {wu:>7.1%} {wu / wp:>14.1f}x")


if __name__ == "__main__":
    main(sys.argv[1])

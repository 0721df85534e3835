"""The committed report of the committed reference run, and the table of setup differences (docs/workloads.md),
must be what the code makes of them now.

reports/reference/ is results/reference/ rendered (Markdown tables, claims, PNG figures): a reader
on a code host sees the regenerated paper without running anything. When the code that renders it
changes, `make reference-report` renders it again; this test fails until then. Figures may differ
in bytes from one matplotlib to another, so only their names are compared.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.report.render import render
from workloads import all_workloads, differences

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "reports" / "reference"
STALE = "reports/reference/ is stale: run `make reference-report` (burtbench report results/reference) and commit it"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    from harness.judging.pooled import judge_machines
    from harness.report import pooled

    folder = render(ROOT / "results" / "reference", tmp_path_factory.mktemp("reports"))
    runs = [str(ROOT / "results" / "reference"), *sorted(str(p) for p in (ROOT / "results" / "machines").iterdir())]
    pooled.write(folder, judge_machines(runs))
    return folder


def compared(folder: Path) -> list[str]:
    """The files that are committed: Markdown, the claims' CSV and JSON, the tables' CSV and LaTeX
    (not index.html, PDFs)."""
    names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return sorted(n for n in names if n.endswith(".md") or n in ("claims.csv", "claims.json", "claims-pooled.json")
                  or re.fullmatch(r"tables/[^/]+\.(csv|tex)", n))


def committed(path: Path) -> bool:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--error-unmatch", str(path)], capture_output=True)
    return done.returncode == 0


def test_every_link_of_the_reference_report_resolves_to_a_committed_file():
    """A reader on a code host follows these links: each must name a file in the repository."""
    if not committed(COMMITTED / "README.md"):
        pytest.skip("not a git checkout")
    broken = []
    for page in sorted(COMMITTED.glob("*.md")):
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor of the page itself
            path = (page.parent / target.split("#")[0]).resolve()
            if not (path.is_file() and committed(path)):
                broken.append(f"{page.name}: {target}")
    assert not broken, f"links to files that are not committed: {broken}"


def test_reference_report_is_committed_and_small():
    assert (COMMITTED / "claims.md").is_file() and (COMMITTED / "README.md").is_file()
    size = sum(p.stat().st_size for p in COMMITTED.rglob("*") if p.is_file() and p.suffix in (".md", ".png", ".csv", ".json"))
    assert size < 5 * 2**20


def test_reference_report_is_not_stale(fresh):
    assert compared(COMMITTED) == compared(fresh), STALE
    for name in compared(fresh):
        assert (COMMITTED / name).read_text(encoding="utf-8") == (fresh / name).read_text(encoding="utf-8"), \
            f"{name}: {STALE}"
    figures = sorted(p.name for p in (fresh / "figures").glob("*.png"))
    assert figures and sorted(p.name for p in (COMMITTED / "figures").glob("*.png")) == figures, STALE


def test_readme_links_the_reference_report_right_after_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = readme.index("make test")
    first_section = readme.index("\n## ")
    for link in ("reports/reference/claims.md", "reports/reference/README.md"):
        assert commands < readme.index(link) < first_section, link
        assert (ROOT / link).is_file()


def test_the_docs_table_of_setup_differences_is_the_one_list():
    page = (ROOT / "docs" / "workloads.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- differences:begin.*?-->\n(.*?)<!-- differences:end -->", page, re.S)
    assert block, "docs/workloads.md lost its differences block"
    assert block.group(1) == differences.markdown_table(), \
        "docs/workloads.md's table of setup differences is not workloads/differences.py's: python -m workloads.differences"


def test_every_difference_is_declared_by_a_workload_and_every_declared_one_exists():
    workloads = all_workloads()
    for w in workloads.values():
        if w.paper is not None:
            differences.get(w.paper.differences)  # KeyError on an unknown id
    for d in differences.DIFFERENCES:
        assert differences.affected(d, workloads), f"{d.id} affects no workload's table"

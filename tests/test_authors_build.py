"""Building the authors' programs: variants change exactly one named constant (shown by diffing the
copy against their source), a failed build says why in one line, and a finished build is cached."""
from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest
from tests_support import shared_upstream

from engines.authors import build as builder
from engines.authors.programs import PROGRAMS, knob_values, print_every_for
from engines.authors.source import PINNED_COMMIT, SourceTree


@pytest.fixture(scope="module")
def upstream() -> SourceTree:
    return shared_upstream()


def changed_lines(original: Path, copy: Path) -> list[str]:
    a = original.read_text(encoding="utf-8").splitlines()
    b = copy.read_text(encoding="utf-8").splitlines()
    return [line for line in difflib.unified_diff(a, b, lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def tree_diff(original: Path, copy: Path) -> list[str]:
    """`diff -r` of two burt/ folders: the files that differ or exist on one side only."""
    out = subprocess.run(["diff", "-rq", str(original), str(copy)], capture_output=True, text=True)
    return out.stdout.splitlines()


def test_every_knob_is_found_once_with_the_values_the_programs_state(upstream):
    assert upstream.commit == PINNED_COMMIT
    for workload, program in PROGRAMS.items():
        for step in program.steps:
            values = builder.current_values(upstream, step)
            assert values == dict(step.defaults), (workload, step.target)


@pytest.mark.parametrize("workload,values,symbol", [
    ("gpt", {"batch": 8}, "k_batch_size"),
    ("mlp", {"hidden_dim": 128}, "hidden_dim"),
    ("tiny", {"iterations": 2000}, "kIterations"),
    ("save_load", {"iterations": 20}, "kIterations (template argument)"),
])
def test_a_variant_copy_differs_from_their_source_by_exactly_the_named_line(upstream, tmp_path, workload, values, symbol):
    step = PROGRAMS[workload].steps[0]
    changes = builder.plan_changes(upstream, step, values)
    assert len(changes) == 1
    change = changes[0]
    assert change.symbol == symbol and change.file == step.source
    assert change.new_value == str(next(iter(values.values())))
    copy = builder.prepare_variant_source(upstream, tmp_path / "src", changes)
    # The whole tree: only that file differs.
    assert tree_diff(upstream.burt_dir, copy / "burt") == [
        f"Files {upstream.burt_dir / step.source[len('burt/'):]} and {copy / step.source} differ"]
    # And in it only that line, from old to new.
    assert changed_lines(upstream.root / step.source, copy / step.source) == [f"-{change.old}", f"+{change.new}"]
    assert change.old == (upstream.root / step.source).read_text(encoding="utf-8-sig").splitlines()[change.line - 1]
    # Their file is untouched (the copy's changed file is a new file, not a hard link written through).
    assert builder.current_values(upstream, step) == dict(step.defaults)
    assert change.as_record()["line"] == change.line


def test_values_equal_to_theirs_change_nothing(upstream):
    step = PROGRAMS["gpt"].steps[0]
    assert builder.plan_changes(upstream, step, dict(step.defaults)) == ()
    assert builder.variant_name(step.target, ()) == "original"
    with pytest.raises(ValueError, match="no compile-time constant"):
        builder.plan_changes(upstream, step, {"hidden_dim": 8})
    with pytest.raises(ValueError, match="positive integer"):
        builder.plan_changes(upstream, step, {"batch": 0})


def test_grid_points_map_to_their_constants(upstream):
    assert print_every_for(3000, 100) == 100 and print_every_for(20, 100) == 20 and print_every_for(4, 10) == 4
    assert print_every_for(20, 10) == 10 and print_every_for(7, 10) == 7 and print_every_for(4000, 10) == 10
    assert knob_values("gpt", {"batch": 1}, 20) == {"bin_gpt_example": {"iterations": 20, "batch": 1, "print_every": 20}}
    assert knob_values("mlp", {"batch": 64, "hidden_dim": 1024}, 4000) == {
        "bin_makemore_nlp_example": {"iterations": 4000, "batch": 64, "print_every": 10, "hidden_dim": 1024}}
    # The paper's own point builds their program unchanged.
    step = PROGRAMS["mlp"].steps[0]
    assert builder.plan_changes(upstream, step, knob_values("mlp", {"batch": 64, "hidden_dim": 1024}, 4000)[step.target]) == ()
    step = PROGRAMS["gpt"].steps[0]
    changes = builder.plan_changes(upstream, step, knob_values("gpt", {"batch": 8}, 20)[step.target])
    assert [(c.symbol, c.new_value) for c in changes] == [("k_batch_size", "8"), ("kMaxIterations", "20"),
                                                          ("kIterationsPrintFreq", "20")]
    assert builder.variant_name(step.target, changes) == "bin_gpt_example.k_batch_size=8.kMaxIterations=20.kIterationsPrintFreq=20"
    assert set(knob_values("save_load", {}, 500)) == {"bin_small_example_saving", "bin_small_example_loading"}


# ---------------------------------------------------------------------------- builds of a toy tree

TOY_CMAKE = """cmake_minimum_required(VERSION 3.12)
project(toy LANGUAGES CXX)
add_subdirectory(bin_good)
add_subdirectory(bin_bad)
"""


def toy_tree(root: Path) -> SourceTree:
    for name, body in (("bin_good", "int main() { return 0; }\n"),
                       ("bin_bad", "int main() { return undeclared_thing; }\n")):
        (root / "burt" / name / "src").mkdir(parents=True)
        (root / "burt" / name / "src" / "main.cpp").write_text(body)
        (root / "burt" / name / "CMakeLists.txt").write_text(f"add_executable({name} src/main.cpp)\n")
    (root / "burt" / "CMakeLists.txt").write_text(TOY_CMAKE)
    return SourceTree(root=root, commit=None, kind="folder", origin=str(root))


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_a_failed_build_returns_the_compilers_first_error_line_and_is_remembered(tmp_path):
    tree = toy_tree(tmp_path / "up")
    project = tmp_path / "project"
    bad = builder.build(tree, "bin_bad", project_root=project)
    assert not bad.ok and bad.executable is None
    assert "\n" not in bad.reason and "error" in bad.reason and "undeclared_thing" in bad.reason
    assert bad.reason.startswith("compile failed:")
    again = builder.build(tree, "bin_bad", project_root=project)
    assert again.cached and again.reason == bad.reason
    good = builder.build(tree, "bin_good", project_root=project)
    assert good.ok and good.executable.is_file() and not good.cached
    assert good.build_dir.parent.parent == project / "build" / "upstream"
    assert good.variant == "original" and good.compiler.get("path")
    second = builder.build(tree, "bin_good", project_root=project)
    assert second.cached and second.ok and second.seconds < 1.0 and second.executable == good.executable
    missing = builder.build(tree, "bin_missing", project_root=project)
    assert not missing.ok and "no target folder" in missing.reason


def test_first_error_prefers_the_compilers_error_line():
    log = "\n".join(["[ 50%] Building CXX object x.o", "/a/b.cpp: In function 'int main()':",
                     "/a/b.cpp:1:21: error: 'y' was not declared in this scope", "make: *** [x] Error 1"])
    assert builder.first_error(log) == "/a/b.cpp:1:21: error: 'y' was not declared in this scope"
    assert builder.first_error("CMake Error at CMakeLists.txt:3 (project):\n  No CMAKE_CXX_COMPILER could be found.\n") \
        == "CMake Error at CMakeLists.txt:3 (project): No CMAKE_CXX_COMPILER could be found."


KNOB_MAIN = "#include <cstdio>\nconstexpr int kIterations = 5;\nint main() { std::printf(\"%d\\n\", kIterations); return 0; }\n"


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_variants_share_one_configured_tree_and_leave_no_change_behind(tmp_path):
    from engines.authors.programs import Knob, Step

    root = tmp_path / "up"
    (root / "burt" / "bin_knob" / "src").mkdir(parents=True)
    (root / "burt" / "bin_knob" / "src" / "main.cpp").write_text(KNOB_MAIN)
    (root / "burt" / "bin_knob" / "CMakeLists.txt").write_text("add_executable(bin_knob src/main.cpp)\n")
    (root / "burt" / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.12)\nproject(toy LANGUAGES CXX)\n"
                                                  "add_subdirectory(bin_knob)\n")
    tree = SourceTree(root=root, commit=None, kind="folder", origin=str(root))
    main = "burt/bin_knob/src/main.cpp"
    step = Step("bin_knob", main, {"iterations": Knob("kIterations", main, r"^constexpr int kIterations = (?P<value>\d+);")},
                parse=lambda stdout, workdir: {})
    project = tmp_path / "project"

    def printed(result) -> str:
        assert result.ok, result.reason
        return subprocess.run([str(result.executable)], capture_output=True, text=True, check=True).stdout.strip()

    seven = builder.build(tree, "bin_knob", builder.plan_changes(tree, step, {"iterations": 7}), project_root=project)
    original = builder.build(tree, "bin_knob", (), project_root=project)
    nine = builder.build(tree, "bin_knob", builder.plan_changes(tree, step, {"iterations": 9}), project_root=project)
    assert (printed(seven), printed(original), printed(nine)) == ("7", "5", "9")
    # One CMake tree for all; each variant's program copied out of it into a folder of its own.
    assert seven.binary_dir == original.binary_dir == nine.binary_dir
    assert len({seven.executable, original.executable, nine.executable}) == 3
    assert seven.build_dir.name == "bin_knob.kIterations=7" and original.build_dir.name == "original"
    # Their file untouched; the shared copy holds the last variant's line only.
    assert (root / main).read_text() == KNOB_MAIN
    shared = seven.binary_dir.parent / "src" / main
    assert changed_lines(root / main, shared) == ["-constexpr int kIterations = 5;", "+constexpr int kIterations = 9;"]
    again = builder.build(tree, "bin_knob", (), project_root=project)
    assert again.cached and printed(again) == "5"

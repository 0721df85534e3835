"""The authors' published BurTorch programs (github.com/burlachenkok/burtorch) run as engines.

Their code is GPL v3 and not ours: nothing of it is stored in this project. The user gives a
checkout or a `git archive` tarball (or lets `fetch` clone it); we build their example programs with
their own CMake, run them, and read what they print.

Source (source.py)
    fetch(dest_dir, commit=PINNED_COMMIT, url=DEFAULT_URL) -> SourceTree
        git clone at a pinned commit (b1a9d66aae60e7220e19bf9dada45416a731aa8e), HEAD verified.
    open_source(path=None, cache_dir=None, expect_commit=None) -> SourceTree
        a checkout folder, a tarball, or a folder holding one tarball; path defaults to
        $BURTBENCH_UPSTREAM. Tarballs are extracted once into build/upstream/archives/<sha256>/.
        SourceTree: root, commit (HEAD, or the archive's git-archive header), kind, origin,
        archive_sha256, dirty; .as_record() for the manifest.
    Failures raise SourceError, whose str() is one line (the CLI prints it and exits 2).

Programs (programs.py; reading their output: output.py; the checks: checks.py)
    PROGRAMS[workload] -> AuthorsProgram for tiny, small, save_load, energy, mlp, gpt:
        .steps (Step: target, argv(executable, data_path), data_file, writes/reads, pins_core,
        waits_for_key, knobs, parse(stdout, workdir) -> measures), .check(measures, reference=None),
        .precision, .line_buffer_ok. save_load has two steps (their saving, then loading program,
        in the same working folder); merge_measures(workload, [step measures]) joins them.
    knob_values(workload, params, iterations) -> {target: {knob: value}}: what our grid point needs.
    Run each step with stdin closed, in a fresh scratch folder, with the preload env below; pass
    mlp's names.txt / gpt's input.txt as argv[1] (step.argv does).

Variants (variants.py) and builds (build.py; build.build is exported here as build_program)
    plan_changes(tree, step, values) -> tuple[Change]  (file, line, old, new, symbol, values);
        empty where their constants already are the values.
    build_program(tree, target, changes=()) -> BuildResult (ok, executable, reason, variant, changes,
        compiler, cached, ...); never raises for a failed compile: reason is the first error line.
        One configured CMake tree per source under build/upstream/<commit>/work/, shared by every
        variant (a variant recompiles its main file); each program copied out into
        build/upstream/<commit>/<variant>/; one build at a time across processes.
    compile_against(built, cpp_file, output) (cmake.py): compile a C++ file of ours like their
        target (for experiments on their library).

Memory (memory.py)
    child_env(out_file, base=None, line_buffered=False) -> dict to add to the child's env
        (LD_PRELOAD of a tiny library built on first use into build/authors/preload/).
    read_peak(out_file, executable=None) -> peak_resident_bytes (VmHWM), peak_virtual_bytes
        (VmPeak), ran_on_cpu, cpus_allowed, each with its source, or null with the reason.

run.py: run_program(program, {target: executable}, workdir, data_dir, cpu, timeout_s) does all of
the above for one trial, outside the harness (tests use it). The harness runs them through
engines/burtorch_authors.py, an engine of kind "program".

differences.py: DIFFERENCES, the ways each program differs from the paper's text and from our
workloads, with evidence (file:line of their code, runs) and the test that re-establishes it.
"""
from engines.authors.build import BuildResult, Change
from engines.authors.build import build as build_program  # the name `build` stays the submodule
from engines.authors.build import compile_against, plan_changes, variant_name
from engines.authors.differences import DIFFERENCES
from engines.authors.memory import PreloadUnavailable, child_env, read_peak
from engines.authors.programs import PROGRAMS, AuthorsProgram, Step, knob_values, merge_measures
from engines.authors.source import DEFAULT_URL, ENV_VAR, PINNED_COMMIT, SourceError, SourceTree, fetch, open_source

__all__ = [
    "BuildResult", "Change", "build_program", "compile_against", "plan_changes", "variant_name",
    "DIFFERENCES", "Difference", "PreloadUnavailable", "child_env", "read_peak",
    "PROGRAMS", "AuthorsProgram", "Step", "knob_values", "merge_measures",
    "DEFAULT_URL", "ENV_VAR", "PINNED_COMMIT", "SourceError", "SourceTree", "fetch", "open_source",
]

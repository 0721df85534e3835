"""How our setup differs from the paper's: ONE list, read by the report and by docs/workloads.md.

Each workload's PaperTable names the differences that affect its numbers (`differences`, by id);
the report prints them under that workload's tables, and docs/workloads.md's table "How our setup
differs from the paper's, and why" is this list as `markdown_table()` writes it (a test checks
that docs/workloads.md holds exactly that text; `python -m workloads.differences` prints it).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from workloads import all_workloads
from workloads.timed_regions import regions


@dataclass(frozen=True)
class Difference:
    """One way a setup differs from the paper's: ours (this list, under each workload's tables), or the
    authors' published programs' (engines/authors/differences.py, on the report's authors page)."""
    id: str
    topic: str
    paper: str  # what the paper says or its programs do ("not stated" where it says nothing we know of)
    here: str  # what burtbench does
    why: str = ""
    # For the authors' programs: the workloads it concerns, what their program does, where their code
    # shows it (paths at the pinned commit) and the test that re-establishes it; "same" where the
    # match itself is worth showing.
    workloads: tuple[str, ...] = ()
    authors: str = ""
    evidence: tuple[str, ...] = ()
    status: str = "differs"
    experiment: str | None = None

    def note(self) -> str:
        """The line under a report table."""
        why = f" Why: {self.why}." if self.why else ""
        return f"Setup differs from the paper's — {self.topic}: paper: {self.paper}; here: {self.here}.{why}"


def _timed_regions() -> Difference:
    """Counted from workloads/timed_regions.csv, so that this line and that table cannot disagree."""
    rows = regions().values()
    n = Counter(r.matches for r in rows)
    return Difference(
        "timed-regions", "timed region, row by row",
        "one script per row, not consistent with each other (inputs made per iteration in some, once in "
        "others; TensorFlow reads tf.Variables; autograd runs 3 forward passes per iteration)",
        f"`--timing paper` (default) times {n['yes']} of {len(rows)} rows as their script does, {n['no']} in part; "
        f"{n['kept']} keep ours where theirs times something wrong or excluded by the paper's captions (JAX and "
        f"MLX without waiting for the result, batch sampling in the step timer, one file overwritten by every "
        f"save, the BurTorch GPT's per-position backward that drops gradients)"
        + (f"; {n['not yet']} not adopted yet" if n["not yet"] else "")
        + "; `--timing lean`: one lean region everywhere",
        "workloads/timed_regions.csv lists each row's loops, and the report prints them under each table")


DIFFERENCES = (
    Difference("output-head", "output head",
               "BurTorch C++: tanh on the logits (its layer default); PyTorch: linear",
               "linear for every engine", "the same model everywhere"),
    Difference("batch", "a \"batch\" of b",
               "BurTorch: b (context, target) samples; PyTorch makemore: b names × 16 positions",
               "b (context, target) samples for every engine", "the same work per step"),
    Difference("learning-rate", "learning rate", "0.1 (BurTorch) vs 5e-4 (PyTorch)", "0.01 for every engine",
               "same optimisation; at 0.1 the e = 1024 MLP diverges from a uniform(−1, 1) start"),
    Difference("optimiser", "optimiser", "AdamW in gpt.py (the PyTorch baseline)", "plain SGD",
               "same update everywhere, and the paper's BurTorch uses SGD"),
    Difference("final-layernorm", "final LayerNorm",
               "the text goes from the last block straight to the head: 46,289 parameters",
               "a LayerNorm before the head, as in gpt.py (the paper's PyTorch baseline): 46,337 parameters",
               "the 48 extra parameters are exactly that LayerNorm's gains and biases"),
    Difference("timed", "what is timed",
               "an index-array copy and shuffle in one program, a DataLoader fetch in the other",
               "forward + backward + update; batch preparation excluded", "the same thing everywhere"),
    Difference("data", "data", "names.txt, tiny-shakespeare",
               "a synthetic corpus with the same alphabets by default; `--data-dir` for the real files",
               "the main job must run without the data sets (which are not ours to commit)"),
    Difference("launches", "launches", "not stated",
               "1 per point (± is over the steps of one run, as in the paper)"),
    Difference("tflite-fp32", "TF Lite precision", "FP64 (the caption says FP64 for every row)",
               "FP32, checked with the FP32 tolerance", "TF Lite's built-in ops have no FP64"),
    Difference("graph-modes", "\"graph\" modes",
               "\"JIT-compiles f(x) into a static graph on the first call\"; only TorchScript (by tracing) is named",
               "tf.function (TensorFlow), jax.jit (JAX), torch.jit.trace (TorchScript)",
               "the paper does not name the TensorFlow and JAX mechanisms"),
    Difference("tf-serializer", "TensorFlow serializer",
               "not named in the text; the scripts pickle the seven (files of 634 and 329 bytes)",
               "`--timing paper`: their pickle (635 and 330 bytes with TF 2.21); `--timing lean`: "
               "tf.io.serialize_tensor + tf.io.write_file, one file for the seven values (66 bytes)",
               "the lean path is TensorFlow's own tensor-to-file path"),
    Difference("energy-meter", "energy meter",
               "a battery read at 1 s intervals (BatteryInfoView); OS share = 3.9 mWh/s idle drain × time",
               "a battery or RAPL counter read around each process; OS share = idle power measured before the suite × time",
               "the machine's own counters; a process shorter than the counter's update period gets no reading"),
    # Burn 0.20's release claim (workloads/catalog/max_pool2d.py): "paper" is the release notes here.
    Difference("threads", "threads (max_pool2d: Burn 0.20's release)",
               "each backend on every core of the release's machine (not named), as burn-bench runs it",
               "one thread on one pinned core, as every workload here",
               "the suite measures one core; a ratio of backends can differ where one scales better over cores"),
    Difference("burn-libtorch", "LibTorch (max_pool2d: Burn 0.20's release)",
               "Burn on its LibTorch backend (burn-tch), which calls LibTorch's max_pool2d",
               "LibTorch's max_pool2d from C++ (libtorch-bench) with the LibTorch of the installed torch wheel",
               "Burn's LibTorch backend is not in the Burn driver; Burn adds a call's overhead to LibTorch's kernel"),
    _timed_regions(),
)

_BY_ID = {d.id: d for d in DIFFERENCES}


def get(ids) -> list[Difference]:
    """The differences named (KeyError for an unknown id: a typo in a declaration fails loudly)."""
    return [_BY_ID[i] for i in ids]


def affected(difference: Difference, workloads: dict) -> list[str]:
    """Names of the workloads whose tables carry a difference."""
    return [name for name, w in workloads.items() if w.paper is not None and difference.id in w.paper.differences]


def markdown_table(workloads: dict | None = None) -> str:
    """docs/workloads.md's table: every difference, the tables it affects, the paper's way, ours and why."""
    if workloads is None:
        workloads = all_workloads()
    lines = ["| | the paper's programs | here | why | report tables |", "|---|---|---|---|---|"]
    for d in DIFFERENCES:
        tables = ", ".join(affected(d, workloads))
        lines.append(f"| {d.topic} | {d.paper} | {d.here} | {d.why} | {tables} |".replace("|  |", "| |"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")

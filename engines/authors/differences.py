"""How each of the authors' programs differs from the paper's description and from our workloads.

Data for the report page: one Difference (workloads/differences.py) per (topic, workloads). `evidence` cites their code at
commit b1a9d66 (paths relative to burt/) and what running it showed; `experiment` names the test
that re-establishes the point where one does. `paper` is the paper's text as this project's
workload notes record it ("not stated" where it says nothing we know of); `status` is "differs" or
"same" (kept where the match itself is worth showing, e.g. a parameter count).
"""
from __future__ import annotations

from workloads.differences import Difference

_RUN_TEST = "tests/test_authors_programs.py"
_GPT_TEST = "tests/test_authors_gpt_backward.py"

DIFFERENCES: tuple[Difference, ...] = (
    # ---------------------------------------------------------------- every program
    Difference(
        "clock", workloads=("tiny", "small", "save_load", "energy", "mlp", "gpt"), topic="clock",
        paper="not stated",
        here="perf_counter_ns / steady_clock, read once per block of iterations",
        authors="gettimeofday (wall clock, 1 µs resolution, not monotonic) around the whole loop (graphs,"
                " save/load) or around each step (mlp, gpt)",
        evidence=("burt/timers/include/HighPrecisionTimer.h:11-12 (HighPrecisionTimer = GetTimeOfDayTimer on Linux)",
                  "burt/timers/src/linux/GetTimeOfDayTimer.cpp:12,23 (gettimeofday)")),
    Difference(
        "printed-precision", workloads=("tiny", "small", "energy"), topic="outputs for the numerical check",
        paper="not stated",
        here="every output read back as a double and checked at 1e-12 relative",
        authors="printed with std::cout's default 6 significant digits (tiny: only in the test.txt graph dump)",
        evidence=("bin_small_example/src/main_small_graph.cpp:84-86 (no setprecision before these lines)",
                  "bin_tiny_example/src/main_tiny_graph.cpp:176-211 (values and grads only in buildDotGraph's test.txt)",
                  "run: tiny's test.txt shows grad:-35, grad:1050, data:612.5; 1e-12 cannot be decided from 6 digits"),
        experiment=_RUN_TEST),
    # ---------------------------------------------------------------- tiny
    Difference(
        "tiny-timed-loop", workloads=("tiny",), topic="what is timed",
        paper="time per iteration of building the graph and computing its gradient",
        here="one timed loop: rebuild the 10-node graph, backward, rewind; warm-up iterations first",
        authors="three loops of 100,000 iterations, each timed whole: backward() allocating its scratch per"
                " call; backwardWithScratchStorage (our headline, per_iter = seconds / iterations); and a"
                " backward that reuses loop 2's topological order (no sort at all)",
        evidence=("bin_tiny_example/src/main_tiny_graph.cpp:95-116 (loop 1, backward)",
                  "bin_tiny_example/src/main_tiny_graph.cpp:123-144 (loop 2, pre-allocated scratch)",
                  "bin_tiny_example/src/main_tiny_graph.cpp:152-173 (loop 3, <false,true,false>: no topological sort)")),
    # ---------------------------------------------------------------- small / energy
    Difference(
        "relu-backward", workloads=("small", "energy", "gpt"), topic="ReLU derivative",
        paper="micrograd's graph, whose gradients are dg/da = 138.8338, dg/db = 645.5773",
        here="relu'(x) = 1 where x > 0, else 0: dg/da = 47620/343, dg/db = 221433/343",
        authors="the backward of relu multiplies the incoming gradient by relu's output, not by the"
                " indicator: their small program prints a.grad 104.125, b.grad 680.286 (g itself is right);"
                " the GPT's feed-forward ReLU layers use the same backward",
        evidence=("burtcore/include/burtorch_backward_dispatch.h:61-75 (case eRelu: addToGrad(outData * outGrad))",
                  "burtcore/include/burtorch_operations.h:62-67 (relu stores max(0, x))",
                  "run: bin_small_example prints a.grad: 104.125, b.grad: 680.286; forward-mode with"
                  " relu'(x) := relu(x) gives exactly 104.12536443, 680.28571429",
                  "bin_gpt_example/src/main_gpt.cpp:812,826 (fwd_a layers are ActivationType::eRelu)"),
        experiment=_RUN_TEST),
    Difference(
        "small-timed-loop", workloads=("small", "energy"), topic="what is timed",
        paper="time per iteration of building the graph and computing its gradient",
        here="graph rebuilt and differentiated per iteration with a backward over pre-allocated scratch;"
             " outputs read after the loop",
        authors="backward(g) allocates its three scratch buffers on every call; the last iteration prints"
                " g, a.grad, b.grad inside the timed loop; per_iter = seconds / iterations",
        evidence=("bin_small_example/src/main_small_graph.cpp:41-99",
                  "burtcore/include/burtorch_backward_dispatch.h:1462-1468 (backward(): three MutableData per call)")),
    Difference(
        "energy-program", workloads=("energy",), topic="program",
        paper="the small graph, 200,000 iterations, energy of the whole run",
        here="the small graph run end to end for the profile's iteration count",
        authors="a copy of the small program with kIterations = 200 * 1000; prints as small does",
        status="same",
        evidence=("bin_small_example_for_energy/src/main_small_graph.cpp:36",)),
    # ---------------------------------------------------------------- save/load
    Difference(
        "save-load-mechanism", workloads=("save_load",), topic="how values reach the file",
        paper="save and load of the small graph's seven activations (56 bytes)",
        here="a new file per save (deleted after the load, outside the timings); save and load alternate",
        authors="5,000 saves into the same my_file_f.bin (open, ftruncate to 56 bytes, mmap MAP_SHARED,"
                " store, munmap, close; no msync or fsync), then, in a second program, 5,000 loads (mmap"
                " read-only) of that file; a failed save or load is ignored (assert compiled out)",
        evidence=("bin_small_example_saving/src/main_small_graph_saving.cpp:55-63,117",
                  "bin_small_example_loading/src/main_small_graph_loading.cpp:55-64,119",
                  "burtcore/include/burtorch_backward_dispatch.h:1470-1514 (saveToFile), 1584-1632 (loadFromFile)",
                  "burt/fs/src/FileSystemHelpers.cpp:372-432 (mapFileToMemoryForWrite)")),
    Difference(
        "save-load-check", workloads=("save_load",), topic="what can be checked",
        paper="not stated",
        here="loaded values compared with the saved ones, exactly",
        authors="the loading program prints nothing it loaded: only the saved file can be compared (its"
                " 7 doubles equal a..g exactly), and the load checked as reading that unchanged file",
        evidence=("bin_small_example_loading/src/main_small_graph_loading.cpp:58-64",),
        experiment=_RUN_TEST),
    # ---------------------------------------------------------------- makemore MLP
    Difference(
        "mlp-output", workloads=("mlp",), topic="output activation",
        paper="not stated in the text (the BurTorch program is the reference)",
        here="linear logits, softmax cross-entropy",
        authors="tanh on the logits (MLPLayer's default activation), then exp / sum / -log",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:268 (W2 with the default activation)",
                  "burtcore/include/burtorch_mlp_layer.h:11-13 (actType = ActivationType::eTanh by default)",
                  "bin_makemore_nlp_example/src/main_makemore.cpp:384-416 (the tanh branch)")),
    Difference(
        "mlp-params", workloads=("mlp",), topic="parameter count",
        paper="1,755 + 1,052 e (5,963 ... 1,079,003)",
        here="1,755 + 1,052 e",
        authors="1,755 + 1,052 e: prints Params: 1079003 at e = 1024",
        status="same",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:225-268,472", "run: Params: 1079003")),
    Difference(
        "mlp-init", workloads=("mlp",), topic="initialisation",
        paper="not stated",
        here="every parameter uniform(-1, 1) from the run's seed, shared by all engines",
        authors="embedding table N(0, 1) from burt::RandomVariable; W1, b1, W2, b2 uniform(-1, 1) from"
                " a static generator in Neuron",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:228-237",
                  "burtcore/include/burtorch_mlp_neuron.h:74-108")),
    Difference(
        "mlp-lr", workloads=("mlp",), topic="learning rate and update",
        paper="plain SGD (BurTorch); the project notes 0.1 for BurTorch vs 5e-4 for PyTorch",
        here="plain SGD, 0.01 on the batch mean",
        authors="plain SGD, lr 0.1 on the batch mean (applyGDStep with 1/b)",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:440-456",)),
    Difference(
        "mlp-timed-region", workloads=("mlp",), topic="what is timed",
        paper="time per step",
        here="forward + backward + SGD update; batch preparation outside",
        authors="the step's timer starts before gradient zeroing and covers a copy of the whole index"
                " array (228,146 x 4 bytes with names.txt), a partial shuffle for the batch, a sort by"
                " label, forward, backward and the update; the printed time is the running mean over all"
                " steps including the first",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:319-345", "bin_makemore_nlp_example/src/main_makemore.cpp:459-471")),
    Difference(
        "mlp-backward", workloads=("mlp",), topic="how backward is called",
        paper="not stated",
        here="per sample, accumulating gradients over the batch (BurTorch native); one backward of the mean elsewhere",
        authors="one backward per sample on a graph rebuilt after restoreCheckpoint (exact for the batch sum);"
                " the topological order is reused when consecutive samples share a label (samples are"
                " sorted by label for this)",
        status="same",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:347-437",)),
    Difference(
        "mlp-data", workloads=("mlp",), topic="data and batches",
        paper="names.txt",
        here="a synthetic corpus by default (--data-dir for names.txt); batches prepared once and shared",
        authors="names.txt given as argv[1]; b distinct samples drawn per step by their own generator",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:43-48,201-211,325-326",)),
    Difference(
        "pinning", workloads=("mlp", "gpt"), topic="core",
        paper="the second core (their README_4_EXPERIMENTS.md)",
        here="the runner's --cpu core (default: the last)",
        authors="the program pins its main thread to core 1 itself (mask 0x2), whatever the launcher chose;"
                " the preloaded library records the core it ended on",
        evidence=("bin_makemore_nlp_example/src/main_makemore.cpp:41", "bin_gpt_example/src/main_gpt.cpp:728",
                  "burt/system/src/threads/impl/posix/ThreadPosix.cpp:217-236 (pthread_setaffinity_np; failure ignored)"),
        experiment=_RUN_TEST),
    # ---------------------------------------------------------------- GPT
    Difference(
        "gpt-output", workloads=("gpt",), topic="output activation",
        paper="an affine head after the last block",
        here="linear head (after a final LayerNorm)",
        authors="tanh on the logits (lm_head is an MLPLayer with the default activation)",
        evidence=("bin_gpt_example/src/main_gpt.cpp:860", "burtcore/include/burtorch_mlp_layer.h:11-13")),
    Difference(
        "gpt-params", workloads=("gpt",), topic="parameter count",
        paper="46,289",
        here="46,337: a final LayerNorm (24 gains + 24 biases) before the head, as in Karpathy's gpt.py",
        authors="46,289: no final LayerNorm, the head reads the last block's output (prints Params: 46289)",
        evidence=("bin_gpt_example/src/main_gpt.cpp:1100-1110", "run: Params: 46289")),
    Difference(
        "gpt-init", workloads=("gpt",), topic="initialisation",
        paper="not stated",
        here="every parameter uniform(-1, 1) from the run's seed, shared by all engines",
        authors="token and position embeddings N(0, 1); q, k, v uniform(±gain/sqrt(fan_in)); feed-forward,"
                " projection and head uniform(-1, 1); LayerNorm gains and biases N(0, 1) (not 1 and 0)",
        evidence=("bin_gpt_example/src/main_gpt.cpp:202-221,527-551,823-860",
                  "burtcore/include/burtorch_mlp_layer.h:76-99")),
    Difference(
        "gpt-layernorm", workloads=("gpt",), topic="LayerNorm",
        paper="LayerNorm",
        here="biased variance, eps 1e-5",
        authors="1/sqrt(mean(x^2) - mean(x)^2) with no epsilon",
        evidence=("bin_gpt_example/src/main_gpt.cpp:988-1003,1058-1073", "burtcore/include/burtorch_operations.h:192-198")),
    Difference(
        "gpt-lr", workloads=("gpt",), topic="learning rate and update",
        paper="SGD for BurTorch (AdamW in the PyTorch baseline, gpt.py)",
        here="plain SGD, 0.01 on the mean over the batch's token losses",
        authors="plain SGD, lr 3e-4 on the mean over b x 8 token losses",
        evidence=("bin_gpt_example/src/main_gpt.cpp:1137-1150",)),
    Difference(
        "gpt-backward", workloads=("gpt",), topic="how backward is called / gradient",
        paper="the gradient of the mean loss",
        here="the exact gradient of the mean loss over the batch's tokens",
        authors="one backward per token loss (8 per sample) on the sample's shared graph. Each backward marks"
                " the nodes it visits with the visit number root + 1, which is 1 for every fresh loss node, so"
                " a later token's backward skips every node an earlier token's backward already visited:"
                " the gradient that reaches earlier positions' nodes (attention keys and values, LayerNorms,"
                " residuals) from later tokens is dropped. Not the gradient of the mean loss.",
        evidence=("bin_gpt_example/src/main_gpt.cpp:1104-1132 (backwardWithScratchStorage per token loss)",
                  "burtcore/include/burtorch_backward_dispatch.h:1171 (new_maker = root visit number + 1)",
                  "burtcore/include/burtorch_backward_dispatch.h:1192,1289,1330,1363,1400 (a node whose visit number equals new_maker is skipped)",
                  "burtcore/include/burtorch_op_types.h:81,103 (a new node's visit number is 0)",
                  "experiment: w, x0, x1 leaves, h0 = w x0, h1 = w x1 + h0, losses h0^2 and h1^2: one backward"
                  " per loss gives dw = 2 h0 x0 + 2 h1 x1 (2.625 at w=0.75, x0=1.5, x1=-0.5), one backward of"
                  " the sum and the analytic value give 2 h0 x0 + 2 h1 (x0 + x1) = 4.875"),
        experiment=_GPT_TEST),
    Difference(
        "gpt-timed-region", workloads=("gpt",), topic="what is timed",
        paper="time per step",
        here="forward + backward + SGD update; batch preparation outside",
        authors="batch sampling before the timer; gradient zeroing, embedding lookup, forward and backward per"
                " sample, and the update inside; the printed time is the running mean over all steps,"
                " the first included",
        evidence=("bin_gpt_example/src/main_gpt.cpp:900-906,1152-1163",)),
    Difference(
        "gpt-data", workloads=("gpt",), topic="data and batches",
        paper="tiny-shakespeare (input.txt)",
        here="a synthetic corpus by default (--data-dir for input.txt); b windows of 8 prepared once and shared",
        authors="input.txt given as argv[1]; the first 90% for training; b random windows of 8 per step from"
                " their generator seeded 123",
        evidence=("bin_gpt_example/src/main_gpt.cpp:122-197,730-758,868-900",)),
)

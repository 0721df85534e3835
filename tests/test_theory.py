"""The "In theory, registers only" bound: operation counts of the graphs and the arithmetic on them."""
import pytest

from harness.analysis import notes
from workloads import theory
from workloads.catalog import small, tiny


def test_tiny_graph_operations_match_a_count_by_hand():
    # Forward: a+b, a*b, b**3 (2 multiplications), +, c-d, e**2, f/2 = 8.
    # Backward, from g down: f/2 -> 1; e**2 -> 2; c-d -> 1 (negation for d); d = p+q -> 0;
    # q = b**3 -> 2 (first into b); p = a*b -> 1 (first into a) + 1 + 1 accumulation into b;
    # c = a+b -> 1 accumulation into a + 1 into b. Total 11.
    forward, backward, g = theory.op_counts(tiny.WORKLOAD)
    assert (forward, backward) == (8, 11)
    assert g == tiny.reference(tiny.WORKLOAD.points()[0])["g"]


def test_small_graph_is_counted_on_the_engines_own_definition():
    forward, backward, g = theory.op_counts(small.WORKLOAD)
    assert g == pytest.approx(small.reference(small.WORKLOAD.points()[0])["g"], rel=1e-15)
    assert (forward, backward) == (26, 30)


def test_bound_is_operations_over_the_clock():
    b = theory.bound(small.WORKLOAD, 2.0e9, "test clock")
    assert b.cycles == 56 and b.seconds == pytest.approx(28e-9)
    assert theory.bound(small.WORKLOAD, None, "unknown").seconds is None


def test_tiny_bound_at_the_papers_clock_agrees_with_its_table_2():
    # Table 2 prints Ω(0.0004) s for 100,000 iterations on a 4.48 GHz core: one significant digit.
    total = theory.bound(tiny.WORKLOAD, 4.48e9, "paper").seconds * 100_000
    assert 0.00035 <= total < 0.00045


def test_clock_prefers_the_fastest_known_frequency():
    manifest = {"machine": {"cpu_mhz": {"current": 2600.0, "nominal": 3000.0, "max": 4500.0, "source": "sysfs"}},
                "tsc": {"hz": 2.9e9, "source": "tsc_freq_khz"}}
    assert notes.clock_of(manifest) == (4.5e9, "max CPU frequency (sysfs)")
    manifest["machine"]["cpu_mhz"].update(max=None, nominal=None)
    assert notes.clock_of(manifest)[0] == 2.6e9
    manifest["machine"]["cpu_mhz"]["current"] = None
    assert notes.clock_of(manifest) == (2.9e9, "TSC rate (tsc_freq_khz)")
    assert notes.clock_of({}) == (None, "no CPU frequency in the manifest")


def test_note_is_labelled_as_a_bound():
    text = notes.theory_note(small.WORKLOAD, {"tsc": {"hz": 2.0e9, "source": "test"}})
    assert "lower bound, not a measurement" in text and "Ω(28 ns)" in text
    assert "no clock rate known" in notes.theory_note(tiny.WORKLOAD, {})

"""What JAX's missing block_until_ready changes in the authors' tiny script (experiments/exp1_tiny_example/
example_jax_jit.py): their loop, timed as they time it (no wait) and as `--timing paper` does (waiting
for every result), side by side in one process. Run it pinned: `taskset -c 1 python benchmarks/jax_wait.py`.
"""
import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
ITERATIONS, WARMUP = 5_000, 200


def compute(a, b):
    c = a + b
    d = a * b + b**3
    e = c - d
    f = e**2
    return f / 2.0


def per_iteration_us(step, wait: bool) -> float:
    for _ in range(WARMUP):
        result = step(jnp.float64(-41.0), jnp.float64(2.0))
    jax.block_until_ready(result)
    start = time.perf_counter()
    for _ in range(ITERATIONS):
        result = step(jnp.float64(-41.0), jnp.float64(2.0))
        if wait:
            jax.block_until_ready(result)
    return (time.perf_counter() - start) / ITERATIONS * 1e6


if __name__ == "__main__":
    step = jax.jit(jax.value_and_grad(compute, argnums=(0, 1)))
    print(f"authors' loop, no wait:          {per_iteration_us(step, False):8.1f} us/iteration")
    print(f"authors' loop, block_until_ready: {per_iteration_us(step, True):8.1f} us/iteration")

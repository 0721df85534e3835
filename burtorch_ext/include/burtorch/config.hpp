// Version, and the few compiler hints the hot path needs.
#pragma once

#define BURTORCH_VERSION "0.1.0"

#if defined(_MSC_VER) && !defined(__clang__)
#define BURTORCH_INLINE __forceinline
#define BURTORCH_OUTLINE __declspec(noinline)
#define BURTORCH_NOINLINE __declspec(noinline)
#define BURTORCH_UNREACHABLE() __assume(0)
// After a lambda's parameter list: inlined wherever it is called.
#define BURTORCH_INLINE_LAMBDA [[msvc::forceinline]]
#else
#define BURTORCH_INLINE inline __attribute__((always_inline))
// Kept out of a caller whose locals must stay in registers.
#define BURTORCH_OUTLINE __attribute__((noinline))
// Out of line and off the hot path (growth, errors).
#define BURTORCH_NOINLINE __attribute__((noinline, cold))
#define BURTORCH_UNREACHABLE() __builtin_unreachable()
#define BURTORCH_INLINE_LAMBDA __attribute__((always_inline))
#endif

// On every thread-local, in a shared library (the Python module): its address from the thread
// pointer, not from a call to __tls_get_addr per use (GPT b = 64 from Python: 10.3% faster for the
// pool, which every op reaches). The module then takes its 1.3 KB of TLS from the static block at
// load, which is still free after torch, TensorFlow, JAX and MLX (tests/test_burtorch_module.py);
// one variable of that model puts all of them there, so the others cost no more TLS for it. An
// executable keeps its own, shorter model (local-exec).
#if defined(__ELF__) && defined(__PIC__) && !defined(__PIE__)
#define BURTORCH_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define BURTORCH_INITIAL_EXEC
#endif

// Index and size checks cost a branch per node, so only test builds turn them on.
#if defined(BURTORCH_CHECKS)
#include <cstdio>
#include <cstdlib>
#define BURTORCH_ASSERT(cond)                                                               \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "burtorch: check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)
#else
#define BURTORCH_ASSERT(cond) ((void)0)
#endif

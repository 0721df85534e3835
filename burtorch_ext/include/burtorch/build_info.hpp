// What this build of the engine is: the instruction sets its kernels were compiled for, the
// block products' choice on the running CPU, and the compiler. One line, the same in the native
// driver's --version and the Python module's build_info(), so that a run can show both rows ran
// the same kernels.
#pragma once

#include <string>

#include "burtorch/cpu.hpp"
#include "burtorch/simd.hpp"

namespace burtorch {

// The instruction-set extensions the compiler was allowed to use, as its predefined macros say.
inline std::string compiledIsa() {
  std::string isa;
  const auto add = [&isa](bool on, const char* name) {
    if (!on) return;
    if (!isa.empty()) isa += ' ';
    isa += name;
  };
#if defined(__SSE2__) || defined(_M_X64)
  add(true, "sse2");
#endif
#ifdef __AVX__
  add(true, "avx");
#endif
#ifdef __AVX2__
  add(true, "avx2");
#endif
#ifdef __FMA__
  add(true, "fma");
#endif
#ifdef __AVX512F__
  add(true, "avx512f");
#endif
#if defined(__ARM_NEON) || defined(__aarch64__)
  add(true, "neon");
#endif
  return isa.empty() ? "none" : isa;
}

inline std::string compilerName() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#elif defined(_MSC_VER)
  return "msvc " + std::to_string(_MSC_FULL_VER);
#else
  return "unknown compiler";
#endif
}

// "avx512 kernels; gemm 512-bit, kc 1024 B, mc 16 panels, nc 256; isa sse2 avx fma avx512f; gcc 12.2.0"
inline std::string buildDescription() {
  return BURTORCH_KERNELS " kernels; " + kernels::describe(kernels::kernelChoice()) + "; isa " + compiledIsa() + "; " +
         compilerName();
}

}  // namespace burtorch

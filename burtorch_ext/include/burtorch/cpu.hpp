// The running CPU, as far as the block products (gemm.hpp) care: its L1d and L2 sizes and
// whether its 512-bit registers are worth using, and the kernel chosen from them. The choice is
// a pure function of a CpuInfo, so tests can fake a CPU; readCpuInfo() reads the caches from
// sysfs under a root that tests can point at a fake tree, and the flags from cpuid.
//
// Only the register width and the depth of a block (kBytes) change the bits of a product:
// registers of any width compute the same chains, but a product over more than one block of k
// adds each block's chain to C. On the reference host (Zen 5: 48 KiB L1d, 1 MiB L2) the choice
// is the constants the kernels were tuned with.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <string>

#include "burtorch/simd.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace burtorch::kernels {

struct CpuInfo {
  std::size_t l1dBytes = 48 * 1024;  // unknown: the reference host's
  std::size_t l2Bytes = 1024 * 1024;
  bool avx512 = false;       // the CPU runs AVX-512F
  unsigned amdFamily = 0;    // AMD's family number; 0 on other vendors
};

struct KernelChoice {
  std::size_t registerBits;  // of the float block products' registers: 512, 256, 128, or 32 (none)
  std::size_t kBytes;        // the depth of a block of k, in bytes of one value's row: kKC = kBytes / sizeof(T)
  std::size_t mPanels;       // panels of A per block of rows: kMC = mPanels * kMR
  std::size_t nColumns;      // columns of B per block: kNC
};

// The widest float register the build compiles the block products for, in bits.
inline constexpr std::size_t kWidestBits = kWidest<float> * 32;

// Rows of A per tile for registers of `bits` (gemm.hpp's Tile): 8 x 2 registers of 512 bits
// leave room for B's two; 6 x 2 of 256 or fewer.
constexpr std::size_t tileRows(std::size_t bits) noexcept { return bits == 512 ? 8 : 6; }

constexpr std::size_t floorPowerOfTwo(std::size_t n) noexcept {
  std::size_t p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// 512-bit registers where the CPU runs them at full width: AMD's family 0x19 (Zen 3 has none,
// Zen 4 splits each 512-bit operation in two 256-bit halves) gains nothing from them and
// loses on the wider panels. A panel of B (kKC x 2 registers) takes up to 2/3 of L1d, the rest
// for the panel of A and C's tile; a block of A (kMC x kKC) an eighth of L2; a block of B
// (kKC x kNC) a quarter.
inline KernelChoice chooseKernel(const CpuInfo& cpu, std::size_t widestBits = kWidestBits) noexcept {
  std::size_t bits = widestBits;
  if (bits == 512 && (!cpu.avx512 || cpu.amdFamily == 0x19)) bits = 256;
  const std::size_t nr = bits / 16;  // floats per row of a panel of B: two registers
  const std::size_t kBytes = std::clamp<std::size_t>(floorPowerOfTwo(cpu.l1dBytes * 2 / 3 / nr), 256, 1024);
  const std::size_t mPanels = std::clamp<std::size_t>(cpu.l2Bytes / 8 / (kBytes * tileRows(bits)), 4, 16);
  const std::size_t nColumns = std::clamp<std::size_t>(cpu.l2Bytes / 4 / kBytes / 32 * 32, 64, 1024);
  return {bits, kBytes, mPanels, nColumns};
}

// A cache's size from sysfs ("48K", "1024K", "32M"); 0 if unreadable.
inline std::size_t readCacheSize(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return 0;
  unsigned long size = 0;
  char unit = 'B';
  const int read = std::fscanf(f, "%lu%c", &size, &unit);
  std::fclose(f);
  if (read < 1) return 0;
  return size * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
}

// The first line of a small sysfs file; empty if unreadable.
inline std::string readLine(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return {};
  char line[64] = {};
  const bool ok = std::fgets(line, sizeof line, f) != nullptr;
  std::fclose(f);
  std::string s = ok ? line : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// L1d and L2 of cpu0 from sysfs under `root` ("/sys" on Linux); those it cannot read keep info's.
inline void readCaches(const std::string& root, CpuInfo& info) {
  const std::string cache = root + "/devices/system/cpu/cpu0/cache/index";
  for (int index = 0; index < 8; ++index) {
    const std::string dir = cache + std::to_string(index) + "/";
    const std::string level = readLine(dir + "level"), type = readLine(dir + "type");
    const std::size_t size = readCacheSize(dir + "size");
    if (size == 0) continue;
    if (level == "1" && type == "Data") info.l1dBytes = size;
    if (level == "2" && type != "Instruction") info.l2Bytes = size;
  }
}

// The vendor and family from cpuid, AVX-512F from the compiler's CPU probe.
inline void readFlags(CpuInfo& info) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) && ebx == 0x68747541 /* "Auth" of AuthenticAMD */ && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    const unsigned base = (eax >> 8) & 0xf, extended = (eax >> 20) & 0xff;
    info.amdFamily = base == 0xf ? base + extended : base;
  }
  info.avx512 = __builtin_cpu_supports("avx512f");
#else
  (void)info;
#endif
}

inline CpuInfo readCpuInfo(const std::string& sysfsRoot = "/sys") {
  CpuInfo info;
  readCaches(sysfsRoot, info);
  readFlags(info);
  return info;
}

// The choice for this process's CPU, made once.
inline const KernelChoice& kernelChoice() {
  static const KernelChoice choice = chooseKernel(readCpuInfo());
  return choice;
}

// "gemm 512-bit, kc 1024 B, mc 16 panels, nc 256": for --version and the tests' logs.
inline std::string describe(const KernelChoice& c) {
  char text[96];
  std::snprintf(text, sizeof text, "gemm %zu-bit, kc %zu B, mc %zu panels, nc %zu", c.registerBits, c.kBytes, c.mPanels, c.nColumns);
  return text;
}

}  // namespace burtorch::kernels

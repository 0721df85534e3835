// Matrix-matrix products for the layers applied to a block of many rows (b samples x tokens):
// C (+)= A B, with A m x k and B k x n given by how to read them (packing.hpp), and C by
// where each of its rows is. A register-blocked micro-kernel (micro_kernel.hpp) computes a
// kMR x kNR tile of C from packed panels of A (kMR rows) and B (kNR columns), both laid out in
// the order the kernel reads them; blocks of A (kMC x kKC) stay in L2 and a panel of B
// (kKC x kNR) in L1, so every value of B is read once from memory per block of kMC rows of A,
// not once per row. The register width and the blocks are the running CPU's (cpu.hpp).
//
// Each element of C is one chain of products added in order of k, from the block's first k
// (kKC at a time: C = C + that block's chain). The chain multiplies and adds with FMA where the
// build targets it (BURTORCH_FMA), else with a multiply and an add: registers of any width give
// the same bits for the same kind of arithmetic, but an FMA build differs from one without (one
// rounding per term instead of two), well within 1e-6 relative in FP32.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

#include "burtorch/config.hpp"
#include "burtorch/cpu.hpp"
#include "burtorch/micro_kernel.hpp"
#include "burtorch/packing.hpp"
#include "burtorch/simd.hpp"
#include "burtorch/thin_products.hpp"

namespace burtorch::kernels {

namespace detail {

// Grows, never shrinks, never initialises: the packed panels of the calls on this thread.
template <class T>
class PanelBuffer {
 public:
  PanelBuffer() = default;
  PanelBuffer(const PanelBuffer&) = delete;
  PanelBuffer& operator=(const PanelBuffer&) = delete;
  ~PanelBuffer() { ::operator delete(data_, std::align_val_t{64}); }

  T* fit(std::size_t n) {
    if (n > size_) {
      ::operator delete(data_, std::align_val_t{64});
      data_ = static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{64}));
      size_ = n;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// The panels of every product on this thread: one pair per type, not one per instantiation of
// blockedGemm (each its own thread_local took the Python module's TLS, scratch.hpp, past what
// glibc spares it: 1,760 bytes, and the module failed to load).
template <class T>
struct Panels {
  PanelBuffer<T> a, b;
};
template <class T>
inline thread_local Panels<T> panels BURTORCH_INITIAL_EXEC;

}  // namespace detail

// Whether B and C are rows of row-major matrices, which the thin products read (thin_products.hpp).
template <class T, class PackB, class CRows>
inline constexpr bool kRowMajor = false;
template <class T>
inline constexpr bool kRowMajor<T, BFromRows<StridedRows<T>>, StridedRows<T>> = true;

// The blocks of a product in registers of `lanes` values of T, from the kernel choice.
struct Blocks {
  std::size_t kc;  // k per block
  std::size_t mc;  // rows of A per block
  std::size_t nc;  // columns of B per block
};

template <class T, std::size_t lanes>
Blocks blocksFor(const KernelChoice& choice) noexcept {
  return {choice.kBytes / sizeof(T), choice.mPanels * Tile<T, lanes>::kMR, choice.nColumns};
}

namespace detail {

// What a block of k does to C, for what the whole product does: only the first block stores
// (or finds zeros), only the last one descends.
template <class T>
WriteBack<T> forBlockOfK(WriteBack<T> write, bool first, bool last) noexcept {
  using W = WriteBack<T>;
  if (write.kind == W::kStore && !first) write.kind = W::kAdd;
  if (write.kind == W::kDescendOnZeros && !(first && last)) write.kind = first ? W::kStore : W::kDescend;
  if (write.kind == W::kDescend && !last) write.kind = W::kAdd;
  return write;
}

// Whether no two of a tile's rows of C (count rows of nn values) overlap. Rows each at least nn
// past the one before, C as it lies, are apart without comparing every pair (at the GPT's shapes
// the comparisons cost 3% of a step).
template <class T>
BURTORCH_INLINE bool rowsApart(T* const* rows, std::size_t count, std::size_t nn) noexcept {
  std::size_t i = 1;
  while (i < count && rows[i - 1] + nn <= rows[i]) ++i;
  for (; i < count; ++i)
    for (std::size_t u = 0; u < i; ++u)
      if (rows[u] + nn > rows[i] && rows[i] + nn > rows[u]) return false;
  return true;
}

// C (m x n) (+)= A (m x k) B (k x n), in registers of `lanes` values: see gemm() below.
template <class T, std::size_t lanes, class PackA, class PackB, class CRows>
void blockedGemm(const Blocks& blocks, std::size_t m, std::size_t n, std::size_t k, const PackA& packA, const PackB& packB, const CRows& cRows, const WriteBack<T>& write) noexcept {
  constexpr std::size_t mr = Tile<T, lanes>::kMR, nr = Tile<T, lanes>::kNR;
  PanelBuffer<T>& aBuffer = panels<T>.a;
  PanelBuffer<T>& bBuffer = panels<T>.b;
  constexpr bool packsA = !kAUnpacked<PackA>;
  T* const ap = kAInPlace<PackA> ? nullptr : aBuffer.fit(blocks.mc * blocks.kc);
  alignas(64) T tile[mr * nr];
  // One tile: from the packed panels into C, through `tile` where C's rows are not contiguous
  // over the tile (or at the edges).
  const auto tileAt = [&](auto a, const T* b, std::size_t ldb, std::size_t kc, std::size_t i0, std::size_t mm, std::size_t j0, std::size_t nn, const WriteBack<T>& to) {
    T* rows[mr];
    bool direct = nn == nr || nn == lanes;
    for (std::size_t i = 0; i < mm && direct; ++i) {
      std::size_t len;
      rows[i] = const_cast<T*>(cRows.segment(i0 + i, j0, len));
      direct = len >= nn;
    }
    // Rows that overlap (an input two rows share) are added one after the other, below.
    if (direct && rowsApart(rows, mm, nn)) {
      withRows<mr>(mm, [&](auto r) BURTORCH_INLINE_LAMBDA {
        if (nn == nr) microKernel<T, lanes, decltype(r)::value>(kc, a, b, ldb, rows, to);
        else microKernelHalf<T, lanes, decltype(r)::value>(kc, a, b, ldb, rows, to);
      });
      return;
    }
    for (std::size_t i = 0; i < mr; ++i) rows[i] = tile + i * nr;
    // Half a panel where that covers it: B where it lies has no columns past n.
    if (nn <= lanes) microKernelHalf<T, lanes>(kc, a, b, ldb, rows, WriteBack<T>{WriteBack<T>::kStore});
    else microKernel<T, lanes>(kc, a, b, ldb, rows, WriteBack<T>{WriteBack<T>::kStore});
    for (std::size_t i = 0; i < mm; ++i)
      for (std::size_t j = 0; j < nn;) {
        std::size_t len;
        T* dst = const_cast<T*>(cRows.segment(i0 + i, j0 + j, len));
        const std::size_t count = std::min(len, nn - j);
        for (std::size_t q = 0; q < count; ++q) writeOne(dst[q], tile[i * nr + j + q], to);
        j += count;
      }
  };
  // Rows [i0, i0 + mc) of A into their panels, along k from pc; A read where it lies has none.
  const auto packBlockOfA = [&](std::size_t i0, std::size_t mc, std::size_t pc, std::size_t kc) {
    if constexpr (packsA) packA.template pack<mr>(i0, mc, pc, kc, ap);
  };
  // The tile's rows of A: row ir of the block from row ic, along k from pc.
  const auto aAt = [&](std::size_t ic, std::size_t ir, std::size_t pc, std::size_t kc) {
    if constexpr (packsA) {
      return PackedA<T, mr>{ap + ir * kc};
    } else if constexpr (kAColumnsInPlace<PackA>) {
      const std::size_t i0 = ic + ir;
      if (i0 + mr <= m) return ColumnsOfA<T>{packA.base + pc * packA.stride + i0, packA.stride};
      packAlong<mr>(StridedRows<T>{const_cast<T*>(packA.base), packA.stride}, pc, kc, i0, m, ap);
      return ColumnsOfA<T>{ap, mr};
    } else {
      RowsOfA<T, mr> rows;
      for (std::size_t i = 0; i < mr; ++i) rows.row[i] = packA.base + std::min(ic + ir + i, m - 1) * packA.stride + pc;
      return rows;
    }
  };
  // Rows per tile: kMR where A is packed (its panels are kMR rows), else the block's rows shared
  // evenly among as few tiles: 8 rows as 4 + 4, not 6 + 2, as a tile of 2 rows has too few chains
  // of products to hide their latency.
  const auto tileRows = [&](std::size_t mc) -> std::size_t {
    if constexpr (packsA) return mr;
    const std::size_t tiles = (mc + mr - 1) / mr;
    return (mc + tiles - 1) / tiles;
  };
  // As many columns of B per block as keep a block of B within kc x nc values: wider where k
  // is short, so that C is swept along longer rows.
  const std::size_t ncMax = std::max(blocks.nc, blocks.kc * blocks.nc / std::min(k, blocks.kc) / nr * nr);
  T* const bp = kBInPlace<PackB> ? nullptr : bBuffer.fit((blocks.kc + 1) * (ncMax + nr));
  // A of one block of rows (the tokens of a batch, often) is packed once per block of k, not
  // once per block of B's columns. Each element of C still takes the blocks of k in order.
  const bool oneBlockOfA = m <= blocks.mc;
  for (std::size_t pc = 0; pc < k; pc += blocks.kc) {
    const std::size_t kc = std::min(blocks.kc, k - pc);
    const WriteBack<T> to = forBlockOfK(write, pc == 0, pc + kc == k);
    // Panels one cache line further apart than their size: at a power-of-two distance,
    // packing B row by row would write every panel's line to the same set of L1.
    const std::size_t bStride = kc * nr + nr;
    if (oneBlockOfA) packBlockOfA(0, m, pc, kc);
    for (std::size_t jc = 0; jc < n; jc += ncMax) {
      const std::size_t nc = std::min(ncMax, n - jc);
      // The panel of columns jr of the block: where it starts, and how far apart its rows are.
      const auto bAt = [&](std::size_t jr) {
        if constexpr (kBInPlace<PackB>) return std::pair<const T*, std::size_t>{packB.base + pc * packB.stride + jc + jr, packB.stride};
        else return std::pair<const T*, std::size_t>{bp + jr / nr * bStride, nr};
      };
      if constexpr (!kBInPlace<PackB>) packB.template pack<nr>(pc, kc, jc, nc, bp, bStride);
      for (std::size_t ic = 0; ic < m; ic += blocks.mc) {
        const std::size_t mc = std::min(blocks.mc, m - ic);
        if (!oneBlockOfA) packBlockOfA(ic, mc, pc, kc);
        const std::size_t step = tileRows(mc);
        // A read where it lies goes along C's rows too: each tile's rows of A are fetched once for
        // every panel of B, not once per panel (the MLP's forward at b = 64, e = 1,024 on the
        // Intel host: 1.32 -> 1.25 ms a step, one run each).
        if (kc >= blocks.kc / 2 && packsA) {
          // A panel of B stays in L1 while the tiles go down the rows of the block.
          for (std::size_t jr = 0; jr < nc; jr += nr)
            for (std::size_t ir = 0; ir < mc; ir += step) {
              const auto [b, ldb] = bAt(jr);
              tileAt(aAt(ic, ir, pc, kc), b, ldb, kc, ic + ir, std::min(step, mc - ir), jc + jr, std::min(nr, nc - jr), to);
            }
        } else {
          // Few products per tile: reading and writing C costs more than the panels, so the
          // tiles go along C's rows, as the hardware prefetches.
          for (std::size_t ir = 0; ir < mc; ir += step) {
            const auto a = aAt(ic, ir, pc, kc);  // once for the row of tiles
            for (std::size_t jr = 0; jr < nc; jr += nr) {
              const auto [b, ldb] = bAt(jr);
              tileAt(a, b, ldb, kc, ic + ir, std::min(step, mc - ir), jc + jr, std::min(nr, nc - jr), to);
            }
          }
        }
      }
    }
  }
}

}  // namespace detail

// The register width for a product n columns wide: the choice's, but 256 bits where n would not
// fill one row of a panel of B (two registers) of 512: on an Intel Xeon with AVX-512, the GPT's
// products of 24 columns in 512-bit tiles partly empty made its b = 1 step 45% slower
// (docs/engine.md). Widths compute the same chains, and the choice's blocks stay: the same bits.
template <class T>
constexpr std::size_t registerBitsFor(const KernelChoice& choice, std::size_t n) noexcept {
  return n < 2 * kWidest<T> ? std::min<std::size_t>(choice.registerBits, 256) : choice.registerBits;
}

namespace detail {

// f(lanes) for the registers of T that `bits` names, as a compile-time constant: the build's
// widest, or half of it where the build has 512-bit registers of T and the choice is 256.
template <class T, class F>
BURTORCH_INLINE void withLanes(std::size_t bits, F f) noexcept {
  if constexpr (kWidest<T> * sizeof(T) == 64) {
    if (bits < 512) return f(std::integral_constant<std::size_t, kWidest<T> / 2>{});
  }
  f(std::integral_constant<std::size_t, kWidest<T>>{});
}

}  // namespace detail

// C (m x n) += A (m x k) B (k x n) as `write` says (WriteBack: C = A B, C += A B, or the SGD
// step on the values whose gradients C holds), in the registers and blocks of `choice`. With
// WriteBack::kStore, C need not be initialised. cRows.segment(i, j, len) locates C's elements
// as the packers' rows do.
template <class T, class PackA, class PackB, class CRows>
void gemm(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k, const PackA& packA, const PackB& packB, const CRows& cRows, const WriteBack<T>& write) noexcept {
  if (m == 0 || n == 0) return;
  BURTORCH_ASSERT(k > 0 || write.kind == WriteBack<T>::kStore || write.kind == WriteBack<T>::kAdd);
  if (k == 0) {
    if (write.kind == WriteBack<T>::kStore)
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n;) {
          std::size_t len;
          T* dst = const_cast<T*>(cRows.segment(i, j, len));
          const std::size_t count = std::min(len, n - j);
          std::fill_n(dst, count, T(0));
          j += count;
        }
    return;
  }
  detail::withLanes<T>(registerBitsFor<T>(choice, n), [&](auto lanes) {
    if constexpr (kRowMajor<T, PackB, CRows> && !kAUnpacked<PackA>)
      if (detail::thinProduct<T, lanes>(blocksFor<T, lanes>(choice).kc, m, n, k, packA, packB.rows, cRows, write)) return;
    if constexpr (std::is_same_v<PackB, BFromRows<StridedRows<T>>>)
      if (n % lanes == 0 && k * packB.rows.stride * sizeof(T) <= kBInPlaceBytes)
        return detail::blockedGemm<T, lanes>(blocksFor<T, lanes>(choice), m, n, k, packA, BInPlace<T>{packB.rows.base, packB.rows.stride}, cRows, write);
    detail::blockedGemm<T, lanes>(blocksFor<T, lanes>(choice), m, n, k, packA, packB, cRows, write);
  });
}

// The same in the running CPU's choice; with `overwrite`, C = A B, else C += A B.
template <class T, class PackA, class PackB, class CRows>
void gemm(std::size_t m, std::size_t n, std::size_t k, const PackA& packA, const PackB& packB, const CRows& cRows, bool overwrite) noexcept {
  gemm<T>(kernelChoice(), m, n, k, packA, packB, cRows, WriteBack<T>{overwrite ? WriteBack<T>::kStore : WriteBack<T>::kAdd});
}

}  // namespace burtorch::kernels

// How a matrix product reads its operands (gemm.hpp): packers that copy panels of A and B in the
// order the micro-kernel reads them, from rows or from columns, and the readers that take A or B
// where they lie, unpacked, where packing would cost as much as the multiply-adds it feeds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "burtorch/config.hpp"
#include "burtorch/micro_kernel.hpp"
#include "burtorch/simd.hpp"

namespace burtorch::kernels {

// How a packer reads a matrix (its Rows: StridedRows, thin_products.hpp; InputRows, linear.hpp): rows, each
// contiguous in segments. segment(r, k, len) returns the address of element k of row r and sets
// len to how many elements from there are contiguous (at least 1). Each walker of segments (here,
// gemm.hpp's edge tiles, linear_block_backward.hpp's dX) is written out where it is used: one
// shared walker taking a lambda kept the executables' steps but made the Python module's GPT b = 1
// step 2-3 µs slower (its forward 54.8 -> 56.6 µs, best of 1,500, builds alternating).

// Packs rows [r0, r0 + p) of `rows` (r0 + p may pass `count`: zeros), columns [k0, k0 + kc), as
// out[k * P + i] = rows(r0 + i)[k0 + k]: a panel of A from rows of A, or of B from its columns.
template <std::size_t P, class T, class Rows>
BURTORCH_INLINE void packAcross(const Rows& rows, std::size_t r0, std::size_t count, std::size_t k0, std::size_t kc, T* out) noexcept {
  constexpr std::size_t w = kTransposeTile<T>;
  std::size_t transposed = 0;  // the panel's first rows, in whole groups of w, that are there
  if constexpr (w > 1 && P % w == 0) transposed = r0 < count ? std::min(P, count - r0) / w * w : 0;
  // Along k a stretch at a time over which every one of those rows is contiguous (the whole block
  // of a matrix; a run of the embedding rows a context is made of), in w x w transposes in
  // registers, w rows at a time down the stretch: w streams of reads, not P (Zen 5, the MLP's
  // forward product at b = 64, e = 1,024: 180 -> 208 GFLOP/s). A panel past the last row (a
  // layer of 24 outputs: 16 + 8) transposes its rows that are there.
  for (std::size_t k = 0; k < kc && transposed > 0;) {
    const T* src[P];
    std::size_t common = kc - k;
    for (std::size_t i = 0; i < transposed; ++i) {
      std::size_t len;
      src[i] = rows.segment(r0 + i, k0 + k, len);
      common = std::min(common, len);
    }
    const std::size_t stretch = std::max<std::size_t>(common / w * w, 1);
    if (stretch < w)
      for (std::size_t i = 0; i < transposed; ++i) out[k * P + i] = src[i][0];
    else
      for (std::size_t g = 0; g < transposed; g += w)
        for (std::size_t q = 0; q < stretch; q += w) transposeTile(src + g, q, out + (k + q) * P + g, P);
    k += stretch;
  }
  for (std::size_t i = transposed; i < P; ++i) {
    if (r0 + i >= count) {
      for (std::size_t k = 0; k < kc; ++k) out[k * P + i] = T(0);
      continue;
    }
    std::size_t k = 0;
    while (k < kc) {
      std::size_t len;
      const T* src = rows.segment(r0 + i, k0 + k, len);
      const std::size_t n = std::min(len, kc - k);
      for (std::size_t q = 0; q < n; ++q) out[(k + q) * P + i] = src[q];
      k += n;
    }
  }
}

// dst[c * rows + r] = src[r * cols + c]: a product computed transposed (a layer's Y^T = W X^T,
// linear_rows.hpp) into the layout its reader wants, w x w tiles in registers where the build has
// them. The MLP's at b = 64, e = 1,024 on the Intel host: 33 us against 62 for the plain loop,
// less than 1% of the step, within the noise of an A/B of whole steps.
template <class T>
void transpose(const T* BURTORCH_RESTRICT src, std::size_t rows, std::size_t cols, T* BURTORCH_RESTRICT dst) noexcept {
  constexpr std::size_t w = kTransposeTile<T>;
  std::size_t r = 0;
  if constexpr (w > 1)
    for (; r + w <= rows; r += w) {
      const T* from[w];
      for (std::size_t i = 0; i < w; ++i) from[i] = src + (r + i) * cols;
      std::size_t c = 0;
      for (; c + w <= cols; c += w) transposeTile(from, c, dst + c * rows + r, rows);
      for (; c < cols; ++c)
        for (std::size_t i = 0; i < w; ++i) dst[c * rows + r + i] = from[i][c];
    }
  for (; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * cols + c];
}

// Packs rows [k0, k0 + kc) of `rows`, columns [c0, c0 + P) (past `width`: zeros), as
// out[k * P + j] = rows(k0 + k)[c0 + j]: a panel of B from its rows, or of A from its columns.
template <std::size_t P, class T, class Rows>
BURTORCH_INLINE void packAlong(const Rows& rows, std::size_t k0, std::size_t kc, std::size_t c0, std::size_t width, T* out) noexcept {
  const std::size_t p = std::min(P, width - c0);
  for (std::size_t k = 0; k < kc; ++k) {
    T* dst = out + k * P;
    if (p == P) {  // the usual case: one segment of P values, copied as a fixed-size block
      std::size_t len;
      const T* src = rows.segment(k0 + k, c0, len);
      if (len >= P) {
        std::memcpy(dst, src, P * sizeof(T));  // a fixed size: a few vector moves
        continue;
      }
    }
    std::size_t j = 0;
    while (j < p) {
      std::size_t len;
      const T* src = rows.segment(k0 + k, c0 + j, len);
      const std::size_t n = std::min(len, p - j);
      std::memcpy(dst + j, src, n * sizeof(T));
      j += n;
    }
    for (; j < P; ++j) dst[j] = T(0);
  }
}

// A's packer from its rows (row i of A: rows(i), contiguous along k).
template <class Rows>
struct AFromRows {
  const Rows& rows;
  std::size_t m;
  template <std::size_t mr, class T>
  void pack(std::size_t i0, std::size_t mc, std::size_t k0, std::size_t kc, T* out) const noexcept {
    for (std::size_t i = 0; i < mc; i += mr) packAcross<mr>(rows, i0 + i, m, k0, kc, out + i * kc);
  }
};

// A's packer from its columns (column i of A: rows(k)[i], i.e. A is rows transposed).
template <class Rows>
struct AFromColumns {
  const Rows& rows;
  std::size_t m;
  template <std::size_t mr, class T>
  void pack(std::size_t i0, std::size_t mc, std::size_t k0, std::size_t kc, T* out) const noexcept {
    for (std::size_t i = 0; i < mc; i += mr) packAlong<mr>(rows, k0, kc, i0 + i, m, out + i * kc);
  }
};

// B's packer from its rows (row k of B: rows(k), contiguous along n).
template <class Rows>
struct BFromRows {
  const Rows& rows;
  std::size_t n;
  template <std::size_t nr, class T>
  void pack(std::size_t k0, std::size_t kc, std::size_t j0, std::size_t nc, T* out, std::size_t stride) const noexcept {
    // A few rows at a time: a few sequential reads of B, and a few lines written per panel.
    constexpr std::size_t kRows = 8;
    for (std::size_t k = 0; k < kc; k += kRows)
      for (std::size_t j = 0; j < nc; j += nr) packAlong<nr>(rows, k0 + k, std::min(kRows, kc - k), j0 + j, n, out + j / nr * stride + k * nr);
  }
};

// B's packer from its columns (column j of B: rows(j), contiguous along k: B is rows transposed).
template <class Rows>
struct BFromColumns {
  const Rows& rows;
  std::size_t n;
  template <std::size_t nr, class T>
  void pack(std::size_t k0, std::size_t kc, std::size_t j0, std::size_t nc, T* out, std::size_t stride) const noexcept {
    for (std::size_t j = 0; j < nc; j += nr) packAcross<nr>(rows, j0 + j, n, k0, kc, out + j / nr * stride);
  }
};

// B read where it lies, not packed: row k at base + k * stride, contiguous along n. Only where B
// is small enough to stay in L1 as it lies and its rows fill whole registers (gemm() below
// chooses it for a BFromRows of StridedRows): the GPT's dX = G W and dW = G^T X, where packing B
// cost half as much as the multiply-adds.
template <class T>
struct BInPlace {
  const T* base;
  std::size_t stride;
};

template <class PackB>
inline constexpr bool kBInPlace = false;
template <class T>
inline constexpr bool kBInPlace<BInPlace<T>> = true;

// The most bytes of B read where it lies: an L1 data cache of the CPUs at hand. A larger B is
// packed: a packed panel stays in L1 where rows far apart (4 KiB: one set of L1) would not.
inline constexpr std::size_t kBInPlaceBytes = std::size_t{32} << 10;

// A read where it lies, not packed: row i at base + i * stride, contiguous along k (the micro-
// kernel's RowsOfA). For a matrix that changes between products and is read whole by each:
// packing would be a pass over it of its own (the MLP's forward at b = 64, e = 1,024: 30% of the
// forward). A tile past A's last row reads that row again, for products that go nowhere.
template <class T>
struct AInPlace {
  const T* base;
  std::size_t stride;
  std::size_t m;
};

// A given as its columns where they lie: A(i, k) = base[k stride + i] (G^T, G a layer's gradients
// row-major, in its weights' product G^T X). The micro-kernel reads each k's values of a tile as
// they lie; only a tile past A's last row is packed, with zeros. At the GPT's shapes (G 64 x 24
// to 64 x 96) packing A cost about as much as the multiply-adds it fed.
template <class T>
struct AColumnsInPlace {
  const T* base;
  std::size_t stride;
  std::size_t m;
};

template <class PackA>
inline constexpr bool kAInPlace = false;
template <class T>
inline constexpr bool kAInPlace<AInPlace<T>> = true;
template <class PackA>
inline constexpr bool kAColumnsInPlace = false;
template <class T>
inline constexpr bool kAColumnsInPlace<AColumnsInPlace<T>> = true;
// Whether a product reads A where it lies, in either layout: it packs no panels of A.
template <class PackA>
inline constexpr bool kAUnpacked = kAInPlace<PackA> || kAColumnsInPlace<PackA>;

}  // namespace burtorch::kernels

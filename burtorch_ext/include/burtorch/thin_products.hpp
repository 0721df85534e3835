// The block products (gemm.hpp) of one row of A (a row times a matrix: a layer's product at
// b = 1) or of one k (an outer product: a weight gradient at b = 1), where B's rows and C's are
// rows of row-major matrices. Neither has a value to reuse from cache: the micro-kernel's panels
// and tiles only add passes and calls, so these stream B and C once, in the order they lie, with
// several independent registers. Each element of C gets the chains of the micro-kernel (one per
// block of kc values of k, from zero, fused where it fuses, then C = chain or C + chain): the
// same bits as the blocked product.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "burtorch/config.hpp"
#include "burtorch/micro_kernel.hpp"
#include "burtorch/scratch.hpp"
#include "burtorch/simd.hpp"

namespace burtorch::kernels {

// Rows of a row-major matrix: row r at base + r * stride.
template <class T>
struct StridedRows {
  T* base;
  std::size_t stride;
  BURTORCH_INLINE T* segment(std::size_t r, std::size_t k, std::size_t& len) const noexcept {
    len = static_cast<std::size_t>(-1);
    return base + r * stride + k;
  }
};

namespace detail {

// a b + c rounded as Register::mulAdd rounds it: once where the build fuses, else twice.
template <class T>
BURTORCH_INLINE T mulAddOne(T a, T b, T c) noexcept {
#if BURTORCH_FMA
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// c[0, n) (+)= a[0, depth) B, B's rows ldb apart, n <= regs registers: C's row in registers, the
// last one overlapping the one before where n is not a multiple of the width.
template <class T, std::size_t lanes, std::size_t regs>
BURTORCH_INLINE void rowInRegisters(const T* a, const T* b, std::size_t ldb, std::size_t n, std::size_t depth, T* c, bool add) noexcept {
  using R = Register<T, lanes>;
  typename R::V acc[regs];
  std::size_t at[regs];
  for (std::size_t q = 0; q < regs; ++q) {
    at[q] = std::min(q * lanes, n - lanes);
    acc[q] = R::zero();
  }
  for (std::size_t k = 0; k < depth; ++k) {
    const typename R::V ak = R::broadcast(a + k);
    for (std::size_t q = 0; q < regs; ++q) acc[q] = R::mulAdd(ak, R::load(b + k * ldb + at[q]), acc[q]);
  }
  if (add)
    for (std::size_t q = 0; q < regs; ++q) acc[q] = R::add(R::load(c + at[q]), acc[q]);
  for (std::size_t q = 0; q < regs; ++q) R::store(c + at[q], acc[q]);
}

// The same for a row of C too long for registers: the chains in `sums` (n values, in L1), B read
// row after row, four rows a pass, as it lies.
template <class T, std::size_t lanes>
void rowStreamed(const T* a, const T* b, std::size_t ldb, std::size_t n, std::size_t depth, T* c, bool add, T* sums) noexcept {
  using R = Register<T, lanes>;
  std::fill_n(sums, n, T(0));
  const std::size_t body = n / lanes * lanes;
  for (std::size_t k = 0; k < depth; k += 4) {
    const std::size_t count = std::min<std::size_t>(4, depth - k);
    const T* row[4];
    typename R::V ak[4];
    for (std::size_t r = 0; r < count; ++r) {
      row[r] = b + (k + r) * ldb;
      ak[r] = R::broadcast(a + k + r);
    }
    for (std::size_t j = 0; j < body; j += lanes) {
      typename R::V sum = R::load(sums + j);
      for (std::size_t r = 0; r < count; ++r) sum = R::mulAdd(ak[r], R::load(row[r] + j), sum);
      R::store(sums + j, sum);
    }
    for (std::size_t j = body; j < n; ++j)
      for (std::size_t r = 0; r < count; ++r) sums[j] = mulAddOne(a[k + r], row[r][j], sums[j]);
  }
  for (std::size_t j = 0; j < n; ++j) c[j] = add ? c[j] + sums[j] : sums[j];
}

// c[0, n) (+)= a[0, k) B for a row narrower than a register (n < lanes), over blocks of kc values
// of k: one chain per value of c per block, as the blocked product's, but the chains of four
// blocks at a time interleaved, so that the CPU overlaps them (a row of 4: a chain of 1,024
// dependent products would wait on each one).
template <class T, std::size_t lanes>
void rowNarrow(const T* a, std::size_t k, const T* b, std::size_t ldb, std::size_t n, std::size_t kc, T* c, bool store) noexcept {
  constexpr std::size_t kBlocks = 4;
  T chains[kBlocks][lanes];
  for (std::size_t p = 0; p < k; p += kBlocks * kc) {
    const std::size_t blocks = std::min(kBlocks, (k - p + kc - 1) / kc);
    for (std::size_t u = 0; u < blocks; ++u) std::fill_n(chains[u], n, T(0));
    for (std::size_t q = 0; q < kc; ++q)
      for (std::size_t u = 0; u < blocks; ++u) {
        const std::size_t at = p + u * kc + q;
        if (at >= k) continue;  // the last block, shorter
        for (std::size_t j = 0; j < n; ++j) chains[u][j] = mulAddOne(a[at], b[at * ldb + j], chains[u][j]);
      }
    for (std::size_t u = 0; u < blocks; ++u)
      for (std::size_t j = 0; j < n; ++j) c[j] = store && p == 0 && u == 0 ? chains[u][j] : c[j] + chains[u][j];
  }
}

// c (+)= a[0, depth) B over blocks of kc values of k, as the blocked product takes them; sums: n
// values for the chains of a long row.
template <class T, std::size_t lanes>
void rowTimesMatrix(const T* a, std::size_t k, const T* b, std::size_t ldb, std::size_t n, std::size_t kc, T* c, bool store, T* sums) noexcept {
  constexpr std::size_t kRegisters = 8;
  for (std::size_t p = 0; p < k; p += kc) {
    const std::size_t depth = std::min(kc, k - p);
    const bool add = !(store && p == 0);
    const T* const bp = b + p * ldb;
    if (n > kRegisters * lanes) {
      rowStreamed<T, lanes>(a + p, bp, ldb, n, depth, c, add, sums);
      continue;
    }
    [&]<std::size_t... Q>(std::index_sequence<Q...>) {
      ((n <= (Q + 1) * lanes ? (rowInRegisters<T, lanes, Q + 1>(a + p, bp, ldb, n, depth, c, add), true) : false) || ...);
    }(std::make_index_sequence<kRegisters>{});
  }
}

// C (m x n, rows ldc apart) (+)= a b^T: each row of C a multiple of b, written as it lies.
template <class T, std::size_t lanes>
void outerProduct(const T* a, std::size_t m, const T* b, std::size_t n, T* c, std::size_t ldc, bool store) noexcept {
  using R = Register<T, lanes>;
  const std::size_t body = n / lanes * lanes;
  for (std::size_t i = 0; i < m; ++i) {
    const typename R::V ai = R::broadcast(a + i);
    T* const ci = c + i * ldc;
    for (std::size_t j = 0; j < body; j += lanes) {
      const typename R::V product = R::mulAdd(ai, R::load(b + j), R::zero());
      R::store(ci + j, store ? product : R::add(R::load(ci + j), product));
    }
    for (std::size_t j = body; j < n; ++j) {
      const T product = mulAddOne(a[i], b[j], T(0));
      ci[j] = store ? product : ci[j] + product;
    }
  }
}

// C (+)= A B for one row of A or one k, B and C row-major (b, c), A as its packer reads it;
// false, having done nothing, for any other product (the blocked one's) or a write-back that is
// an SGD step.
template <class T, std::size_t lanes, class PackA>
bool thinProduct(std::size_t kc, std::size_t m, std::size_t n, std::size_t k, const PackA& packA, const StridedRows<T>& b, const StridedRows<T>& c,
                 const WriteBack<T>& write) noexcept {
  using W = WriteBack<T>;
  const bool store = write.kind == W::kStore;
  if ((m != 1 && k != 1) || (!store && write.kind != W::kAdd)) return false;
  // A's one row or one column, contiguous; then the chains of a long row.
  const std::size_t length = k == 1 ? m : k;
  T* const packed = scratch<T>(length + n);
  packA.template pack<1>(0, m, 0, k, packed);  // panels of one: the row, or the column
  if (k == 1) outerProduct<T, lanes>(packed, m, b.base, n, c.base, c.stride, store);
  else if (n < lanes) rowNarrow<T, lanes>(packed, k, b.base, b.stride, n, kc, c.base, store);
  else rowTimesMatrix<T, lanes>(packed, k, b.base, b.stride, n, kc, c.base, store, packed + length);
  return true;
}

}  // namespace detail

}  // namespace burtorch::kernels

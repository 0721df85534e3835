// The block products' micro-kernel (gemm.hpp): a kMR x kNR tile of C from packed panels of A
// (kMR rows, k along the panel) and B (kNR columns), in registers of `lanes` values of T, and
// what the tile's products do to C (WriteBack).
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "burtorch/simd.hpp"

namespace burtorch::kernels {

// The tile of C one micro-kernel call computes: kMR rows of two registers each, so that the
// accumulators (2 kMR) and B's two registers fit the register file.
template <class T, std::size_t lanes>
struct Tile {
  using R = Register<T, lanes>;
  static constexpr std::size_t kMR = lanes * sizeof(T) == 64 ? 8 : 6;  // rows of A per panel
  static constexpr std::size_t kNR = 2 * lanes;                        // columns of B per panel
};

// What a tile's products do to C: C = products (kStore), C += products (kAdd), or, where C holds
// gradients (grads[i] the gradient of values[i]), the SGD step that follows the product:
// v -= step (C + products), then C = 0 (kDescend); where C holds zeros, v -= step products, and C
// is neither read nor written (kDescendOnZeros: half the memory traffic of the gradients). The
// step rounds as sgdStepAndZeroGrad's loop (optim.hpp): a multiply, then a subtraction.
template <class T>
struct WriteBack {
  enum Kind { kAdd, kStore, kDescend, kDescendOnZeros };
  Kind kind = kAdd;
  T* values = nullptr;
  const T* grads = nullptr;
  T step = 0;

  T* valueOf(const T* grad) const noexcept { return values + (grad - grads); }
};

namespace detail {

// f(0), f(1), ..., f(N - 1), each index a compile-time constant: the micro-kernels' accumulators
// are then named, not indexed, and stay in registers (with a loop over the rows, GCC keeps them
// in a stack array and stores every one of them on every step of k).
template <std::size_t N, class F>
BURTORCH_INLINE void forEachRow(F f) noexcept {
  [&]<std::size_t... I>(std::index_sequence<I...>) BURTORCH_INLINE_LAMBDA { (f(std::integral_constant<std::size_t, I>{}), ...); }(std::make_index_sequence<N>{});
}

// acc (regs registers of row i of the tile) into C's rows c[i] as `write` says. Every row is
// read before any is written (rows of C at a multiple of 4 KiB from each other would otherwise
// wait on each other's stores): the caller guarantees the rows are distinct.
template <class T, std::size_t lanes, std::size_t mr, std::size_t regs>
BURTORCH_INLINE void writeTile(typename Register<T, lanes>::V (&acc)[mr][regs], T* const* c, const WriteBack<T>& write) noexcept {
  using R = Register<T, lanes>;
  using W = WriteBack<T>;
  if (write.kind == W::kAdd || write.kind == W::kDescend)
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
      for (std::size_t q = 0; q < regs; ++q) acc[i][q] = R::add(R::load(c[i] + q * lanes), acc[i][q]);
    });
  if (write.kind == W::kDescend || write.kind == W::kDescendOnZeros) {
    const typename R::V step = R::broadcast(&write.step), zero = R::zero();
    const bool zeroC = write.kind == W::kDescend;
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
      T* const v = write.valueOf(c[i]);
      for (std::size_t q = 0; q < regs; ++q) {
        R::store(v + q * lanes, R::sub(R::load(v + q * lanes), R::mul(step, acc[i][q])));
        if (zeroC) R::store(c[i] + q * lanes, zero);
      }
    });
    return;
  }
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
    for (std::size_t q = 0; q < regs; ++q) R::store(c[i] + q * lanes, acc[i][q]);
  });
}

// How the micro-kernels read A: a packed panel (gemm.hpp's packers: the tile's kMR values of each k
// together), or A where it lies (a weight matrix that changes once a step and is read whole by
// each product: packing it would cost a pass of its own).
template <class T, std::size_t mr>
struct PackedA {
  const T* a;
  BURTORCH_INLINE const T* at(std::size_t i) const noexcept { return a + i; }
  BURTORCH_INLINE void next() noexcept { a += mr; }
};

// A's columns where they lie (A = G^T with G row-major, a layer's gradients in its weights'
// product): each k's values of the tile contiguous, the next k's `stride` further on. A packed
// panel is the case stride = kMR.
template <class T>
struct ColumnsOfA {
  const T* a;
  std::size_t stride;
  BURTORCH_INLINE const T* at(std::size_t i) const noexcept { return a + i; }
  BURTORCH_INLINE void next() noexcept { a += stride; }
};

template <class T, std::size_t mr>
struct RowsOfA {
  const T* row[mr];
  std::size_t k = 0;  // one offset for all the rows: one add a step, not one a row
  BURTORCH_INLINE const T* at(std::size_t i) const noexcept { return row[i] + k; }
  BURTORCH_INLINE void next() noexcept { ++k; }
};

// f(r) for 1 <= rows <= mr, r the same as a compile-time constant: a tile at the bottom edge of C
// gets a kernel of its own rows, not a whole tile's products through a buffer.
template <std::size_t mr, class F>
BURTORCH_INLINE void withRows(std::size_t rows, F f) noexcept {
  [&]<std::size_t... I>(std::index_sequence<I...>) BURTORCH_INLINE_LAMBDA {
    (void)((rows == I + 1 ? (f(std::integral_constant<std::size_t, I + 1>{}), true) : false) || ...);
  }(std::make_index_sequence<mr>{});
}

// C tile (mr x kNR, mr kMR or fewer) (+)= a (kc x mr) x b (kc x kNR, each k's row ldb after the
// one before: a packed panel's kNR, or B's own rows where it lies); c[i]: row i of the tile, kNR
// values, no two overlapping. A's panel stays kMR values a k however few rows the tile has.
template <class T, std::size_t lanes, std::size_t mr = Tile<T, lanes>::kMR, class A>
BURTORCH_INLINE void microKernel(std::size_t kc, A a, const T* BURTORCH_RESTRICT b, std::size_t ldb, T* const* c, const WriteBack<T>& write) noexcept {
  using R = Register<T, lanes>;
  constexpr std::size_t w = lanes;
  typename R::V acc[mr][2];
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i][0] = acc[i][1] = R::zero(); });
  for (std::size_t k = 0; k < kc; ++k) {
    const typename R::V b0 = R::load(b), b1 = R::load(b + w);
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA {
      const typename R::V ai = R::broadcast(a.at(i));
      acc[i][0] = R::mulAdd(ai, b0, acc[i][0]);
      acc[i][1] = R::mulAdd(ai, b1, acc[i][1]);
    });
    a.next();
    b += ldb;
  }
  writeTile<T, lanes>(acc, c, write);
}

// The same over the first half of the panel of b (one register per row of the tile): the last
// panel of a narrow C (24 columns in AVX registers: 16 + 8), without multiplying the panel's
// zeros or going through a buffer. The same chains, so the same bits.
template <class T, std::size_t lanes, std::size_t mr = Tile<T, lanes>::kMR, class A>
BURTORCH_INLINE void microKernelHalf(std::size_t kc, A a, const T* BURTORCH_RESTRICT b, std::size_t ldb, T* const* c, const WriteBack<T>& write) noexcept {
  using R = Register<T, lanes>;
  typename R::V acc[mr][1];
  forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i][0] = R::zero(); });
  for (std::size_t k = 0; k < kc; ++k) {
    const typename R::V b0 = R::load(b);
    forEachRow<mr>([&](auto i) BURTORCH_INLINE_LAMBDA { acc[i][0] = R::mulAdd(R::broadcast(a.at(i)), b0, acc[i][0]); });
    a.next();
    b += ldb;
  }
  writeTile<T, lanes>(acc, c, write);
}

// One element of C through the same write-back, for tiles that go through a buffer.
template <class T>
BURTORCH_INLINE void writeOne(T& c, T product, const WriteBack<T>& write) noexcept {
  if (write.kind == WriteBack<T>::kStore) {
    c = product;
    return;
  }
  T& v = *write.valueOf(&c);
  if (write.kind == WriteBack<T>::kDescendOnZeros) {
    v = v - write.step * product;
    return;
  }
  const T sum = c + product;
  if (write.kind == WriteBack<T>::kAdd) {
    c = sum;
    return;
  }
  v = v - write.step * sum;
  c = T(0);
}

}  // namespace detail

}  // namespace burtorch::kernels

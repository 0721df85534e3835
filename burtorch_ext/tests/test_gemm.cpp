// The block products (gemm.hpp) against a plain loop, in every register width and every kind
// of block the runtime choice (cpu.hpp) can make, at shapes off the tiles and blocks.
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "burtorch/gemm.hpp"
#include "check.hpp"

using namespace burtorch::kernels;

namespace {

// Every register width the build can run, with the extremes and the middle of the blocks.
std::vector<KernelChoice> everyChoice() {
  std::vector<KernelChoice> out;
  // A 512-bit build also runs in 256-bit registers (cpu.hpp); any other build in its widest only
  // (skipping 256 wherever the build is not 512 bits skipped every choice of an AVX build).
  std::vector<std::size_t> widths{kWidestBits};
  if (kWidestBits == 512) widths.push_back(256);
  for (const std::size_t bits : widths) {
    for (const std::size_t kBytes : {256, 512, 1024})
      for (const auto& [mPanels, nColumns] : {std::array<std::size_t, 2>{4, 64}, {7, 256}, {16, 1024}})
        out.push_back({bits, kBytes, mPanels, nColumns});
  }
  return out;
}

// A row-major matrix whose rows say they are contiguous only in runs of `run` values.
template <class T>
struct InRuns {
  const T* base;
  std::size_t stride, run;
  T* segment(std::size_t r, std::size_t k, std::size_t& len) const noexcept {
    len = run - k % run;
    return const_cast<T*>(base + r * stride + k);
  }
};

template <class T>
struct Operands {
  std::size_t m, n, k, stride;
  std::vector<T> a, at, b, bt;

  Operands(std::size_t m_, std::size_t n_, std::size_t k_) : m(m_), n(n_), k(k_), stride(n_ + 3), a(m * k), at(k * m), b(k * n), bt(n * k) {
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t q = 0; q < k; ++q) a[i * k + q] = at[q * m + i] = static_cast<T>(std::sin(0.37 * static_cast<double>(i * k + q) + 0.1));
    for (std::size_t q = 0; q < k; ++q)
      for (std::size_t j = 0; j < n; ++j) b[q * n + j] = bt[j * k + q] = static_cast<T>(std::cos(0.23 * static_cast<double>(q * n + j)));
  }

  // Whether c (rows `stride` apart: longer than n) holds initial + A B, within rounding.
  bool holds(const std::vector<T>& c, T initial) const {
    bool ok = true;
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        double want = static_cast<double>(initial), scale = 1;
        for (std::size_t q = 0; q < k; ++q) {
          want += static_cast<double>(a[i * k + q]) * static_cast<double>(b[q * n + j]);
          scale += std::abs(static_cast<double>(a[i * k + q]) * static_cast<double>(b[q * n + j]));
        }
        ok = ok && std::abs(static_cast<double>(c[i * stride + j]) - want) <= 1e-5 * scale;
      }
    return ok;
  }
};

template <class T>
bool checkGemm(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k) {
  using W = WriteBack<T>;
  const Operands<T> x(m, n, k);
  const StridedRows<T> aRows{const_cast<T*>(x.a.data()), k}, atRows{const_cast<T*>(x.at.data()), m};
  const StridedRows<T> bRows{const_cast<T*>(x.b.data()), n}, btRows{const_cast<T*>(x.bt.data()), k};
  std::vector<T> c(m * x.stride, T(0.5));
  const StridedRows<T> cRows{c.data(), x.stride};
  bool ok = true;
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromColumns<StridedRows<T>>{btRows, n}, cRows, W{W::kStore});
  ok = ok && x.holds(c, T(0));
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, cRows, W{W::kStore});
  ok = ok && x.holds(c, T(0));
  std::fill(c.begin(), c.end(), T(0.5));
  gemm<T>(choice, m, n, k, AFromColumns<StridedRows<T>>{atRows, m}, BFromRows<StridedRows<T>>{bRows, n}, cRows, W{W::kAdd});
  ok = ok && x.holds(c, T(0.5));
  gemm<T>(choice, m, n, k, AInPlace<T>{x.a.data(), k, m}, BFromRows<StridedRows<T>>{bRows, n}, cRows, W{W::kStore});
  ok = ok && x.holds(c, T(0));
  // Rows contiguous only in short runs (the embedding rows a context is made of): packed across
  // them as from whole rows.
  for (const std::size_t run : {std::size_t{3}, std::size_t{16}}) {
    gemm<T>(choice, m, n, k, AFromRows<InRuns<T>>{{x.a.data(), k, run}, m}, BFromColumns<InRuns<T>>{{x.bt.data(), k, run}, n}, cRows, W{W::kStore});
    ok = ok && x.holds(c, T(0));
  }
  return ok;
}

// C^T = B^T A^T with A^T read where it lies, transposed back, gives C's bits: each element the
// same chains (a layer's forward as Y^T = W X^T, linear_rows.hpp).
template <class T>
bool sameBitsTransposed(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k) {
  const Operands<T> x(m, n, k);
  const StridedRows<T> aRows{const_cast<T*>(x.a.data()), k}, btRows{const_cast<T*>(x.bt.data()), k};
  std::vector<T> c(m * n), ct(n * m);
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromColumns<StridedRows<T>>{btRows, n}, StridedRows<T>{c.data(), n},
          WriteBack<T>{WriteBack<T>::kStore});
  gemm<T>(choice, n, m, k, AInPlace<T>{x.bt.data(), k, n}, BFromColumns<StridedRows<T>>{aRows, m}, StridedRows<T>{ct.data(), m},
          WriteBack<T>{WriteBack<T>::kStore});
  std::vector<T> back(m * n);
  transpose(ct.data(), n, m, back.data());
  return back == c;
}

// A read where it lies, as rows (AInPlace) or as columns (AColumnsInPlace: the tiles past its last
// row packed), and B where it lies (BInPlace) give their panels' bits: each element the same chains.
template <class T>
bool sameBitsUnpacked(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k) {
  using W = WriteBack<T>;
  const Operands<T> x(m, n, k);
  const StridedRows<T> aRows{const_cast<T*>(x.a.data()), k}, atRows{const_cast<T*>(x.at.data()), m}, bRows{const_cast<T*>(x.b.data()), n};
  std::vector<T> packed(m * n, T(0.5)), unpacked(m * n, T(0.5));
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{packed.data(), n}, W{W::kAdd});
  gemm<T>(choice, m, n, k, AInPlace<T>{x.a.data(), k, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{unpacked.data(), n}, W{W::kAdd});
  bool ok = packed == unpacked;
  // B where it lies (gemm() reads a small B of whole registers' rows so) against its panels: B's
  // rows as another type of rows.
  std::vector<T> bPacked(m * n, T(0.5)), bInPlace(m * n, T(0.5));
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<InRuns<T>>{{x.b.data(), n, n}, n}, StridedRows<T>{bPacked.data(), n}, W{W::kAdd});
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{bInPlace.data(), n}, W{W::kAdd});
  ok = ok && bPacked == bInPlace;
  for (const auto kind : {W::kStore, W::kAdd, W::kDescend}) {
    std::vector<T> c0(m * n, T(0.25)), c1(c0), v0(m * n, T(2)), v1(v0);
    gemm<T>(choice, m, n, k, AFromColumns<StridedRows<T>>{atRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{c0.data(), n}, W{kind, v0.data(), c0.data(), T(0.125)});
    gemm<T>(choice, m, n, k, AColumnsInPlace<T>{x.at.data(), m, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{c1.data(), n}, W{kind, v1.data(), c1.data(), T(0.125)});
    ok = ok && c0 == c1 && v0 == v1;
  }
  return ok;
}

// The SGD step fused into the product: v -= step (C + A B), C = 0, values and gradients in
// arrays of their own, as the pool keeps them.
template <class T>
bool checkDescend(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k) {
  using W = WriteBack<T>;
  const Operands<T> x(m, n, k);
  const std::size_t size = m * x.stride;
  std::vector<T> grads(size, T(0.25)), values(size, T(2)), sums(size, T(0.25));
  const StridedRows<T> aRows{const_cast<T*>(x.a.data()), k}, bRows{const_cast<T*>(x.b.data()), n};
  const T step = T(0.125);
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{sums.data(), x.stride}, W{W::kAdd});
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{grads.data(), x.stride},
          W{W::kDescend, values.data(), grads.data(), step});
  // On gradients known to be zero: v -= step A B, the gradients neither read nor written.
  std::vector<T> zeros(size, T(0)), products(size, T(0)), fromZeros(size, T(2));
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{products.data(), x.stride}, W{W::kAdd});
  gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{zeros.data(), x.stride},
          W{W::kDescendOnZeros, fromZeros.data(), zeros.data(), step});
  bool ok = true;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      const std::size_t at = i * x.stride + j;
      ok = ok && grads[at] == T(0) && values[at] == T(2) - step * sums[at];  // the same sums: the same bits
      ok = ok && zeros[at] == T(0) && fromZeros[at] == T(2) - step * products[at];
    }
  return ok;
}

// One row of A or one k (thin_products.hpp): a row of C in registers, streamed, narrower than a
// register, and outer products.
constexpr std::array<std::array<std::size_t, 3>, 6> kThinShapes{{{1, 40, 520}, {1, 300, 70}, {1, 17, 9}, {1, 5, 700}, {70, 300, 1}, {9, 17, 1}}};

template <class T>
bool thinSameBits(const KernelChoice& choice, std::size_t m, std::size_t n, std::size_t k) {
  using W = WriteBack<T>;
  const Operands<T> x(m, n, k);
  const StridedRows<T> aRows{const_cast<T*>(x.a.data()), k}, bRows{const_cast<T*>(x.b.data()), n};
  bool ok = true;
  for (const auto kind : {W::kStore, W::kAdd}) {
    std::vector<T> thin(m * n, T(0.5)), blocked(m * n, T(0.5));
    gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, StridedRows<T>{thin.data(), n}, W{kind});
    // C's rows as another type of rows: the blocked product's tiles.
    gemm<T>(choice, m, n, k, AFromRows<StridedRows<T>>{aRows, m}, BFromRows<StridedRows<T>>{bRows, n}, InRuns<T>{blocked.data(), n, n}, W{kind});
    ok = ok && thin == blocked;
  }
  return ok;
}

constexpr std::array<std::array<std::size_t, 3>, 7 + kThinShapes.size()> kShapes{
    {{1, 1, 1}, {7, 33, 17}, {13, 70, 300}, {64, 40, 520}, {100, 24, 96}, {13, 8, 40}, {9, 1100, 8}, kThinShapes[0], kThinShapes[1], kThinShapes[2], kThinShapes[3], kThinShapes[4], kThinShapes[5]}};

// check.operator()<T>(choice, m, n, k) in float and double at every choice and shape; those where it
// fails printed.
template <class Check>
void checkEverywhere(Check check) {
  for (const KernelChoice& choice : everyChoice())
    for (const auto& [m, n, k] : kShapes) {
      const bool ok = check.template operator()<float>(choice, m, n, k) && check.template operator()<double>(choice, m, n, k);
      if (!ok) std::printf("    %s at %zu x %zu x %zu\n", describe(choice).c_str(), m, n, k);
      CHECK(ok);
    }
}

}  // namespace

TEST_CASE("gemm: agrees with a plain loop for each packing (A where it lies too), register width and block choice, at shapes off the tiles") {
  checkEverywhere([]<class T>(const KernelChoice& c, std::size_t m, std::size_t n, std::size_t k) { return checkGemm<T>(c, m, n, k); });
}

TEST_CASE("gemm: A read where it lies gives the packed product's bits, transposed") {
  checkEverywhere([]<class T>(const KernelChoice& c, std::size_t m, std::size_t n, std::size_t k) { return sameBitsTransposed<T>(c, m, n, k); });
}

TEST_CASE("gemm: A read where it lies, as rows or as columns, gives the packed product's bits") {
  checkEverywhere([]<class T>(const KernelChoice& c, std::size_t m, std::size_t n, std::size_t k) { return sameBitsUnpacked<T>(c, m, n, k); });
}

TEST_CASE("gemm: the SGD write-backs leave v - step (C + A B) and zero gradients, in every choice") {
  checkEverywhere([]<class T>(const KernelChoice& c, std::size_t m, std::size_t n, std::size_t k) { return checkDescend<T>(c, m, n, k); });
}

TEST_CASE("gemm: the default choice is the running CPU's") {
  const KernelChoice& c = kernelChoice();
  const KernelChoice want = chooseKernel(readCpuInfo());
  CHECK(c.registerBits == want.registerBits && c.kBytes == want.kBytes && c.mPanels == want.mPanels && c.nColumns == want.nColumns);
}

TEST_CASE("gemm: a product narrower than a panel of 512-bit registers runs in 256-bit ones") {
  const KernelChoice wide{512, 1024, 16, 512}, narrow{256, 1024, 16, 512}, none{32, 256, 4, 64};
  CHECK(registerBitsFor<float>(wide, 2 * kWidest<float> - 1) == 256);
  CHECK(registerBitsFor<float>(wide, 2 * kWidest<float>) == 512);
  CHECK(registerBitsFor<double>(wide, 2 * kWidest<double>) == 512);
  CHECK(registerBitsFor<float>(narrow, 1) == 256);
  CHECK(registerBitsFor<float>(none, 1) == 32);
}

TEST_CASE("gemm: one row of A or one k (the thin products) gives the blocked product's bits, stored or added") {
  for (const KernelChoice& choice : everyChoice())
    for (const auto& [m, n, k] : kThinShapes) {
      const bool ok = thinSameBits<float>(choice, m, n, k) && thinSameBits<double>(choice, m, n, k);
      if (!ok) std::printf("    %s at %zu x %zu x %zu\n", describe(choice).c_str(), m, n, k);
      CHECK(ok);
    }
}

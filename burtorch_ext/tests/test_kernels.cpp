// What makes layers fast: lists recorded as runs of consecutive nodes, inner products over
// contiguous arrays, backward stopping at the leading leaves, the fused SGD step.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "burtorch/burtorch.hpp"
#include "check.hpp"
#include "gradcheck.hpp"

using namespace burtorch;
using V = Value<double>;

namespace {

NodeRange<double> filledLeaves(std::size_t n, double scale) {
  const NodeRange<double> x = leaves<double>(n);
  for (std::size_t k = 0; k < n; ++k) x[k].setData(scale * std::sin(1.0 + static_cast<double>(k)));
  return x;
}

template <class T>
void checkKernels() {
  for (std::size_t n = 0; n <= 70; ++n) {
    std::vector<T> x(n), y(n), z(n);
    T plain = 0;
    for (std::size_t k = 0; k < n; ++k) {
      x[k] = static_cast<T>(std::cos(0.3 * static_cast<double>(k)));
      y[k] = static_cast<T>(0.5 + 0.01 * static_cast<double>(k));
      z[k] = y[k];
      plain += x[k] * y[k];
    }
    CHECK(check::close(kernels::dot(x.data(), y.data(), n), plain, 1e-5, 1e-5));
    // The same bits in every build, the SSE one included.
    CHECK(kernels::dot(x.data(), y.data(), n) == kernels::detail::dotLanes(x.data(), y.data(), n));
    // Rows of a layer several at a time: the bits of dot() row by row.
    std::vector<T> w(9 * n);
    for (std::size_t k = 0; k < w.size(); ++k) w[k] = static_cast<T>(std::sin(0.7 * static_cast<double>(k)));
    for (std::size_t rows = 0; rows <= 9; ++rows) {
      T dots[9];
      kernels::dotRows(x.data(), w.data(), n, rows, dots);
      bool sameRows = true;
      for (std::size_t j = 0; j < rows; ++j) sameRows = sameRows && dots[j] == kernels::dot(x.data(), w.data() + j * n, n);
      CHECK(sameRows);
    }
    kernels::axpy(z.data(), T(-2), x.data(), n);
    bool same = true;
    for (std::size_t k = 0; k < n; ++k) same = same && z[k] == y[k] + T(-2) * x[k];
    CHECK(same);
    for (std::size_t count = 1; count <= kernels::kManyRows; ++count) {
      T a[kernels::kManyRows];
      const T* rows[kernels::kManyRows];
      std::vector<T> oneByOne = z, many = z;
      for (std::size_t r = 0; r < count; ++r) {
        a[r] = T(0.9) - T(0.37) * static_cast<T>(r);
        rows[r] = r % 2 == 0 ? x.data() : y.data();
        kernels::axpy(oneByOne.data(), a[r], rows[r], n);
      }
      kernels::axpyMany(many.data(), a, rows, count, n);
      CHECK(many == oneByOne);
      // Two gradients in one pass: the bits of one axpyMany() after the other.
      T b[kernels::kManyRows];
      for (std::size_t r = 0; r < count; ++r) b[r] = T(-0.4) + T(0.21) * static_cast<T>(r);
      std::vector<T> first = z, second = y, pairFirst = z, pairSecond = y;
      kernels::axpyMany(first.data(), a, rows, count, n);
      kernels::axpyMany(second.data(), b, rows, count, n);
      kernels::axpyManyPair(pairFirst.data(), pairSecond.data(), a, b, rows, count, n);
      CHECK(pairFirst == first);
      CHECK(pairSecond == second);
      // The input's gradient and the rows' SGD step in one pass: axpyMany()'s bits into y, and each
      // row w - step (a x) as an axpy into its zero gradient, then sgdStepAndZeroGrad, leave it.
      const T step = T(0.125);
      std::vector<T> weights(count * n), old(count * n), stepped(count * n), fused = z, unfused = z;
      T* fusedRows[kernels::kManyRows];
      for (std::size_t r = 0; r < count; ++r) {
        for (std::size_t k = 0; k < n; ++k) {
          const std::size_t at = r * n + k;
          weights[at] = old[at] = T(0.3) - T(0.02) * static_cast<T>(k + r);
          T gradient = 0;
          gradient += a[r] * x[k];
          stepped[at] = weights[at] - step * gradient;
        }
        fusedRows[r] = weights.data() + r * n;
        rows[r] = old.data() + r * n;
      }
      kernels::axpyMany(unfused.data(), a, rows, count, n);
      kernels::axpyManyAndDescend(fused.data(), a, fusedRows, count, x.data(), step, n);
      CHECK(fused == unfused);
      CHECK(weights == stepped);
    }
  }
}


// C (+)= A B through each pair of packers the layers use, against a plain loop in double: every
// register width and panel edge (m, n, k not multiples of the tile or the blocks).
}  // namespace

TEST_CASE("kernels: dot, dotRows, axpy, axpyMany, axpyManyPair and axpyManyAndDescend agree with plain loops at every length up to 70") {
  checkKernels<float>();
  checkKernels<double>();
}

TEST_CASE("lists: consecutive handles are recorded as one word, others one word each") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> x = filledLeaves(6, 1.0);
  const std::vector<V> consecutive{x[1], x[2], x[3], x[4]};
  const std::vector<V> scattered{x[4], x[2], x[0]};
  std::size_t before = pool.linkCount();
  const V sum = reduceSum(consecutive);
  CHECK(pool.linkCount() - before == 1);
  CHECK_CLOSE(sum.data(), x[1].data() + x[2].data() + x[3].data() + x[4].data(), 1e-15);
  before = pool.linkCount();
  reduceSum(scattered);
  CHECK(pool.linkCount() - before == 3);
  pool.rewind(Mark{});
}

TEST_CASE("runs: an inner product over looked-up rows equals one over their handles, gradients too") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> table = filledLeaves(5 * 3, 1.0);  // 5 rows of 3
  const NodeRange<double> w = filledLeaves(3 * 3, 0.7);
  const Index rows[3] = {table.first + 9, table.first, table.first + 9};  // rows 3, 0, 3
  const Runs<double> runs{rows, 3};
  std::vector<V> handles;
  for (const Index row : rows)
    for (Index k = 0; k < 3; ++k) handles.push_back(V::fromIndex(row + k));
  const NodeRange<double> all{0, static_cast<Index>(pool.size())};
  const Mark mark = pool.mark();

  const V viaRuns = innerProduct(runs, w);
  const V viaHandles = innerProduct(handles, w);
  CHECK_CLOSE(viaRuns.data(), viaHandles.data(), 1e-15);
  CHECK_CLOSE(reduceSum(runs).data(), reduceSum(handles).data(), 1e-15);  // generic n-ary path
  backward(viaRuns);
  std::vector<double> gradients;
  for (std::size_t k = 0; k < all.size(); ++k) gradients.push_back(all[k].grad());
  zeroGrad(all);
  backward(viaHandles);
  bool same = true;
  for (std::size_t k = 0; k < all.size(); ++k) same = same && std::abs(all[k].grad() - gradients[k]) <= 1e-15;
  CHECK(same);
  CHECK(table[9].grad() != 0.0 && table[3].grad() == 0.0);  // row 3 used twice, row 1 not at all
  pool.rewind(mark);
  EXPECT_NODE_GRADIENTS("runs", all, [&] { return tanh(innerProductWithBias(runs, w, table[14])); });
  pool.rewind(Mark{});
}

TEST_CASE("inner products of ranges: gradients, operands shared or overlapping") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> x = filledLeaves(30, 0.9);
  const NodeRange<double> a{x.first, 24}, b{x.first + 6, 24};
  EXPECT_NODE_GRADIENTS("x.x", x, [&] { return innerProduct(a, a); });
  EXPECT_NODE_GRADIENTS("overlapping", x, [&] { return innerProduct(a, b); });
  EXPECT_NODE_GRADIENTS("of nodes", x, [&] {
    std::vector<V> h(24);
    for (std::size_t k = 0; k < 24; ++k) h[k] = tanh(b[k]);
    return innerProduct(h, a) * innerProduct(a, h);  // h is a range of operator nodes
  });
  pool.rewind(Mark{});
}

TEST_CASE("backward: stops at the leading leaves and leaves no stale flag when they shrink") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  BackwardScratch scratch;
  const NodeRange<double> p = filledLeaves(3, 1.0);
  CHECK(pool.leadingLeaves() == 3);
  const V y = p[0] * p[1] + p[2];  // scalar operators flag the leaves
  backwardWithScratch(y, scratch);
  CHECK(p[2].grad() == 1.0 && p[0].grad() == p[1].data());
  pool.rewind(Mark{});
  // Index 2 now holds an operator whose backward would turn a zero gradient into NaN.
  const V zero(0.0), two(2.0);
  const V notReached = negativeLog(zero);
  CHECK(notReached.index() == 2 && pool.leadingLeaves() == 2);
  backwardWithScratch(two * 3.0, scratch);
  CHECK(two.grad() == 3.0);
  CHECK(zero.grad() == 0.0);
  pool.rewind(Mark{});
}

TEST_CASE("sgd: p <- p - step * dp over a range, gradients zeroed") {
  auto& pool = Pool<double>::local();
  pool.rewind(Mark{});
  const NodeRange<double> p = filledLeaves(37, 1.0);
  const V other(5.0);
  std::vector<double> before;
  for (std::size_t k = 0; k < p.size(); ++k) {
    p[k].setGrad(0.5 * static_cast<double>(k));
    before.push_back(p[k].data());
  }
  other.setGrad(1.0);
  sgdStepAndZeroGrad(p, 0.1);
  bool ok = true;
  for (std::size_t k = 0; k < p.size(); ++k)
    ok = ok && p[k].data() == before[k] - 0.1 * (0.5 * static_cast<double>(k)) && p[k].grad() == 0.0;
  CHECK(ok);
  CHECK(other.data() == 5.0 && other.grad() == 1.0);  // outside the range: untouched
  pool.rewind(Mark{});
}

TEST_CASE("kernels: tanhMany is within 1e-6 relative of tanh: both signs, both branches, vector and scalar") {
  std::vector<float> x;
  for (float a = 0; a < 20; a = a < 1e-3f ? a + 1e-5f : a * 1.0007f + 1e-6f) {
    x.push_back(a);
    x.push_back(-a);
  }
  for (const float a : {0.35f, std::nextafter(0.35f, 0.0f), 9.0f, 1e30f, -1e30f}) x.push_back(a);
  std::vector<float> lanes = x, one = x;
  burtorch::kernels::tanhMany(lanes.data(), lanes.size());
  for (float& v : one) burtorch::kernels::tanhMany(&v, 1);  // the scalar tail's code
  double worst = 0;
  for (std::size_t k = 0; k < x.size(); ++k) {
    const double want = std::tanh(static_cast<double>(x[k]));
    for (const float got : {lanes[k], one[k]}) {
      if (want == 0) CHECK(got == 0);
      else worst = std::max(worst, std::abs(got - want) / std::abs(want));
    }
  }
  CHECK(worst <= 1e-6);
}

#if BURTORCH_AVX
TEST_CASE("attention's small head (block 8, head 4, FP32): the generic loops' weights, outputs and gradients within FP32 rounding") {
  constexpr std::size_t n = 8, hd = 4, ld = 12, d = 8;  // q, k, v one product's (3 heads wide); outputs 2 heads wide
  const auto filled = [](std::size_t size, double phase) {
    std::vector<float> x(size);
    for (std::size_t k = 0; k < size; ++k) x[k] = static_cast<float>(2 * std::sin(phase + 0.7 * static_cast<double>(k)));
    return x;
  };
  const std::vector<float> q = filled(n * ld, 0.1), k = filled(n * ld, 1.3), v = filled(n * ld, 2.9), dy = filled(n * d, 4.2);
  const std::vector<float> before = filled(n * ld, 5.5);  // the gradients already there, added to
  const float scale = 0.5f;
  const detail::Head<n, hd, float> head{n, hd, scale};
  const auto near = [](double got, double want) { return check::close(got, want, 1e-5, 1e-6); };

  std::vector<float> p(n * n), y(n * d), gq(n * hd), gkt(n * hd), gv(n * hd), gp(n * n), gpt(n * n), gyt(n * hd);
  detail::attendSmallHead(q.data(), k.data(), v.data(), ld, d, scale, p.data(), y.data());
  detail::gather<false>(head, q.data(), ld, gq.data());
  detail::gather<true>(head, k.data(), ld, gkt.data());
  detail::gather<false>(head, v.data(), ld, gv.data());
  detail::attendOneHead(head, gq.data(), gkt.data(), gv.data(), gp.data(), gpt.data(), gyt.data());
  bool forwardOk = true;
  for (std::size_t t = 0; t < n; ++t) {
    for (std::size_t u = 0; u < n; ++u) forwardOk = forwardOk && (u > t ? p[t * n + u] == 0 : near(p[t * n + u], gp[t * n + u]));
    for (std::size_t j = 0; j < hd; ++j) forwardOk = forwardOk && near(y[t * d + j], gyt[j * n + t]);
  }
  CHECK(forwardOk);

  std::vector<float> dq = before, dk = before, dv = before;
  detail::attentionSmallHeadBackward(q.data(), k.data(), v.data(), dy.data(), p.data(), ld, d, scale, dq.data(), dk.data(), dv.data());
  std::vector<float> scratch(detail::HeadBackward<float>::size(n, hd));
  const detail::HeadBackward<float> b(scratch.data(), n, hd);
  detail::gather<false>(head, q.data(), ld, b.q);
  detail::gather<false>(head, k.data(), ld, b.k);
  detail::gather<true>(head, v.data(), ld, b.vt);
  detail::gather<false>(head, dy.data(), d, b.dy);
  std::copy(p.begin(), p.end(), b.p);
  detail::attentionHeadBackward(head, b);
  bool backwardOk = true;
  for (std::size_t t = 0; t < n; ++t)
    for (std::size_t j = 0; j < hd; ++j) {
      const std::size_t at = t * ld + j;
      backwardOk = backwardOk && near(dq[at], before[at] + b.dqt[j * n + t]) && near(dk[at], before[at] + b.dkt[j * n + t]) &&
                   near(dv[at], before[at] + b.dvt[j * n + t]);
    }
  CHECK(backwardOk);
  for (std::size_t at = 0; at < n * ld; ++at)
    if (at % ld >= hd) CHECK(dq[at] == before[at] && dk[at] == before[at] && dv[at] == before[at]);  // the other heads untouched
}
#endif

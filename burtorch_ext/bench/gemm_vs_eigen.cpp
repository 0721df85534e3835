// burtorch-gemm-bench: the block products of a layer (gemm.hpp) against Eigen's, on the three
// products of one training step of a Linear layer: Y = X W^T (forward), dW += G^T X and
// dX = G W (backward). Built only where Eigen 3 is found; single-threaded, as the engine runs.
//   burtorch-gemm-bench [tokens inputs outputs]   (default 64 1024 1024: the MLP at b = 64, e = 1024)
// Prints one line per product: GFLOP/s of ours and of Eigen (the best of a few repetitions).
#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "burtorch/gemm.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<Matrix>;

// The best time of `f` over repetitions lasting about half a second in all.
template <class F>
double bestSeconds(F f) {
  double best = 1e30, spent = 0;
  for (int k = 0; k < 200 && spent < 0.5; ++k) {
    const auto start = Clock::now();
    f();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, s);
    spent += s;
  }
  return best;
}

void report(const char* what, double flops, double ours, double eigen) {
  std::printf("%-22s ours %6.1f GFLOP/s   Eigen %6.1f GFLOP/s   ours/Eigen %.2f\n", what, flops / ours / 1e9,
              flops / eigen / 1e9, eigen / ours);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace burtorch::kernels;
  const std::size_t m = argc == 4 ? std::strtoul(argv[1], nullptr, 10) : 64;   // tokens
  const std::size_t k = argc == 4 ? std::strtoul(argv[2], nullptr, 10) : 1024; // inputs
  const std::size_t n = argc == 4 ? std::strtoul(argv[3], nullptr, 10) : 1024; // outputs
  std::vector<float> x(m * k), w(n * k), y(m * n), g(m * n), dw(n * k), dx(m * k);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.1f - 0.2f;
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>(i % 3) * 0.1f - 0.1f;
  const StridedRows<float> X{x.data(), k}, W{w.data(), k}, Y{y.data(), n}, G{g.data(), n}, DW{dw.data(), k}, DX{dx.data(), k};
  Map ex(x.data(), m, k), ew(w.data(), n, k), ey(y.data(), m, n), eg(g.data(), m, n), edw(dw.data(), n, k), edx(dx.data(), m, k);
  const double flops = 2.0 * m * n * k;
  std::printf("tokens %zu, inputs %zu, outputs %zu; Eigen %d.%d.%d\n", m, k, n, EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION);
  report("forward  Y = X W^T", flops,
         bestSeconds([&] { gemm<float>(m, n, k, AFromRows<StridedRows<float>>{X, m}, BFromColumns<StridedRows<float>>{W, n}, Y, true); }),
         bestSeconds([&] { ey.noalias() = ex * ew.transpose(); }));
  report("weights dW += G^T X", flops,
         bestSeconds([&] { gemm<float>(n, k, m, AFromColumns<StridedRows<float>>{G, n}, BFromRows<StridedRows<float>>{X, k}, DW, false); }),
         bestSeconds([&] { edw.noalias() += eg.transpose() * ex; }));
  report("inputs  dX = G W", flops,
         bestSeconds([&] { gemm<float>(m, k, n, AFromRows<StridedRows<float>>{G, m}, BFromRows<StridedRows<float>>{W, k}, DX, true); }),
         bestSeconds([&] { edx.noalias() = eg * ew; }));
  return 0;
}

// A seedable generator whose stream is the same on every compiler and OS (std::mt19937 is, but
// std::uniform_real_distribution is not), so initial weights are reproducible everywhere.
// xoshiro256** seeded through splitmix64.
#pragma once

#include <cstdint>

namespace burtorch {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) noexcept {
    for (std::uint64_t& word : state_) word = splitmix(seed);
  }

  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [lo, hi), from the top 53 bits.
  template <class T = double>
  T uniform(T lo, T hi) noexcept {
    const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
    return static_cast<T>(static_cast<double>(lo) + (static_cast<double>(hi) - static_cast<double>(lo)) * unit);
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  std::uint64_t state_[4];
};

}  // namespace burtorch

// This thread's buffer for a kernel's temporary values (a thin product's row and chains, a
// token's input gathered from its runs, a block's outputs computed transposed): one per type,
// grown to the largest request, never shrunk. Valid until its next request: no two users hold it
// at once. One buffer, not one per user: the pool's initial-exec TLS (config.hpp) puts every
// thread_local of the Python module in glibc's static TLS surplus, which torch's libgomp, loaded
// after it, needs too (the module with 1,696 bytes of TLS made libgomp fail to load; 1,504 did not).
#pragma once

#include <cstddef>
#include <vector>

#include "burtorch/config.hpp"

namespace burtorch::kernels {

template <class T>
T* scratch(std::size_t n) {
  static thread_local std::vector<T> buffer BURTORCH_INITIAL_EXEC;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace burtorch::kernels

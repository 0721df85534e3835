// Embedding table: count rows of dim parameters. A lookup is a view of a row's consecutive
// nodes; it creates no node and copies nothing.
#pragma once

#include <cstring>
#include <span>

#include "burtorch/random.hpp"
#include "burtorch/value.hpp"

namespace burtorch {

template <class T>
class Embedding {
 public:
  // Entries drawn from uniform(-1, 1).
  Embedding(std::size_t count, std::size_t dim, Rng& rng) noexcept : Embedding(count, dim) {
    for (std::size_t k = 0; k < table_.size(); ++k) table_[k].setData(rng.uniform<T>(-1, 1));
  }

  // Entries zero, to be loaded.
  Embedding(std::size_t count, std::size_t dim) noexcept : count_(count), dim_(dim) { table_ = leaves<T>(count * dim); }

  std::size_t count() const noexcept { return count_; }
  std::size_t dim() const noexcept { return dim_; }
  NodeRange<T> parameters() const noexcept { return table_; }

  NodeRange<T> operator[](std::size_t row) const noexcept {
    BURTORCH_ASSERT(row < count_);
    return {static_cast<Index>(table_.first + row * dim_), static_cast<Index>(dim_)};
  }

  // Sets the table from a row-major [count][dim] array.
  bool load(std::span<const T> table) noexcept {
    if (table.size() != count_ * dim_) return false;
    std::memcpy(Pool<T>::local().values() + table_.first, table.data(), table.size_bytes());
    return true;
  }

 private:
  std::size_t count_, dim_;
  NodeRange<T> table_;
};

}  // namespace burtorch

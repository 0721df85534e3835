// Embedding table: count rows of dim parameters. A lookup is a view of a row's consecutive
// nodes; it creates no node and copies nothing.
#pragma once

#include <cstring>
#include <span>

#include "burtorch/add_block.hpp"
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

// x = tokens[tokenOf(k)] + positions[k % window], token k after token k (windows of `window` tokens
// one after the other): GPT-2's wte[idx] + wpe[pos], element by element. tokenRows and positionRows
// (x's size) take the rows' handles: addBlock reads a list's element in one load, where runs of
// rows would cost a division by the run's length.
template <class T, class TokenOf>
void embeddingSum(const Embedding<T>& tokens, const Embedding<T>& positions, std::size_t window, TokenOf tokenOf,
                  std::span<Value<T>> tokenRows, std::span<Value<T>> positionRows, std::span<Value<T>> x) noexcept {
  const std::size_t d = tokens.dim();
  for (std::size_t k = 0; k < x.size() / d; ++k) {
    const NodeRange<T> token = tokens[tokenOf(k)], position = positions[k % window];
    for (std::size_t i = 0; i < d; ++i) {
      tokenRows[k * d + i] = token[i];
      positionRows[k * d + i] = position[i];
    }
  }
  addBlock(tokenRows, positionRows, x);
}

}  // namespace burtorch

// Save and load a run of consecutive nodes as raw bytes. Values (and gradients) of consecutive
// nodes are contiguous in the pool, so a range is one write or one read: no format, no copies.
// The bytes are the machine's own (little-endian IEEE-754 on every supported target).
#pragma once

#include <cstdio>

#include "burtorch/value.hpp"

namespace burtorch {

enum class Part { Values, Grads, ValuesAndGrads };

namespace detail {

inline std::size_t partBlocks(Part part) noexcept { return part == Part::ValuesAndGrads ? 2 : 1; }

template <class T>
bool transfer(const char* path, Value<T> first, Value<T> last, Part part, bool saving) noexcept {
  Pool<T>& pool = Pool<T>::local();
  if (first.index() > last.index() || last.index() >= pool.size()) return false;
  const std::size_t count = last.index() - first.index() + 1;
  std::FILE* file = std::fopen(path, saving ? "wb" : "rb");
  if (!file) return false;
  std::setvbuf(file, nullptr, _IONBF, 0);  // one system call per block, no stdio buffer
  T* blocks[2] = {part == Part::Grads ? pool.grads() : pool.values(), pool.grads()};
  bool ok = true;
  for (std::size_t k = 0; k < partBlocks(part) && ok; ++k) {
    T* at = blocks[k] + first.index();
    ok = saving ? std::fwrite(at, sizeof(T), count, file) == count : std::fread(at, sizeof(T), count, file) == count;
  }
  if (!saving && ok) ok = std::fgetc(file) == EOF;  // the file holds exactly this range
  return std::fclose(file) == 0 && ok;
}

}  // namespace detail

// Writes nodes first..last (both included): values, gradients, or values then gradients.
template <class T>
bool save(const char* path, Value<T> first, Value<T> last, Part part = Part::Values) noexcept {
  return detail::transfer(path, first, last, part, true);
}

// Reads what save() wrote into nodes first..last; false if the file's size does not match.
template <class T>
bool load(const char* path, Value<T> first, Value<T> last, Part part = Part::Values) noexcept {
  return detail::transfer(path, first, last, part, false);
}

}  // namespace burtorch

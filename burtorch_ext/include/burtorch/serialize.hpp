// Save and load a run of consecutive nodes as raw bytes. Values (and gradients) of consecutive
// nodes are contiguous in the pool, so a range is one write or one read: no format, no copies.
// The bytes are the machine's own (little-endian IEEE-754 on every supported target).
//
// Saving over an existing file writes in place, then cuts the file to the bytes written, rather
// than truncating it to zero first: on ext4 a file truncated to zero and rewritten is flushed
// to disk when it is closed (the auto_da_alloc safeguard), which makes a small save about 25
// times slower. The file ends up the same.
#pragma once

#include <cstdio>

#include "burtorch/value.hpp"

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

namespace burtorch {

enum class Part { Values, Grads, ValuesAndGrads };

namespace detail {

inline std::size_t partBlocks(Part part) noexcept { return part == Part::ValuesAndGrads ? 2 : 1; }

inline std::FILE* openForWriting(const char* path) noexcept {
  std::FILE* file = std::fopen(path, "r+b");  // an existing file, not truncated
  return file ? file : std::fopen(path, "wb");
}

inline bool cutTo(std::FILE* file, std::size_t bytes) noexcept {
#if defined(_WIN32)
  return _chsize_s(_fileno(file), static_cast<long long>(bytes)) == 0;
#else
  return ftruncate(fileno(file), static_cast<off_t>(bytes)) == 0;
#endif
}

template <class T>
bool transfer(const char* path, Value<T> first, Value<T> last, Part part, bool saving) noexcept {
  Pool<T>& pool = Pool<T>::local();
  if (first.index() > last.index() || last.index() >= pool.size()) return false;
  const std::size_t count = last.index() - first.index() + 1;
  std::FILE* file = saving ? openForWriting(path) : std::fopen(path, "rb");
  if (!file) return false;
  std::setvbuf(file, nullptr, _IONBF, 0);  // one system call per block, no stdio buffer
  T* blocks[2] = {part == Part::Grads ? pool.grads() : pool.values(), pool.grads()};
  bool ok = true;
  for (std::size_t k = 0; k < partBlocks(part) && ok; ++k) {
    T* at = blocks[k] + first.index();
    ok = saving ? std::fwrite(at, sizeof(T), count, file) == count : std::fread(at, sizeof(T), count, file) == count;
  }
  if (saving && ok) ok = cutTo(file, partBlocks(part) * count * sizeof(T));
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

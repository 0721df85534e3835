// A file mapped into memory for one save or one load, as the authors' saveToFile and loadFromFile
// do it: open, size, map, close the descriptor (the mapping keeps the file), copy, unmap.
// POSIX only: save_load.hpp uses it under --timing paper, and Windows keeps the stdio loop.
#pragma once

#if !defined(_WIN32)

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <utility>

namespace burtorch::driver {

class MappedFile {
 public:
  // `path` made exactly `bytes` long (created if missing; an existing file is resized, not
  // truncated to zero, so a rewrite of the same size happens in place) and mapped read-write.
  static MappedFile forWriting(const char* path, std::size_t bytes) noexcept {
    const int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return {};
    if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      ::close(fd);
      return {};
    }
    return mapped(fd, bytes, PROT_READ | PROT_WRITE);
  }

  // `path` as it is, mapped read-only.
  static MappedFile forReading(const char* path) noexcept {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      ::close(fd);
      return {};
    }
    return mapped(fd, static_cast<std::size_t>(info.st_size), PROT_READ);
  }

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile() { unmap(); }

  // False if the file could not be opened, sized or mapped (an empty file cannot be mapped).
  explicit operator bool() const noexcept { return data_ != nullptr; }
  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

  // Ends the mapping; a shared mapping's writes are the file's from then on.
  bool unmap() noexcept {
    if (!data_) return true;
    const bool ok = ::munmap(data_, size_) == 0;
    data_ = nullptr;
    size_ = 0;
    return ok;
  }

 private:
  // Maps all of fd and closes it, whether or not the mapping succeeded.
  static MappedFile mapped(int fd, std::size_t bytes, int protection) noexcept {
    MappedFile file;
    void* at = bytes ? ::mmap(nullptr, bytes, protection, MAP_SHARED, fd, 0) : MAP_FAILED;
    ::close(fd);
    if (at == MAP_FAILED) return file;
    file.data_ = static_cast<std::byte*>(at);
    file.size_ = bytes;
    return file;
  }

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace burtorch::driver

#endif  // !_WIN32

// The node pool: every scalar of every graph lives here, one node per index, in contiguous
// arrays (values, gradients, op codes, operand indices), beside one array of link words that
// holds the n-ary nodes' operand lists (lists.hpp) and records (records.hpp). Nodes are
// numbered in creation order, so operands always precede their users and index order is a
// topological order of any graph.
//
// One pool per scalar type per thread. mark()/rewind() drop a step's graph and keep whatever was
// created before the mark (the parameters): a training step then reuses the same memory.
//
// The pool also knows how many nodes at its start are leaves (the parameters, made before any
// graph). Backward propagates nothing through a leaf, so it never walks down into that prefix.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "burtorch/config.hpp"
#include "burtorch/ops.hpp"

namespace burtorch {

using Index = std::uint32_t;
inline constexpr Index kNoIndex = 0xFFFFFFFFu;
// The top bit of a link word marks a range of consecutive nodes, so indices stay below it; the
// all-ones word (a range that would start at the last index) marks a list of runs instead.
inline constexpr Index kRangeFlag = 0x80000000u;
inline constexpr Index kRunsMarker = 0xFFFFFFFFu;
inline constexpr std::size_t kMaxNodes = kRangeFlag - 1;

struct Args {
  Index a;
  Index b;
};

// A position in the pool: the node count and the link count.
struct Mark {
  std::size_t nodes = 0;
  std::size_t links = 0;
};

template <class T>
class Pool {
 public:
  static_assert(std::is_floating_point_v<T>);
  constexpr Pool() noexcept = default;

  // This thread's pool for scalars of type T.
  static Pool& local() noexcept;

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t linkCount() const noexcept { return linkSize_; }
  // Nodes [0, leadingLeaves()) are all leaves: push() extends the prefix, rewind() cuts it.
  std::size_t leadingLeaves() const noexcept { return leadingLeaves_; }

  Mark mark() const noexcept { return {size_, linkSize_}; }
  void rewind(Mark m) noexcept {
    BURTORCH_ASSERT(m.nodes <= size_ && m.links <= linkSize_);
    size_ = m.nodes;
    linkSize_ = m.links;
    leadingLeaves_ = std::min(leadingLeaves_, size_);
  }

  // Grows the arrays ahead of time so that building the next graphs allocates nothing.
  void reserve(std::size_t nodes, std::size_t links = 0) {
    if (nodes > capacity_) growNodes(nodes);
    if (links > linkCapacity_) growLinks(links);
  }

  // Frees all memory; every Value of this pool becomes invalid.
  void release() noexcept {
    ::operator delete(block_, std::align_val_t{kAlign});
    ::operator delete(links_);
    *this = Pool();
  }

  BURTORCH_INLINE Index push(T value, Op op, Index a = 0, Index b = 0) noexcept {
    if (size_ == capacity_) [[unlikely]] growNodes(size_ + 1);
    const std::size_t i = size_++;
    if (i >= kMaxNodes) BURTORCH_UNREACHABLE();  // lets the compiler see that Index(i) == i
    if (op == Op::Leaf && i == leadingLeaves_) leadingLeaves_ = i + 1;
    grads_[i] = T(0);
    ops_[i] = op;
    args_[i] = Args{a, b};
    // Last, so that the next operator reads the value from the register rather than memory:
    // the stores above (a gradient in particular) might alias it as far as the compiler knows.
    values_[i] = value;
    return static_cast<Index>(i);
  }

  // n operator nodes at once, all with the same op and operands (a layer's rows), gradients
  // zero; returns the first. The caller writes their values through values().
  Index pushRun(std::size_t n, Op op, Index a, Index b) noexcept {
    BURTORCH_ASSERT(op != Op::Leaf);
    if (size_ + n > capacity_) [[unlikely]] growNodes(size_ + n);
    const std::size_t first = size_;
    size_ += n;
    std::fill_n(grads_ + first, n, T(0));
    std::fill_n(ops_ + first, n, op);
    std::fill_n(args_ + first, n, Args{a, b});
    return static_cast<Index>(first);
  }

  // Reserves n link words and returns the offset of the first; write them through links().
  BURTORCH_INLINE Index appendLinks(std::size_t n) noexcept {
    if (linkSize_ + n > linkCapacity_) [[unlikely]] growLinks(linkSize_ + n);
    const std::size_t offset = linkSize_;
    linkSize_ += n;
    return static_cast<Index>(offset);
  }

  T* values() noexcept { return values_; }
  T* grads() noexcept { return grads_; }
  const T* values() const noexcept { return values_; }
  const T* grads() const noexcept { return grads_; }
  const Op* ops() const noexcept { return ops_; }
  const Args* args() const noexcept { return args_; }
  Index* links() noexcept { return links_; }
  const Index* links() const noexcept { return links_; }

  void zeroGrad(std::size_t first, std::size_t count) noexcept {
    BURTORCH_ASSERT(first + count <= size_);
    std::fill_n(grads_ + first, count, T(0));
  }

 private:
  static constexpr std::size_t kAlign = 64;

  static std::size_t roundUp(std::size_t n) noexcept { return (n + kAlign - 1) / kAlign * kAlign; }

  BURTORCH_NOINLINE void growNodes(std::size_t needed) noexcept;
  BURTORCH_NOINLINE void growLinks(std::size_t needed) noexcept;

  std::byte* block_ = nullptr;  // values, grads, args and ops, one allocation
  T* values_ = nullptr;
  T* grads_ = nullptr;
  Args* args_ = nullptr;
  Op* ops_ = nullptr;
  Index* links_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::size_t leadingLeaves_ = 0;
  std::size_t linkSize_ = 0;
  std::size_t linkCapacity_ = 0;
};

namespace detail {

// Constant-initialised and trivially destructible, so the hot path reaches it with a plain
// thread-local access (no guard); the releaser below frees its memory when the thread ends.
template <class T>
constinit inline thread_local Pool<T> threadPool BURTORCH_INITIAL_EXEC{};

template <class T>
struct PoolReleaser {
  ~PoolReleaser() { threadPool<T>.release(); }
};
template <class T>
inline thread_local PoolReleaser<T> poolReleaser BURTORCH_INITIAL_EXEC;

[[noreturn]] inline void fail(const char* what) noexcept {
  std::fputs(what, stderr);
  std::fputc('\n', stderr);
  std::abort();
}

inline std::size_t grownCapacity(std::size_t current, std::size_t needed, std::size_t minimum) noexcept {
  return std::max({needed, current * 2, minimum});
}

}  // namespace detail

template <class T>
Pool<T>& Pool<T>::local() noexcept {
  return detail::threadPool<T>;
}

template <class T>
void Pool<T>::growNodes(std::size_t needed) noexcept {
  (void)&detail::poolReleaser<T>;  // first growth on this thread: arrange the release at thread exit
  if (needed > kMaxNodes) detail::fail("burtorch: node pool is full (2^31 - 1 nodes)");
  const std::size_t cap = std::min(detail::grownCapacity(capacity_, needed, 64), kMaxNodes);
  const std::size_t valueBytes = roundUp(cap * sizeof(T));
  const std::size_t argBytes = roundUp(cap * sizeof(Args));
  auto* block = static_cast<std::byte*>(
      ::operator new(2 * valueBytes + argBytes + roundUp(cap * sizeof(Op)), std::align_val_t{kAlign}));
  auto* values = reinterpret_cast<T*>(block);
  auto* grads = reinterpret_cast<T*>(block + valueBytes);
  auto* args = reinterpret_cast<Args*>(block + 2 * valueBytes);
  auto* ops = reinterpret_cast<Op*>(block + 2 * valueBytes + argBytes);
  if (size_ != 0) {
    std::memcpy(values, values_, size_ * sizeof(T));
    std::memcpy(grads, grads_, size_ * sizeof(T));
    std::memcpy(args, args_, size_ * sizeof(Args));
    std::memcpy(ops, ops_, size_ * sizeof(Op));
  }
  ::operator delete(block_, std::align_val_t{kAlign});
  block_ = block;
  values_ = values;
  grads_ = grads;
  args_ = args;
  ops_ = ops;
  capacity_ = cap;
}

template <class T>
void Pool<T>::growLinks(std::size_t needed) noexcept {
  (void)&detail::poolReleaser<T>;
  if (needed > 0xFFFFFFFFu) detail::fail("burtorch: link array is full (2^32 words)");
  const std::size_t cap = std::min<std::size_t>(detail::grownCapacity(linkCapacity_, needed, 64), 0xFFFFFFFFu);
  auto* links = static_cast<Index*>(::operator new(cap * sizeof(Index)));
  if (linkSize_ != 0) std::memcpy(links, links_, linkSize_ * sizeof(Index));
  ::operator delete(links_);
  links_ = links;
  linkCapacity_ = cap;
}

}  // namespace burtorch

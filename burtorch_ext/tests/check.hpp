// A minimal test harness: TEST_CASE registers a function, CHECK records a failure and goes on.
// `burtorch-tests --list` prints the names; `burtorch-tests NAME...` runs those; no argument runs all.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace check {

struct Case {
  const char* name;
  void (*run)();
};

inline std::vector<Case>& cases() {
  static std::vector<Case> all;
  return all;
}

inline int& failures() {
  static int count = 0;
  return count;
}

struct Register {
  Register(const char* name, void (*run)()) { cases().push_back({name, run}); }
};

inline void fail(const char* file, int line, const std::string& what) {
  ++failures();
  std::printf("    %s:%d: %s\n", file, line, what.c_str());
}

inline bool close(double got, double want, double rel, double abs = 0) {
  return std::abs(got - want) <= std::max(abs, rel * std::max(std::abs(got), std::abs(want)));
}

}  // namespace check

#define CHECK_CAT2(a, b) a##b
#define CHECK_CAT(a, b) CHECK_CAT2(a, b)
#define TEST_CASE(name)                                                                  \
  static void CHECK_CAT(test_, __LINE__)();                                              \
  static const check::Register CHECK_CAT(register_, __LINE__)(name, &CHECK_CAT(test_, __LINE__)); \
  static void CHECK_CAT(test_, __LINE__)()

#define CHECK(cond)                                                \
  do {                                                             \
    if (!(cond)) check::fail(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (false)

#define CHECK_CLOSE(got, want, rel)                                                                      \
  do {                                                                                                   \
    const double got_ = (got), want_ = (want);                                                           \
    if (!check::close(got_, want_, (rel)))                                                               \
      check::fail(__FILE__, __LINE__,                                                                    \
                  std::string(#got " = ") + std::to_string(got_) + ", want " + std::to_string(want_) + \
                      " (" #want ")");                                                                   \
  } while (false)

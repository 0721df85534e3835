#include <cstring>

#include "check.hpp"

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const check::Case& c : check::cases()) std::printf("%s\n", c.name);
    return 0;
  }
  int ran = 0;
  int failed = 0;
  for (const check::Case& c : check::cases()) {
    bool wanted = argc == 1;
    for (int k = 1; k < argc; ++k) wanted = wanted || std::strcmp(argv[k], c.name) == 0;
    if (!wanted) continue;
    const int before = check::failures();
    c.run();
    ++ran;
    const bool ok = check::failures() == before;
    failed += ok ? 0 : 1;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", c.name);
  }
  if (ran != argc - 1 && argc > 1) {
    std::printf("FAIL: %d of %d named tests exist\n", ran, argc - 1);
    return 1;
  }
  std::printf("%d tests, %d failed\n", ran, failed);
  return failed == 0 ? 0 : 1;
}

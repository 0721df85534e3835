// The runtime choice of the block products' registers and blocks (cpu.hpp), for faked CPUs and
// a faked sysfs tree.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "burtorch/cpu.hpp"
#include "check.hpp"

using namespace burtorch::kernels;

namespace {

bool same(const KernelChoice& got, const KernelChoice& want) {
  const bool ok = got.registerBits == want.registerBits && got.kBytes == want.kBytes && got.mPanels == want.mPanels && got.nColumns == want.nColumns;
  if (!ok) std::printf("    got %s, want %s\n", describe(got).c_str(), describe(want).c_str());
  return ok;
}

void writeFile(const std::filesystem::path& path, const char* text) {
  std::filesystem::create_directories(path.parent_path());
  std::FILE* f = std::fopen(path.string().c_str(), "w");
  std::fputs(text, f);
  std::fclose(f);
}

// index<i>/{level,type,size} under root's cpu0, as Linux lays them out.
void writeCache(const std::filesystem::path& root, int index, const char* level, const char* type, const char* size) {
  const auto dir = root / "devices/system/cpu/cpu0/cache" / ("index" + std::to_string(index));
  writeFile(dir / "level", level);
  writeFile(dir / "type", type);
  writeFile(dir / "size", size);
}

}  // namespace

TEST_CASE("cpu: Zen 5 (48 KiB L1d, 1 MiB L2, full-width AVX-512) gets 512-bit registers and the blocks tuned on it") {
  const CpuInfo zen5{48 * 1024, 1024 * 1024, true, 0x1a};
  CHECK(same(chooseKernel(zen5, 512), {512, 1024, 16, 256}));
  CHECK(same(chooseKernel(zen5, 256), {256, 1024, 16, 256}));  // an AVX2 build
  CHECK(same(chooseKernel(zen5, 128), {128, 1024, 16, 256}));  // an SSE2 build
}

TEST_CASE("cpu: Zen 4 (family 0x19, double-pumped AVX-512, 32 KiB L1d) gets 256-bit registers") {
  const CpuInfo zen4{32 * 1024, 1024 * 1024, true, 0x19};
  CHECK(same(chooseKernel(zen4, 512), {256, 1024, 16, 256}));
}

TEST_CASE("cpu: a 512-bit core with 32 KiB L1d and 2 MiB L2 gets shallower blocks; one without AVX-512 256-bit registers") {
  const CpuInfo server{32 * 1024, 2 * 1024 * 1024, true, 0};
  CHECK(same(chooseKernel(server, 512), {512, 512, 16, 1024}));
  const CpuInfo noAvx512{32 * 1024, 512 * 1024, false, 0};
  CHECK(same(chooseKernel(noAvx512, 512), {256, 1024, 10, 128}));
  const CpuInfo tiny{16 * 1024, 256 * 1024, false, 0};
  CHECK(same(chooseKernel(tiny, 256), {256, 512, 10, 128}));
}

TEST_CASE("cpu: the caches are read from a sysfs tree; what it lacks keeps the defaults") {
  const char* dir = std::getenv("BURTORCH_TEST_TMP");
  const std::filesystem::path root = std::filesystem::path(dir ? dir : "/tmp") / "burtorch-fake-sysfs";
  std::filesystem::remove_all(root);
  writeCache(root, 0, "1\n", "Data\n", "32K\n");
  writeCache(root, 1, "1\n", "Instruction\n", "64K\n");
  writeCache(root, 2, "2\n", "Unified\n", "2048K\n");
  writeCache(root, 3, "3\n", "Unified\n", "32M\n");
  CpuInfo info;
  readCaches(root.string(), info);
  CHECK(info.l1dBytes == 32 * 1024 && info.l2Bytes == 2 * 1024 * 1024);
  CpuInfo defaults;
  readCaches((root / "missing").string(), defaults);
  CHECK(defaults.l1dBytes == 48 * 1024 && defaults.l2Bytes == 1024 * 1024);
  std::filesystem::remove_all(root);
}

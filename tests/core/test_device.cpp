// Device parsing and discovery on a machine that may have no GPU.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/device.h"
#include "base/error.h"
#include "core/memory.h"

using namespace parbench;

TEST(Device, ParsesNames) {
  EXPECT_EQ(resolve_device("cpu").kind, DeviceKind::cpu);
  EXPECT_EQ(resolve_device("simt").kind, DeviceKind::simt);
  EXPECT_THROW(resolve_device("gpu"), UsageError);
  EXPECT_THROW(resolve_device("cuda:x"), UsageError);
  EXPECT_THROW(resolve_device("cudax"), UsageError);
}

TEST(Device, AutoSaysWhatItPicked) {
  std::string why;
  Device d = resolve_device("auto", &why);
  CudaProbe p = probe_cuda();
  if (p.usable) {
    EXPECT_EQ(d.kind, DeviceKind::cuda);
  } else {
    EXPECT_EQ(d.kind, DeviceKind::cpu);
    EXPECT_NE(why.find(p.reason), std::string::npos);
    EXPECT_EQ(why.find("cudaError"), std::string::npos);  // words, not error codes
    try {
      resolve_device("cuda");
      FAIL();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos);
    }
  }
}

// A strided copy on the host: every row lands at its pitch, the bytes between rows stay as they were.
TEST(Memory, StridedCopyMovesRowsAndLeavesGaps) {
  std::mt19937 rng(std::random_device{}());
  const std::size_t width = 1 + rng() % 40, rows = 1 + rng() % 9, src_pitch = width + rng() % 7,
                    dst_pitch = width + 1 + rng() % 11;
  std::vector<unsigned char> src(rows * src_pitch), dst(rows * dst_pitch, 0xAB);
  for (auto& b : src) b = static_cast<unsigned char>(rng());
  const Device cpu{};
  device_memcpy_2d(cpu, dst.data(), dst_pitch, cpu, src.data(), src_pitch, width, rows);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t i = 0; i < dst_pitch; ++i)
      ASSERT_EQ(dst[r * dst_pitch + i], i < width ? src[r * src_pitch + i] : 0xAB) << "row " << r << " byte " << i;
}

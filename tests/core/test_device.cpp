// Device parsing and discovery on a machine that may have no GPU.
#include <gtest/gtest.h>

#include "core/device.h"
#include "core/error.h"

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

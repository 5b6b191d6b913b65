// simt host side: schedule and stack-size parsing, launch-limit checks, the CUDA runtime subset,
// and the 16-bit conversions against core's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "base/dtype.h"
#include "base/error.h"
#include "tests/simt/selftest_kernels.h"
#include "device/simt/simt_types.h"
#include "simt_test_util.h"

namespace simt = parbench::simt;
namespace k = parbench::simt_kernels;

namespace {
// The message of the exception `fn` throws, or "" when it throws none.
template <class E, class F>
std::string message_of(F fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(SimtSchedule, ParsesTheThreeForms) {
  EXPECT_EQ(simt::parse_schedule("forward"), (simt::Schedule{simt::ScheduleKind::forward, 0}));
  EXPECT_EQ(simt::parse_schedule("reverse"), (simt::Schedule{simt::ScheduleKind::reverse, 0}));
  EXPECT_EQ(simt::parse_schedule("random:42"), (simt::Schedule{simt::ScheduleKind::random, 42}));
  EXPECT_EQ(simt::schedule_name(simt::parse_schedule("random:18446744073709551615")), "random:18446744073709551615");
}

TEST(SimtSchedule, RejectsBadValuesWithAMessage) {
  for (const char* bad : {"", "fwd", "Forward", "random", "random:", "random:x", "random:-1", "random:1x", "reverse "}) {
    std::string msg = message_of<parbench::UsageError>([&] { simt::parse_schedule(bad); });
    EXPECT_NE(msg.find("'" + std::string(bad) + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("forward, reverse or random:SEED"), std::string::npos) << msg;
  }
}

TEST(SimtSchedule, ReadsTheEnvironmentVariable) {
  ::unsetenv("PARBENCH_SIMT_SCHEDULE");
  EXPECT_FALSE(simt::schedule_from_env().has_value());
  ::setenv("PARBENCH_SIMT_SCHEDULE", "random:7", 1);
  EXPECT_EQ(simt::schedule_from_env(), (simt::Schedule{simt::ScheduleKind::random, 7}));
  ::setenv("PARBENCH_SIMT_SCHEDULE", "backwards", 1);
  std::string msg = message_of<parbench::UsageError>([] { simt::schedule_from_env(); });
  EXPECT_NE(msg.find("PARBENCH_SIMT_SCHEDULE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'backwards'"), std::string::npos) << msg;
  ::unsetenv("PARBENCH_SIMT_SCHEDULE");
}

TEST(SimtSettings, StackSizeParsingAndLimits) {
  EXPECT_EQ(simt::parse_stack_size("512K"), 512u * 1024);
  EXPECT_EQ(simt::parse_stack_size("1M"), 1u << 20);
  EXPECT_EQ(simt::parse_stack_size("65536"), 65536u);
  for (const char* bad : {"", "12", "1G", "abc", "10Q", "-64K", "128M"}) {
    std::string msg = message_of<parbench::UsageError>([&] { simt::parse_stack_size(bad); });
    EXPECT_NE(msg.find("'" + std::string(bad) + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("16K to 64M"), std::string::npos) << msg;
  }
  EXPECT_THROW(simt::set_stack_size(100), parbench::UsageError);
  EXPECT_THROW(simt::set_worker_threads(0), parbench::UsageError);
  EXPECT_GE(simt::stack_size(), 64u * 1024);  // the default leaves room for ordinary kernels
}

TEST(SimtLaunch, LimitViolationsThrowNamingTheKernelAndValues) {
  std::vector<float> out(4, -1.0f);
  auto launch_msg = [&](int bx, int by, int bz, std::size_t smem, int gy) {
    return message_of<parbench::Error>([&] { k::big_shared(out.data(), bx, by, bz, smem, gy, false, nullptr); });
  };
  std::string msg = launch_msg(32, 64, 1, 8192 * 4, 1);
  EXPECT_NE(msg.find("simt launch of big_shared_kernel"), std::string::npos) << msg;
  EXPECT_NE(msg.find("selftest_kernels.cu:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("block (32,64,1)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2048 threads per block exceed the limit of 1024"), std::string::npos) << msg;
  EXPECT_NE(launch_msg(1025, 1, 1, 8192, 1).find("blockDim.x 1025 exceeds 1024"), std::string::npos);
  EXPECT_NE(launch_msg(1, 1025, 1, 8192, 1).find("blockDim.y 1025 exceeds 1024"), std::string::npos);
  EXPECT_NE(launch_msg(1, 1, 65, 8192, 1).find("blockDim.z 65 exceeds 64"), std::string::npos);
  EXPECT_NE(launch_msg(0, 1, 1, 8192, 1).find("a block dimension is 0"), std::string::npos);
  EXPECT_NE(launch_msg(32, 1, 1, 8192, 65536).find("gridDim.y 65536 exceeds 65535"), std::string::npos);
  EXPECT_NE(launch_msg(32, 1, 1, 8192, 0).find("a grid dimension is 0"), std::string::npos);
  // The limits themselves are fine.
  EXPECT_EQ(launch_msg(1024, 1, 1, 4096, 2), "");
  EXPECT_EQ(out[1], 1023.0f);
  EXPECT_EQ(launch_msg(1, 16, 64, 4096, 1), "");
  EXPECT_EQ(out[0], 1023.0f);

  // Dynamic shared memory: 48 KiB by default, more after the same opt-in a GPU needs.
  msg = launch_msg(32, 1, 1, 64 * 1024, 1);
  EXPECT_NE(msg.find("65536 bytes of dynamic shared memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("48 KiB default"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cudaFuncAttributeMaxDynamicSharedMemorySize"), std::string::npos) << msg;
  out[0] = -1.0f;
  k::big_shared(out.data(), 32, 1, 1, 64 * 1024, 1, true, nullptr);
  EXPECT_EQ(out[0], 31.0f);
  EXPECT_NE(launch_msg(32, 1, 1, 100 * 1024, 1).find("limit of 65536 bytes"), std::string::npos);
  EXPECT_EQ(k::big_shared_opt_in(227 * 1024), int(simt::cudaSuccess));
  EXPECT_EQ(launch_msg(32, 1, 1, 227 * 1024, 1), "");
  EXPECT_EQ(k::big_shared_opt_in(227 * 1024 + 1), int(simt::cudaErrorInvalidValue));
}

TEST(SimtRuntime, MemoryStreamsEventsAndLastError) {
  int* d = nullptr;
  ASSERT_EQ(simt::cudaMalloc(&d, 64 * sizeof(int)), simt::cudaSuccess);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(d) % 256, 0u);
  simt::cudaStream_t s;
  ASSERT_EQ(simt::cudaStreamCreate(&s), simt::cudaSuccess);
  simt::cudaEvent_t e0, e1;
  ASSERT_EQ(simt::cudaEventCreate(&e0), simt::cudaSuccess);
  ASSERT_EQ(simt::cudaEventCreate(&e1), simt::cudaSuccess);
  float ms = -1;
  EXPECT_EQ(simt::cudaEventElapsedTime(&ms, e0, e1), simt::cudaErrorNotReady);
  EXPECT_EQ(simt::cudaGetLastError(), simt::cudaErrorNotReady);
  EXPECT_EQ(simt::cudaGetLastError(), simt::cudaSuccess);  // reading resets it
  EXPECT_EQ(simt::cudaEventRecord(e0, s), simt::cudaSuccess);
  std::vector<int> host(64), back(64, 0);
  for (int i = 0; i < 64; ++i) host[std::size_t(i)] = i * 7 - 100;
  EXPECT_EQ(simt::cudaMemsetAsync(d, 0xff, 64 * sizeof(int), s), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaMemcpyAsync(d, host.data(), 32 * sizeof(int), simt::cudaMemcpyHostToDevice, s), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaEventRecord(e1, s), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaStreamSynchronize(s), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaMemcpy(back.data(), d, 64 * sizeof(int), simt::cudaMemcpyDeviceToHost), simt::cudaSuccess);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(back[std::size_t(i)], i < 32 ? host[std::size_t(i)] : -1) << i;
  EXPECT_EQ(simt::cudaEventElapsedTime(&ms, e0, e1), simt::cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(simt::cudaMemcpy(nullptr, d, 4, simt::cudaMemcpyDeviceToHost), simt::cudaErrorInvalidValue);
  EXPECT_EQ(simt::cudaPeekAtLastError(), simt::cudaErrorInvalidValue);
  EXPECT_STREQ(simt::cudaGetErrorString(simt::cudaGetLastError()), "invalid argument");
  EXPECT_EQ(simt::cudaEventDestroy(e0), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaEventDestroy(e1), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaStreamDestroy(s), simt::cudaSuccess);
  EXPECT_EQ(simt::cudaFree(d), simt::cudaSuccess);
}

// The conversions themselves are base/float16.h's (tests/core/test_float16.cpp); simt's 16-bit arithmetic
// rounds each result through them.
TEST(SimtTypes, SixteenBitArithmeticRoundsEachResult) {
  EXPECT_EQ(parbench::float16::float_to_f16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(parbench::float16::float_to_bf16_bits(1.0f + 1.0f / 256), 0x3f80);  // halfway, even below
  const simt::__nv_bfloat16 one(1.0f), tiny(1.0f / 512);
  EXPECT_EQ(float(one + tiny), 1.0f);
  EXPECT_EQ(float(simt::__hfma(simt::__nv_bfloat16(3.0f), simt::__nv_bfloat16(0.5f), one)), 2.5f);
  EXPECT_TRUE(simt::__nv_bfloat16(2.0f) > one);
}

// An exception thrown inside a CUDA thread (here: a device-side launch) reaches the launching
// host thread, from a block run inline or on a pool thread, and leaves the emulator usable.
TEST(SimtLaunch, ExceptionsInsideAKernelReachTheHost) {
  const int saved = simt::worker_threads();
  for (int threads : {1, 2}) {
    simt::set_worker_threads(threads);
    std::vector<int> out(4 * 32, 0);
    std::string msg = message_of<parbench::Error>([&] { k::nested_launch(out.data(), 4, nullptr); });
    EXPECT_NE(msg.find("kernel nested_inner_kernel launched from inside kernel nested_outer_kernel"),
              std::string::npos) << msg;
    EXPECT_NE(msg.find("dynamic parallelism is not emulated"), std::string::npos) << msg;
  }
  simt::set_worker_threads(saved);
  std::vector<int> in(64, 3), sums(1, 0);
  k::block_sum(sums.data(), in.data(), 64, 64, nullptr);
  EXPECT_EQ(sums[0], 192);
}

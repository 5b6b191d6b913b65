// Range building blocks: category ids/names/colours, the NVTX message text, and the promise that
// a range costs no allocation while nothing records it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <set>
#include <string>

#include "base/sanitizers.h"
#include "profiles/range.h"

using namespace parbench;

// Allocation counting for the no-allocation test. Plain builds replace operator new; ASan
// supplies its own operator new/delete pairs, so there the sanitizer's malloc hook counts instead
// (it sees every allocation, operator new included).
static thread_local long t_allocations = 0;
#ifdef PB_ASAN
extern "C" int __sanitizer_install_malloc_and_free_hooks(
    void (*malloc_hook)(const volatile void*, std::size_t), void (*free_hook)(const volatile void*));
static void count_malloc(const volatile void*, std::size_t) { ++t_allocations; }
static void ignore_free(const volatile void*) {}
static const bool g_hooks_installed =
    __sanitizer_install_malloc_and_free_hooks(count_malloc, ignore_free) != 0;
#else
void* operator new(std::size_t n) {
  ++t_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  ++t_allocations;
  std::size_t al = static_cast<std::size_t>(a);
  if (void* p = std::aligned_alloc(al, (n + al - 1) / al * al)) return p;
  throw std::bad_alloc();
}
#endif

namespace {

std::string message(std::string_view name, const RangeArgs& a, std::size_t size = 256) {
  std::string buf(size, '#');
  std::size_t n = format_range_message(buf.data(), size, name, a);
  EXPECT_EQ(buf[n], '\0');  // terminated right after the text
  EXPECT_EQ(std::string(buf.c_str()).size(), n);
  return buf.substr(0, n);
}

}  // namespace

TEST(RangeMessage, ShowsNameAndSetFieldsInOrder) {
  EXPECT_EQ(message("forward", {.layer = 2, .microbatch = 3}), "forward layer=2 mb=3");
  EXPECT_EQ(message("adam", {}), "adam");
  EXPECT_EQ(message("send", {.layer = 0, .microbatch = -4, .stage = 5, .chunk = 6,
                             .bytes = 9'000'000'000'000}),
            "send layer=0 mb=-4 stage=5 chunk=6 bytes=9000000000000");
  EXPECT_EQ(message("x", {.chunk = INT64_MIN}), "x chunk=-9223372036854775808");
  // A view that is not NUL-terminated: only its own characters are used.
  const std::string long_name = "backward_pass";
  EXPECT_EQ(message(std::string_view(long_name).substr(0, 8), {.stage = 1}), "backward stage=1");
}

TEST(RangeMessage, TruncatesToTheBuffer) {
  EXPECT_EQ(message("forward", {.layer = 12}, 8), "forward");
  EXPECT_EQ(message("forward", {.layer = 12}, 12), "forward lay");
  EXPECT_EQ(message("forward", {.layer = 12}, 16), "forward layer=1");
  EXPECT_EQ(message("forward", {.layer = 12}, 1), "");
  char untouched = 'u';
  EXPECT_EQ(format_range_message(&untouched, 0, "x", {}), 0u);
  EXPECT_EQ(untouched, 'u');
}

TEST(RangeCategory, IdsNamesAndColours) {
  EXPECT_EQ(static_cast<int>(Category::compute), 1);
  EXPECT_EQ(static_cast<int>(Category::communication), 2);
  EXPECT_EQ(static_cast<int>(Category::optimizer), 3);
  EXPECT_EQ(static_cast<int>(Category::idle), 4);
  EXPECT_STREQ(category_name(Category::compute), "compute");
  EXPECT_STREQ(category_name(Category::communication), "communication");
  EXPECT_STREQ(category_name(Category::optimizer), "optimizer");
  EXPECT_STREQ(category_name(Category::idle), "idle");
  EXPECT_STREQ(category_name(static_cast<Category>(99)), "unknown");
  std::set<std::uint32_t> colours;
  for (Category c : kAllCategories) {
    EXPECT_EQ(category_color(c) >> 24, 0xFFu) << category_name(c);  // opaque ARGB
    colours.insert(category_color(c));
  }
  EXPECT_EQ(colours.size(), 4u);
}

TEST(RangeCost, NoAllocationWhileNothingRecords) {
#ifdef PB_ASAN
  ASSERT_TRUE(g_hooks_installed) << "could not install the sanitizer malloc hook";
#endif
  TraceRecorder& rec = TraceRecorder::instance();
  if (rec.nvtx_active()) GTEST_SKIP() << "an NVTX tool is attached (NVTX_INJECTION64_PATH)";
  rec.disable();
  ASSERT_EQ(rec.mode(), 0u);  // one load, one branch: nothing else pending
  const std::string name = "a range name long enough to need the heap if copied";
  long before = t_allocations;
  for (int i = 0; i < 1000; ++i) {
    PB_RANGE(name, Category::compute, {.layer = i, .microbatch = i, .bytes = 1 << 20});
  }
  EXPECT_EQ(t_allocations - before, 0);
  // The counter does see allocations: the same loop with the recorder on allocates.
  rec.enable();
  before = t_allocations;
  { PB_RANGE(name, Category::compute); }
  EXPECT_GT(t_allocations - before, 0);
  rec.disable();
  rec.clear();
}

// PB_ASAN / PB_TSAN: defined to 1 when this translation unit is compiled under AddressSanitizer / ThreadSanitizer,
// whichever compiler: g++ says so with __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define PB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PB_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define PB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PB_TSAN 1
#endif
#endif

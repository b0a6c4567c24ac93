// Which sanitizer this test binary is built with (gcc says so by
// __SANITIZE_*__, clang by __has_feature): a few tests cannot run under
// one, whose runtime makes demands of its own.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLL_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define COLL_TEST_TSAN 1
#endif
#endif

namespace coll::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(COLL_TEST_ASAN)
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif
#if defined(__SANITIZE_THREAD__) || defined(COLL_TEST_TSAN)
constexpr bool kUnderThreadSanitizer = true;
#else
constexpr bool kUnderThreadSanitizer = false;
#endif

}  // namespace coll::testing

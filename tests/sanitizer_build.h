// PAGEDLLM_TEST_ASAN: defined when this test binary is built with AddressSanitizer, by g++ (which
// defines __SANITIZE_ADDRESS__) or by clang (which has __has_feature(address_sanitizer) instead;
// make test-sanitize builds with clang, sharing its tree with make fuzz).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define PAGEDLLM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PAGEDLLM_TEST_ASAN 1
#endif
#endif

#include "tokenizer/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <stdexcept>

#include "util/interrupt.h"

namespace pagedllm {

namespace {

// JIT matching of patterns like \s+(?!\S) over long whitespace runs needs more than PCRE2's
// 32 KiB default stack; each thread keeps its own.
struct JitStack {
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  JitStack() {
    if (stack && context) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~JitStack() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

JitStack& thread_jit_stack() {
  thread_local JitStack s;
  return s;
}

}  // namespace

struct UnicodeRegex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

UnicodeRegex::UnicodeRegex(const std::string& pattern) : impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // DOLLAR_ENDONLY: `$` means the end of the text, as in the ECMAScript and Rust regexes the
  // patterns were written for, not "before a final newline".
  impl_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &error, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw std::invalid_argument("bad regex at offset " + std::to_string(offset) + ": " +
                                reinterpret_cast<const char*>(message));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

UnicodeRegex::~UnicodeRegex() {
  pcre2_code_free(impl_->code);
}

std::vector<std::pair<size_t, size_t>> UnicodeRegex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  // Owned, so that an interruption point's exception (util/interrupt.h) does not leak it.
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> owned(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  pcre2_match_data* data = owned.get();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  pcre2_match_context* context = impl_->jit ? thread_jit_stack().context : nullptr;
  size_t start = 0;
  // PCRE2 validates the whole subject on every call unless told not to: once is enough
  // (checking again per match would make splitting quadratic).
  uint32_t options = 0;
  while (start <= text.size()) {
    interruption_point();
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, options, data, context);
    options = PCRE2_NO_UTF_CHECK;
    if (rc == PCRE2_ERROR_NOMATCH ||
        (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21)) {
      break;  // invalid UTF-8 matches nothing
    }
    if (rc < 0) {
      throw std::runtime_error("regex match failed (PCRE2 error " + std::to_string(rc) + ")");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
    const size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      start = end;
    } else {
      // Step over one whole character so an empty match cannot loop.
      if (begin >= text.size()) break;
      start = begin + utf8_sequence_length(static_cast<unsigned char>(text[begin]));
    }
  }
  return matches;
}

namespace {

// Decodes one UTF-8 sequence at s[i]; returns its length, or 0 when it is invalid (overlong,
// surrogate, beyond U+10FFFF, truncated or a stray continuation byte).
size_t valid_sequence_length(std::string_view s, size_t i, uint32_t* cp_out = nullptr) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const size_t n = utf8_sequence_length(b0);
  if (n == 1) {
    if (b0 >= 0x80) return 0;
    if (cp_out) *cp_out = b0;
    return 1;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  if (cp_out) *cp_out = cp;
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = valid_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string sanitize_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  for (size_t i = 0; i < text.size();) {
    const size_t n = valid_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

std::string codepoint_to_utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

}  // namespace pagedllm

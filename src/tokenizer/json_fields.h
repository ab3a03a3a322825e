// Checked reads of integer fields from untrusted JSON: nlohmann's get<int>() converts floats
// and out-of-range numbers with undefined behaviour.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace pagedllm {

inline int64_t json_integer(const nlohmann::json& value, int64_t lo, int64_t hi, const char* what) {
  if (!value.is_number_integer())
    throw std::invalid_argument(std::string(what) + " must be an integer");
  const int64_t v = value.is_number_unsigned() && value.get<uint64_t>() > INT64_MAX
                        ? hi + 1
                        : value.get<int64_t>();
  if (v < lo || v > hi) throw std::invalid_argument(std::string(what) + " is out of range");
  return v;
}

// spec[key] as an integer in [lo, hi], or `fallback` when absent.
inline int64_t json_integer_or(const nlohmann::json& spec, const char* key, int64_t fallback,
                               int64_t lo, int64_t hi) {
  if (!spec.contains(key)) return fallback;
  return json_integer(spec.at(key), lo, hi, key);
}

}  // namespace pagedllm

// Errors the HTTP API reports, in OpenAI's shape:
//   {"error": {"message": "...", "type": "BadRequestError", "param": "temperature", "code": 400}}
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace pagedllm::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, const std::string& message, std::string param = {})
      : std::runtime_error(message), status_(status), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string param_;
};

inline ApiError bad_request(const std::string& message, std::string param = {}) {
  return ApiError(400, message, std::move(param));
}

// vLLM's type names for each status (the openai client maps them to its exception classes).
std::string error_type(int status);
nlohmann::ordered_json error_json(int status, const std::string& message,
                                  const std::string& param = {});
inline nlohmann::ordered_json error_json(const ApiError& e) {
  return error_json(e.status(), e.what(), e.param());
}

}  // namespace pagedllm::server

#include "server/api_error.h"

namespace pagedllm::server {

std::string error_type(int status) {
  switch (status) {
    case 400:
      return "BadRequestError";
    case 401:
      return "AuthenticationError";
    case 403:
      return "PermissionDeniedError";
    case 404:
      return "NotFoundError";
    case 405:
      return "MethodNotAllowedError";
    case 413:
      return "RequestEntityTooLargeError";
    case 422:
      return "UnprocessableEntityError";
    case 429:
      return "RateLimitError";
    case 503:
      return "ServiceUnavailableError";
    default:
      return status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

nlohmann::ordered_json error_json(int status, const std::string& message,
                                  const std::string& param) {
  nlohmann::ordered_json error = {
      {"message", message},
      {"type", error_type(status)},
      {"param", param.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(param)},
      {"code", status}};
  return {{"error", std::move(error)}};
}

}  // namespace pagedllm::server

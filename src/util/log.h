// Timestamped log lines on stderr, one writer at a time: "INFO 11-22 10:04:05 [server] ...".
#pragma once

#include <string>

namespace pagedllm {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

void set_log_level(LogLevel level);
// Throws std::invalid_argument for a name other than debug, info, warning, error.
LogLevel parse_log_level(const std::string& name);
void log(LogLevel level, const std::string& source, const std::string& message);
inline void log_info(const std::string& source, const std::string& message) {
  log(LogLevel::kInfo, source, message);
}
inline void log_warning(const std::string& source, const std::string& message) {
  log(LogLevel::kWarning, source, message);
}

}  // namespace pagedllm

// oneOf needs exactly one branch to match. The grammar can only offer alternatives, so oneOf is
// compiled as anyOf over branches that provably exclude each other; the common "one of these
// required properties" form is rewritten into such branches.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagedllm::structured {

// The key, inside a schema, listing property names an object must not have (set by the
// rewrite below; the compiler honours it).
inline constexpr const char* kForbiddenKey = "x-pagedllm-forbidden";

// Branches (their $refs already inlined) that exclude each other and match what oneOf over
// `branches` matches; branches that can never match alone are dropped. Returns false, with
// `why`, when exclusivity cannot be shown.
bool exclusive_branches(const std::vector<nlohmann::ordered_json>& branches,
                        std::vector<nlohmann::ordered_json>& out, std::string& why);

}  // namespace pagedllm::structured

#include "model/forward_inputs.h"

namespace pagedllm {

const char* to_string(AttentionState state) {
  switch (state) {
    case AttentionState::kPrefillNoCache:
      return "PrefillNoCache";
    case AttentionState::kPrefillCacheHit:
      return "PrefillCacheHit";
    case AttentionState::kDecodeOnly:
      return "DecodeOnly";
    case AttentionState::kChunkedPrefill:
      return "ChunkedPrefill";
  }
  return "unknown";
}

}  // namespace pagedllm

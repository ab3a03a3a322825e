// The interface every model implements: logits for the tokens that need them, nothing about
// scheduling. The model reads the inputs and the paged KV cache; it never decides who runs.
#pragma once

#include <span>

#include "worker/attention_metadata.h"

namespace pagedllm {

class Model {
 public:
  virtual ~Model() = default;
  virtual int vocab_size() const = 0;
  // Writes the logits of the token at inputs.logits_indices[i] to row i of `logits`
  // ([num_reqs, vocab_size], row-major). Call only after prepare_inputs() for the same step.
  virtual void forward(const ModelInputs& inputs, std::span<float> logits) = 0;
};

}  // namespace pagedllm

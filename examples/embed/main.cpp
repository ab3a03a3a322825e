// Greedy generation through the public API: ./embed MODEL.gguf
#include <pagedllm/engine.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: embed MODEL.gguf\n";
    return 2;
  }
  pagedllm::EngineOptions options;
  options.model = argv[1];
  options.max_model_len = 256;
  pagedllm::Engine engine(options);
  pagedllm::SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = 12;
  const auto outputs = engine.generate(std::vector<std::string>{""}, params);
  std::cout << outputs[0].text << "\n";
  return 0;
}

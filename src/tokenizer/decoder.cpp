#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"

namespace pagedllm {

namespace {

std::string strip(std::string s, const std::string& what, int start, int stop) {
  for (int i = 0; i < start && s.compare(0, what.size(), what) == 0; ++i) s.erase(0, what.size());
  for (int i = 0; i < stop && s.size() >= what.size() &&
                  s.compare(s.size() - what.size(), what.size(), what) == 0;
       ++i) {
    s.erase(s.size() - what.size());
  }
  return s;
}

}  // namespace

Decoder::Decoder(const nlohmann::json& spec) {
  if (!spec.is_null()) add(spec, false);
}

Decoder Decoder::byte_level() {
  Decoder d;
  d.steps_.push_back({Step::kByteLevel, nullptr, "", 0, 0, false});
  return d;
}

void Decoder::add(const nlohmann::json& spec, bool after_fuse) {
  const std::string type = spec.at("type").get<std::string>();
  if (type == "Sequence") {
    bool fused = after_fuse;
    for (const auto& s : spec.at("decoders")) {
      add(s, fused);
      fused = fused || s.at("type") == "Fuse";
    }
  } else if (type == "ByteLevel") {
    steps_.push_back({Step::kByteLevel, nullptr, "", 0, 0, false});
  } else if (type == "Replace") {
    steps_.push_back({Step::kReplace, std::make_shared<ReplacePattern>(spec), "", 0, 0, false});
  } else if (type == "ByteFallback") {
    steps_.push_back({Step::kByteFallback, nullptr, "", 0, 0, false});
  } else if (type == "Fuse") {
    // Joining tokens changes nothing when they are emitted one after another.
  } else if (type == "Strip") {
    steps_.push_back({Step::kStrip, nullptr, spec.value("content", std::string(" ")),
                      static_cast<int>(json_integer_or(spec, "start", 0, 0, 1 << 16)),
                      static_cast<int>(json_integer_or(spec, "stop", 0, 0, 1 << 16)), after_fuse});
  } else if (type == "Metaspace") {
    std::string scheme = spec.value("prepend_scheme", std::string());
    if (scheme.empty()) scheme = spec.value("add_prefix_space", true) ? "always" : "never";
    steps_.push_back({Step::kMetaspace, nullptr, spec.value("replacement", "\xE2\x96\x81"), 0, 0,
                      scheme != "never"});
  } else {
    throw std::invalid_argument("unsupported decoder type '" + type + "'");
  }
}

std::string Decoder::decode(const std::string& piece, bool text_start) const {
  std::string s = piece;
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::kByteLevel:
        s = byte_level_decode(s);
        break;
      case Step::kReplace:
        s = step.replace->apply(s);
        break;
      case Step::kByteFallback:
        if (const int b = byte_token_value(s); b >= 0) s = std::string(1, static_cast<char>(b));
        break;
      case Step::kMetaspace: {
        std::string out;
        for (size_t i = 0; i < s.size();) {
          if (s.compare(i, step.content.size(), step.content) == 0) {
            out += ' ';
            i += step.content.size();
          } else {
            out += s[i++];
          }
        }
        if (step.text_start_only && text_start && !out.empty() && out[0] == ' ') out.erase(0, 1);
        s = std::move(out);
        break;
      }
      case Step::kStrip:
        if (!step.text_start_only) {
          s = strip(s, step.content, step.start, step.stop);
        } else if (text_start) {
          s = strip(s, step.content, step.start, 0);
        }
        break;
    }
  }
  return s;
}

}  // namespace pagedllm

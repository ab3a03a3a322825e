#include "server/openai_request.h"

#include <cmath>
#include <limits>
#include <set>

#include "server/api_error.h"
#include "server/structured_request.h"

namespace pagedllm::server {

namespace {

using json = nlohmann::ordered_json;

std::string number_text(double v) {
  json j = v;
  return j.dump();
}

// Reads optional fields of one JSON object, remembering which names were looked at so that the
// rest can be reported as unknown.
class Fields {
 public:
  explicit Fields(const json& body) : body_(body) {
    if (!body.is_object()) throw bad_request("the request body must be a JSON object");
  }

  // The field, or nullptr when absent or null.
  const json* find(const std::string& name) {
    seen_.insert(name);
    auto it = body_.find(name);
    return it == body_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (v->is_number_integer()) {
      if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
        throw out_of_range(name, lo, hi);
      const int64_t i = v->get<int64_t>();
      if (i < lo || i > hi) throw out_of_range(name, lo, hi);
      return i;
    }
    // 16.0 is accepted as 16, as pydantic does.
    if (!v->is_number_float()) throw bad_request(name + " must be an integer", name);
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d))
      throw bad_request(name + " must be an integer", name);
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      throw out_of_range(name, lo, hi);
    return static_cast<int64_t>(d);
  }

  std::optional<double> number(const std::string& name, double lo, double hi) {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw bad_request(name + " must be a number", name);
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi))
      throw bad_request(name + " must be in [" + number_text(lo) + ", " + number_text(hi) +
                            "], got " + number_text(d) + ".",
                        name);
    return d;
  }

  std::optional<bool> boolean(const std::string& name) {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw bad_request(name + " must be a boolean", name);
    return v->get<bool>();
  }

  std::optional<std::string> string(const std::string& name) {
    const json* v = find(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw bad_request(name + " must be a string", name);
    return v->get<std::string>();
  }

  const json& body() const { return body_; }

  std::vector<std::string> unknown() const {
    std::vector<std::string> names;
    for (auto it = body_.begin(); it != body_.end(); ++it)
      if (!seen_.count(it.key())) names.push_back(it.key());
    return names;
  }

 private:
  static ApiError out_of_range(const std::string& name, int64_t lo, int64_t hi) {
    std::string range = "[" + std::to_string(lo) + ", ";
    range += hi == std::numeric_limits<int64_t>::max() ? "inf)" : std::to_string(hi) + "]";
    return bad_request(name + " must be an integer in " + range, name);
  }

  const json& body_;
  std::set<std::string> seen_;
};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int kMaxChoices = 128;
constexpr int kMaxLogprobs = 20;

std::vector<int32_t> token_id_array(const json& array, const std::string& param) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (const json& t : array) {
    if (!t.is_number_integer()) throw bad_request(param + " must hold integer token ids", param);
    const int64_t id = t.is_number_unsigned() && t.get<uint64_t>() > uint64_t(kInt32Max)
                           ? kInt32Max
                           : t.get<int64_t>();
    if (id < 0 || id >= kInt32Max)
      throw bad_request("token id " + t.dump() + " is out of range", param);
    ids.push_back(static_cast<int32_t>(id));
  }
  return ids;
}

std::vector<std::string> parse_stop(Fields& f) {
  const json* v = f.find("stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) throw bad_request("stop must be a string or an array of strings", "stop");
  std::vector<std::string> stops;
  for (const json& s : *v) {
    if (!s.is_string()) throw bad_request("stop must be a string or an array of strings", "stop");
    if (!s.get_ref<const std::string&>().empty()) stops.push_back(s.get<std::string>());
  }
  return stops;
}

// The fields completions and chat share. max_tokens is read by the caller (chat prefers
// max_completion_tokens).
void parse_generation_fields(Fields& f, GenerationRequest& r) {
  if (auto model = f.string("model")) r.model = *model;
  SamplingParams& p = r.params;
  if (auto v = f.number("temperature", 0.0, 2.0)) p.temperature = static_cast<float>(*v);
  if (auto v = f.number("top_p", 0.0, 1.0)) {
    if (*v <= 0.0)
      throw bad_request("top_p must be in (0, 1], got " + number_text(*v) + ".", "top_p");
    p.top_p = static_cast<float>(*v);
  }
  if (auto v = f.integer("top_k", -1, kInt32Max)) p.top_k = static_cast<int>(*v);
  if (auto v = f.number("min_p", 0.0, 1.0)) p.min_p = static_cast<float>(*v);
  if (auto v = f.integer("seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max()))
    p.seed = static_cast<uint64_t>(*v);
  if (auto v = f.number("presence_penalty", -2.0, 2.0)) p.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2.0, 2.0))
    p.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.number("repetition_penalty", 0.0, 100.0)) {
    if (*v <= 0.0)
      throw bad_request("repetition_penalty must be greater than 0", "repetition_penalty");
    p.repetition_penalty = static_cast<float>(*v);
  }
  if (auto v = f.integer("min_tokens", 0, kInt32Max)) p.min_tokens = static_cast<int>(*v);
  if (auto v = f.boolean("ignore_eos")) p.ignore_eos = *v;
  if (const json* v = f.find("stop_token_ids")) {
    if (!v->is_array()) throw bad_request("stop_token_ids must be an array", "stop_token_ids");
    p.stop_token_ids = token_id_array(*v, "stop_token_ids");
  }
  r.stop = parse_stop(f);
  if (auto v = f.boolean("include_stop_str_in_output")) r.include_stop_str_in_output = *v;
  if (auto v = f.boolean("skip_special_tokens")) r.skip_special_tokens = *v;
  if (auto v = f.integer("n", 1, kMaxChoices)) r.n = static_cast<int>(*v);
  r.best_of = r.n;
  if (auto v = f.integer("best_of", 1, kMaxChoices)) {
    if (*v < r.n) throw bad_request("best_of must be greater than or equal to n", "best_of");
    r.best_of = static_cast<int>(*v);
  }
  if (auto v = f.boolean("stream")) r.stream = *v;
  if (const json* v = f.find("stream_options")) {
    if (!v->is_object()) throw bad_request("stream_options must be an object", "stream_options");
    if (!r.stream)
      throw bad_request("stream_options is only allowed with stream", "stream_options");
    auto it = v->find("include_usage");
    if (it != v->end() && !it->is_null()) {
      if (!it->is_boolean())
        throw bad_request("stream_options.include_usage must be a boolean", "stream_options");
      r.include_usage = it->get<bool>();
    }
  }
  if (r.stream && r.best_of > r.n)
    throw bad_request("best_of must equal n when streaming", "best_of");
  f.find("user");  // accepted, not used
  for (const std::string& name : structured_output_field_names()) f.find(name);
  StructuredOutputRequest structured = parse_structured_output_fields(f.body());
  p.structured_outputs = std::move(structured.outputs);
  r.structured_param = std::move(structured.param);
}

void read_max_tokens(Fields& f, GenerationRequest& r, const std::string& name) {
  if (auto v = f.integer(name, 1, kInt32Max)) {
    r.params.max_tokens = static_cast<int>(*v);
    r.max_tokens_given = true;
  }
}

void check_min_tokens(const GenerationRequest& r) {
  if (r.max_tokens_given && r.params.min_tokens > r.params.max_tokens)
    throw bad_request("min_tokens must be less than or equal to max_tokens", "min_tokens");
}

std::vector<Prompt> parse_prompts(const json* v) {
  if (!v) throw bad_request("prompt is required", "prompt");
  if (v->is_string()) return {v->get<std::string>()};
  const std::string wrong =
      "prompt must be a string, an array of strings, an array of token ids or an array of "
      "arrays of token ids";
  if (!v->is_array() || v->empty()) throw bad_request(wrong, "prompt");
  std::vector<Prompt> prompts;
  if ((*v)[0].is_number()) {
    prompts.push_back(token_id_array(*v, "prompt"));
    return prompts;
  }
  for (const json& p : *v) {
    if (p.is_string()) {
      prompts.push_back(p.get<std::string>());
    } else if (p.is_array() && !p.empty()) {
      prompts.push_back(token_id_array(p, "prompt"));
    } else {
      throw bad_request(wrong, "prompt");
    }
  }
  return prompts;
}

// A content part's type; vLLM's shorthand parts ({"image_url": "..."}, {"text": "..."}) have none.
std::string part_type(const json& part) {
  auto it = part.find("type");
  if (it == part.end() || it->is_null()) {
    if (part.contains("image_url")) return "image_url";
    return part.contains("text") ? "text" : "";
  }
  if (!it->is_string()) throw bad_request("a content part's type must be a string", "messages");
  return it->get<std::string>();
}

// {"image_url": {"url": ..., "detail": ...}} or the string shorthand {"image_url": "..."}.
std::string image_url_of(const json& part) {
  auto it = part.find("image_url");
  const json* url = it == part.end() ? nullptr : &*it;
  if (url && url->is_object()) {
    auto u = url->find("url");
    url = u == url->end() ? nullptr : &*u;
  }
  if (!url || !url->is_string())
    throw bad_request("an image_url part needs image_url.url as a string", "messages");
  return url->get<std::string>();
}

// Text-only content as one string (text parts joined by newlines), as before images: templates
// that expect a string keep working. Content with images stays a list of parts, in the form HF
// templates test for: {"type": "text", "text": ...} and {"type": "image"}; the URLs are kept
// apart, in order.
json parse_content(const json& content, std::vector<std::string>& image_urls) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array())
    throw bad_request("message content must be a string or an array of parts", "messages");
  std::string text;
  json parts = json::array();
  bool has_image = false;
  for (const json& part : content) {
    if (!part.is_object()) throw bad_request("each content part must be an object", "messages");
    const std::string type = part_type(part);
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string())
        throw bad_request("a text part needs text as a string", "messages");
      if (!text.empty()) text += "\n";
      text += part["text"].get<std::string>();
      parts.push_back({{"type", "text"}, {"text", part["text"]}});
    } else if (type == "image_url") {
      image_urls.push_back(image_url_of(part));
      parts.push_back({{"type", "image"}});
      has_image = true;
    } else {
      throw bad_request(
          "content parts of type '" + type + "' are not supported (text and image_url are)",
          "messages");
    }
  }
  return has_image ? parts : json(text);
}

json parse_messages(const json* v, std::vector<std::string>& image_urls) {
  if (!v || !v->is_array() || v->empty())
    throw bad_request("messages must be a non-empty array", "messages");
  json messages = json::array();
  for (const json& m : *v) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      throw bad_request("each message must be an object with a string role", "messages");
    json message = m;
    if (m.contains("content")) message["content"] = parse_content(m["content"], image_urls);
    messages.push_back(std::move(message));
  }
  return messages;
}

// vLLM's mm_processor_kwargs: the image processor's min_pixels / max_pixels for this request.
ImageOptions parse_mm_processor_kwargs(Fields& f) {
  ImageOptions o;
  const json* v = f.find("mm_processor_kwargs");
  if (!v) return o;
  const std::string name = "mm_processor_kwargs";
  if (!v->is_object()) throw bad_request(name + " must be an object", name);
  Fields kwargs(*v);
  constexpr int64_t kMostPixels = int64_t{1} << 40;
  if (auto p = kwargs.integer("min_pixels", 1, kMostPixels)) o.min_pixels = *p;
  if (auto p = kwargs.integer("max_pixels", 1, kMostPixels)) o.max_pixels = *p;
  if (o.min_pixels > 0 && o.max_pixels > 0 && o.min_pixels > o.max_pixels)
    throw bad_request(name + ": min_pixels must not exceed max_pixels", name);
  if (auto unknown = kwargs.unknown(); !unknown.empty())
    throw bad_request(name + ": '" + unknown[0] + "' is not supported (min_pixels, max_pixels are)",
                      name);
  return o;
}

}  // namespace

json parse_json_body(const std::string& body) {
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw bad_request("the request body is not valid JSON");
  if (!doc.is_object()) throw bad_request("the request body must be a JSON object");
  return doc;
}

CompletionRequest parse_completion_request(const json& body) {
  Fields f(body);
  CompletionRequest r;
  parse_generation_fields(f, r);
  read_max_tokens(f, r, "max_tokens");
  check_min_tokens(r);
  r.prompts = parse_prompts(f.find("prompt"));
  if (auto v = f.boolean("echo")) r.echo = *v;
  if (auto v = f.integer("logprobs", 0, kMaxLogprobs)) r.top_logprobs = static_cast<int>(*v);
  if (auto v = f.boolean("add_special_tokens")) r.add_special_tokens = *v;
  if (f.find("suffix")) throw bad_request("suffix is not supported", "suffix");
  if (r.echo && r.top_logprobs)
    throw bad_request("echo with logprobs (prompt logprobs) is not supported", "echo");
  r.ignored = f.unknown();
  return r;
}

ChatRequest parse_chat_request(const json& body) {
  Fields f(body);
  ChatRequest r;
  parse_generation_fields(f, r);
  read_max_tokens(f, r, "max_tokens");
  read_max_tokens(f, r, "max_completion_tokens");  // the newer name wins
  check_min_tokens(r);
  r.messages = parse_messages(f.find("messages"), r.image_urls);
  r.image_options = parse_mm_processor_kwargs(f);
  const bool logprobs = f.boolean("logprobs").value_or(false);
  const auto top = f.integer("top_logprobs", 0, kMaxLogprobs);
  if (top && !logprobs)
    throw bad_request("top_logprobs requires logprobs to be true", "top_logprobs");
  if (logprobs) r.top_logprobs = static_cast<int>(top.value_or(0));
  if (const json* v = f.find("tools")) {
    check_tools(*v);
    r.tools = *v;
  }
  r.tool_choice = parse_tool_choice(f.find("tool_choice"), r.tools);
  if (auto v = f.boolean("parallel_tool_calls")) r.parallel_tool_calls = *v;
  if (r.params.structured_outputs && (r.tool_choice.mode == ToolChoice::Mode::kRequired ||
                                      r.tool_choice.mode == ToolChoice::Mode::kNamed)) {
    throw bad_request(
        "tool_choice " +
            std::string(r.tool_choice.mode == ToolChoice::Mode::kNamed ? "naming a function"
                                                                       : "\"required\"") +
            " cannot be combined with " + r.structured_param,
        "tool_choice");
  }
  if (const json* v = f.find("chat_template_kwargs")) {
    if (!v->is_object())
      throw bad_request("chat_template_kwargs must be an object", "chat_template_kwargs");
    r.template_kwargs = *v;
  }
  if (auto v = f.boolean("add_generation_prompt")) r.add_generation_prompt = *v;
  if (auto v = f.boolean("continue_final_message")) r.continue_final_message = *v;
  if (r.continue_final_message && r.add_generation_prompt && f.find("add_generation_prompt"))
    throw bad_request("continue_final_message and add_generation_prompt cannot both be true",
                      "continue_final_message");
  if (r.continue_final_message) r.add_generation_prompt = false;
  if (auto v = f.boolean("add_special_tokens")) r.add_special_tokens = *v;
  r.ignored = f.unknown();
  return r;
}

TokenizeRequest parse_tokenize_request(const json& body) {
  Fields f(body);
  TokenizeRequest r;
  if (auto model = f.string("model")) r.model = *model;
  r.prompt = f.string("prompt");
  if (const json* m = f.find("messages")) {
    std::vector<std::string> image_urls;  // /tokenize counts the template's placeholders only
    r.messages = parse_messages(m, image_urls);
    r.add_special_tokens = false;
  }
  if (r.prompt.has_value() == !r.messages.is_null())
    throw bad_request("give either prompt or messages", "prompt");
  if (auto v = f.boolean("add_generation_prompt")) r.add_generation_prompt = *v;
  if (auto v = f.boolean("add_special_tokens")) r.add_special_tokens = *v;
  if (auto v = f.boolean("return_token_strs")) r.return_token_strs = *v;
  return r;
}

DetokenizeRequest parse_detokenize_request(const json& body) {
  Fields f(body);
  DetokenizeRequest r;
  if (auto model = f.string("model")) r.model = *model;
  const json* tokens = f.find("tokens");
  if (!tokens || !tokens->is_array()) throw bad_request("tokens must be an array", "tokens");
  r.tokens = token_id_array(*tokens, "tokens");
  return r;
}

}  // namespace pagedllm::server

// Images through `pagedllm serve` on the tiny random Qwen2-VL preset: data, http and file URLs,
// usage counting each image's tokens (from Python's transcription of HF's smart_resize), greedy
// output that repeats and matches `pagedllm generate --image`, and every bad image refused with
// 400 while the server keeps serving.
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/cli_runner.h"
#include "multimodal/reference.h"
#include "server/server_process.h"

namespace pagedllm::test {
namespace {

// PNGs and a JPEG written by PIL, each with its base64 and its image token count by HF's
// smart_resize (tests/reference/qwen2vl_reference.py) under the preset's pixel bounds.
const char* kWriteImages = R"PY(
import base64, json, struct, sys, zlib
import numpy as np
from PIL import Image
sys.path.insert(0, sys.argv[2])
from qwen2vl_reference import smart_resize
out, rng = sys.argv[1], np.random.default_rng(5)
images = {}
for name, (w, h) in {"wide.png": (120, 60), "tall.png": (50, 90), "big.jpg": (300, 200)}.items():
    path = out + "/" + name
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    rh, rw = smart_resize(h, w, 28, 3136, 28 * 28 * 128)
    images[name] = {"path": path, "tokens": (rh // 14) * (rw // 14) // 4,
                    "base64": base64.b64encode(open(path, "rb").read()).decode()}
# A decompression bomb: a valid header announcing 100000 x 100000 pixels, a few bytes of data.
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
bomb = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b""))
images["bomb.png"] = {"path": "", "tokens": 0, "base64": base64.b64encode(bomb).decode()}
print(json.dumps(images))
)PY";

ojson write_images(const std::string& dir) {
  const std::string script = temp_path("write_images.py");
  std::ofstream(script) << kWriteImages;
  const std::string cmd =
      "/usr/bin/python3 " + script + " " + dir + " " PAGEDLLM_SOURCE_DIR "/tests/reference";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) text.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << cmd;
  return ojson::parse(text);
}

ojson image_part(const std::string& url) {
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

ojson chat(ojson content, int max_tokens = 6) {
  return {{"messages", {{{"role", "user"}, {"content", std::move(content)}}}},
          {"max_tokens", max_tokens},
          {"temperature", 0}};
}

class ServerImages : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = temp_path("server-images");
    std::filesystem::create_directories(root_ + "/media");
    model_ = root_ + "/tiny-qwen2-vl";
    const CliResult made =
        run_cli("make-model --preset tiny-qwen2-vl --format safetensors --out " + model_);
    ASSERT_EQ(made.code, 0) << made.err;
    images_ = write_images(root_ + "/media");
    ASSERT_TRUE(images_.is_object());
    std::ofstream(root_ + "/media/broken.png", std::ios::binary)
        << images_["wide.png"]["base64"].get<std::string>().substr(0, 10);
    server_ = new ServerProcess("--model " + model_ +
                                " --threads 1 --max-model-len 160 --served-model-name vl "
                                "--limit-mm-per-prompt '{\"image\": 2}' "
                                "--allowed-media-domains 127.0.0.1 "
                                "--allowed-local-media-path " +
                                root_ + "/media");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static std::string data_url(const std::string& name) {
    const std::string type = name.ends_with(".jpg") ? "image/jpeg" : "image/png";
    return "data:" + type + ";base64," + images_[name]["base64"].get<std::string>();
  }
  void SetUp() override { ASSERT_NE(server_, nullptr) << "the server did not start"; }
  static int64_t tokens_of(const std::string& name) { return images_[name]["tokens"]; }
  // The prompt's tokens with one pad per image, as /tokenize renders the same messages.
  static int64_t text_tokens(const ojson& request) {
    const HttpReply r = post(*server_, "/tokenize", ojson{{"messages", request["messages"]}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json["count"];
  }
  static void expect_400(const ojson& request, const std::string& fragment) {
    const HttpReply r = post(*server_, "/v1/chat/completions", request);
    EXPECT_EQ(r.status, 400) << r.body;
    ASSERT_TRUE(r.json.is_object()) << r.body;
    EXPECT_EQ(r.json["error"]["type"], "BadRequestError");
    const std::string message = r.json["error"]["message"];
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }

  static inline std::string root_, model_;
  static inline ojson images_;
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(ServerImages, ADataUrlPngIsAnsweredAndUsageCountsItsTokens) {
  const ojson request =
      chat({{{"type", "text"}, {"text", "What is this?"}}, image_part(data_url("wide.png"))});
  const HttpReply r = post(*server_, "/v1/chat/completions", request);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], text_tokens(request) - 1 + tokens_of("wide.png"));
  EXPECT_EQ(r.json["usage"]["completion_tokens"], 6);
  EXPECT_GT(tokens_of("wide.png"), 1);
}

// The whole path through the server (chat template, data URL, decoding, preprocessing, encoder,
// placeholders, M-RoPE, language model) against tests/reference/qwen2vl_generate_reference.py,
// which transcribes HF's code in numpy + PIL and never calls pagedllm.
TEST_F(ServerImages, GreedyTextAndLogprobsEqualANumpyTranscriptionOfHf) {
  ojson request =
      chat({image_part(data_url("tall.png")), {{"type", "text"}, {"text", "Describe it."}}});
  request["logprobs"] = true;
  const HttpReply tokenized = post(*server_, "/tokenize", ojson{{"messages", request["messages"]}});
  ASSERT_EQ(tokenized.status, 200) << tokenized.body;
  const ojson reference =
      ojson::parse(generate_reference(ojson{{"model", model_},
                                            {"images", {images_["tall.png"]["path"]}},
                                            {"input_ids", tokenized.json["tokens"]},
                                            {"max_tokens", 6}}
                                          .dump())
                       .dump());

  const HttpReply r = post(*server_, "/v1/chat/completions", request);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], reference["prompt_ids"].size());
  const HttpReply words = post(*server_, "/detokenize", ojson{{"tokens", reference["tokens"]}});
  ASSERT_EQ(words.status, 200) << words.body;
  EXPECT_EQ(r.json["choices"][0]["message"]["content"], words.json["prompt"]);
  const ojson& content = r.json["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << r.body;
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(content[i]["logprob"].get<double>(), reference["logprobs"][i].get<double>(), 2e-3)
        << i;
}

TEST_F(ServerImages, TheSameRequestGivesTheSameGreedyTextBesideATextOnlyOne) {
  const ojson request = chat({image_part(data_url("tall.png")),
                              image_part(data_url("big.jpg")),
                              {{"type", "text"}, {"text", "compare"}}},
                             8);
  std::vector<std::thread> threads;
  HttpReply first, text_only;
  threads.emplace_back([&] { first = post(*server_, "/v1/chat/completions", request); });
  threads.emplace_back(
      [&] { text_only = post(*server_, "/v1/chat/completions", chat("no image here", 4)); });
  for (auto& t : threads) t.join();
  const HttpReply second = post(*server_, "/v1/chat/completions", request);
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(second.status, 200) << second.body;
  ASSERT_EQ(text_only.status, 200) << text_only.body;
  EXPECT_EQ(first.json["choices"][0]["message"]["content"],
            second.json["choices"][0]["message"]["content"]);
  EXPECT_EQ(first.json["usage"]["prompt_tokens"],
            text_tokens(request) - 2 + tokens_of("tall.png") + tokens_of("big.jpg"));
  EXPECT_EQ(text_only.json["usage"]["prompt_tokens"], text_tokens(chat("no image here")));
  // The encoder ran and the metrics say so.
  const HttpReply metrics = get(*server_, "/metrics");
  EXPECT_NE(metrics.body.find("pagedllm:encoder_images_total{model_name=\"vl\"} "),
            std::string::npos);
  EXPECT_EQ(metrics.body.find("pagedllm:encoder_images_total{model_name=\"vl\"} 0\n"),
            std::string::npos);
}

// The CLI builds the same prompt from --image and --prompt: the same tokens, the same text.
TEST_F(ServerImages, GenerateWithAnImageMatchesTheServer) {
  ojson request = chat({image_part(data_url("wide.png")), {{"type", "text"}, {"text", "hi"}}});
  request["ignore_eos"] = true;
  const HttpReply served = post(*server_, "/v1/chat/completions", request);
  ASSERT_EQ(served.status, 200) << served.body;
  const CliResult cli = run_cli("generate --model " + model_ + " --image " +
                                images_["wide.png"]["path"].get<std::string>() +
                                " --prompt hi --max-tokens 6 --temperature 0 --ignore-eos --json "
                                "--max-model-len 160 --threads 1");
  ASSERT_EQ(cli.code, 0) << cli.err;
  const ojson out = ojson::parse(cli.out);
  EXPECT_EQ(out["prompt_token_ids"].size(), served.json["usage"]["prompt_tokens"].get<size_t>());
  EXPECT_EQ(out["text"], served.json["choices"][0]["message"]["content"]);
}

// The official openai npm client (tests/node) sends a PNG it encoded itself, plain and streamed.
TEST_F(ServerImages, TheOpenAINodeClientSendsAnImage) {
  const std::string png = images_["wide.png"]["path"];
  const std::string cmd = "node " PAGEDLLM_SOURCE_DIR
                          "/tests/node/openai_image.mjs http://127.0.0.1:" +
                          std::to_string(server_->port()) + "/v1 vl " + png;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  const ojson r = ojson::parse(out);
  ojson request =
      chat({{{"type", "text"}, {"text", "Describe"}}, image_part(data_url("wide.png"))});
  request["ignore_eos"] = true;
  const HttpReply direct = post(*server_, "/v1/chat/completions", request);
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(r["text"], direct.json["choices"][0]["message"]["content"]);
  EXPECT_EQ(r["streamed"], r["text"]);
  EXPECT_EQ(r["usage"]["prompt_tokens"], text_tokens(request) - 1 + tokens_of("wide.png"));
  EXPECT_EQ(r["streamed_usage"], r["usage"]);
  EXPECT_EQ(r["error_status"], 400);
}

TEST_F(ServerImages, HttpAndFileUrlsAreRead) {
  httplib::Server images;
  const std::string png = images_["wide.png"]["path"];
  images.Get("/wide.png", [&](const httplib::Request&, httplib::Response& res) {
    std::ifstream in(png, std::ios::binary);
    res.set_content(std::string(std::istreambuf_iterator<char>(in), {}), "image/png");
  });
  const int port = images.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { images.listen_after_bind(); });
  while (!images.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  const HttpReply fetched = post(*server_, "/v1/chat/completions",
                                 chat({image_part(base + "/wide.png"), {{"text", "x"}}}));
  const HttpReply missing = post(*server_, "/v1/chat/completions",
                                 chat({image_part(base + "/none.png"), {{"text", "x"}}}));
  images.stop();
  thread.join();
  ASSERT_EQ(fetched.status, 200) << fetched.body;
  EXPECT_EQ(missing.status, 400) << missing.body;
  EXPECT_NE(missing.body.find("HTTP 404"), std::string::npos) << missing.body;
  // The string shorthand {"image_url": "..."} and a file inside the allowed directory.
  const HttpReply local = post(*server_, "/v1/chat/completions",
                               chat({{{"image_url", "file://" + png}}, {{"text", "x"}}}));
  ASSERT_EQ(local.status, 200) << local.body;
  EXPECT_EQ(local.json["usage"]["prompt_tokens"], fetched.json["usage"]["prompt_tokens"]);
}

TEST_F(ServerImages, BadImagesAreRefusedAndTheServerKeepsServing) {
  const ojson text = {{"type", "text"}, {"text", "x"}};
  expect_400(chat({image_part("data:image/png;base64,iVBORw0KGgo="), text}), "image 1: PNG");
  expect_400(chat({image_part("data:image/png;base64,AAAAAAAAAAAAAAAA"), text}),
             "unsupported format");
  expect_400(chat({image_part("data:image/png;base64,%%%"), text}), "image 1: data URL");
  expect_400(chat({image_part(data_url("bomb.png")), text}), "exceeds the limit");
  expect_400(chat({image_part("http://localhost:1/a.png"), text}),
             "which --allowed-media-domains does not list");
  expect_400(chat({image_part("ftp://example.com/a.png"), text}), "is not a data:");
  expect_400(chat({image_part("file:///etc/passwd"), text}), "outside the directory");
  expect_400(chat({image_part("file://" + root_ + "/media/broken.png"), text}), "image 1:");
  expect_400(chat({image_part(data_url("wide.png")), image_part(data_url("wide.png")),
                   image_part(data_url("wide.png")), text}),
             "At most 2 image(s)");
  // max_pixels large enough that the image's tokens overflow --max-model-len 160.
  ojson huge = chat({image_part(data_url("big.jpg")), text});
  huge["mm_processor_kwargs"] = {{"min_pixels", 28 * 28 * 4 * 200}, {"max_pixels", 28 * 28 * 800}};
  expect_400(huge, "maximum context length");
  ojson bad_kwargs = chat({image_part(data_url("big.jpg")), text});
  bad_kwargs["mm_processor_kwargs"] = {{"fps", 2}};
  expect_400(bad_kwargs, "'fps' is not supported");
  const HttpReply ok = post(*server_, "/v1/chat/completions", chat("still there?", 2));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// generate --image: a bad image, a text-only model, or images with token-id prompts are one
// line and exit 1.
TEST_F(ServerImages, GenerateRefusesBadImageInputsInOneLine) {
  const std::string flags = " --prompt hi --max-tokens 2 --max-model-len 160 --threads 1";
  const std::string png = images_["wide.png"]["path"];
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"generate --model " + model_ + " --image " + root_ + "/media/broken.png" + flags,
       "unsupported format"},
      {"generate --model " + stories_gguf() + " --image " + png + flags, "takes no images"},
      {"generate --model " + model_ + " --image " + png + " --prompt-ids 1,2", "--image goes with"},
  };
  for (const auto& [args, fragment] : cases) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("pagedllm: error: "), std::string::npos) << r.err;
  }
}

// --mmproj gives a GGUF language model its vision tower: the GGUF pair of the same preset gives
// the HF directory's tokens; without the projector the GGUF takes no images.
TEST_F(ServerImages, GenerateTakesTheProjectorOfAGgufWithMmproj) {
  const std::string lm = root_ + "/tiny-qwen2-vl.gguf", mmproj = root_ + "/mmproj.gguf";
  const CliResult made =
      run_cli("make-model --preset tiny-qwen2-vl --dtype f32 --out " + lm + " --mmproj " + mmproj);
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string flags = " --image " + images_["tall.png"]["path"].get<std::string>() +
                            " --prompt hi --max-tokens 6 --temperature 0 --ignore-eos --json "
                            "--max-model-len 160 --threads 1";
  const CliResult hf = run_cli("generate --model " + model_ + flags);
  const CliResult gguf = run_cli("generate --model " + lm + " --mmproj " + mmproj + flags);
  ASSERT_EQ(hf.code, 0) << hf.err;
  ASSERT_EQ(gguf.code, 0) << gguf.err;
  EXPECT_EQ(ojson::parse(gguf.out)["token_ids"], ojson::parse(hf.out)["token_ids"]);
  EXPECT_EQ(ojson::parse(gguf.out)["prompt_token_ids"], ojson::parse(hf.out)["prompt_token_ids"]);
  const CliResult without = run_cli("generate --model " + lm + flags);
  EXPECT_EQ(without.code, 1);
  EXPECT_NE(without.err.find("needs --mmproj"), std::string::npos) << without.err;
}

// The engine refuses an image over the encoder budget when the request is added: a 400 from
// the engine thread, and the next request is served.
TEST_F(ServerImages, AnImageOverTheEncoderBudgetIs400) {
  ServerProcess small("--model " + model_ +
                      " --threads 1 --max-model-len 160 --max-num-encoder-input-tokens 16 "
                      "--encoder-cache-size 16");
  const ojson text = {{"type", "text"}, {"text", "x"}};
  const HttpReply big =
      post(small, "/v1/chat/completions", chat({image_part(data_url("big.jpg")), text}));
  EXPECT_EQ(big.status, 400) << big.body;
  EXPECT_NE(big.body.find("exceeds the encoder budget"), std::string::npos) << big.body;
  const HttpReply fits =
      post(small, "/v1/chat/completions", chat({image_part(data_url("wide.png")), text}));
  EXPECT_EQ(fits.status, 200) << fits.body;
}

}  // namespace
}  // namespace pagedllm::test

// Data URLs as OpenAI clients send images: strict base64, a size limit before decoding.
#include "multimodal/data_url.h"

#include <gtest/gtest.h>

#include <string>

#include "multimodal/reference.h"

namespace pagedllm {
namespace {

std::string text_of(const std::vector<uint8_t>& bytes) {
  return {bytes.begin(), bytes.end()};
}

void expect_error(std::string_view url, const std::string& fragment, size_t max = 1 << 20) {
  try {
    parse_data_url(url, max);
    ADD_FAILURE() << "parsed " << url;
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DataUrl, DecodesBase64WithEachPadding) {
  EXPECT_EQ(text_of(decode_base64("TWFu", 10)), "Man");
  EXPECT_EQ(text_of(decode_base64("TWE=", 10)), "Ma");
  EXPECT_EQ(text_of(decode_base64("TQ==", 10)), "M");
  EXPECT_EQ(text_of(decode_base64("", 10)), "");
  EXPECT_EQ(decode_base64("+/+/", 10), (std::vector<uint8_t>{0xfb, 0xff, 0xbf}));
}

TEST(DataUrl, ReadsMediaTypeAndData) {
  const DataUrl url = parse_data_url("data:image/png;base64,TWFu");
  EXPECT_EQ(url.media_type, "image/png");
  EXPECT_EQ(text_of(url.data), "Man");
  EXPECT_EQ(parse_data_url("DATA:image/jpeg;name=x.jpg;BASE64,TQ==").media_type, "image/jpeg");
  EXPECT_EQ(parse_data_url("data:;base64,TQ==").media_type, "");
}

// Python's base64 module encodes a file.
std::string python_base64(const std::string& path) {
  const std::string cmd =
      "/usr/bin/python3 -c 'import base64, sys; "
      "sys.stdout.write(base64.b64encode(open(sys.argv[1], \"rb\").read()).decode())' " +
      path;
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0) << cmd;
  return out;
}

TEST(DataUrl, AnImageEncodedByPythonDecodesBack) {
  const std::string dir = test::reference_dir("images");
  for (const char* file : {"rgba.png", "rgb.jpg", "palette.gif"}) {  // 3 sizes mod 3
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = test::read_bytes(dir + "/" + file);
    const DataUrl url = parse_data_url("data:image/png;base64," + python_base64(dir + "/" + file));
    EXPECT_EQ(url.data, bytes);
    EXPECT_NO_THROW(decode_image(url.data));
  }
}

TEST(DataUrl, MalformedUrlsAreRefusedNamingTheProblem) {
  expect_error("http://example.com/a.png", "not a data URL");
  expect_error("data:image/png;base64", "no ','");
  expect_error("data:image/png,TWFu", "only base64");
  expect_error("data:image/png;base64,TWF", "multiple of 4");
  expect_error("data:image/png;base64,TW-u", "invalid base64 character at offset 2");
  expect_error("data:image/png;base64,TQ==TQ==", "invalid base64 character");
  expect_error("data:image/png;base64,TW u", "invalid base64 character");
  expect_error("data:image/png;base64,TWFuTWFu", "exceed the limit", 5);
}

TEST(DataUrl, OversizedPayloadIsRefusedBeforeDecoding) {
  // 40 MB of 'A's would decode to 30 MB; the length alone refuses it, whatever the content.
  std::string url = "data:image/png;base64," + std::string(40 << 20, 'A');
  url[30] = '!';
  expect_error(url, "exceed the limit", kDefaultMaxDataUrlBytes);
}

}  // namespace
}  // namespace pagedllm

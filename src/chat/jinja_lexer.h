// Splits a Jinja template into text and tags, applying whitespace control as Hugging Face
// configures Jinja2 (trim_blocks, lstrip_blocks, "-" and "+" markers, no trailing newline), and
// cuts tag contents into expression tokens.
#pragma once

#include <string>
#include <vector>

namespace pagedllm::jinja {

struct Segment {
  enum Kind { kText, kExpression, kStatement } kind;
  std::string content;  // text, or the tag's inside without delimiters and markers
  int line = 1;
};

std::vector<Segment> split_template(const std::string& source);

struct Token {
  enum Kind { kName, kInt, kFloat, kString, kOperator, kEnd } kind;
  std::string text;
};

// Throws TemplateError for an unterminated string or an unknown character.
std::vector<Token> lex_expression(const std::string& content, int line);

}  // namespace pagedllm::jinja

#include "tokenizer/added_tokens.h"

#include <algorithm>
#include <cctype>

namespace pagedllm {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u >= 0x80 || std::isalnum(u) || c == '_';
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    by_id_.emplace(tokens_[i].id, i);
    if (!tokens_[i].content.empty()) {
      by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
    }
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

const AddedToken* AddedTokenMatcher::find(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::split(std::string_view text,
                                                                 bool parse_special) const {
  std::vector<Segment> out;
  size_t run_start = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    for (size_t k : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const AddedToken& t = tokens_[k];
      if (t.special && !parse_special) continue;
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      if (t.single_word) {
        const size_t end = i + t.content.size();
        if ((i > 0 && is_word_byte(text[i - 1])) ||
            (end < text.size() && is_word_byte(text[end]))) {
          continue;
        }
      }
      hit = &t;
      break;
    }
    if (!hit) {
      ++i;
      continue;
    }
    size_t run_end = i;
    if (hit->lstrip) {
      while (run_end > run_start && is_space(text[run_end - 1])) --run_end;
    }
    if (run_end > run_start) out.push_back({text.substr(run_start, run_end - run_start), -1});
    out.push_back({{}, hit->id});
    i += hit->content.size();
    if (hit->rstrip) {
      while (i < text.size() && is_space(text[i])) ++i;
    }
    run_start = i;
  }
  if (run_start < text.size()) out.push_back({text.substr(run_start), -1});
  return out;
}

}  // namespace pagedllm

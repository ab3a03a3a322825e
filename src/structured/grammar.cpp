#include "structured/grammar.h"

#include <algorithm>

namespace pagedllm::structured {

namespace {
constexpr uint32_t kMaxCodePoint = 0x10FFFF;
}

void CodePointSet::add(uint32_t lo, uint32_t hi) {
  if (lo > hi) return;
  hi = std::min(hi, kMaxCodePoint);
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges_) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
}

void CodePointSet::add(const CodePointSet& other) {
  for (const CodePointRange& r : other.ranges_) add(r.lo, r.hi);
}

CodePointSet CodePointSet::complement() const {
  CodePointSet out;
  uint32_t next = 0;
  for (const CodePointRange& r : ranges_) {
    if (r.lo > next) out.ranges_.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.ranges_.push_back({next, kMaxCodePoint});
  return out;
}

CodePointSet CodePointSet::minus(const CodePointSet& other) const {
  CodePointSet keep = other.complement();
  CodePointSet out;
  for (const CodePointRange& a : ranges_) {
    for (const CodePointRange& b : keep.ranges_) {
      const uint32_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
      if (lo <= hi) out.ranges_.push_back({lo, hi});
    }
  }
  return out;
}

bool CodePointSet::contains(uint32_t cp) const {
  for (const CodePointRange& r : ranges_) {
    if (cp >= r.lo && cp <= r.hi) return true;
  }
  return false;
}

int32_t Grammar::add(Expr e) {
  exprs_.push_back(std::move(e));
  return static_cast<int32_t>(exprs_.size() - 1);
}

int32_t Grammar::nothing() {
  Expr e;
  e.kind = ExprKind::kNothing;
  return add(std::move(e));
}

int32_t Grammar::byte_range(uint8_t lo, uint8_t hi) {
  Expr e;
  e.kind = ExprKind::kBytes;
  e.lo = lo;
  e.hi = hi;
  return add(std::move(e));
}

int32_t Grammar::literal(std::string_view bytes) {
  std::vector<int32_t> kids;
  for (char c : bytes) {
    kids.push_back(byte_range(static_cast<uint8_t>(c), static_cast<uint8_t>(c)));
  }
  return seq(std::move(kids));
}

int32_t Grammar::chars(CodePointSet set) {
  if (set.empty()) return nothing();
  Expr e;
  e.kind = ExprKind::kChars;
  e.chars = std::move(set);
  return add(std::move(e));
}

int32_t Grammar::seq(std::vector<int32_t> kids) {
  if (kids.empty()) return empty();
  if (kids.size() == 1) return kids[0];
  Expr e;
  e.kind = ExprKind::kSeq;
  e.kids = std::move(kids);
  return add(std::move(e));
}

int32_t Grammar::alt(std::vector<int32_t> kids) {
  if (kids.empty()) return nothing();
  if (kids.size() == 1) return kids[0];
  Expr e;
  e.kind = ExprKind::kAlt;
  e.kids = std::move(kids);
  return add(std::move(e));
}

int32_t Grammar::repeat(int32_t kid, int32_t min, int32_t max) {
  if (max >= 0 && min > max) return nothing();
  if (min == 1 && max == 1) return kid;
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.min = min;
  e.max = max;
  e.kids = {kid};
  return add(std::move(e));
}

int32_t Grammar::ref(int32_t rule) {
  Expr e;
  e.kind = ExprKind::kRef;
  e.rule = rule;
  return add(std::move(e));
}

int32_t Grammar::json_chars(int32_t min, int32_t max) {
  if (max >= 0 && min > max) return nothing();
  Expr e;
  e.kind = ExprKind::kJsonChars;
  e.min = min;
  e.max = max;
  return add(std::move(e));
}

int32_t Grammar::declare_rule(const std::string& name) {
  const int32_t found = find_rule(name);
  if (found >= 0) return found;
  rules_.push_back({name, -1});
  return static_cast<int32_t>(rules_.size() - 1);
}

int32_t Grammar::find_rule(const std::string& name) const {
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (rules_[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

void Grammar::define(int32_t rule, int32_t body) {
  rules_[static_cast<size_t>(rule)].body = body;
}

int32_t Grammar::add_rule(const std::string& hint, int32_t body) {
  rules_.push_back({hint + "#" + std::to_string(rules_.size()), body});
  return static_cast<int32_t>(rules_.size() - 1);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int32_t next_utf8(std::string_view text, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  int len = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
  if (len == 0 || i + static_cast<size_t>(len) > text.size()) return -1;
  uint32_t cp = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (int k = 1; k < len; ++k) {
    const uint8_t b = byte(i + static_cast<size_t>(k));
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  i += static_cast<size_t>(len);
  return static_cast<int32_t>(cp);
}

}  // namespace pagedllm::structured

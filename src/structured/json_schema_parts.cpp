#include "structured/json_schema_parts.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace pagedllm::structured {

namespace {

int32_t digit(Grammar& g, char lo, char hi) {
  return g.byte_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
}

// Digit strings of a's length between a and b (same length, a <= b), leading zeros allowed.
int32_t same_length_range(Grammar& g, const std::string& a, const std::string& b) {
  if (a.empty()) return g.empty();
  if (a[0] == b[0]) {
    return g.seq({digit(g, a[0], a[0]), same_length_range(g, a.substr(1), b.substr(1))});
  }
  const size_t rest = a.size() - 1;
  std::vector<int32_t> alts;
  alts.push_back(
      g.seq({digit(g, a[0], a[0]), same_length_range(g, a.substr(1), std::string(rest, '9'))}));
  if (a[0] + 1 <= b[0] - 1) {
    alts.push_back(g.seq(
        {digit(g, static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)),
         g.repeat(digit(g, '0', '9'), static_cast<int32_t>(rest), static_cast<int32_t>(rest))}));
  }
  alts.push_back(
      g.seq({digit(g, b[0], b[0]), same_length_range(g, std::string(rest, '0'), b.substr(1))}));
  return g.alt(std::move(alts));
}

std::string nines(size_t n) {
  return std::string(n, '9');
}
std::string power_of_ten(size_t digits) {
  return "1" + std::string(digits - 1, '0');
}

// Non-negative integers in [a, b] (b absent: unbounded).
int32_t natural_range(Grammar& g, uint64_t a, std::optional<uint64_t> b) {
  const std::string sa = std::to_string(a);
  std::vector<int32_t> alts;
  if (!b) {
    alts.push_back(same_length_range(g, sa, nines(sa.size())));
    alts.push_back(g.seq(
        {digit(g, '1', '9'), g.repeat(digit(g, '0', '9'), static_cast<int32_t>(sa.size()), -1)}));
    return g.alt(std::move(alts));
  }
  if (a > *b) return g.nothing();
  const std::string sb = std::to_string(*b);
  if (sa.size() == sb.size()) return same_length_range(g, sa, sb);
  alts.push_back(same_length_range(g, sa, nines(sa.size())));
  for (size_t len = sa.size() + 1; len < sb.size(); ++len) {
    alts.push_back(same_length_range(g, power_of_ten(len), nines(len)));
  }
  alts.push_back(same_length_range(g, power_of_ten(sb.size()), sb));
  return g.alt(std::move(alts));
}

int32_t hex(Grammar& g) {
  return g.alt({g.byte_range('0', '9'), g.byte_range('a', 'f'), g.byte_range('A', 'F')});
}

// What leaves the declared names behind, the same at every node of their trie (so the
// automaton compiler makes each a rule of its own, called from every node): a character
// outside ASCII, or an escape, then the rest of any name.
struct KeyTails {
  int32_t non_ascii;  // a character past U+007F, then free text
  int32_t escape;     // an escape, then free text
  int32_t free_tail;  // free text, then the closing quote
};

KeyTails key_tails(Grammar& g) {
  KeyTails t;
  t.free_tail = g.seq({g.json_chars(0, -1), g.literal("\"")});
  CodePointSet non_ascii;
  non_ascii.add(0x80, 0x10FFFF);
  t.non_ascii = g.seq({g.chars(non_ascii), t.free_tail});
  CodePointSet escaped;
  for (char c : std::string("\"/\\bfnrt"))
    escaped.add(static_cast<uint8_t>(c), static_cast<uint8_t>(c));
  t.escape = g.seq({g.literal("\\"),
                    g.alt({g.chars(escaped), g.seq({g.literal("u"), g.repeat(hex(g), 4, 4)})}),
                    t.free_tail});
  return t;
}

// Names in [begin, end) share their first `depth` bytes: what may follow that prefix.
int32_t key_trie(Grammar& g, const std::vector<std::string>& names, size_t begin, size_t end,
                 size_t depth, const KeyTails& tails) {
  std::vector<int32_t> alts;
  bool is_name = false;
  CodePointSet others;  // ASCII characters that leave the names here
  others.add(0x20, 0x7F);
  CodePointSet excluded;
  excluded.add('"', '"');
  excluded.add('\\', '\\');
  for (size_t i = begin; i < end;) {
    if (names[i].size() == depth) {
      is_name = true;
      ++i;
      continue;
    }
    const auto byte = static_cast<uint8_t>(names[i][depth]);
    size_t j = i;
    while (j < end && names[j].size() > depth && static_cast<uint8_t>(names[j][depth]) == byte) {
      ++j;
    }
    alts.push_back(g.seq({g.byte_range(byte, byte), key_trie(g, names, i, j, depth + 1, tails)}));
    if (byte < 0x80) excluded.add(byte, byte);
    i = j;
  }
  if (!is_name) alts.push_back(g.literal("\""));
  // Any other character, or an escape, leaves the names behind. (A name's byte past ASCII is
  // one of its UTF-8 bytes, not a character: such names are still told apart by their bytes,
  // and a non-ASCII character that merely starts like one of them is taken by this tail too.)
  alts.push_back(g.seq({g.chars(others.minus(excluded)), tails.free_tail}));
  alts.push_back(tails.non_ascii);
  alts.push_back(tails.escape);
  return g.alt(std::move(alts));
}

uint64_t magnitude(int64_t v) {
  return v < 0 ? uint64_t(0) - static_cast<uint64_t>(v) : v;
}

}  // namespace

void schema_fail(const std::string& what, const std::string& ptr) {
  throw GrammarError(what + " at '" + (ptr.empty() ? "#" : "#" + ptr) + "'");
}

int32_t add_integer_range(Grammar& g, std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<int32_t> alts;
  // Non-negatives: [max(lo, 0), hi].
  if (!hi || *hi >= 0) {
    const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    std::optional<uint64_t> b;
    if (hi) b = static_cast<uint64_t>(*hi);
    alts.push_back(natural_range(g, a, b));
  }
  // Negatives: -[max(1, -hi), -lo].
  if (!lo || *lo < 0) {
    const uint64_t a = hi && *hi < 0 ? magnitude(*hi) : 1;
    std::optional<uint64_t> b;
    if (lo) b = magnitude(*lo);
    alts.push_back(g.seq({g.literal("-"), natural_range(g, a, b)}));
  }
  return g.alt(std::move(alts));
}

std::string format_regex(const std::string& format) {
  // Days per month, and 29 February in leap years only.
  static const std::string kLeapYear =
      R"((\d\d(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00))";
  static const std::string kDate =
      R"((\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|)"
      R"(02-(0[1-9]|1\d|2[0-8]))|)" +
      kLeapYear + "-02-29)";
  static const std::string kTime =
      R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))";
  static const std::string kLabel = R"([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)";
  static const std::string kOctet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  static const std::string kH16 = R"([0-9a-fA-F]{1,4})";
  static const std::string kIpv4 = "(" + kOctet + R"(\.){3})" + kOctet;
  static const std::string kLs32 = "(" + kH16 + ":" + kH16 + "|" + kIpv4 + ")";
  // RFC 3986's IPv6address, one alternative per position of "::".
  static const std::string kIpv6 =
      "((" + kH16 + ":){6}" + kLs32 + "|::(" + kH16 + ":){5}" + kLs32 + "|(" + kH16 + ")?::(" +
      kH16 + ":){4}" + kLs32 + "|((" + kH16 + ":){0,1}" + kH16 + ")?::(" + kH16 + ":){3}" + kLs32 +
      "|((" + kH16 + ":){0,2}" + kH16 + ")?::(" + kH16 + ":){2}" + kLs32 + "|((" + kH16 +
      ":){0,3}" + kH16 + ")?::" + kH16 + ":" + kLs32 + "|((" + kH16 + ":){0,4}" + kH16 +
      ")?::" + kLs32 + "|((" + kH16 + ":){0,5}" + kH16 + ")?::" + kH16 + "|((" + kH16 + ":){0,6}" +
      kH16 + ")?::)";
  // RFC 6570: literals, and {expressions} of an operator and variables with modifiers.
  static const std::string kPct = "%[0-9A-Fa-f]{2}";
  static const std::string kVarChar = "([A-Za-z0-9_]|" + kPct + ")";
  static const std::string kVarSpec = kVarChar + "(\\.?" + kVarChar + R"()*(:[1-9]\d{0,3}|\*)?)";
  static const std::string kUriTemplate = R"(([^\x00-\x20"'%<>\\^`{|}]|)" + kPct +
                                          R"(|\{[+#./;?&=,!@|]?)" + kVarSpec + "(," + kVarSpec +
                                          R"()*\})*)";
  static const std::map<std::string, std::string> kFormats = {
      {"date", kDate},
      {"time", kTime},
      // RFC 3339 allows a space in prose only; validators want the T.
      {"date-time", kDate + "[Tt]" + kTime},
      {"duration", R"(P(\d+W|(\d+Y)?(\d+M)?(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?))"},
      {"email", R"([a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@)" + kLabel + R"((\.)" + kLabel + ")*"},
      {"hostname", kLabel + R"((\.)" + kLabel + ")*"},
      {"ipv4", kIpv4},
      {"ipv6", kIpv6},
      {"uuid", R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"},
      {"uri", R"([a-zA-Z][a-zA-Z0-9+.\-]*:[^\s"\\<>^`{|}]*)"},
      // A relative reference's first segment has no ':' (it would read as a scheme).
      {"uri-reference", R"([a-zA-Z][a-zA-Z0-9+.\-]*:[^\s"\\<>^`{|}]*|)"
                        R"(([^\s"\\<>^`{|}:/?#]+)?([/?#][^\s"\\<>^`{|}]*)?)"},
      {"uri-template", kUriTemplate},
      {"json-pointer", R"((/([^~/]|~[01])*)*)"},
      {"relative-json-pointer", R"((0|[1-9]\d*)(#|(/([^~/]|~[01])*)*))"},
  };
  auto it = kFormats.find(format);
  return it == kFormats.end() ? "" : it->second;
}

// A JSON string that is none of `names` (written as nlohmann writes them).
int32_t add_key_other_than(Grammar& g, const std::vector<std::string>& names) {
  if (names.empty()) return g.seq({g.literal("\""), g.json_chars(0, -1), g.literal("\"")});
  std::vector<std::string> encoded;
  for (const std::string& n : names) {
    // The exclusion below recurses once per byte of a name.
    if (n.size() > 512) throw GrammarError("property name over 512 bytes");
    const std::string d = nlohmann::ordered_json(n).dump();
    encoded.push_back(d.substr(1, d.size() - 2));
  }
  std::sort(encoded.begin(), encoded.end());
  return g.seq({g.literal("\""), key_trie(g, encoded, 0, encoded.size(), 0, key_tails(g))});
}

int32_t add_json_literal(Grammar& g, const nlohmann::ordered_json& value, int32_t ws) {
  if (value.is_array()) {
    std::vector<int32_t> items = {g.literal("["), ws};
    for (size_t i = 0; i < value.size(); ++i) {
      if (i > 0) items.insert(items.end(), {ws, g.literal(","), ws});
      items.push_back(add_json_literal(g, value[i], ws));
    }
    items.insert(items.end(), {ws, g.literal("]")});
    return g.seq(std::move(items));
  }
  if (value.is_object()) {
    std::vector<int32_t> items = {g.literal("{"), ws};
    bool first = true;
    for (const auto& [key, v] : value.items()) {
      if (!first) items.insert(items.end(), {ws, g.literal(","), ws});
      first = false;
      items.insert(items.end(), {g.literal(nlohmann::ordered_json(key).dump()), ws, g.literal(":"),
                                 ws, add_json_literal(g, v, ws)});
    }
    items.insert(items.end(), {ws, g.literal("}")});
    return g.seq(std::move(items));
  }
  if (value.is_number()) {
    // 2 and 2.0 are the same value: an integral number may be written either way.
    const double v = value.get<double>();
    if (std::floor(v) == v && std::fabs(v) < 1e15) {
      const std::string whole = std::to_string(static_cast<int64_t>(v));
      const std::string sign = std::signbit(v) && v == 0 ? "-" : "";
      return g.alt({g.literal(sign + whole), g.literal(sign + whole + ".0")});
    }
  }
  return g.literal(value.dump());
}

}  // namespace pagedllm::structured

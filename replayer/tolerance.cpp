#include "replayer/tolerance.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace cusnap::replayer {
namespace {

Error bad(const std::string& spec, const std::string& why) {
  return Error(ErrorKind::kInvalidArgument, "--tolerance '" + spec + "': " + why);
}

bool parse_double(std::string_view text, double& out) {
  std::string copy(text);
  if (copy.empty()) return false;
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(out) && out >= 0;
}

unsigned width_bits(ElementType type) { return element_size(type) * 8; }

bool is_nan(ElementType type, uint64_t bits) {
  switch (type) {
    case ElementType::kF64:
      return (bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits << 12) != 0;
    case ElementType::kF32:
      return (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffffu) != 0;
    case ElementType::kF16:
      return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0;
    case ElementType::kBF16:
      return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu) != 0;
  }
  return false;
}

// Maps a sign-magnitude float bit pattern onto an unsigned integer in value order.
uint64_t ordered(ElementType type, uint64_t bits) {
  unsigned w = width_bits(type);
  uint64_t mask = w == 64 ? ~uint64_t{0} : (uint64_t{1} << w) - 1;
  uint64_t sign = uint64_t{1} << (w - 1);
  return (bits & sign) != 0 ? (~bits & mask) : (bits | sign);
}

uint64_t load(ElementType type, const uint8_t* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, element_size(type));  // little-endian hosts only, like the rest of cusnap
  return v;
}

}  // namespace

const char* element_type_name(ElementType type) {
  switch (type) {
    case ElementType::kF64:
      return "f64";
    case ElementType::kF32:
      return "f32";
    case ElementType::kF16:
      return "f16";
    case ElementType::kBF16:
      return "bf16";
  }
  return "?";
}

unsigned element_size(ElementType type) {
  switch (type) {
    case ElementType::kF64:
      return 8;
    case ElementType::kF32:
      return 4;
    case ElementType::kF16:
    case ElementType::kBF16:
      return 2;
  }
  return 1;
}

Expected<Tolerance> parse_tolerance(const std::string& spec) {
  Tolerance t;
  t.text = spec;
  std::string_view rest = spec;
  if (size_t eq = rest.find('=');
      eq != std::string_view::npos && rest.substr(0, 2) == "0x" && rest.find(':') > eq) {
    std::string_view digits = rest.substr(2, eq - 2);
    uint64_t address = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), address, 16);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return bad(spec, "the allocation address must be hexadecimal (0x...)");
    }
    t.allocation = address;
    rest = rest.substr(eq + 1);
  }
  size_t colon = rest.find(':');
  if (colon == std::string_view::npos) return bad(spec, "expected TYPE:CRITERIA (e.g. f32:ulp=4)");
  std::string_view type = rest.substr(0, colon);
  if (type == "f64")
    t.type = ElementType::kF64;
  else if (type == "f32")
    t.type = ElementType::kF32;
  else if (type == "f16")
    t.type = ElementType::kF16;
  else if (type == "bf16")
    t.type = ElementType::kBF16;
  else
    return bad(spec, "element type '" + std::string(type) + "' (f64, f32, f16 or bf16)");
  std::string_view criteria = rest.substr(colon + 1);
  if (criteria.empty()) return bad(spec, "no criterion (ulp=N, rel=X, abs=X)");
  while (!criteria.empty()) {
    size_t comma = criteria.find(',');
    std::string_view item = criteria.substr(0, comma);
    criteria = comma == std::string_view::npos ? std::string_view{} : criteria.substr(comma + 1);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return bad(spec, "criterion '" + std::string(item) + "' is not KEY=VALUE");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "ulp") {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
        return bad(spec, "ulp must be a non-negative integer");
      }
      t.ulp = n;
    } else if (key == "rel" || key == "abs") {
      double x = 0;
      if (!parse_double(value, x))
        return bad(spec, std::string(key) + " must be a non-negative number");
      (key == "rel" ? t.rel : t.abs) = x;
    } else {
      return bad(spec, "unknown criterion '" + std::string(key) + "' (ulp, rel, abs)");
    }
  }
  return t;
}

double element_value(ElementType type, uint64_t bits) {
  switch (type) {
    case ElementType::kF64:
      return std::bit_cast<double>(bits);
    case ElementType::kF32:
      return std::bit_cast<float>(static_cast<uint32_t>(bits));
    case ElementType::kBF16:
      return std::bit_cast<float>(static_cast<uint32_t>(bits << 16));
    case ElementType::kF16: {
      uint32_t sign = (bits >> 15) & 1, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
      double v;
      if (exponent == 0)
        v = std::ldexp(static_cast<double>(mantissa), -24);
      else if (exponent == 31)
        v = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
      else
        v = std::ldexp(static_cast<double>(mantissa | 0x400), static_cast<int>(exponent) - 25);
      return sign != 0 ? -v : v;
    }
  }
  return 0;
}

uint64_t ulp_distance(ElementType type, uint64_t a, uint64_t b) {
  if (is_nan(type, a) || is_nan(type, b)) {
    return is_nan(type, a) && is_nan(type, b) ? 0 : std::numeric_limits<uint64_t>::max();
  }
  uint64_t x = ordered(type, a), y = ordered(type, b);
  return x > y ? x - y : y - x;
}

ElementComparison compare_elements(const Tolerance& t, std::span<const uint8_t> expected,
                                   std::span<const uint8_t> actual, uint64_t address,
                                   uint64_t first_index, size_t keep) {
  ElementComparison out;
  const unsigned size = element_size(t.type);
  const size_t count = std::min(expected.size(), actual.size()) / size;
  out.elements = count;
  for (size_t i = 0; i < count; ++i) {
    uint64_t e = load(t.type, expected.data() + i * size);
    uint64_t a = load(t.type, actual.data() + i * size);
    if (e == a) continue;
    bool both_nan = is_nan(t.type, e) && is_nan(t.type, a);
    if (both_nan) continue;
    ++out.differing;
    ElementError err;
    err.address = address + i * size;
    err.index = first_index + i;
    err.expected = element_value(t.type, e);
    err.actual = element_value(t.type, a);
    err.ulp = ulp_distance(t.type, e, a);
    err.abs_error = std::isnan(err.expected) || std::isnan(err.actual)
                        ? std::numeric_limits<double>::infinity()
                        : std::fabs(err.actual - err.expected);
    bool within = err.expected == err.actual;  // +0 against -0
    if (t.ulp && err.ulp <= *t.ulp) within = true;
    if ((t.abs || t.rel) &&
        err.abs_error <= t.abs.value_or(0) + t.rel.value_or(0) * std::fabs(err.expected)) {
      within = true;
    }
    err.within = within;
    if (!within) ++out.over;
    out.worst.push_back(err);
    if (out.worst.size() > 4 * keep + 16) merge_comparison(out, ElementComparison{}, keep);
  }
  merge_comparison(out, ElementComparison{}, keep);
  return out;
}

void merge_comparison(ElementComparison& into, const ElementComparison& from, size_t keep) {
  into.elements += from.elements;
  into.differing += from.differing;
  into.over += from.over;
  into.worst.insert(into.worst.end(), from.worst.begin(), from.worst.end());
  // Outside the tolerance first, then by ULP distance, then by address (deterministic).
  std::sort(into.worst.begin(), into.worst.end(), [](const ElementError& x, const ElementError& y) {
    if (x.within != y.within) return !x.within;
    if (x.ulp != y.ulp) return x.ulp > y.ulp;
    return x.address < y.address;
  });
  if (into.worst.size() > keep) into.worst.resize(keep);
}

}  // namespace cusnap::replayer

// Element-wise comparison of float data for snapshot chunks (`cusnap replay --tolerance`).
//
// Syntax of one rule (docs/replay.md, "Tolerance"): `[0xADDR=]TYPE:CRITERION[,CRITERION...]`,
// TYPE one of f64, f32, f16, bf16, CRITERION `ulp=N`, `rel=X` or `abs=X`. Without an address the
// rule applies to every compared chunk; with one, to the chunks of the allocation (or module
// variable) whose captured base address is ADDR, and it takes precedence there.
//
// An element matches when its bits are equal, when both values are NaN, when its ULP distance
// (on the ordered integer representation, so -0 and +0 are 1 apart and the distance across
// zero counts every representable value between) is at most `ulp`, or when
// |actual - expected| <= abs + rel * |expected| (with either of abs/rel given; the other is 0).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "replayer/status.h"

namespace cusnap::replayer {

enum class ElementType : uint8_t { kF64, kF32, kF16, kBF16 };
const char* element_type_name(ElementType type);
unsigned element_size(ElementType type);

struct Tolerance {
  ElementType type = ElementType::kF32;
  std::optional<uint64_t> ulp;
  std::optional<double> rel;
  std::optional<double> abs;
  std::optional<uint64_t> allocation;  // captured base address; none: every chunk
  std::string text;                    // the rule as given
};

// Errors (kInvalidArgument) name the part of the rule that is wrong.
Expected<Tolerance> parse_tolerance(const std::string& spec);

struct ElementError {
  uint64_t address = 0;  // captured address of the element
  uint64_t index = 0;    // element index from the start of the allocation
  double expected = 0;
  double actual = 0;
  double abs_error = 0;  // |actual - expected| (infinite for NaN against a number)
  uint64_t ulp = 0;      // ULP distance (UINT64_MAX for NaN against a number)
  bool within = false;   // inside the tolerance
};

struct ElementComparison {
  uint64_t elements = 0;
  uint64_t differing = 0;           // bits differ (NaN against NaN counts as equal)
  uint64_t over = 0;                // outside the tolerance
  std::vector<ElementError> worst;  // the largest ULP distances, largest first
};

// Compares two equally long buffers of `type` elements; `address` is the captured address of
// the first byte, `first_index` its element index in its allocation. Keeps `keep` worst.
ElementComparison compare_elements(const Tolerance& tolerance, std::span<const uint8_t> expected,
                                   std::span<const uint8_t> actual, uint64_t address,
                                   uint64_t first_index, size_t keep);

// Merges `from` into `into` (counts added, worst lists merged and trimmed to `keep`).
void merge_comparison(ElementComparison& into, const ElementComparison& from, size_t keep);

// The value of element `bits` of `type` as a double (f16/bf16 converted exactly).
double element_value(ElementType type, uint64_t bits);
// ULP distance between two elements' bit patterns.
uint64_t ulp_distance(ElementType type, uint64_t a, uint64_t b);

}  // namespace cusnap::replayer

// Shared by the PTX kernel and the host: a struct passed to the kernel by value.
#pragma once

struct PolyParams {
  int n;         // elements
  float scale;   // applied to the polynomial value
  double bias;   // added after scaling (forces 8-byte alignment of the struct)
  int degree;    // highest power used, < kMaxCoefficients
  int reserved;  // explicit padding: the layout is identical on host and device
};

constexpr int kMaxCoefficients = 8;

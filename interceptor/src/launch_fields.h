// A kernel launch described as format::LaunchFields: the function's parameter layout looked up
// (learnt on first use), the parameters packed by it (or the `extra` buffer verbatim) and the
// attributes. One home for launches (record_launches.cpp) and kernel graph nodes (graphs.cpp),
// so a kernel node carries its parameter bytes and layout exactly as a launch record does.
#pragma once

#include <cstdint>

#include "cusnap/format/launch_record.h"
#include "generated_shim_api.h"

namespace cusnap::icpt {

struct Geometry {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared;
  CUstream stream;
};

// A non-owning callable reference: the launch path must not allocate.
class LaunchFieldsUse {
 public:
  template <class F>
  LaunchFieldsUse(F& f)  // NOLINT(google-explicit-constructor): built from lambdas at call sites
      : object_(&f), call_([](void* o, format::LaunchFields& fields, bool have_layout) {
          (*static_cast<F*>(o))(fields, have_layout);
        }) {}
  void operator()(format::LaunchFields& fields, bool have_layout) const {
    call_(object_, fields, have_layout);
  }

 private:
  void* object_;
  void (*call_)(void*, format::LaunchFields&, bool);
};

// Builds the fields of a launch of `f` and hands them to `use` (valid during the call only);
// `have_layout`: the layout is known (else kernelParams could not be packed).
void with_launch_fields(format::schema::Launch::Kind kind, CUfunction f, const Geometry& g,
                        void** kernel_params, void** extra, const CUlaunchAttribute* attributes,
                        unsigned attribute_count, bool cooperative, LaunchFieldsUse use);

}  // namespace cusnap::icpt

// A kernel-launch call record given as plain fields, for the capture's hottest path.
//
// Writer::append_launch() takes a LaunchFields, assigns the record's seq and launch ordinal under
// the writer's call lock and copies the fields (≈ 150–300 bytes) into the current call frame; the
// Cap'n Proto CallRecord is built from that copy later, on a compression worker, when the frame is
// sealed. The file is exactly what append_call() of the same record would have produced: readers
// never see the difference. This keeps message building off the application's thread.
//
// build_launch_record() fills a CallRecord builder from the same fields: the one encoding of a
// launch, used by the worker and by callers that need a message (e.g. records kept before the
// writer exists).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "cusnap/format/capture.capnp.h"  // generated from format/schema/capture.capnp

namespace cusnap::format {

struct LaunchParamSlot {  // schema::ParamSlot
  uint32_t offset = 0;
  uint32_t size = 0;
};

struct LaunchAttributeFields {  // schema::LaunchAttribute
  uint32_t id = 0;
  std::span<const uint8_t> value;  // the raw CUlaunchAttributeValue bytes
};

struct LaunchFields {
  static constexpr uint64_t kNoLayoutSeq = UINT64_MAX;

  // CallRecord's common fields (seq is the writer's).
  uint64_t thread_id = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t result = 0;
  std::string_view api_name;
  uint64_t context = 0;

  // schema::Launch (ordinal is the writer's).
  schema::Launch::Kind kind = schema::Launch::Kind::LAUNCH_KERNEL;
  uint64_t function = 0;
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t shared_bytes = 0;
  uint64_t stream = 0;
  bool cooperative = false;
  bool via_extra = false;
  std::string_view kernel_name;
  uint64_t layout_seq = kNoLayoutSeq;  // kNoLayoutSeq: not set
  bool has_layout = false;             // `layout` is known (possibly empty: no parameters)
  std::span<const LaunchParamSlot> layout;
  bool has_params = false;  // `params` was recorded (possibly empty)
  std::span<const uint8_t> params;
  std::span<const LaunchAttributeFields> attributes;
};

// Fills `record` (a fresh CallRecord root) from `fields`, leaving seq and ordinal at 0.
void build_launch_record(const LaunchFields& fields, schema::CallRecord::Builder record);
// Fills `launch` (a fresh Launch) from the launch part of `fields`: also the kernel of a graph
// node (GraphNode.kernel), which carries its parameters exactly as a launch record does.
void build_launch(const LaunchFields& fields, schema::Launch::Builder launch);

}  // namespace cusnap::format

// Contexts: created and destroyed, primary contexts retained/released/reset, and every change of
// the current context of a thread (set, push, pop).
#include <string>

#include "hooks.h"
#include "session.h"

namespace cusnap::icpt {
namespace {

using SetOp = schema::ContextSetCurrent::Op;
using PrimaryOp = schema::PrimaryContext::Op;

void record_set(CallScope& call, SetOp op, uint64_t context) {
  auto set = call.record().initContextSetCurrent();
  set.setOp(op);
  set.setContext(context);
  call.commit();
}

void record_primary(CallScope& call, PrimaryOp op, CUdevice device, uint64_t context = 0,
                    unsigned flags = 0) {
  auto primary = call.record().initPrimaryContext();
  primary.setOp(op);
  primary.setDevice(device);
  primary.setContext(context);
  primary.setFlags(flags);
  call.commit();
}

schema::ContextCreate::Builder begin_create(CallScope& call, CUresult result, CUcontext* pctx,
                                            unsigned flags, CUdevice dev) {
  auto create = call.record().initContextCreate();
  if (result == CUDA_SUCCESS && pctx != nullptr) create.setContext(handle_value(*pctx));
  create.setDevice(dev);
  create.setFlags(flags);
  return create;
}

}  // namespace

namespace hooks {

CUSNAP_POST_HOOK(cuCtxCreate_v2)
(CallScope& call, CUresult result, CUcontext* pctx, unsigned int flags, CUdevice dev) {
  begin_create(call, result, pctx, flags, dev);
  call.commit();
}

CUSNAP_POST_HOOK(cuCtxCreate_v3)
(CallScope& call, CUresult result, CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
 unsigned int flags, CUdevice dev) {
  auto create = begin_create(call, result, pctx, flags, dev);
  if (paramsArray != nullptr && numParams > 0) {
    auto params = create.initParams(static_cast<unsigned>(numParams));
    for (int i = 0; i < numParams; ++i) {
      params[i].setKey("execAffinity.type=" +
                       std::to_string(static_cast<int>(paramsArray[i].type)));
      params[i].setValue("smCount=" + std::to_string(paramsArray[i].param.smCount.val));
    }
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuCtxCreate_v4)
(CallScope& call, CUresult result, CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
 unsigned int flags, CUdevice dev) {
  auto create = begin_create(call, result, pctx, flags, dev);
  if (ctxCreateParams != nullptr) {
    auto params = create.initParams(2);
    params[0].setKey("numExecAffinityParams");
    params[0].setValue(std::to_string(ctxCreateParams->numExecAffinityParams));
    params[1].setKey("cigParams");
    params[1].setValue(ctxCreateParams->cigParams != nullptr ? "present (not recorded)" : "none");
  }
  call.commit();
}

CUSNAP_POST_HOOK(cuCtxDestroy_v2)(CallScope& call, CUresult, CUcontext ctx) {
  call.record().initContextDestroy().setContext(handle_value(ctx));
  call.commit();
}

CUSNAP_POST_HOOK(cuCtxSetCurrent)(CallScope& call, CUresult, CUcontext ctx) {
  record_set(call, SetOp::SET, handle_value(ctx));
}

CUSNAP_POST_HOOK(cuCtxPushCurrent_v2)(CallScope& call, CUresult, CUcontext ctx) {
  record_set(call, SetOp::PUSH, handle_value(ctx));
}

CUSNAP_POST_HOOK(cuCtxPopCurrent_v2)(CallScope& call, CUresult result, CUcontext* pctx) {
  record_set(call, SetOp::POP, result == CUDA_SUCCESS && pctx != nullptr ? handle_value(*pctx) : 0);
}

CUSNAP_POST_HOOK(cuDevicePrimaryCtxRetain)
(CallScope& call, CUresult result, CUcontext* pctx, CUdevice dev) {
  record_primary(call, PrimaryOp::RETAIN, dev,
                 result == CUDA_SUCCESS && pctx != nullptr ? handle_value(*pctx) : 0);
}

CUSNAP_POST_HOOK(cuDevicePrimaryCtxRelease_v2)(CallScope& call, CUresult, CUdevice dev) {
  record_primary(call, PrimaryOp::RELEASE, dev);
}

CUSNAP_POST_HOOK(cuDevicePrimaryCtxReset_v2)(CallScope& call, CUresult, CUdevice dev) {
  record_primary(call, PrimaryOp::RESET, dev);
}

CUSNAP_POST_HOOK(cuDevicePrimaryCtxSetFlags_v2)
(CallScope& call, CUresult, CUdevice dev, unsigned int flags) {
  record_primary(call, PrimaryOp::SET_FLAGS, dev, 0, flags);
}

}  // namespace hooks
}  // namespace cusnap::icpt

// mbarrier.* and cp.async.mbarrier.arrive: opcode + modifiers -> Instr (Op::kMbarrier), executed
// by interp_async.cpp.
#include <algorithm>

#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

bool has(const std::vector<std::string_view>& mods, std::string_view m) {
  return std::find(mods.begin(), mods.end(), m) != mods.end();
}

}  // namespace

void Parser::lower_mbarrier(Instr& in, std::string_view op,
                            const std::vector<std::string_view>& mods,
                            std::vector<ParsedOperand>& ops, uint32_t line) {
  in.op = Op::kMbarrier;
  in.type = Type::kB64;
  in.space = Space::kGeneric;
  for (std::string_view m : mods)
    if (m == ".shared" || m == ".shared::cta" || m == ".shared::cluster") in.space = Space::kShared;
  const std::string name = std::string(op) + ".mbarrier";
  auto count_in = [&](size_t lo, size_t hi) {
    if (ops.size() < lo || ops.size() > hi)
      fail_at(line, name + " expects " + std::to_string(lo) +
                        (lo == hi ? "" : ".." + std::to_string(hi)) + " operands, found " +
                        std::to_string(ops.size()));
  };
  in.nops = 3;
  if (op == "cp") {  // cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr]
    in.sub = static_cast<uint8_t>(MbarOp::kCpAsyncArrive);
    if (has(mods, ".noinc")) in.image |= kMbarNoInc;
    count_in(1, 1);
    in.ops[1] = addr(ops[0]);
    return;
  }
  auto sub = [&](MbarOp o) { in.sub = static_cast<uint8_t>(o); };
  if (has(mods, ".init") || has(mods, ".inval")) {  // [addr], count  /  [addr]
    const bool init = has(mods, ".init");
    sub(init ? MbarOp::kInit : MbarOp::kInval);
    count_in(init ? 2 : 1, init ? 2 : 1);
    in.ops[1] = addr(ops[0]);
    if (init) in.ops[2] = src(ops[1], Type::kU32);
    return;
  }
  const bool arrives = has(mods, ".arrive") || has(mods, ".arrive_drop");
  if ((has(mods, ".expect_tx") && !arrives) || has(mods, ".complete_tx")) {  // [addr], txCount
    sub(has(mods, ".complete_tx") ? MbarOp::kCompleteTx : MbarOp::kExpectTx);
    count_in(2, 2);
    in.ops[1] = addr(ops[0]);
    in.ops[2] = src(ops[1], Type::kU32);
    return;
  }
  if (has(mods, ".test_wait") || has(mods, ".try_wait")) {
    // waitComplete, [addr], state | phaseParity {, suspendTimeHint (try_wait: a hint, unused)}
    const bool try_wait = has(mods, ".try_wait");
    sub(try_wait ? MbarOp::kTryWait : MbarOp::kTestWait);
    const bool parity = has(mods, ".parity");
    if (parity) in.image |= kMbarParity;
    count_in(3, try_wait ? 4 : 3);
    in.ops[0] = dst(ops[0]);
    in.ops[1] = addr(ops[1]);
    in.ops[2] = src(ops[2], parity ? Type::kU32 : Type::kB64);
    if (ops.size() == 4) (void)src(ops[3], Type::kU32);
    return;
  }
  // arrive / arrive_drop {.expect_tx | .noComplete}: state, [addr] {, count | txCount}
  sub(has(mods, ".arrive_drop") ? MbarOp::kArriveDrop : MbarOp::kArrive);
  const bool expect_tx = has(mods, ".expect_tx");
  const bool no_complete = has(mods, ".noComplete");
  if (expect_tx) in.image |= kMbarExpectTx;
  if (no_complete) in.image |= kMbarNoComplete;
  count_in(expect_tx || no_complete ? 3 : 2, 3);
  in.ops[0] = dst(ops[0]);
  // A remote (shared::cluster) arrive-on returns no state: its destination is the sink `_`.
  if (has(mods, ".shared::cluster") && in.ops[0].kind != Operand::kSink)
    fail_at(line, "mbarrier.arrive on a .shared::cluster address has no state: write '_'");
  in.ops[1] = addr(ops[1]);
  if (ops.size() == 3) in.ops[2] = src(ops[2], Type::kU32);
}

// cp.async.bulk (non-tensor): global -> shared::cta/cluster and shared::cta -> shared::cluster
// completing on an mbarrier, shared::cta -> global in bulk groups, L2 prefetch; commit_group and
// wait_group(.read). Copies complete when issued (interp_async.cpp), so groups are hints.
void Parser::lower_bulk_copy(Instr& in, const std::vector<std::string_view>& mods,
                             std::vector<ParsedOperand>& ops, uint32_t line) {
  const bool hint = has(mods, ".L2::cache_hint");
  if (has(mods, ".tensor")) {
    // Tile mode (the forms in modifiers.cpp): load  [dstMem], [tensorMap, {c0, ...}], [mbar]
    //                                         store [tensorMap, {c0, ...}], [srcMem]
    in.op = Op::kBulkTensor;
    static const char* const kRanks[] = {".1d", ".2d", ".3d", ".4d", ".5d"};
    for (int r = 0; r < 5; ++r)
      if (has(mods, kRanks[r])) in.vec = static_cast<uint8_t>(r + 1);
    const bool store = has(mods, ".bulk_group");
    in.sub = store ? 1 : 0;
    if (ops.size() != (store ? 2u : 3u) + (hint ? 1u : 0u))
      fail_at(line, store ? "cp.async.bulk.tensor (store) expects [tensorMap, {coordinates}], "
                            "[srcMem]"
                          : "cp.async.bulk.tensor expects [dstMem], [tensorMap, {coordinates}], "
                            "[mbar]");
    const ParsedOperand& tuple = ops[store ? 0 : 1];
    if (tuple.kind != ParsedOperand::kList || tuple.elems.size() != 2)
      fail_at(line, "cp.async.bulk.tensor expects a [tensorMap, {coordinates}] operand");
    in.nops = 4;
    in.ops[0] = addr(ops[store ? 1 : 0]);
    in.ops[1] = src(tuple.elems[0], Type::kU64);
    const ParsedOperand& c = tuple.elems[1];
    if (in.vec == 1 && c.kind != ParsedOperand::kVector) {
      ParsedOperand v;
      v.kind = ParsedOperand::kVector;
      v.line = c.line;
      v.elems.push_back(c);
      in.ops[2] = src_vector(v, Type::kS32, 1);
    } else {
      in.ops[2] = src_vector(c, Type::kS32, in.vec);
    }
    if (!store) in.ops[3] = addr(ops[2]);
    if (hint) (void)src(ops.back(), Type::kB64);
    return;
  }
  if (has(mods, ".commit_group") || has(mods, ".wait_group") || has(mods, ".prefetch")) {
    in.op = Op::kFence;            // no effect: see kNoEffect in modifiers.cpp
    if (has(mods, ".prefetch")) {  // [srcMem], size {, policy}
      if (ops.size() != (hint ? 3u : 2u))
        fail_at(line, "cp.async.bulk.prefetch expects [srcMem], size" +
                          std::string(hint ? ", policy" : ""));
      (void)addr(ops[0]);
      (void)src(ops[1], Type::kU32);
      if (hint) (void)src(ops[2], Type::kB64);
    } else if (has(mods, ".wait_group")) {
      if (ops.size() != 1 || ops[0].kind != ParsedOperand::kImm)
        fail_at(line, "cp.async.bulk.wait_group takes one constant operand");
    } else if (!ops.empty()) {
      fail_at(line, "cp.async.bulk.commit_group takes no operands");
    }
    return;
  }
  in.op = Op::kBulkCopy;
  const bool to_global = has(mods, ".bulk_group");
  const bool multicast = has(mods, ".multicast::cluster");
  in.sub = to_global ? 2 : (has(mods, ".global") ? 0 : 1);
  const size_t n = (to_global ? 3u : 4u) + (multicast ? 1u : 0u) + (hint ? 1u : 0u);
  if (ops.size() != n)
    fail_at(line, std::string("cp.async.bulk expects [dstMem], [srcMem], size") +
                      (to_global ? "" : ", [mbar]") + (multicast ? ", ctaMask" : "") +
                      (hint ? ", policy" : ""));
  in.nops = multicast ? 5 : 4;
  in.ops[0] = addr(ops[0]);
  in.ops[1] = addr(ops[1]);
  in.ops[2] = src(ops[2], Type::kU32);
  if (!to_global) in.ops[3] = addr(ops[3]);
  if (multicast) {
    in.image |= kBulkMulticast;
    in.ops[4] = src(ops[4], Type::kB16);
  }
  if (hint) (void)src(ops.back(), Type::kB64);
}

}  // namespace cusnap::emu::ptx

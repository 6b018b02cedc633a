// Block-order classification (schedule.h).
//
// Blocks of one launch run on several host threads, so anything through which a block can
// observe what other blocks did *before* it makes results order-dependent:
//   - a value-returning atomic on global (or generic, possibly global) memory: its result is
//     the value some set of other blocks left (atom.inc tickets, atom.exch, atom.cas, even
//     atom.add used as an allocator);
//   - a non-commutative read-modify-write even without a result (exch, cas, inc, dec: the
//     final value depends on the last writer / the order of wraps);
//   - any floating-point atomic or reduction on global memory: the sum rounds differently in
//     every order;
//   - an ordered load (.volatile, .relaxed, .acquire) of global memory: the instrument of
//     inter-block signalling ("last block done", decoupled look-back, grid-wide flags);
//   - a call of device-side malloc: which block gets which address depends on the order.
// Integer red.add/min/max/and/or/xor are commutative and associative: the final memory is the
// same in every order, so such kernels stay parallel. Shared-memory atomics are confined to one
// block, whose warps the interpreter schedules deterministically. Plain (weak) loads and stores
// that race between blocks are data races in the PTX memory model and are not detected here.
#include "schedule.h"

#include <algorithm>
#include <string>
#include <vector>

namespace cusnap::emu::ptx {
namespace {

bool is_float(Type t) {
  switch (t) {
    case Type::kF16:
    case Type::kF16x2:
    case Type::kBF16:
    case Type::kBF16x2:
    case Type::kTF32:
    case Type::kF32:
    case Type::kF64:
      return true;
    default:
      return false;
  }
}

// Memory other blocks can see: global, or generic (which may point at global memory).
bool cross_block_space(Space s) {
  return s == Space::kGlobal || s == Space::kGeneric || s == Space::kNone;
}

const char* atom_name(AtomOp op) {
  switch (op) {
    case AtomOp::kAdd:
      return "add";
    case AtomOp::kMin:
      return "min";
    case AtomOp::kMax:
      return "max";
    case AtomOp::kInc:
      return "inc";
    case AtomOp::kDec:
      return "dec";
    case AtomOp::kAnd:
      return "and";
    case AtomOp::kOr:
      return "or";
    case AtomOp::kXor:
      return "xor";
    case AtomOp::kExch:
      return "exch";
    case AtomOp::kCas:
      return "cas";
  }
  return "?";
}

const char* space_text(Space s) { return s == Space::kGlobal ? ".global" : ""; }

// How often each register slot occurs in the module's operands (sources, destinations,
// address bases, vector members, guards). nvcc writes `atom.global.add.u32 %r6, [a], 1` even when
// the C++ result is unused (ptxas turns it into a reduction); a destination that occurs nowhere
// else is never read, so such an atom cannot make results order-dependent.
std::vector<uint32_t> slot_occurrences(const Module& m) {
  std::vector<uint32_t> uses(m.slot_count, 0);
  auto count = [&](const Operand& o) {
    if ((o.kind == Operand::kReg || (o.kind == Operand::kAddr && o.base_is_reg)) &&
        o.index < uses.size())
      ++uses[o.index];
  };
  for (const Instr& in : m.code) {
    if (in.has_guard && in.guard_slot < uses.size()) ++uses[in.guard_slot];
    for (const Operand& o : in.ops) {
      if (o.kind == Operand::kVector) {
        for (uint32_t i = 0; i < o.count && o.index + i < m.vec_pool.size(); ++i)
          count(m.vec_pool[o.index + i]);
      } else {
        count(o);
      }
    }
  }
  return uses;
}

// Why `in` lets a block observe other blocks' order, or empty.
std::string order_dependence(const Instr& in, const std::vector<uint32_t>& uses) {
  if ((in.op == Op::kAtom || in.op == Op::kRed) && cross_block_space(in.space)) {
    const AtomOp op = static_cast<AtomOp>(in.sub);
    const std::string text = std::string(in.op == Op::kAtom ? "atom" : "red") +
                             space_text(in.space) + "." + atom_name(op) + "." + type_name(in.type);
    if (is_float(in.type))
      return "floating-point '" + text + "' (the result rounds differently in every block order)";
    if (op == AtomOp::kExch || op == AtomOp::kCas || op == AtomOp::kInc || op == AtomOp::kDec)
      return "'" + text + "' (not commutative: the final value depends on the block order)";
    const Operand& d = in.ops[0];
    if (in.op == Op::kAtom && d.kind == Operand::kReg &&
        (d.index >= uses.size() || uses[d.index] > 1))
      return "value-returning '" + text + "' (its result depends on which blocks ran before)";
    return {};
  }
  if (in.op == Op::kLd && in.order != MemOrder::kWeak && cross_block_space(in.space)) {
    const char* order = in.order == MemOrder::kAcquire    ? "acquire"
                        : in.order == MemOrder::kVolatile ? "volatile"
                                                          : "relaxed";
    return std::string("ordered load 'ld.") + order + space_text(in.space) +
           "' (blocks can wait for or observe other blocks)";
  }
  return {};
}

// Functions whose address the module takes (operands and initializers such as vtables): what an
// indirect call can reach.
std::vector<uint32_t> address_taken(const Module& m) {
  std::vector<char> taken(m.functions.size(), 0);
  auto mark = [&](uint32_t symbol) {
    if (symbol >= m.symbols.size()) return;
    const Symbol& s = m.symbols[symbol];
    if (s.space == Space::kFunction && s.function >= 0 &&
        static_cast<size_t>(s.function) < taken.size())
      taken[s.function] = 1;
  };
  for (const Instr& in : m.code) {
    for (const Operand& o : in.ops) {
      if (o.kind == Operand::kVector) {
        for (uint32_t i = 0; i < o.count && o.index + i < m.vec_pool.size(); ++i) {
          const Operand& e = m.vec_pool[o.index + i];
          if (e.has_symbol) mark(e.symbol);
        }
      } else if (o.has_symbol || o.kind == Operand::kSymbol) {
        mark(o.symbol);
      }
    }
  }
  for (const Module::Relocation& r : m.relocations) mark(r.target_symbol);
  std::vector<uint32_t> out;
  for (uint32_t f = 0; f < taken.size(); ++f)
    if (taken[f]) out.push_back(f);
  return out;
}

bool makes_indirect_calls(const Module& m, const Function& fn) {
  if (!fn.has_body) return false;
  for (uint32_t i = fn.first_instr; i < fn.end_instr && i < m.code.size(); ++i)
    if (m.code[i].op == Op::kCall && m.code[i].callee == kIndirectCallee) return true;
  return false;
}

}  // namespace

void classify_block_order(Module& m) {
  const size_t nf = m.functions.size();
  const std::vector<uint32_t> uses = slot_occurrences(m);
  const std::vector<uint32_t> pointer_targets =
      m.has_indirect_calls ? address_taken(m) : std::vector<uint32_t>{};
  for (size_t k = 0; k < m.kernels.size() && k < m.kernel_info.size(); ++k) {
    const uint32_t entry = m.kernel_info[k].function;
    std::vector<char> reach(nf, 0);
    std::vector<uint32_t> stack{entry};
    bool indirect = false;
    while (!stack.empty()) {
      const uint32_t f = stack.back();
      stack.pop_back();
      if (f >= nf || reach[f]) continue;
      reach[f] = 1;
      for (uint32_t c : m.functions[f].callees) stack.push_back(c);
      if (!indirect && m.has_indirect_calls && makes_indirect_calls(m, m.functions[f])) {
        indirect = true;  // from here on every function whose address is taken is reachable
        for (uint32_t t : pointer_targets) stack.push_back(t);
      }
    }
    KernelDesc& kd = m.kernels[k];
    kd.serial_blocks = false;
    kd.serial_reason.clear();
    // The kernel's own code first, then its callees, so the reason is the nearest one.
    std::vector<uint32_t> order{entry};
    for (uint32_t f = 0; f < nf; ++f)
      if (reach[f] && f != entry) order.push_back(f);
    for (uint32_t f : order) {
      const Function& fn = m.functions[f];
      if (!fn.has_body) continue;
      for (uint32_t i = fn.first_instr; i < fn.end_instr && i < m.code.size(); ++i) {
        std::string why = order_dependence(m.code[i], uses);
        const Instr& c = m.code[i];
        if (why.empty() && c.op == Op::kCall && c.callee != kIndirectCallee && c.callee < nf &&
            m.functions[c.callee].builtin == Builtin::kMalloc)
          why = "device-side malloc (the blocks it returns depend on the block order)";
        if (why.empty()) continue;
        kd.serial_blocks = true;
        kd.serial_reason = why + " at PTX line " + std::to_string(m.code[i].line) +
                           (f == entry ? "" : " in function '" + fn.name + "'");
        break;
      }
      if (kd.serial_blocks) break;
    }
  }
}

}  // namespace cusnap::emu::ptx

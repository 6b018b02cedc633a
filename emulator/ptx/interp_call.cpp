// call/ret with `.param` frames, and the built-in callees nvcc emits: vprintf (device printf)
// and __assertfail (device assert), malloc and free (the context's heap, LaunchConfig::heap).
//
// Frames: each function's `.local` and `.param` declarations (formal parameters, return values
// and call-site argument blocks) live in a per-thread frame inside the thread's local window.
// A call copies the caller's argument blocks into the callee's formal parameters and a `ret`
// copies the callee's return values back into the caller's return blocks, so both sides keep
// the by-value semantics of PTX's `.param` space.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "interp.h"

namespace cusnap::emu::ptx {
namespace {

inline uint32_t align16(uint32_t v) { return (v + 15u) & ~15u; }

}  // namespace

void Launch::exec_call(Block& b, Warp& w, const Instr& in, uint32_t pc, uint32_t group,
                       uint32_t exec) {
  const Function& caller = m_.functions[in.function];
  const Operand& rets = in.ops[0];
  const Operand& args = in.ops[1];
  if (exec == 0) {
    advance(w, group);
    return;
  }

  // The callee of every lane: one for direct calls, per lane for calls through a register.
  uint32_t callee_of[kWarpSize];
  if (in.callee == kIndirectCallee) {
    const uint64_t* target = w.slot(in.ops[2].index);
    for (uint32_t m = exec; m; m &= m - 1) {
      int l = std::countr_zero(m);
      uint64_t v = target[l];
      uint64_t index = v & ~kFunctionAddressTag;
      if ((v & kFunctionAddressTag) != kFunctionAddressTag || index >= m_.functions.size()) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "indirect call to 0x%llx, which is not a function: ",
                      static_cast<unsigned long long>(v));
        fail(LaunchStatus::kIllegalInstruction, buf + where(b, w, l, in));
        return;
      }
      callee_of[l] = static_cast<uint32_t>(index);
    }
  } else {
    for (uint32_t m = exec; m; m &= m - 1) callee_of[std::countr_zero(m)] = in.callee;
  }

  // Reads argument i of lane l: `size` bytes of a frame `.param`, or a register/immediate.
  auto arg_bytes = [&](int lane, uint32_t i, void* out, uint32_t size) -> bool {
    std::memset(out, 0, size);
    if (i >= args.count) return true;
    const Operand& o = m_.vec_pool[args.index + i];
    if (o.kind == Operand::kSymbol && (m_.symbols[o.symbol].space == Space::kParamFrame ||
                                       m_.symbols[o.symbol].space == Space::kLocal)) {
      uint64_t off = symbol_value(w, lane, o.symbol) + static_cast<uint64_t>(o.offset);
      uint32_t avail = static_cast<uint32_t>(std::min<uint64_t>(size, m_.symbols[o.symbol].size));
      // A block copy, not one access: an aggregate `.param .align 8 .b8 p[16]` is 8-aligned, so
      // only its first and last bytes are translated (bounds), not a 16-byte natural alignment.
      uint8_t* p = translate(b, w, lane, Space::kParamFrame, off, 1, false, in);
      if (!p ||
          (avail > 1 && !translate(b, w, lane, Space::kParamFrame, off + avail - 1, 1, false, in)))
        return false;
      std::memcpy(out, p, avail);
      return true;
    }
    const uint64_t* v = operand(w, o, 1u << lane, kSpScratch0);
    std::memcpy(out, &v[lane], std::min<uint32_t>(size, 8));
    return true;
  };

  uint32_t targets[kWarpSize];
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    const Function& callee = m_.functions[callee_of[l]];
    if (callee.builtin != Builtin::kNone) {
      uint64_t argv[5] = {};
      const uint32_t nargs = std::min<uint32_t>(args.count, 5);
      for (uint32_t i = 0; i < nargs; ++i) {
        uint32_t size = i < callee.params.size() ? callee.params[i].size : 8;
        if (!arg_bytes(l, i, &argv[i], std::min<uint32_t>(size, 8))) return;
      }
      switch (callee.builtin) {
        case Builtin::kVprintf: {
          builtin_vprintf(b, w, l, in, argv[0], argv[1]);
          if (aborted()) return;
          if (rets.count > 0) {  // vprintf's int result: 0 here
            const Operand& r = m_.vec_pool[rets.index];
            if (r.kind == Operand::kSymbol) {
              uint64_t off = symbol_value(w, l, r.symbol) + static_cast<uint64_t>(r.offset);
              uint8_t* p = translate(b, w, l, Space::kParamFrame, off, 4, true, in);
              if (!p) return;
              std::memset(p, 0, 4);
            } else if (r.kind == Operand::kReg) {
              w.slot(r.index)[l] = 0;
            }
          }
          break;
        }
        case Builtin::kAssertfail:
          builtin_assert(b, w, l, in, argv);
          return;
        case Builtin::kMalloc:
        case Builtin::kFree: {
          // Device-side malloc(size) / free(pointer) on the context's heap (DeviceHeap).
          uint64_t result = 0;
          if (callee.builtin == Builtin::kMalloc) {
            if (config_.heap != nullptr && argv[0] != 0) result = config_.heap->allocate(argv[0]);
          } else if (argv[0] != 0 && (config_.heap == nullptr || !config_.heap->release(argv[0]))) {
            char address[32];
            std::snprintf(address, sizeof address, "0x%llx",
                          static_cast<unsigned long long>(argv[0]));
            fail(LaunchStatus::kIllegalAddress,
                 std::string("device-side free of ") + address +
                     ", which is no block device-side malloc returned (or was freed already): " +
                     where(b, w, l, in));
            return;
          }
          if (callee.builtin == Builtin::kMalloc && rets.count > 0) {
            const Operand& r = m_.vec_pool[rets.index];
            if (r.kind == Operand::kSymbol) {
              uint64_t off = symbol_value(w, l, r.symbol) + static_cast<uint64_t>(r.offset);
              uint8_t* p = translate(b, w, l, Space::kParamFrame, off, 8, true, in);
              if (!p) return;
              std::memcpy(p, &result, 8);
            } else if (r.kind == Operand::kReg) {
              w.slot(r.index)[l] = result;
            }
          }
          break;
        }
        default:
          fail(LaunchStatus::kIllegalInstruction,
               "device-side " + callee.name +
                   " is not supported by the emulator: " + where(b, w, l, in));
          return;
      }
      targets[l] = pc + 1;
      continue;
    }
    if (!callee.has_body) {
      fail(LaunchStatus::kIllegalInstruction,
           "call to undefined function " + callee.name + ": " + where(b, w, l, in));
      return;
    }
    const uint64_t new_base = w.frame_base[l] + align16(caller.frame_bytes);
    if (new_base + callee.frame_bytes > w.stack_ptr[l]) {  // frames grow up, alloca's stack down
      fail(LaunchStatus::kIllegalAddress,
           "stack overflow calling " + callee.name + ": " + where(b, w, l, in));
      return;
    }
    CallFrame frame;
    frame.return_pc = pc + 1;
    frame.call_pc = pc;
    frame.callee = callee_of[l];
    frame.frame_base = w.frame_base[l];
    frame.stack_ptr = w.stack_ptr[l];
    if (callee.recursive) {
      frame.saved.reserve(callee.end_slot - callee.first_slot);
      for (uint32_t s = callee.first_slot; s < callee.end_slot; ++s)
        frame.saved.push_back(w.slot(s)[l]);
    }
    uint8_t* window = b.local + (w.index * kWarpSize + static_cast<uint64_t>(l)) * b.local_window;
    const uint32_t nargs =
        std::min<uint32_t>(args.count, static_cast<uint32_t>(callee.params.size()));
    for (uint32_t i = 0; i < nargs; ++i) {
      const FormalParam& fp = callee.params[i];
      if (fp.is_reg) {
        uint64_t v = 0;
        if (!arg_bytes(l, i, &v, std::min<uint32_t>(fp.size, 8))) return;
        w.slot(fp.slot)[l] = v;
      } else {
        const Symbol& ps = m_.symbols[fp.symbol];
        std::vector<uint8_t> tmp(fp.size);
        if (!arg_bytes(l, i, tmp.data(), fp.size)) return;
        std::memcpy(window + new_base + ps.offset, tmp.data(), fp.size);
      }
    }
    w.stack[l].push_back(std::move(frame));
    w.frame_base[l] = new_base;
    targets[l] = callee.first_instr;
  }
  const uint32_t first_target = targets[std::countr_zero(exec)];
  bool same = true;
  for (uint32_t m = exec; m; m &= m - 1)
    if (targets[std::countr_zero(m)] != first_target) same = false;
  if (same && first_target == pc + 1) {
    advance(w, group);
    return;
  }
  if (same) {
    jump(w, group, exec, first_target);
    return;
  }
  diverge(w);
  for (uint32_t m = group; m; m &= m - 1) {
    int l = std::countr_zero(m);
    w.pc[l] = (exec >> l & 1) ? targets[l] : w.pc[l] + 1;
  }
}

void Launch::exec_ret(Block& b, Warp& w, uint32_t group, uint32_t exec) {
  if (exec == 0) {
    advance(w, group);
    return;
  }
  uint32_t exiting = 0;
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    if (w.stack[l].empty()) exiting |= 1u << l;
  }
  const uint32_t returning = exec & ~exiting;
  uint32_t target = UINT32_MAX;
  bool same_target = true;
  uint32_t targets[kWarpSize];
  for (uint32_t m = returning; m; m &= m - 1) {
    int l = std::countr_zero(m);
    CallFrame& frame = w.stack[l].back();
    const Instr& call = m_.code[frame.call_pc];
    const Function& callee = m_.functions[frame.callee];
    const Operand& rets = call.ops[0];
    uint8_t* window = b.local + (w.index * kWarpSize + static_cast<uint64_t>(l)) * b.local_window;
    const uint32_t nrets =
        std::min<uint32_t>(rets.count, static_cast<uint32_t>(callee.returns.size()));
    for (uint32_t i = 0; i < nrets; ++i) {
      const FormalParam& fp = callee.returns[i];
      uint64_t value_bits[2] = {};
      std::vector<uint8_t> tmp(fp.size);
      if (fp.is_reg) {
        value_bits[0] = w.slot(fp.slot)[l];
        std::memcpy(tmp.data(), value_bits, std::min<size_t>(fp.size, 8));
      } else {
        std::memcpy(tmp.data(), window + w.frame_base[l] + m_.symbols[fp.symbol].offset, fp.size);
      }
      const Operand& r = m_.vec_pool[rets.index + i];
      if (r.kind == Operand::kSymbol) {
        uint64_t off =
            frame.frame_base + m_.symbols[r.symbol].offset + static_cast<uint64_t>(r.offset);
        uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(fp.size, m_.symbols[r.symbol].size));
        if (off + n <= b.local_window) std::memcpy(window + off, tmp.data(), n);
      } else if (r.kind == Operand::kReg) {
        uint64_t v = 0;
        std::memcpy(&v, tmp.data(), std::min<size_t>(fp.size, 8));
        w.slot(r.index)[l] = v;
      }
    }
    if (!frame.saved.empty()) {
      for (uint32_t s = callee.first_slot, i = 0; s < callee.end_slot; ++s, ++i) {
        // Registers receiving return values (in the caller) were just written: keep them.
        bool is_ret_dest = false;
        for (uint32_t k = 0; k < rets.count; ++k) {
          const Operand& r = m_.vec_pool[rets.index + k];
          if (r.kind == Operand::kReg && r.index == s) is_ret_dest = true;
        }
        if (!is_ret_dest) w.slot(s)[l] = frame.saved[i];
      }
    }
    w.frame_base[l] = frame.frame_base;
    w.stack_ptr[l] = frame.stack_ptr;  // what the callee's alloca took is freed with its frame
    targets[l] = frame.return_pc;
    if (target == UINT32_MAX)
      target = frame.return_pc;
    else if (target != frame.return_pc)
      same_target = false;
    w.stack[l].pop_back();
  }
  exit_lanes(b, w, exiting);
  const uint32_t staying = group & ~exec;
  if (!returning) {
    advance(w, staying);
    return;
  }
  if (w.uniform && same_target && staying == 0) {
    w.upc = target;
    return;
  }
  diverge(w);
  for (uint32_t m = staying; m; m &= m - 1) ++w.pc[std::countr_zero(m)];
  for (uint32_t m = returning; m; m &= m - 1) {
    int l = std::countr_zero(m);
    w.pc[l] = targets[l];
  }
}

// ---- device printf ----------------------------------------------------------------------------

// alloca / stacksave / stackrestore: the PTX ISA's stack grows down, so each thread's dynamic
// stack starts at the end of its local window and alloca moves its pointer (a local address)
// down to an aligned block; the call frames grow up from 0, and neither may pass the other. A
// function's allocas end with it (ret restores the caller's pointer). What runs out is a stack
// overflow (CU_LIMIT_STACK_SIZE bytes per thread are added to the window when a module allocas),
// as is a stackrestore outside the current function's part of the stack.
void Launch::exec_stack(Block& b, Warp& w, const Instr& in, uint32_t exec) {
  const uint64_t wm = in.type == Type::kU32 ? 0xffffffffu : ~uint64_t{0};  // .u32 or .u64
  if (in.op == Op::kStackSave) {
    uint64_t* d = dest(w, in.ops[0]);
    for (uint32_t m = exec; m; m &= m - 1) {
      int l = std::countr_zero(m);
      d[l] = w.stack_ptr[l] & wm;
    }
    return;
  }
  const bool allocate = in.op == Op::kAlloca;
  const uint64_t* a = operand(w, in.ops[allocate ? 1 : 0], exec, kSpScratch0);
  uint64_t* d = allocate ? dest(w, in.ops[0]) : nullptr;
  const uint64_t floor_offset = align16(m_.functions[in.function].frame_bytes);
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    const uint64_t floor = w.frame_base[l] + floor_offset;  // the end of this function's frame
    const uint64_t v = a[l] & wm;
    if (allocate) {
      const uint64_t align = in.matrix;
      const uint64_t sp = w.stack_ptr[l];
      const uint64_t p = v > sp ? 0 : (sp - v) & ~(align - 1);
      if (v > sp || p < floor) {
        char what[160];
        std::snprintf(what, sizeof what,
                      "stack overflow: alloca of %llu bytes (aligned to %llu) with %llu bytes of "
                      "the thread's stack left (CU_LIMIT_STACK_SIZE): ",
                      static_cast<unsigned long long>(v), static_cast<unsigned long long>(align),
                      static_cast<unsigned long long>(sp > floor ? sp - floor : 0));
        fail(LaunchStatus::kIllegalAddress, what + where(b, w, l, in));
        return;
      }
      w.stack_ptr[l] = p;
      d[l] = p & wm;
    } else {
      // The top of this function's part: where the stack pointer was when it was called.
      const uint64_t top = w.stack[l].empty() ? b.local_window : w.stack[l].back().stack_ptr;
      if (v < floor || v > top) {
        char what[128];
        std::snprintf(what, sizeof what,
                      "stackrestore to 0x%llx, outside the function's stack [0x%llx, 0x%llx]: ",
                      static_cast<unsigned long long>(v), static_cast<unsigned long long>(floor),
                      static_cast<unsigned long long>(top));
        fail(LaunchStatus::kIllegalAddress, what + where(b, w, l, in));
        return;
      }
      w.stack_ptr[l] = v;
    }
  }
}

// cvt.pack.sat: a and b (s32) saturated to the converted type's range, b in the low `size` bits,
// a in the next `size`; for 8/4/2-bit types the bits above 2 * size are c's low bits.
void Launch::exec_cvt_pack(Warp& w, const Instr& in, uint32_t exec) {
  const int size = in.sub;
  const bool is_signed = in.type == Type::kS32;
  const int64_t lo = is_signed ? -(int64_t{1} << (size - 1)) : 0;
  const int64_t hi = is_signed ? (int64_t{1} << (size - 1)) - 1 : (int64_t{1} << size) - 1;
  const uint32_t field = static_cast<uint32_t>((uint64_t{1} << size) - 1);
  const uint64_t* a = operand(w, in.ops[1], exec, kSpScratch0);
  const uint64_t* b = operand(w, in.ops[2], exec, kSpScratch1);
  const uint64_t* c = size != 16 ? operand(w, in.ops[3], exec, kSpScratch2) : nullptr;
  uint64_t* d = dest(w, in.ops[0]);
  for (uint32_t m = exec; m; m &= m - 1) {
    int l = std::countr_zero(m);
    auto sat = [&](uint64_t v) {
      const int64_t x = static_cast<int32_t>(static_cast<uint32_t>(v));
      return static_cast<uint32_t>(std::clamp(x, lo, hi)) & field;
    };
    uint32_t r = sat(b[l]) | (sat(a[l]) << size);
    if (c != nullptr) r |= static_cast<uint32_t>(c[l]) << (2 * size);
    d[l] = r;
  }
}

void Launch::builtin_vprintf(Block& b, Warp& w, int lane, const Instr& in, uint64_t fmt_addr,
                             uint64_t args) {
  std::string fmt;
  if (!read_c_string(b, w, lane, fmt_addr, fmt, in)) return;
  std::string out;
  uint64_t off = 0;
  auto fetch = [&](uint32_t size, uint64_t& v) -> bool {
    off = (off + size - 1) / size * size;
    v = 0;
    uint8_t* p = translate(b, w, lane, Space::kGeneric, args + off, size, false, in);
    if (!p) return false;
    if (tracking_) [[unlikely]]
      track(b, p, size, true, false);
    std::memcpy(&v, p, size);
    off += size;
    return true;
  };
  char buf[512];
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c != '%') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
      out.push_back('%');
      ++i;
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < fmt.size() && std::strchr("-+ #0", fmt[j])) spec.push_back(fmt[j++]);
    while (j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9') spec.push_back(fmt[j++]);
    if (j < fmt.size() && fmt[j] == '.') {
      spec.push_back(fmt[j++]);
      while (j < fmt.size() && fmt[j] >= '0' && fmt[j] <= '9') spec.push_back(fmt[j++]);
    }
    int longs = 0, shorts = 0;
    while (j < fmt.size() && std::strchr("hlLqjzt", fmt[j])) {
      if (fmt[j] == 'h')
        ++shorts;
      else
        longs = fmt[j] == 'l' ? longs + 1 : 2;
      ++j;
    }
    if (j >= fmt.size()) {
      out.append(fmt, i, std::string::npos);
      break;
    }
    char conv = fmt[j];
    uint64_t v = 0;
    switch (conv) {
      case 'd':
      case 'i': {
        if (!fetch(longs ? 8 : 4, v)) return;
        long long sv = longs ? static_cast<long long>(v) : static_cast<int32_t>(v);
        if (shorts == 1) sv = static_cast<int16_t>(sv);
        if (shorts >= 2) sv = static_cast<int8_t>(sv);
        std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), sv);
        out += buf;
        break;
      }
      case 'u':
      case 'o':
      case 'x':
      case 'X': {
        if (!fetch(longs ? 8 : 4, v)) return;
        unsigned long long uv = longs ? v : static_cast<uint32_t>(v);
        if (shorts == 1) uv = static_cast<uint16_t>(uv);
        if (shorts >= 2) uv = static_cast<uint8_t>(uv);
        std::snprintf(buf, sizeof buf, (spec + "ll" + conv).c_str(), uv);
        out += buf;
        break;
      }
      case 'c': {
        if (!fetch(4, v)) return;
        std::snprintf(buf, sizeof buf, (spec + "c").c_str(), static_cast<int>(v));
        out += buf;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G':
      case 'a':
      case 'A': {
        if (!fetch(8, v)) return;
        double d = std::bit_cast<double>(v);
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), d);
        out += buf;
        break;
      }
      case 'p': {
        if (!fetch(8, v)) return;
        std::snprintf(buf, sizeof buf, (spec + "p").c_str(), reinterpret_cast<void*>(v));
        out += buf;
        break;
      }
      case 's': {
        if (!fetch(8, v)) return;
        std::string s;
        if (v == 0)
          s = "(null)";
        else if (!read_c_string(b, w, lane, v, s, in))
          return;
        std::string sp = spec + "s";
        std::vector<char> big(s.size() + 256);
        std::snprintf(big.data(), big.size(), sp.c_str(), s.c_str());
        out += big.data();
        break;
      }
      default:
        out.append(fmt, i, j - i + 1);
        break;
    }
    i = j;
  }
  add_output(b, std::move(out), false);
}

void Launch::add_output(const Block& b, std::string text, bool always) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Kept up to a few FIFOs' worth, so that which printf output survives a full FIFO is decided
  // in block order by take_output (unless even that much was printed).
  if (!always && output_bytes_ + text.size() > 4 * limits_.printf_fifo_bytes) return;
  output_bytes_ += text.size();
  output_.push_back(OutputChunk{b.linear, std::move(text), !always});
}

void Launch::builtin_assert(Block& b, Warp& w, int lane, const Instr& in, const uint64_t* argv) {
  std::string message, file, function;
  if (!read_c_string(b, w, lane, argv[0], message, in)) return;
  if (!read_c_string(b, w, lane, argv[1], file, in)) return;
  if (!read_c_string(b, w, lane, argv[3], function, in)) return;
  const uint32_t line = static_cast<uint32_t>(argv[2]);
  const uint32_t t = w.index * kWarpSize + static_cast<uint32_t>(lane);
  const Dim3& bd = config_.block;
  char buf[256];
  std::snprintf(buf, sizeof buf, ":%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `", line,
                function.c_str(), b.ctaid.x, b.ctaid.y, b.ctaid.z, t % bd.x, (t / bd.x) % bd.y,
                t / (bd.x * bd.y));
  add_output(b, file + buf + message + "` failed.\n", true);
  fail(LaunchStatus::kAssert,
       "device assert failed: " + message + " (" + where(b, w, lane, in) + ")");
}

}  // namespace cusnap::emu::ptx

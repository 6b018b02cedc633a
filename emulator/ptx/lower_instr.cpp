// Instruction decoding: `[@[!]p] opcode.mod.mod operands;` into one Instr. Every opcode's
// modifiers are interpreted here once so the interpreter never looks at text.
#include <algorithm>
#include <functional>

#include "modifiers.h"
#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

bool has(const std::vector<std::string_view>& mods, std::string_view m) {
  return std::find(mods.begin(), mods.end(), m) != mods.end();
}

std::optional<CmpOp> cmp_from(std::string_view m) {
  static const std::pair<const char*, CmpOp> kCmp[] = {
      {".eq", CmpOp::kEq},   {".ne", CmpOp::kNe},   {".lt", CmpOp::kLt},   {".le", CmpOp::kLe},
      {".gt", CmpOp::kGt},   {".ge", CmpOp::kGe},   {".lo", CmpOp::kLo},   {".ls", CmpOp::kLs},
      {".hi", CmpOp::kHi},   {".hs", CmpOp::kHs},   {".equ", CmpOp::kEqu}, {".neu", CmpOp::kNeu},
      {".ltu", CmpOp::kLtu}, {".leu", CmpOp::kLeu}, {".gtu", CmpOp::kGtu}, {".geu", CmpOp::kGeu},
      {".num", CmpOp::kNum}, {".nan", CmpOp::kNan},
  };
  for (auto& [n, c] : kCmp)
    if (m == n) return c;
  return std::nullopt;
}

Space space_from(std::string_view m) {
  if (m == ".global") return Space::kGlobal;
  if (m == ".shared" || m == ".shared::cta" || m == ".shared::cluster") return Space::kShared;
  if (m == ".local") return Space::kLocal;
  if (m == ".const") return Space::kConst;
  if (m == ".param" || m == ".param::entry" || m == ".param::func") return Space::kParamKernel;
  return Space::kNone;
}

Type wide_of(Type t) {
  switch (t) {
    case Type::kU16:
      return Type::kU32;
    case Type::kS16:
      return Type::kS32;
    case Type::kU32:
      return Type::kU64;
    case Type::kS32:
      return Type::kS64;
    case Type::kB16:
      return Type::kB32;
    case Type::kB32:
      return Type::kB64;
    default:
      return t;
  }
}

bool is_float(Type t) {
  return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2 ||
         t == Type::kF32 || t == Type::kF64 || t == Type::kTF32;
}

// The first modifier of `mods` found in `table` selects the op (prmt modes, testp classes);
// `fallback` when none is present.
template <size_t N>
AluOp alu_op_by_modifier(const std::vector<std::string_view>& mods, AluOp fallback,
                         const std::pair<const char*, AluOp> (&table)[N]) {
  for (const auto& [name, a] : table)
    if (has(mods, name)) return a;
  return fallback;
}

bool is_packed_half(Type t) { return t == Type::kF16x2 || t == Type::kBF16x2; }

// Destination types `set` can write: 1.0 / all ones in a float or integer register, per half for
// packed f16x2/bf16x2 sources (which need a 32-bit destination).
bool set_destination_ok(Type dst, Type src) {
  if (is_packed_half(src))
    return dst == Type::kF16x2 || dst == Type::kBF16x2 || dst == Type::kU32 || dst == Type::kS32 ||
           dst == Type::kB32;
  switch (dst) {
    case Type::kU32:
    case Type::kS32:
    case Type::kB32:
    case Type::kF32:
    case Type::kU16:
    case Type::kS16:
    case Type::kB16:
    case Type::kF16:
    case Type::kBF16:
      return true;
    default:
      return false;
  }
}

// Whether the ALU implements the decoded (op, type, modifiers) combination. Asked once per
// instruction at decode time (the contract in alu.h): an instruction it does not implement fails
// the module load like the non-emulated opcodes, instead of computing the all-ones pattern the
// ALU writes for contract violations.
bool alu_implements(const Instr& in) {
  switch (in.op) {
    case Op::kAlu:
      return alu_supported(in.alu_op, in.type, in.mods);
    case Op::kCvt:
      return cvt_supported(in.type, in.type2, in.mods);
    case Op::kSetp:
      return compare_supported(in.cmp, in.type2, in.mods);
    case Op::kSet:
      return compare_supported(in.cmp, in.type2, in.mods) && set_destination_ok(in.type, in.type2);
    case Op::kAtom:
    case Op::kRed:
      return atomic_supported(static_cast<AtomOp>(in.sub), in.type);
    default:
      return true;
  }
}

// Instructions that exist in PTX but are not emulated: returns the reason ("" for none worth
// stating) or null when the instruction is one the emulator executes. Checked before the
// operands are parsed, so the message names the instruction even when its operand syntax
// (matrices, texture tuples, tensor maps) is beyond the operand parser.
const char* not_emulated(std::string_view opcode, const std::vector<std::string_view>& mods) {
  static const char* const kOpcodes[] = {"sured",     "tensormap", "multimem",
                                         "vabsdiff",  "vadd",      "vsub",
                                         "vmin",      "vmax",      "vshl",
                                         "vshr",      "vmad",      "vset",
                                         "vabsdiff2", "vabsdiff4", "vadd2",
                                         "vadd4",     "vsub2",     "vsub4",
                                         "vavrg2",    "vavrg4",    "vmin2",
                                         "vmin4",     "vmax2",     "vmax4",
                                         "vset2",     "vset4",     "clusterlaunchcontrol",
                                         "tcgen05"};
  for (const char* name : kOpcodes)
    if (opcode == name) return "";
  // Siblings of emulated opcodes that need machinery the emulator lacks.
  if (opcode == "wgmma") {
    if (has(mods, ".sp")) return "sparse wgmma.mma_async.sp";
    for (std::string_view t : {".e4m3", ".e5m2", ".b1"})
      if (has(mods, t)) return "wgmma.mma_async with fp8 or b1 inputs";
  }
  if (opcode == "cp" && has(mods, ".reduce")) return "bulk reductions";
  if (opcode == "mbarrier" && has(mods, ".pending_count"))
    return "the PTX ISA does not say which pending count the state operand holds";
  if ((opcode == "st" || opcode == "red") && has(mods, ".async"))
    return "asynchronous cluster stores";
  if (opcode == "st" && has(mods, ".bulk")) return "bulk stores";
  if (opcode == "cvt" && has(mods, ".rs")) return "stochastic rounding";
  if (opcode == "bar" && has(mods, ".cluster")) return "cluster barriers are barrier.cluster";
  if ((opcode == "ld" || opcode == "st" || opcode == "mov") && has(mods, ".b128"))
    return "128-bit operands";
  if (opcode == "mov" && (has(mods, ".v2") || has(mods, ".v4") || has(mods, ".v8")))
    return "vector registers";
  return nullptr;
}

// ld/st ordering qualifiers: `.weak` (default), `.relaxed.scope`, `.acquire.scope` (ld only),
// `.release.scope` (st only), `.volatile`, `.mmio.relaxed.sys`. Kept in the instruction so the
// interpreter can perform non-weak accesses as C++ atomics (see MemOrder in ir.h).
// Returns an error message, or an empty string when the combination is valid.
std::string lower_memory_order(Instr& in, const std::vector<std::string_view>& mods) {
  const bool is_ld = in.op == Op::kLd;
  int orders = 0;
  for (std::string_view m : mods) {
    MemOrder o = MemOrder::kWeak;
    if (m == ".weak")
      o = MemOrder::kWeak;
    else if (m == ".relaxed")
      o = MemOrder::kRelaxed;
    else if (m == ".acquire")
      o = MemOrder::kAcquire;
    else if (m == ".release")
      o = MemOrder::kRelease;
    else if (m == ".volatile")
      o = MemOrder::kVolatile;
    else if (m == ".cta") {
      in.scope = MemScope::kCta;
      continue;
    } else if (m == ".cluster") {
      in.scope = MemScope::kCluster;
      continue;
    } else if (m == ".gpu") {
      in.scope = MemScope::kGpu;
      continue;
    } else if (m == ".sys") {
      in.scope = MemScope::kSys;
      continue;
    } else
      continue;  // .mmio goes with .relaxed; cache operators and types are not orders
    in.order = o;
    ++orders;
  }
  const std::string opname = is_ld ? "ld" : "st";
  if (orders > 1)
    return opname + " takes at most one of .weak/.relaxed/.acquire/.release/.volatile";
  if (is_ld && in.order == MemOrder::kRelease) return "ld cannot have .release semantics";
  if (!is_ld && in.order == MemOrder::kAcquire) return "st cannot have .acquire semantics";
  if (in.scope != MemScope::kNone &&
      (in.order == MemOrder::kWeak || in.order == MemOrder::kVolatile))
    return "a scope needs .relaxed, .acquire or .release on " + opname;
  return {};
}

// cvt between integer and f16/bf16/f32/f64 types (PTX ISA, cvt, "Rounding modifiers"): a
// float-to-integer conversion needs an integer rounding (.rni .rzi .rmi .rpi), an integer-to-float
// one and a float-to-float one that can lose precision need a floating-point rounding (.rn .rz .rm
// .rp); a float-to-float one to the same type may round to an integral value; no other
// conversion takes a rounding. .sat on an integer-to-integer conversion needs a destination
// whose range does not hold every source value. Returns what is wrong, or "".
std::string cvt_rounding_error(Type dst, Type src, const Mods& m) {
  auto is_int = [](Type t) {
    return t == Type::kU8 || t == Type::kU16 || t == Type::kU32 || t == Type::kU64 ||
           t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
  };
  auto is_scalar_float = [](Type t) {
    return t == Type::kF16 || t == Type::kBF16 || t == Type::kF32 || t == Type::kF64;
  };
  if (!(is_int(dst) || is_scalar_float(dst)) || !(is_int(src) || is_scalar_float(src))) return {};
  const bool irnd = m.round == Round::kRni || m.round == Round::kRzi || m.round == Round::kRmi ||
                    m.round == Round::kRpi;
  const bool frnd = m.round == Round::kRn || m.round == Round::kRz || m.round == Round::kRm ||
                    m.round == Round::kRp;
  std::string pair(1, '.');  // appended: GCC 12 warns falsely (-Wrestrict) on "." + string
  pair += type_name(dst);
  pair += '.';
  pair += type_name(src);
  if (is_int(dst) && is_int(src)) {
    if (m.round != Round::kNone) return "a conversion between integers takes no rounding";
    auto is_signed = [](Type t) {
      return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64;
    };
    const int db = type_bits(dst), sb = type_bits(src);
    const bool holds_all = is_signed(dst) == is_signed(src) ? db >= sb : is_signed(dst) && db > sb;
    if (m.sat && holds_all) return ".sat on cvt" + pair + ": every source value fits";
    return {};
  }
  if (m.sat && (dst == Type::kBF16 || src == Type::kBF16)) return "cvt" + pair + " takes no .sat";
  if (is_int(dst))
    return irnd ? "" : "cvt" + pair + " needs an integer rounding (.rni, .rzi, .rmi, .rpi)";
  if (is_int(src)) return frnd ? "" : "cvt" + pair + " needs a rounding (.rn, .rz, .rm, .rp)";
  if (dst == src) return frnd ? "cvt" + pair + " rounds only to integral values (.rni ...)" : "";
  if (irnd) return "cvt" + pair + " takes no integer rounding";
  // f16 <-> bf16 trade exponent range for precision: both directions can round.
  const bool narrowing = type_bits(dst) <= type_bits(src);
  if (narrowing && !frnd) return "cvt" + pair + " needs a rounding (.rn, .rz, .rm, .rp)";
  if (!narrowing && frnd) return "cvt" + pair + " is exact and takes no rounding";
  return {};
}

// The state spaces and widths ld/st qualifiers apply to (PTX ISA, ld/st): memory orders on global
// and shared memory and generic addresses; eviction priorities, prefetch sizes and cache hints on
// global memory and generic addresses; .L2::evict_* only on 256-bit accesses. Returns what is
// wrong, or "".
std::string memory_qualifier_error(const Instr& in, const std::vector<std::string_view>& mods) {
  const bool global_or_generic = in.space == Space::kGlobal || in.space == Space::kGeneric;
  const bool shared = in.space == Space::kShared;
  for (std::string_view m : mods) {
    const bool order =
        m == ".relaxed" || m == ".acquire" || m == ".release" || m == ".volatile" || m == ".mmio";
    if (order && !global_or_generic && !shared)
      return std::string(m) + " applies to global and shared memory only";
    const bool hint = m.substr(0, 5) == ".L1::" || m.substr(0, 5) == ".L2::";
    if (hint && !global_or_generic) return std::string(m) + " applies to global memory only";
    if (m.substr(0, 11) == ".L2::evict_" && type_bits(in.type) * in.vec != 256)
      return std::string(m) + " needs a 256-bit access (.v8.b32, .v4.b64)";
  }
  return {};
}

std::string instruction_text(std::string_view opcode, const std::vector<std::string_view>& mods) {
  std::string text(opcode);
  for (std::string_view m : mods) text += m;
  return text;
}

}  // namespace

// A vector atom/red (`atom.global.add.v4.f32 {d0..d3}, [a], {b0..b3}`): the PTX ISA guarantees
// atomicity for each scalar element separately, so it is the scalar operation on each element in
// turn (element i at a + i * its size). Returns the vector length and removes `.vN` from `mods`,
// or 0 for a scalar instruction; refuses the forms the ISA does not define or the scalar
// operation would not implement. `text` names the instruction for messages.
uint32_t Parser::vector_atomic(std::vector<std::string_view>& mods, const std::string& text,
                               const Function& f, uint32_t line) const {
  uint32_t count = 0;
  size_t at = 0;
  for (size_t i = 0; i < mods.size(); ++i) {
    if (mods[i] == ".v2" || mods[i] == ".v4" || mods[i] == ".v8") {
      count = mods[i] == ".v2" ? 2 : mods[i] == ".v4" ? 4 : 8;
      at = i;
    }
  }
  if (count == 0) return 0;
  auto refuse = [&](const std::string& why) {
    not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                               "' is not supported by the emulator (" + why + ")");
  };
  const bool f32 = has(mods, ".f32");
  const bool half = has(mods, ".f16") || has(mods, ".bf16");
  const bool packed = has(mods, ".f16x2") || has(mods, ".bf16x2");
  if (!f32 && !half && !packed)
    fail_at(line,
            "instruction '" + text + "': vector atomics take f32, f16, bf16, f16x2 or bf16x2");
  if ((f32 || packed) && count == 8)
    fail_at(line, "instruction '" + text + "': .v8 is defined for f16 and bf16 only");
  if (!has(mods, ".add"))
    refuse("vector atomics other than .add: the scalar min/max of half types is not emulated");
  for (std::string_view m : mods)
    if (m == ".shared" || m == ".shared::cta" || m == ".shared::cluster" || m == ".local")
      fail_at(line,
              "instruction '" + text + "': vector atomics are defined for global memory only");
  mods.erase(mods.begin() + static_cast<std::ptrdiff_t>(at));
  return count;
}

// cvt.pack.sat.convertType.abType{.cType}: .u16/.s16 from .s32 (d, a, b), or .u8/.s8/.u4/.s4/
// .u2/.s2 from .s32 with .b32 (d, a, b, c). Sets in.op, in.sub (the converted type's bits),
// in.type (kS32 or kU32: its signedness) and the operands.
void Parser::lower_cvt_pack(const Function& f, Instr& in, const std::vector<std::string_view>& mods,
                            const std::vector<ParsedOperand>& ops, uint32_t line) {
  const std::string text = instruction_text("cvt", mods);
  static const std::pair<const char*, int> kTypes[] = {{".u16", 16}, {".s16", -16}, {".u8", 8},
                                                       {".s8", -8},  {".u4", 4},    {".s4", -4},
                                                       {".u2", 2},   {".s2", -2}};
  int convert = 0;
  if (mods.size() >= 4 && mods[0] == ".pack" && mods[1] == ".sat")
    for (auto& [name, bits] : kTypes)
      if (mods[2] == name) convert = bits;
  const int bits = convert < 0 ? -convert : convert;
  const bool with_c = bits != 16;
  if (convert == 0 || mods[3] != ".s32" || mods.size() != (with_c ? 5u : 4u) ||
      (with_c && mods[4] != ".b32"))
    fail_at(line,
            "instruction '" + text + "' in function '" + f.name +
                "': cvt.pack is .pack.sat.{u16,s16}.s32 or .pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32");
  in.op = Op::kCvtPack;
  in.sub = static_cast<uint8_t>(bits);
  in.type = convert < 0 ? Type::kS32 : Type::kU32;
  const size_t want = with_c ? 4 : 3;
  if (ops.size() != want)
    fail_at(line, "instruction '" + text + "' expects " + std::to_string(want) + " operands");
  in.nops = static_cast<uint8_t>(want);
  in.ops[0] = dst(ops[0]);
  in.ops[1] = src(ops[1], Type::kS32);
  in.ops[2] = src(ops[2], Type::kS32);
  if (with_c) in.ops[3] = src(ops[3], Type::kB32);
}

void Parser::parse_instruction(Function& f) {
  uint32_t line = peek().line;
  Instr in;
  in.line = line;
  in.function = current_index_;
  in.in_kernel = f.is_entry;
  if (accept_punct('@')) {
    bool neg = accept_punct('!');
    std::string_view pname = expect_ident("as guard predicate");
    auto n = lookup(pname);
    if (!n || !n->is_reg) fail_at(line, "unknown predicate '" + std::string(pname) + "'");
    if (n->id < kFirstRegSlot || m_.slot_bits[n->id] != 1)
      fail_at(line, "guard '" + std::string(pname) + "' is not a .pred register");
    in.has_guard = true;
    in.guard_negate = neg;
    in.guard_slot = n->id;
  }
  if (peek().kind != Tok::kIdent)
    fail("expected an instruction, found '" + std::string(peek().text) + "'");
  std::string_view opcode = next().text;
  std::vector<std::string_view> mods;
  while (peek().kind == Tok::kDot && peek().glued) mods.push_back(next().text);
  const uint32_t vector_atom = opcode == "atom" || opcode == "red"
                                   ? vector_atomic(mods, instruction_text(opcode, mods), f, line)
                                   : 0;
  // cvt.pack has its own types (sub-byte ones the modifier table keeps for mma): lower_cvt_pack
  // checks its modifiers instead of the table.
  const bool cvt_pack = opcode == "cvt" && has(mods, ".pack");
  // Valid PTX the emulator does not implement (tensor cores, textures, surfaces, cluster/TMA
  // machinery, video instructions, indirect branches, device stack allocation) fails the module
  // load naming the instruction, its function and line: a wrong answer later is worse than a
  // refusal now, and the real driver also rejects at load what its JIT cannot compile.
  const std::string text = instruction_text(opcode, mods);
  if (const char* why = not_emulated(opcode, mods))
    not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                               "' is not supported by the emulator" +
                               (*why ? std::string(" (") + why + ")" : std::string()));
  // Every modifier is one the lowering implements or one without effect here (modifiers.cpp):
  // an instruction never runs as if a modifier it carries were absent.
  // Decided once per spelling: a module repeats the same few hundred (ld.global.u32, ...).
  auto verdict = modifier_verdicts_.find(text);
  if (verdict == modifier_verdicts_.end())
    verdict = modifier_verdicts_
                  .emplace(text, cvt_pack ? ModifierVerdict{} : check_modifiers(opcode, mods))
                  .first;
  switch (const ModifierVerdict& v = verdict->second; v.kind) {
    case ModifierVerdict::kAccepted:
      break;
    case ModifierVerdict::kUnknownOpcode:
      fail_at(line, "unknown instruction '" + std::string(opcode) + "'");
    case ModifierVerdict::kInvalid:
      fail_at(line, "instruction '" + text + "' in function '" + f.name + "': " + v.why);
    case ModifierVerdict::kNotSupported:
      not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                                 "' is not supported by the emulator: " + v.why);
  }
  std::vector<ParsedOperand> ops;
  if (!is_punct(';')) {
    for (;;) {
      // `[handle, {coordinates}]` tuples: textures, surfaces and tensor-map copies (whose other
      // operands are plain addresses: a tuple is the bracket with a comma before its `]`).
      auto tuple_ahead = [&] {
        for (size_t k = 1; peek(k).kind != Tok::kEnd; ++k) {
          if (is_punct(']', k) || is_punct(';', k)) return false;
          if (is_punct(',', k)) return true;
        }
        return false;
      };
      const bool image_op = opcode == "tex" || opcode == "tld4" || opcode == "txq" ||
                            opcode == "suld" || opcode == "sust" || opcode == "suq" ||
                            (opcode == "cp" && has(mods, ".tensor") && tuple_ahead());
      ParsedOperand p =
          image_op && is_punct('[') ? parse_image_tuple() : parse_operand(opcode == "call");
      if (accept_punct('|')) {  // dual destination p|q: keep both as a 2-vector marked dual
        ParsedOperand second = parse_operand();
        ParsedOperand pair;
        pair.kind = ParsedOperand::kVector;
        pair.dual = true;
        pair.line = p.line;
        pair.elems.push_back(p);
        pair.elems.push_back(second);
        p = pair;
      }
      ops.push_back(std::move(p));
      if (accept_punct(',')) continue;
      if (is_punct(';')) break;
      // call syntax: `call (ret), func, (args)` has commas; anything else is an error
      fail("expected ',' or ';' after operand, found '" + std::string(peek().text) + "'");
    }
  }
  expect_punct(';', "at end of instruction");
  // What every lowered instruction must pass before it joins the code.
  auto finish = [&](Instr& lowered) {
    // Bulk copies keep their spaces in Instr::sub: `.shared::cluster` is their destination's.
    lowered.cluster_space = has(mods, ".shared::cluster") &&
                            (lowered.space == Space::kShared || lowered.op == Op::kBulkCopy ||
                             lowered.op == Op::kBulkTensor);
    if (!alu_implements(lowered))
      not_supported_at(line,
                       "instruction '" + text + "' in function '" + f.name +
                           "' is not supported by the emulator (this type/modifier combination)");
    if ((lowered.op == Op::kLd || lowered.op == Op::kSt) && type_bits(lowered.type) > 64)
      not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                                 "' is not supported by the emulator (128-bit loads and stores)");
    m_.code.push_back(lowered);
  };
  if (cvt_pack) {
    lower_cvt_pack(f, in, mods, ops, line);
    finish(in);
    return;
  }
  if (vector_atom != 0) {
    // One scalar instruction per element: d_i, [a + i * size], b_i.
    const size_t base = opcode == "atom" ? 1 : 0;
    if (ops.size() < base + 2 || ops[base].kind != ParsedOperand::kAddr ||
        ops[base + 1].kind != ParsedOperand::kVector || ops[base + 1].elems.size() != vector_atom ||
        (base == 1 &&
         (ops[0].kind != ParsedOperand::kVector || ops[0].elems.size() != vector_atom)))
      fail_at(line, "instruction '" + text + "' needs " + std::to_string(vector_atom) +
                        "-element vectors for its value" + (base ? " and destination" : ""));
    const int64_t size = has(mods, ".f32") || has(mods, ".f16x2") || has(mods, ".bf16x2") ? 4 : 2;
    for (uint32_t i = 0; i < vector_atom; ++i) {
      Instr element = in;
      std::vector<ParsedOperand> scalar = ops;
      if (base == 1) scalar[0] = ops[0].elems[i];
      scalar[base].offset += static_cast<int64_t>(i) * size;
      scalar[base + 1] = ops[base + 1].elems[i];
      lower(f, element, opcode, mods, scalar, line);
      finish(element);
    }
    return;
  }
  if (!lower_image(f, in, opcode, mods, ops, line)) lower(f, in, opcode, mods, ops, line);
  finish(in);
}

void Parser::lower(Function& f, Instr& in, std::string_view op, std::vector<std::string_view>& mods,
                   std::vector<ParsedOperand>& ops, uint32_t line) {
  // Common modifiers.
  std::vector<Type> types;
  for (std::string_view m : mods) {
    Type t = type_from_suffix(m);
    if (t != Type::kNone)
      types.push_back(t);
    else if (m == ".rn")
      in.mods.round = Round::kRn;
    else if (m == ".rz")
      in.mods.round = Round::kRz;
    else if (m == ".rm")
      in.mods.round = Round::kRm;
    else if (m == ".rp")
      in.mods.round = Round::kRp;
    else if (m == ".rna")
      in.mods.round = Round::kRna;
    else if (m == ".rni")
      in.mods.round = Round::kRni;
    else if (m == ".rzi")
      in.mods.round = Round::kRzi;
    else if (m == ".rmi")
      in.mods.round = Round::kRmi;
    else if (m == ".rpi")
      in.mods.round = Round::kRpi;
    else if (m == ".ftz")
      in.mods.ftz = true;
    else if (m == ".sat")
      in.mods.sat = true;
    else if (m == ".satfinite")
      in.mods.satfinite = true;  // not .sat: that clamps f16 to [0,1]
    else if (m == ".approx")
      in.mods.approx = true;
    else if (m == ".full")
      in.mods.full = true;
    else if (m == ".relu")
      in.mods.relu = true;
    else if (m == ".NaN")
      in.mods.nan = true;
    else if (m == ".xorsign")
      in.mods.xorsign_abs = true;
    else if (m == ".cc")
      in.mods.cc = true;
    else if (m == ".uni")
      in.uniform = true;
    else if (m == ".v2")
      in.vec = 2;
    else if (m == ".v4")
      in.vec = 4;
    else if (m == ".v8")
      in.vec = 8;
  }
  auto need = [&](size_t n) {
    if (ops.size() != n)
      fail_at(line, std::string(op) + " expects " + std::to_string(n) + " operands, found " +
                        std::to_string(ops.size()));
  };
  auto need_range = [&](size_t lo, size_t hi) {
    if (ops.size() < lo || ops.size() > hi)
      fail_at(line, std::string(op) + " expects " + std::to_string(lo) + ".." + std::to_string(hi) +
                        " operands, found " + std::to_string(ops.size()));
  };
  auto type0 = [&]() -> Type {
    if (types.empty()) fail_at(line, std::string(op) + " needs a type suffix");
    return types.back();
  };
  // %clock/%globaltimer anywhere among the operands (also inside vectors and call lists).
  std::function<bool(const ParsedOperand&)> dynamic = [&](const ParsedOperand& p) {
    return p.dynamic || std::any_of(p.elems.begin(), p.elems.end(), dynamic);
  };
  in.reads_dynamic_special = std::any_of(ops.begin(), ops.end(), dynamic);

  // `d, s1, s2, ...`: the destination and sources with their operand types (immediates are
  // converted to them).
  auto with_operands = [&](Op o, std::initializer_list<Type> src_types) {
    in.op = o;
    need(src_types.size() + 1);
    in.nops = static_cast<uint8_t>(src_types.size() + 1);
    in.ops[0] = dst(ops[0]);
    int i = 1;
    for (Type t : src_types) {
      in.ops[i] = src(ops[i], t);
      ++i;
    }
  };
  // `d|q` (dual destination) into ops[first] and ops[second]; a single `d` leaves ops[second]
  // a sink. Returns whether there were two.
  auto dual_dst = [&](int first, int second) {
    if (ops[0].kind == ParsedOperand::kVector && ops[0].dual) {
      in.ops[first] = dst(ops[0].elems[0]);
      in.ops[second] = dst(ops[0].elems[1]);
      return true;
    }
    in.ops[first] = dst(ops[0]);
    in.ops[second] = Operand{Operand::kSink};
    return false;
  };
  // An ALU instruction of the (last) type suffix with explicitly typed sources.
  auto alu_with = [&](AluOp a, std::initializer_list<Type> src_types) {
    in.alu_op = a;
    in.type = type0();
    with_operands(Op::kAlu, src_types);
  };
  auto simple_alu = [&](AluOp a, int nsrc) {
    in.op = Op::kAlu;
    in.alu_op = a;
    in.type = type0();
    need(static_cast<size_t>(nsrc + 1));
    in.nops = static_cast<uint8_t>(nsrc + 1);
    in.ops[0] = dst(ops[0]);
    for (int i = 0; i < nsrc; ++i) in.ops[i + 1] = src(ops[i + 1], in.type);
  };

  if (op == "add" || op == "sub" || op == "addc" || op == "subc") {
    simple_alu(op[0] == 'a' ? AluOp::kAdd : AluOp::kSub, 2);
    if (op.size() == 4) in.mods.use_carry = true;
    return;
  }
  if (op == "mul" || op == "mad" || op == "madc" || op == "mul24" || op == "mad24") {
    Type t = type0();
    const bool mad = op[1] == 'a';
    in.op = Op::kAlu;
    in.type = t;
    if (is_float(t)) {
      in.alu_op = mad ? AluOp::kMad : AluOp::kMul;
    } else if (op == "mul24" || op == "mad24") {
      bool hi = has(mods, ".hi");
      in.alu_op =
          mad ? (hi ? AluOp::kMad24Hi : AluOp::kMad24Lo) : (hi ? AluOp::kMul24Hi : AluOp::kMul24Lo);
    } else if (has(mods, ".hi")) {
      in.alu_op = mad ? AluOp::kMadHi : AluOp::kMulHi;
    } else if (has(mods, ".wide")) {
      in.alu_op = mad ? AluOp::kMadWide : AluOp::kMulWide;
    } else {
      in.alu_op = mad ? AluOp::kMadLo : AluOp::kMulLo;
    }
    if (op == "madc") in.mods.use_carry = true;
    need(mad ? 4 : 3);
    in.nops = static_cast<uint8_t>(ops.size());
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], t);
    in.ops[2] = src(ops[2], t);
    if (mad) in.ops[3] = src(ops[3], in.alu_op == AluOp::kMadWide ? wide_of(t) : t);
    return;
  }
  if (op == "fma") {
    simple_alu(AluOp::kFma, 3);
    return;
  }
  if (op == "sad") {
    simple_alu(AluOp::kSad, 3);
    return;
  }
  if (op == "div") {
    simple_alu(AluOp::kDiv, 2);
    return;
  }
  if (op == "rem") {
    simple_alu(AluOp::kRem, 2);
    return;
  }
  if (op == "abs") {
    simple_alu(AluOp::kAbs, 1);
    return;
  }
  if (op == "neg") {
    simple_alu(AluOp::kNeg, 1);
    return;
  }
  if (op == "min") {
    simple_alu(AluOp::kMin, 2);
    return;
  }
  if (op == "max") {
    simple_alu(AluOp::kMax, 2);
    return;
  }
  if (op == "copysign") {
    simple_alu(AluOp::kCopysign, 2);
    return;
  }
  if (op == "rcp") {
    simple_alu(AluOp::kRcp, 1);
    return;
  }
  if (op == "sqrt") {
    simple_alu(AluOp::kSqrt, 1);
    return;
  }
  if (op == "rsqrt") {
    simple_alu(AluOp::kRsqrt, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "sin") {
    simple_alu(AluOp::kSin, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "cos") {
    simple_alu(AluOp::kCos, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "lg2") {
    simple_alu(AluOp::kLg2, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "ex2") {
    simple_alu(AluOp::kEx2, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "tanh") {
    simple_alu(AluOp::kTanh, 1);
    in.mods.approx = true;
    return;
  }
  if (op == "and" || op == "or" || op == "xor") {
    simple_alu(op == "and" ? AluOp::kAnd : op == "or" ? AluOp::kOr : AluOp::kXor, 2);
    return;
  }
  if (op == "not") {
    simple_alu(AluOp::kNot, 1);
    return;
  }
  if (op == "cnot") {
    simple_alu(AluOp::kCnot, 1);
    return;
  }
  if (op == "lop3") {
    alu_with(AluOp::kLop3, {type0(), type0(), type0(), Type::kB32});
    return;
  }
  if (op == "shl" || op == "shr") {
    alu_with(op == "shl" ? AluOp::kShl : AluOp::kShr, {type0(), Type::kU32});
    return;
  }
  if (op == "shf") {
    bool left = has(mods, ".l");
    bool clamp = has(mods, ".clamp");
    alu_with(left ? (clamp ? AluOp::kShfLClamp : AluOp::kShfL)
                  : (clamp ? AluOp::kShfRClamp : AluOp::kShfR),
             {type0(), type0(), Type::kU32});
    return;
  }
  if (op == "bfe") {
    alu_with(AluOp::kBfe, {type0(), Type::kU32, Type::kU32});
    return;
  }
  if (op == "bfi") {
    alu_with(AluOp::kBfi, {type0(), type0(), Type::kU32, Type::kU32});
    return;
  }
  if (op == "brev") {
    simple_alu(AluOp::kBrev, 1);
    return;
  }
  if (op == "clz") {
    simple_alu(AluOp::kClz, 1);
    return;
  }
  if (op == "popc") {
    simple_alu(AluOp::kPopc, 1);
    return;
  }
  if (op == "bfind") {
    simple_alu(has(mods, ".shiftamt") ? AluOp::kBfindShiftAmt : AluOp::kBfind, 1);
    return;
  }
  if (op == "fns") {
    alu_with(AluOp::kFns, {type0(), Type::kU32, Type::kS32});
    return;
  }
  if (op == "prmt") {
    static const std::pair<const char*, AluOp> kModes[] = {
        {".f4e", AluOp::kPrmtF4e}, {".b4e", AluOp::kPrmtB4e}, {".rc8", AluOp::kPrmtRc8},
        {".ecl", AluOp::kPrmtEcl}, {".ecr", AluOp::kPrmtEcr}, {".rc16", AluOp::kPrmtRc16}};
    simple_alu(alu_op_by_modifier(mods, AluOp::kPrmt, kModes), 3);
    return;
  }
  if (op == "dp4a" || op == "dp2a") {
    if (types.size() != 2) fail_at(line, std::string(op) + " needs two types");
    in.alu_op = op == "dp4a" ? AluOp::kDp4a : (has(mods, ".hi") ? AluOp::kDp2aHi : AluOp::kDp2aLo);
    in.type = types[0];
    in.mods.b_signed = types[1] == Type::kS32;
    with_operands(Op::kAlu, {types[0], types[1], types[0]});
    return;
  }
  if (op == "testp") {
    static const std::pair<const char*, AluOp> kClasses[] = {
        {".infinite", AluOp::kTestpInfinite},
        {".number", AluOp::kTestpNumber},
        {".notanumber", AluOp::kTestpNotanumber},
        {".normal", AluOp::kTestpNormal},
        {".subnormal", AluOp::kTestpSubnormal}};
    if (!has(mods, ".finite") &&
        alu_op_by_modifier(mods, AluOp::kTestpFinite, kClasses) == AluOp::kTestpFinite)
      fail_at(
          line,
          "testp needs a class (.finite, .infinite, .number, .notanumber, .normal, .subnormal)");
    simple_alu(alu_op_by_modifier(mods, AluOp::kTestpFinite, kClasses), 1);
    return;
  }
  if (op == "mov") {
    Type t = type0();
    in.type = t;
    need(2);
    in.nops = 2;
    // mov.bN d, {a, b[, c, d]} packs and mov.bN {a, b[, c, d]}, s unpacks: two or four equal
    // elements filling the bit type exactly. A one-element brace is the plain scalar move.
    auto pack_count = [&](const ParsedOperand& v) -> size_t {
      const size_t n = v.kind == ParsedOperand::kVector && !v.dual ? v.elems.size() : 1;
      if (n == 1) return 1;
      const int bits = type_bits(t);
      if ((t != Type::kB16 && t != Type::kB32 && t != Type::kB64) || (n != 2 && n != 4) ||
          bits / static_cast<int>(n) < 8)
        fail_at(line, "mov" + instruction_text("", mods) + " cannot pack or unpack " +
                          std::to_string(n) +
                          " elements (mov.b16/.b32/.b64 with 2 or 4 elements of equal width)");
      return n;
    };
    auto elem_type = [&](size_t n) {
      const int eb = type_bits(t) / static_cast<int>(n);
      return eb == 8 ? Type::kB8 : eb == 16 ? Type::kB16 : eb == 32 ? Type::kB32 : Type::kB64;
    };
    if (const size_t n = pack_count(ops[0]); n > 1) {
      if (pack_count(ops[1]) > 1) fail_at(line, "mov cannot have vectors on both sides");
      in.op = Op::kMovUnpack;
      in.ops[0] = dst_vector(ops[0], n);
      in.ops[1] = src(ops[1], t);
      return;
    }
    in.ops[0] = dst(ops[0]);
    if (const size_t n = pack_count(ops[1]); n > 1) {
      in.op = Op::kMovPack;
      in.ops[1] = src_vector(ops[1], elem_type(n), n);
      return;
    }
    if (ops[1].kind == ParsedOperand::kName) {  // mov of a function name
      auto n = lookup(ops[1].name);
      if (!n) fail_at(line, "unknown name '" + std::string(ops[1].name) + "'");
    }
    in.op = Op::kMov;
    in.ops[1] = src(ops[1], t);
    return;
  }
  if (op == "selp") {
    in.type = type0();
    with_operands(Op::kSelp, {in.type, in.type, Type::kPred});
    return;
  }
  if (op == "slct") {
    if (types.size() != 2) fail_at(line, "slct needs two types");
    in.sub = 1;  // slct: select on sign of c
    in.type = types[0];
    in.type2 = types[1];
    with_operands(Op::kSelp, {in.type, in.type, in.type2});
    return;
  }
  if (op == "setp" || op == "set") {
    std::optional<CmpOp> c;
    for (std::string_view m : mods) {
      if (auto cc = cmp_from(m)) c = cc;
      if (m == ".and") in.bool_op = BoolOp::kAnd;
      if (m == ".or") in.bool_op = BoolOp::kOr;
      if (m == ".xor") in.bool_op = BoolOp::kXor;
    }
    if (!c) fail_at(line, std::string(op) + " needs a comparison");
    in.cmp = *c;
    if (op == "setp") {
      in.op = Op::kSetp;
      in.type = type0();
      in.type2 = in.type;
    } else {
      in.op = Op::kSet;
      if (types.size() != 2) fail_at(line, "set needs a destination and a source type");
      in.type = types[0];
      in.type2 = types[1];
    }
    need_range(3, 4);
    if ((in.bool_op != BoolOp::kNone) != (ops.size() == 4))
      fail_at(line, "a predicate operand c goes with .and/.or/.xor, and only with them");
    in.nops = static_cast<uint8_t>(ops.size() == 4 ? 5 : 3);
    if (op == "set")
      in.ops[0] = dst(ops[0]);  // set writes one register: no p|q pair
    else if (dual_dst(0, 4))
      in.nops = 5;
    in.ops[1] = src(ops[1], in.type2);
    in.ops[2] = src(ops[2], in.type2);
    if (ops.size() == 4) in.ops[3] = src(ops[3], Type::kPred);
    return;
  }
  if (op == "cvt") {
    if (types.size() != 2) fail_at(line, "cvt needs a destination and a source type");
    in.op = Op::kCvt;
    in.type = types[0];
    in.type2 = types[1];
    if (std::string why = cvt_rounding_error(in.type, in.type2, in.mods); !why.empty())
      not_supported_at(line, "instruction '" + instruction_text(op, mods) + "' in function '" +
                                 f.name + "' is not supported by the emulator: " + why);
    // Two sources only where two values are packed: cvt.f16x2.f32 d, a, b (and bf16x2, fp8).
    const bool pair =
        in.type2 == Type::kF32 &&
        (is_packed_half(in.type) || in.type == Type::kE4M3x2 || in.type == Type::kE5M2x2);
    need(pair ? 3 : 2);
    in.nops = static_cast<uint8_t>(ops.size());
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], in.type2);
    if (ops.size() == 3) in.ops[2] = src(ops[2], in.type2);
    return;
  }
  if (op == "cvta" || op == "isspacep") {
    in.op = op == "isspacep" ? Op::kIsspacep : (has(mods, ".to") ? Op::kCvtaTo : Op::kCvta);
    for (std::string_view m : mods)
      if (space_from(m) != Space::kNone) in.space = space_from(m);
    if (in.space == Space::kNone) fail_at(line, std::string(op) + " needs a state space");
    in.type = types.empty() ? Type::kU64 : types.back();
    // Generic addresses are 64-bit host addresses here: a 32-bit one would be truncated.
    if (in.op == Op::kCvta && type_bits(in.type) != 64)
      not_supported_at(line, "instruction '" + instruction_text(op, mods) +
                                 "': 32-bit generic addresses are not supported by the emulator");
    need(2);
    in.nops = 2;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], in.type);
    return;
  }
  if (op == "ld" || op == "ldu" || op == "st") {
    in.op = op == "st" ? Op::kSt : Op::kLd;
    in.space = Space::kGeneric;
    for (std::string_view m : mods)
      if (space_from(m) != Space::kNone) in.space = space_from(m);
    in.type = type0();
    if (std::string why = lower_memory_order(in, mods); !why.empty()) fail_at(line, why);
    if (std::string why = memory_qualifier_error(in, mods); !why.empty())
      not_supported_at(line, "instruction '" + instruction_text(op, mods) + "' in function '" +
                                 f.name + "' is not supported by the emulator: " + why);
    // .L2::cache_hint adds a cache-policy operand: a hint, checked and not used.
    if (has(mods, ".L2::cache_hint")) {
      need(3);
      (void)src(ops[2], Type::kB64);
      ops.pop_back();
    }
    need(2);
    in.nops = 2;
    if (type_bits(in.type) * in.vec > 256)
      fail_at(line, "instruction '" + instruction_text(op, mods) + "' accesses more than 256 bits");
    // `.vN` takes a brace vector of exactly N elements; a scalar access takes a scalar (a
    // one-element brace `{%r1}` is that scalar).
    if (in.op == Op::kLd) {
      in.ops[0] = in.vec > 1 ? dst_vector(ops[0], in.vec) : dst(ops[0]);
      in.ops[1] = addr(ops[1]);
    } else {
      in.ops[0] = addr(ops[0]);
      in.ops[1] = in.vec > 1 ? src_vector(ops[1], in.type, in.vec) : src(ops[1], in.type);
    }
    // ld/st may use registers wider than the type (narrow values in regular-width registers),
    // never narrower ones: the access would not fit.
    const Operand& data = in.ops[in.op == Op::kLd ? 0 : 1];
    const int bits = type_bits(in.type);
    auto check_width = [&](const Operand& r) {
      if (r.kind == Operand::kReg && r.index >= kFirstRegSlot && m_.slot_bits[r.index] < bits)
        fail_at(line, "a " + std::to_string(m_.slot_bits[r.index]) +
                          "-bit register cannot hold the " + std::to_string(bits) +
                          "-bit data of '" + instruction_text(op, mods) + "'");
    };
    if (data.kind == Operand::kVector)
      for (uint32_t i = 0; i < data.count; ++i) check_width(m_.vec_pool[data.index + i]);
    else
      check_width(data);
    return;
  }
  if (op == "atom" || op == "red") {
    in.op = op == "atom" ? Op::kAtom : Op::kRed;
    in.space = Space::kGeneric;
    AtomOp a = AtomOp::kAdd;
    bool found = false;
    for (std::string_view m : mods) {
      if (space_from(m) != Space::kNone) in.space = space_from(m);
      static const std::pair<const char*, AtomOp> kOps[] = {
          {".add", AtomOp::kAdd}, {".min", AtomOp::kMin}, {".max", AtomOp::kMax},
          {".inc", AtomOp::kInc}, {".dec", AtomOp::kDec}, {".and", AtomOp::kAnd},
          {".or", AtomOp::kOr},   {".xor", AtomOp::kXor}, {".exch", AtomOp::kExch},
          {".cas", AtomOp::kCas}};
      for (auto& [n, o] : kOps)
        if (m == n) {
          a = o;
          found = true;
        }
    }
    if (!found) fail_at(line, std::string(op) + " needs an operation");
    in.sub = static_cast<uint8_t>(a);
    in.type = type0();
    size_t base = in.op == Op::kAtom ? 1 : 0;
    // .L2::cache_hint (global memory only) adds a cache-policy operand: a hint, checked and not
    // used.
    if (has(mods, ".L2::cache_hint")) {
      if (in.space != Space::kGlobal && in.space != Space::kGeneric)
        not_supported_at(line, "instruction '" + instruction_text(op, mods) + "' in function '" +
                                   f.name + "' is not supported by the emulator: .L2::cache_hint " +
                                   "applies to global memory only");
      need(base + 3);
      (void)src(ops.back(), Type::kB64);
      ops.pop_back();
    }
    need(base + (a == AtomOp::kCas ? 3 : 2));
    in.nops = static_cast<uint8_t>(ops.size());
    if (base) in.ops[0] = dst(ops[0]);
    in.ops[base] = addr(ops[base]);
    in.ops[base + 1] = src(ops[base + 1], in.type);
    if (a == AtomOp::kCas) in.ops[base + 2] = src(ops[base + 2], in.type);
    // Normalise: ops[0]=dst (or none), ops[1]=addr, ops[2]=b, ops[3]=c
    if (!base) {
      in.ops[3] = in.ops[2];
      in.ops[2] = in.ops[1];
      in.ops[1] = in.ops[0];
      in.ops[0] = Operand{Operand::kSink};
      in.nops = static_cast<uint8_t>(in.nops + 1);
    }
    return;
  }
  if (op == "bra") {
    in.op = Op::kBra;
    need(1);
    in.nops = 1;
    if ((ops[0].kind != ParsedOperand::kName && ops[0].kind != ParsedOperand::kSymbol) ||
        ops[0].offset != 0 || ops[0].negate)
      fail_at(line, "bra needs a label");
    fixups_.push_back(
        LabelFixup{static_cast<uint32_t>(m_.code.size()), 0, std::string(ops[0].name), line});
    return;
  }
  if (op == "brx") {  // brx.idx{.uni} index, tlist;
    in.op = Op::kBrx;
    need(2);
    in.nops = 1;
    if ((ops[1].kind != ParsedOperand::kName && ops[1].kind != ParsedOperand::kSymbol) ||
        ops[1].offset != 0 || ops[1].negate)
      fail_at(line, "brx.idx needs the name of a .branchtargets list");
    in.ops[0] = src(ops[0], Type::kU32);
    in.matrix = static_cast<uint32_t>(m_.branch_tables.size());
    m_.branch_tables.emplace_back();
    table_fixups_.push_back(TableFixup{in.matrix, std::string(ops[1].name), line});
    return;
  }
  if (op == "call") {
    in.op = Op::kCall;
    // call (rets), func, (args) [, proto]  |  call func, (args)  |  call func
    size_t i = 0;
    const ParsedOperand* rets = nullptr;
    const ParsedOperand* args = nullptr;
    if (i < ops.size() && ops[i].kind == ParsedOperand::kList) rets = &ops[i++];
    if (i >= ops.size()) fail_at(line, "call needs a function");
    const ParsedOperand& target = ops[i++];
    if (i < ops.size() && ops[i].kind == ParsedOperand::kList) args = &ops[i++];
    if (target.kind == ParsedOperand::kReg) {
      // Indirect call through a function address; the trailing prototype name is not needed.
      in.callee = kIndirectCallee;
      in.ops[2] = src(target, Type::kB64);
      m_.has_indirect_calls = true;
    } else {
      if (target.kind != ParsedOperand::kSymbol ||
          m_.symbols[target.symbol].space != Space::kFunction)
        fail_at(line, "call needs a function name or a register holding a function address");
      in.callee = static_cast<uint32_t>(m_.symbols[target.symbol].function);
      f.callees.push_back(in.callee);
    }
    // Arguments and returns go to the vector pool: ops[0] = returns, ops[1] = arguments.
    auto pack = [&](const ParsedOperand* list) {
      Operand o;
      o.kind = Operand::kVector;
      o.index = static_cast<uint32_t>(m_.vec_pool.size());
      o.count = 0;
      if (!list) return o;
      std::vector<Operand> elems;
      for (const ParsedOperand& e : list->elems) {
        // Returns land in registers or `.param` blocks; arguments are those or integer
        // constants (a floating-point one would need the parameter's type, which PTX
        // prototypes give only as a size).
        if (list == rets && e.kind != ParsedOperand::kReg && e.kind != ParsedOperand::kSymbol)
          fail_at(line, "call return values must be registers or .param variables");
        if (e.kind == ParsedOperand::kImm && e.number.kind != NumberValue::kInt)
          not_supported_at(line, "floating-point constants as call arguments");
        if (e.kind == ParsedOperand::kReg && e.slot < kFirstRegSlot && list == rets)
          fail_at(line, "a special register cannot be written");
        elems.push_back(src(e, Type::kB64));
      }
      m_.vec_pool.insert(m_.vec_pool.end(), elems.begin(), elems.end());
      o.count = static_cast<uint8_t>(elems.size());
      return o;
    };
    in.ops[0] = pack(rets);
    in.ops[1] = pack(args);
    in.nops = in.callee == kIndirectCallee ? 3 : 2;
    return;
  }
  if (op == "ret") {
    in.op = Op::kRet;
    return;
  }
  if (op == "exit") {
    in.op = Op::kExit;
    return;
  }
  if (op == "trap") {
    in.op = Op::kTrap;
    return;
  }
  if (op == "brkpt") {
    in.op = Op::kBrkpt;
    return;
  }
  if (op == "barrier" && has(mods, ".cluster")) {  // barrier.cluster.{arrive,wait}: no operands
    in.op = Op::kBarCluster;
    in.sub = has(mods, ".wait") ? 1 : 0;
    if (!ops.empty()) fail_at(line, "barrier.cluster takes no operands");
    return;
  }
  if (op == "mapa" || op == "getctarank") {
    // mapa{.shared::cluster}.type d, a, rank    getctarank{.shared::cluster}.type d, a
    const bool mapa = op == "mapa";
    in.op = mapa ? Op::kMapa : Op::kGetctarank;
    in.space = has(mods, ".shared::cluster") ? Space::kShared : Space::kGeneric;
    in.type = types.empty() ? Type::kU64 : types.back();
    // Generic addresses are 64-bit host addresses here: a 32-bit one would be truncated.
    if (in.space == Space::kGeneric && type_bits(in.type) != 64)
      not_supported_at(line, "instruction '" + instruction_text(op, mods) +
                                 "': 32-bit generic addresses are not supported by the emulator");
    need(mapa ? 3 : 2);
    in.nops = mapa ? 3 : 2;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], in.type);
    if (mapa) in.ops[2] = src(ops[2], Type::kU32);
    return;
  }
  if (op == "bar" || op == "barrier") {
    // Barrier names are 0..15.
    if (!ops.empty() && ops[has(mods, ".red") ? 1 : 0].kind == ParsedOperand::kImm &&
        !has(mods, ".warp")) {
      const NumberValue& id = ops[has(mods, ".red") ? 1 : 0].number;
      if (id.kind != NumberValue::kInt || id.bits >= 16) fail_at(line, "barrier names are 0..15");
    }
    if (has(mods, ".warp")) {
      in.op = Op::kBarWarpSync;
      need(1);
      in.nops = 1;
      in.ops[0] = src(ops[0], Type::kB32);
      return;
    }
    in.op = Op::kBar;
    if (has(mods, ".arrive"))
      in.sub = static_cast<uint8_t>(BarKind::kArrive);
    else if (has(mods, ".red")) {
      in.sub = static_cast<uint8_t>(has(mods, ".popc")  ? BarKind::kRedPopc
                                    : has(mods, ".and") ? BarKind::kRedAnd
                                                        : BarKind::kRedOr);
      // bar.red.op d, a{, b}, {!}c
      need_range(3, 4);
      in.nops = 4;
      in.ops[0] = dst(ops[0]);
      in.ops[1] = src(ops[1], Type::kU32);
      if (ops.size() == 4) in.ops[2] = src(ops[2], Type::kU32);
      in.ops[3] = src(ops.back(), Type::kPred);
      in.type = types.empty() ? Type::kU32 : types.back();
      return;
    } else
      in.sub = static_cast<uint8_t>(BarKind::kSync);
    if (in.sub == static_cast<uint8_t>(BarKind::kArrive)) need(2);  // bar.arrive a, b: b required
    need_range(1, 2);
    in.nops = static_cast<uint8_t>(ops.size() + 1);
    in.ops[1] = src(ops[0], Type::kU32);
    if (ops.size() == 2) in.ops[2] = src(ops[1], Type::kU32);
    return;
  }
  if (op == "shfl") {
    in.op = Op::kShfl;
    if (has(mods, ".up"))
      in.sub = static_cast<uint8_t>(ShflMode::kUp);
    else if (has(mods, ".down"))
      in.sub = static_cast<uint8_t>(ShflMode::kDown);
    else if (has(mods, ".bfly"))
      in.sub = static_cast<uint8_t>(ShflMode::kBfly);
    else
      in.sub = static_cast<uint8_t>(ShflMode::kIdx);
    in.type = Type::kB32;
    // shfl.sync takes a membermask; the pre-sm_70 shfl does not.
    need(has(mods, ".sync") ? 5 : 4);
    in.nops = 6;
    dual_dst(0, 1);
    in.ops[2] = src(ops[1], Type::kB32);
    in.ops[3] = src(ops[2], Type::kB32);
    in.ops[4] = src(ops[3], Type::kB32);
    if (ops.size() == 5)
      in.ops[5] = src(ops[4], Type::kB32);
    else
      in.ops[5] = Operand{Operand::kNone};
    return;
  }
  if (op == "vote") {
    in.op = Op::kVote;
    if (has(mods, ".all"))
      in.sub = static_cast<uint8_t>(VoteMode::kAll);
    else if (has(mods, ".any"))
      in.sub = static_cast<uint8_t>(VoteMode::kAny);
    else if (has(mods, ".uni"))
      in.sub = static_cast<uint8_t>(VoteMode::kUni);
    else
      in.sub = static_cast<uint8_t>(VoteMode::kBallot);
    in.uniform = false;
    need(has(mods, ".sync") ? 3 : 2);  // vote.sync takes a membermask; the pre-sm_70 vote does not
    in.nops = 3;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], Type::kPred);
    if (ops.size() == 3) in.ops[2] = src(ops[2], Type::kB32);
    return;
  }
  if (op == "alloca") {  // alloca.type ptr, size{, immAlign}: the stack grows down (interp_call)
    in.op = Op::kAlloca;
    in.type = type0();
    if (ops.size() != 2 && ops.size() != 3) fail_at(line, "alloca expects 2 or 3 operands");
    in.nops = 2;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = src(ops[1], in.type);
    uint64_t align = 8;  // the ISA's default, the minimum guaranteed alignment
    if (ops.size() == 3) {
      if (ops[2].kind != ParsedOperand::kImm)
        fail_at(line, "alloca's alignment must be a constant");
      align = ops[2].number.bits;
      if (align == 0 || (align & (align - 1)) != 0 || align > (uint64_t{1} << 23))
        fail_at(line, "alloca's alignment must be a power of 2 no larger than 2^23");
    }
    in.matrix = static_cast<uint32_t>(std::max<uint64_t>(align, 8));
    m_.has_dynamic_stack = true;
    return;
  }
  if (op == "stacksave" || op == "stackrestore") {
    in.op = op == "stacksave" ? Op::kStackSave : Op::kStackRestore;
    in.type = type0();
    need(1);
    in.nops = 1;
    in.ops[0] = op == "stacksave" ? dst(ops[0]) : src(ops[0], in.type);
    return;
  }
  if (op == "activemask") {
    in.op = Op::kActivemask;
    need(1);
    in.nops = 1;
    in.ops[0] = dst(ops[0]);
    return;
  }
  if (op == "match") {
    in.op = Op::kMatch;
    in.sub = has(mods, ".all") ? 1 : 0;
    in.type = type0();
    need(3);
    in.nops = 4;
    dual_dst(0, 3);
    in.ops[1] = src(ops[1], in.type);
    in.ops[2] = src(ops[2], Type::kB32);
    return;
  }
  if (op == "redux") {
    in.op = Op::kRedux;
    ReduxOp r = ReduxOp::kAdd;
    if (has(mods, ".min"))
      r = ReduxOp::kMin;
    else if (has(mods, ".max"))
      r = ReduxOp::kMax;
    else if (has(mods, ".and"))
      r = ReduxOp::kAnd;
    else if (has(mods, ".or"))
      r = ReduxOp::kOr;
    else if (has(mods, ".xor"))
      r = ReduxOp::kXor;
    in.sub = static_cast<uint8_t>(r);
    in.type = type0();
    with_operands(Op::kRedux, {in.type, Type::kB32});
    return;
  }
  if (op == "setmaxnreg") {
    // No effect (every thread has all its registers), but its operand follows the ISA's rule:
    // imm-reg-count a constant in [24, 256] and a multiple of 8.
    need(1);
    const ParsedOperand& c = ops[0];
    if (c.kind != ParsedOperand::kImm || c.number.kind != NumberValue::kInt || c.number.bits < 24 ||
        c.number.bits > 256 || c.number.bits % 8 != 0)
      fail_at(line, "setmaxnreg: imm-reg-count must be a constant multiple of 8 in [24, 256]");
    in.op = Op::kFence;
    return;
  }
  if (op == "membar" || op == "fence" || op == "prefetch" || op == "prefetchu" || op == "discard" ||
      op == "applypriority" || op == "griddepcontrol" || op == "createpolicy" || op == "pmevent") {
    in.op = Op::kFence;
    // membar and fence order memory: the interpreter runs them as sequentially consistent host
    // fences (sub = 1); the rest are hints.
    if (op == "membar" || (op == "fence" && !has(mods, ".proxy"))) in.sub = 1;
    if (op == "createpolicy") {  // returns an opaque cache policy: write 0
      in.op = Op::kMov;
      in.type = Type::kB64;
      in.nops = 2;
      in.ops[0] = dst(ops[0]);
      in.ops[1] = Operand{Operand::kReg};
      in.ops[1].index = kSpZero;
    }
    return;
  }
  if (op == "nanosleep") {  // the duration advances the warp's emulated clock (interp_core.cpp)
    need(1);
    in.op = Op::kNanosleep;
    in.nops = 1;
    in.ops[0] = src(ops[0], Type::kU32);
    return;
  }
  if (op == "cp" && has(mods, ".bulk")) {
    lower_bulk_copy(in, mods, ops, line);
    return;
  }
  if (op == "mbarrier" || (op == "cp" && has(mods, ".mbarrier"))) {
    lower_mbarrier(in, op, mods, ops, line);
    return;
  }
  if (op == "cp") {
    if (!has(mods, ".async"))
      fail_at(line, "unknown instruction 'cp" + instruction_text("", mods) + "'");
    if (has(mods, ".commit_group") || has(mods, ".wait_group") || has(mods, ".wait_all")) {
      in.op = Op::kFence;  // copies complete immediately
      return;
    }
    in.op = Op::kCpAsync;
    need_range(3, 5);
    in.nops = 4;
    in.ops[0] = addr(ops[0]);
    in.ops[1] = addr(ops[1]);
    in.ops[2] = src(ops[2], Type::kU32);
    // cp-size is 4, 8 or 16 bytes; .cg copies only 16.
    if (ops[2].kind != ParsedOperand::kImm || ops[2].number.kind != NumberValue::kInt ||
        (ops[2].number.bits != 4 && ops[2].number.bits != 8 && ops[2].number.bits != 16) ||
        (has(mods, ".cg") && ops[2].number.bits != 16))
      fail_at(line, has(mods, ".cg")
                        ? "cp.async.cg copies 16 bytes: cp-size must be the constant 16"
                        : "cp.async cp-size must be the constant 4, 8 or 16");
    // Optional src-size (u32) or ignore-src (a predicate), then the cache policy that
    // .L2::cache_hint requires (a hint: not used).
    const bool hint = has(mods, ".L2::cache_hint");
    if (ops.size() == 5 && !hint)
      fail_at(line, "cp.async takes a cache policy only with .L2::cache_hint");
    if (hint && ops.size() == 3)
      fail_at(line, "cp.async with .L2::cache_hint needs a cache policy operand");
    if (hint) (void)src(ops.back(), Type::kB64);
    if (ops.size() == (hint ? 5u : 4u)) {
      const ParsedOperand& extra = ops[3];
      const bool ignore_src = extra.kind == ParsedOperand::kReg && extra.slot >= kFirstRegSlot &&
                              m_.slot_bits[extra.slot] == 1;
      in.sub = ignore_src ? 1 : 0;  // 1: ops[3] is ignore-src (true: copy zeros)
      in.ops[3] = src(extra, ignore_src ? Type::kPred : Type::kU32);
    }
    return;
  }
  if (op == "bmsk" || op == "szext") {
    in.sub = has(mods, ".wrap") ? 1 : 0;
    in.type = type0();
    with_operands(op == "bmsk" ? Op::kBmsk : Op::kSzext, {Type::kU32, Type::kU32});
    return;
  }
  if (op == "mma") {
    lower_mma(in, mods, types, ops, line);
    return;
  }
  if (op == "wmma") {
    lower_wmma(in, mods, types, ops, line);
    return;
  }
  if (op == "wgmma") {
    lower_wgmma(in, mods, types, ops, line);
    return;
  }
  if (op == "ldmatrix" || op == "stmatrix" || op == "movmatrix") {
    lower_ldmatrix(in, op, mods, ops, line);
    return;
  }
  if (op == "elect") {
    in.op = Op::kElect;
    need(2);
    in.nops = 3;
    dual_dst(0, 1);
    in.ops[2] = src(ops[1], Type::kB32);
    return;
  }
  fail_at(line, "unknown instruction '" + std::string(op) + "'");
}

}  // namespace cusnap::emu::ptx

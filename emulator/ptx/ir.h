// The pre-decoded form of a PTX module: what the parser lowers PTX text to, once per module, and
// what the SIMT interpreter executes. Everything the interpreter needs per instruction is
// resolved here (opcode, types, modifiers, operand slots, branch targets, symbol ids) so that
// executing an instruction is a switch on `Op` plus pointer arithmetic.
//
// Register model: every `.reg` declared anywhere in the module gets its own slot in one
// module-wide numbering (slots below kFirstRegSlot hold the special registers). A warp holds
// `slot_count * 32` uint64_t values, lane-contiguous per slot, so `regs + slot * 32` is exactly
// the 32-lane array the ALU contract (alu.h) takes. Immediates live in a module constant pool
// with the same 32-lane layout, already converted to the operand's type.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "alu.h"
#include "engine.h"

namespace cusnap::emu::ptx {

enum class Space : uint8_t {
  kNone,
  kGeneric,
  kGlobal,
  kConst,
  kShared,
  kLocal,
  kParamKernel,  // kernel parameter buffer (read-only, one per launch)
  kParamFrame,   // `.param` of a `.func` or a call site: lives in the thread's local frame
  kFunction,     // a function name used as a value
};

// Special registers, in the fixed slots [0, kFirstRegSlot).
enum Special : uint32_t {
  kSpTidX,
  kSpTidY,
  kSpTidZ,
  kSpNtidX,
  kSpNtidY,
  kSpNtidZ,
  kSpCtaidX,
  kSpCtaidY,
  kSpCtaidZ,
  kSpNctaidX,
  kSpNctaidY,
  kSpNctaidZ,
  kSpLaneid,
  kSpWarpid,
  kSpNwarpid,
  kSpSmid,
  kSpNsmid,
  kSpGridid,
  kSpLanemaskEq,
  kSpLanemaskLt,
  kSpLanemaskLe,
  kSpLanemaskGt,
  kSpLanemaskGe,
  kSpClock,
  kSpClockHi,
  kSpClock64,
  kSpGlobaltimer,
  kSpGlobaltimerLo,
  kSpGlobaltimerHi,
  kSpDynSmem,
  kSpTotalSmem,
  kSpEnvreg0,                // %envreg0..31
  kSpPm0 = kSpEnvreg0 + 32,  // %pm0..7 (performance counters: read as 0)
  kSpClusterCtaidX = kSpPm0 + 8,
  kSpClusterCtaidY,
  kSpClusterCtaidZ,
  kSpClusterNctaidX,
  kSpClusterNctaidY,
  kSpClusterNctaidZ,
  kSpClusterCtarank,
  kSpClusterNctarank,
  kSpIsExplicitCluster,
  kSpClusteridX,
  kSpClusteridY,
  kSpClusteridZ,
  kSpNclusteridX,
  kSpNclusteridY,
  kSpNclusteridZ,
  kSpZero,  // a slot that always reads 0 (sink reads, %pm, unknown counters)
  kSpScratch0,
  kSpScratch1,
  kSpScratch2,
  kSpScratch3,  // interpreter temporaries
  kFirstRegSlot,
};

enum class Op : uint8_t {
  kNop,
  kAlu,        // alu(alu_op, type, mods, mask, a, b, c, d[, carry][, e])
  kMov,        // d = a (register, immediate, special register or symbol address)
  kMovPack,    // mov.bN d, {a, b, ...}
  kMovUnpack,  // mov.bN {d0, d1, ...}, a
  kSelp,       // d = c ? a : b
  kSetp,       // p[|q] = cmp(a, b) [bool_op c]
  kSet,        // d = cmp(a, b) [bool_op c] as all-ones/1.0f
  kCvt,        // cvt(type, type2, ...)
  kCvta,       // to generic (space)
  kCvtaTo,     // generic to space
  kIsspacep,
  kLd,
  kSt,
  kAtom,
  kRed,
  kBra,
  kBrx,  // brx.idx: Module::branch_tables[Instr::matrix][index]
  kCall,
  kRet,
  kExit,
  kTrap,
  kBrkpt,
  kBar,  // bar.sync / barrier.sync / bar.arrive / bar.red
  kBarWarpSync,
  kShfl,
  kVote,
  kActivemask,
  kCvtPack,    // cvt.pack.sat.T.s32{.b32} d, a, b{, c}  (sub: T's bits, type: kS32/kU32 = T's sign)
  kAlloca,     // alloca.type d, size, align   (ops: d, size; Instr::matrix: the alignment)
  kStackSave,  // stacksave.type d
  kStackRestore,  // stackrestore.type a
  kMatch,
  kRedux,
  kFence,  // sub 1: membar / fence, a sequentially consistent host fence; sub 0: proxy
           // fences, prefetch, discard and other hints, no-ops (modifiers.cpp says why)
  kNanosleep,
  kCpAsync,  // cp.async.{ca,cg}.shared.global: performed synchronously (commit/wait are no-ops)
  kElect,    // elect.sync d|p, membermask
  // mbarrier.* and cp.async.mbarrier.arrive (interp_async.cpp; sub: MbarOp, image: kMbar* flags):
  //   d (state token, waitComplete predicate or none), [a], b (count, txCount, state, parity)
  kMbarrier,
  // cp.async.bulk [dst], [src], size{, [mbar]} (interp_async.cpp), performed when issued. sub:
  // 0 = global -> shared (complete_tx on mbar), 1 = shared::cta -> shared::cluster (likewise),
  // 2 = shared::cta -> global (bulk group)
  kBulkCopy,
  // cp.async.bulk.tensor tile mode (interp_async.cpp; vec: rank, sub: 0 = load, 1 = store):
  //   [a] shared box, b tensor-map address, c coordinates (vector of vec), [d] mbarrier (load)
  kBulkTensor,
  // Clusters (interp_cluster.cpp). kBarCluster: barrier.cluster.arrive (sub 0) / .wait (sub 1).
  // kMapa: mapa{.shared::cluster}.{u32,u64} d, a, rank (Instr::cluster_space: a and d are
  // shared::cluster addresses, else generic). kGetctarank: getctarank{.shared::cluster} d, a.
  kBarCluster,
  kMapa,
  kGetctarank,
  kBmsk,       // bmsk.{clamp,wrap}.b32 d, a, b   (sub: 1 = wrap)
  kSzext,      // szext.{clamp,wrap}.{s32,u32} d, a, b   (sub: 1 = wrap)
  kMma,        // mma.sync.aligned d, a, b, c: Module::matrix_ops[matrix] (interp_matrix.cpp)
  kLdmatrix,   // ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 d, [a]  (vec: N, sub: trans)
  kStmatrix,   // stmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16 [a], s  (vec: N, sub: trans)
  kMovmatrix,  // movmatrix.sync.aligned.m8n8.trans.b16 d, a
  kWmmaLoad,   // wmma.load.{a,b,c} d, [a]{, stride}: Module::matrix_ops[matrix]
  kWmmaStore,  // wmma.store.d [a], s{, stride}
  // wgmma.*.sync.aligned (interp_matrix.cpp). sub 0: mma_async d, a-desc|{a}, b-desc, scale-d
  // (Module::matrix_ops[matrix]); 1: fence; 2: commit_group; 3: wait_group N (ops[0]).
  kWgmma,
  // Textures and surfaces (interp_texture.cpp; sub: TexGeom, image: see ImageMode). Operands:
  //   kTex/kTld4  d{4}, handle, coords{N}[, lod]      kSuld  d{vec}, handle, coords{N}
  //   kSust       handle, coords{N}, a{vec}           kTxq/kSuq  d, handle
  //   kIstypep    p, handle
  kTex,
  kTld4,
  kTxq,
  kSuld,
  kSust,
  kSuq,
  kIstypep,
  // There is no "unsupported" op: an instruction the emulator does not implement fails the
  // module load (parse_module reports it as not supported), never a launch.
};

enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
// Texture/surface geometry (Instr::sub) and the coordinate vector length PTX gives each.
enum class TexGeom : uint8_t { k1d, k2d, k3d, kA1d, kA2d };
inline constexpr uint8_t kTexCoords[] = {1, 2, 4, 2, 4};
// Instr::image: tex: 1 = .level (an explicit LOD operand); tld4: the component (r, g, b, a);
// suld/sust: the out-of-bounds mode; txq/suq: the query; istypep: the type.
enum class SurfaceClamp : uint8_t { kTrap, kClamp, kZero };
enum class ImageQuery : uint8_t {
  kWidth,
  kHeight,
  kDepth,
  kArraySize,
  kNumMipmapLevels,
  kNormalizedCoords
};
enum class ImageType : uint8_t { kTexref, kSamplerref, kSurfref };
enum class ShflMode : uint8_t { kUp, kDown, kBfly, kIdx };
enum class VoteMode : uint8_t { kAll, kAny, kUni, kBallot };
enum class ReduxOp : uint8_t { kAdd, kMin, kMax, kAnd, kOr, kXor };
enum class BarKind : uint8_t { kSync, kArrive, kRedPopc, kRedAnd, kRedOr };
// mbarrier operations (Instr::sub of kMbarrier). kCpAsyncArrive: cp.async.mbarrier.arrive.
enum class MbarOp : uint8_t {
  kInit,
  kInval,
  kArrive,
  kArriveDrop,
  kExpectTx,
  kCompleteTx,
  kTestWait,
  kTryWait,
  kCpAsyncArrive
};
// Instr::image flags of kMbarrier.
inline constexpr uint8_t kMbarParity = 1;      // test_wait/try_wait .parity: b is a phase parity
inline constexpr uint8_t kMbarNoComplete = 2;  // arrive(.drop).noComplete
inline constexpr uint8_t kMbarExpectTx = 4;    // arrive(.drop).expect_tx: b is a txCount
inline constexpr uint8_t kMbarNoInc = 8;       // cp.async.mbarrier.arrive.noinc
// Instr::image of kBulkCopy: .multicast::cluster (ops[4]: the ctaMask).
inline constexpr uint8_t kBulkMulticast = 1;

// Memory-ordering semantics of ld/st (`.weak` is the default when no qualifier is written).
// Weak accesses are plain host loads/stores; every other order is a C++ atomic access, because
// PTX code synchronises blocks running on different host threads with them (cooperative
// `grid.sync()` spins on `ld.acquire.gpu` of a word bumped by `atom.add.release.gpu`), and a
// plain memcpy racing with an atomic is undefined behaviour in C++ (and what ThreadSanitizer
// reports). `.volatile` and `.mmio` behave as `.relaxed.sys`.
enum class MemOrder : uint8_t { kWeak, kRelaxed, kAcquire, kRelease, kVolatile };
// Scope of a non-weak access. All blocks of a launch share host memory coherently, so every
// scope is executed the same way; it is kept for diagnostics and tests.
enum class MemScope : uint8_t { kNone, kCta, kCluster, kGpu, kSys };

struct Operand {
  enum Kind : uint8_t {
    kNone,
    kReg,        // slot
    kConst,      // constant pool index
    kSink,       // `_`: result discarded
    kVector,     // `count` operands starting at vec_pool[index]
    kAddr,       // [base + offset]; base is a register (slot), a symbol (symbol) or absent
    kSymbol,     // a symbol's address as a value (mov, cvta, call arguments)
    kRefHandle,  // the 64-bit handle stored in a .texref/.surfref variable (symbol)
    kLabel,      // branch target: index = instruction index
  };
  Kind kind = kNone;
  bool negate = false;       // `!%p`
  bool base_is_reg = false;  // kAddr: base is register `index`; else symbol `symbol` or none
  bool has_symbol = false;   // kAddr / kSymbol
  uint8_t count = 0;         // kVector
  uint32_t index = 0;        // slot / const index / vec_pool index / instruction index
  uint32_t symbol = 0;       // symbol id
  int64_t offset = 0;        // kAddr / kSymbol
};

inline constexpr int kMaxOperands = 6;
// shared::cluster addresses (32-bit, the emulator's encoding, docs/emulator.md "Clusters"): an
// address below 2^24 is a shared::cta address of the executing CTA (that window is part of the
// shared::cluster window); (rank + 1) << 24 | offset is byte `offset` of the shared memory of the
// cluster's CTA `rank` (what mapa.shared::cluster returns, for every rank).
inline constexpr int kClusterWindowShift = 24;
inline constexpr uint64_t kClusterWindowMask = (uint64_t{1} << kClusterWindowShift) - 1;
inline constexpr uint32_t kMaxClusterSize = 16;  // the largest (non-portable) cluster
inline constexpr uint32_t kIndirectCallee = 0xffffffffu;
// Function "addresses" (mov of a function name) are this tag | function index.
inline constexpr uint64_t kFunctionAddressTag = uint64_t{0x7f} << 56;

struct Instr {
  Op op = Op::kNop;
  AluOp alu_op = AluOp::kMov;
  CmpOp cmp = CmpOp::kEq;
  BoolOp bool_op = BoolOp::kNone;
  Type type = Type::kNone;   // instruction type (cvt: destination)
  Type type2 = Type::kNone;  // cvt: source; set: source type (type = destination)
  Space space = Space::kNone;
  uint8_t vec = 1;  // .v2 / .v4 for ld/st
  uint8_t nops = 0;
  uint8_t sub = 0;    // ShflMode / VoteMode / ReduxOp / AtomOp / BarKind / TexGeom
  uint8_t image = 0;  // texture and surface instructions: see Instr::image at TexGeom
  bool has_guard = false;
  bool guard_negate = false;
  bool uniform = false;                // .uni on bra/call
  bool reads_dynamic_special = false;  // reads %clock / %globaltimer: refresh before executing
  bool in_kernel = false;  // belongs to an `.entry` (decides what `.param` means for ld/st)
  // `.shared::cluster` (space kShared): addresses are shared::cluster addresses, which may name
  // another CTA of the cluster (kClusterWindowShift below); otherwise shared means this CTA's.
  bool cluster_space = false;
  MemOrder order = MemOrder::kWeak;  // ld/st: ordering qualifier
  MemScope scope = MemScope::kNone;  // ld/st: scope of a non-weak access
  Mods mods;
  uint32_t guard_slot = 0;
  uint32_t line = 0;      // PTX source line
  uint32_t function = 0;  // owning function index
  uint32_t callee = 0;    // kCall: function index, or kIndirectCallee (target in ops[2])
  uint32_t matrix = 0;    // kMma, kWmmaLoad, kWmmaStore: index into Module::matrix_ops;
                          // kBrx: index into Module::branch_tables
  Operand ops[kMaxOperands];
};

// A warp-wide matrix instruction (mma.sync.aligned), decoded once: D (m x n) = A (m x k) *
// B (k x n) + C. Operand vectors hold per-lane fragments; the maps say, for lane l and fragment
// element i (element i of a vector is register i / per_reg, bits (i % per_reg) * element width),
// which matrix element it is: map[l * frag + i] = row * cols + col. Built from the PTX ISA's
// "Matrix fragments for mma" layouts in lower_matrix.cpp.
struct MatrixOp {
  uint8_t m = 0, n = 0, k = 0;
  Type a = Type::kNone, b = Type::kNone, c = Type::kNone, d = Type::kNone;
  bool satfinite = false;  // integer: clamp the s32 result instead of wrapping
  // wmma.load/store: which matrix ('a', 'b', 'c'), its rows and columns, element type, memory
  // layout (row-major: element (r, c) at r * stride + c), fragment elements per lane and map.
  char which = 0;
  uint8_t rows = 0, cols = 0;
  Type elem = Type::kNone;
  bool col_major = false;
  uint8_t a_frag = 0, b_frag = 0, c_frag = 0;  // elements per lane
  std::vector<uint16_t> a_map, b_map, c_map;   // 32 * frag entries each (c_map serves D too)
  // wgmma.mma_async (m64nNk16, n above unused): N, A from registers (else a descriptor), the
  // immediate scales (+1/-1) of A and B, and their transposes (1: M-/N-major).
  uint16_t wg_n = 0;
  bool a_regs = false;
  int8_t scale_a = 1, scale_b = 1;
  bool trans_a = false, trans_b = false;
};

struct Symbol {
  std::string name;
  Space space = Space::kNone;
  uint64_t size = 0;
  uint32_t align = 1;
  int32_t variable = -1;   // index into VariableDesc (global/const)
  int32_t function = -1;   // owning function (local/param-frame), or the function for kFunction
  uint64_t offset = 0;     // local/param-frame: frame offset; param-kernel: buffer offset
  int32_t shared_id = -1;  // shared: ordinal among shared symbols
  bool extern_shared = false;
  OpaqueKind opaque = OpaqueKind::kNone;  // a .texref / .surfref variable (engine.h)
};

struct FormalParam {
  uint32_t symbol = 0;  // a kParamFrame symbol of the function (or kParamKernel for entries)
  uint32_t size = 0;
  bool is_reg = false;  // `.reg` parameter of a .func (value passed in a register slot)
  uint32_t slot = 0;
};

enum class Builtin : uint8_t { kNone, kVprintf, kAssertfail, kMalloc, kFree };

struct Function {
  std::string name;
  bool is_entry = false;
  bool has_body = false;
  bool recursive = false;  // takes part in a call-graph cycle: registers saved per call
  Builtin builtin = Builtin::kNone;
  uint32_t first_instr = 0;  // [first_instr, end_instr)
  uint32_t end_instr = 0;
  uint32_t first_slot = 0;  // [first_slot, end_slot): registers declared in this function
  uint32_t end_slot = 0;
  uint32_t frame_bytes = 0;  // .local + frame .param bytes
  std::vector<FormalParam> params;
  std::vector<FormalParam> returns;
  std::vector<uint32_t> callees;
  std::vector<uint32_t> shared_symbols;  // referenced directly
  int32_t kernel = -1;                   // index into kernels when is_entry
  uint32_t line = 0;
};

// Per-kernel facts computed at lowering.
struct KernelInfo {
  uint32_t function = 0;
  std::vector<int64_t> shared_offset;  // by shared_id; -1 when not used by this kernel
  uint32_t static_shared = 0;
  uint32_t dynamic_shared_offset = 0;  // where `.extern .shared` arrays start
  uint32_t max_frame = 0;              // kernel frame bytes
  // Register slot ranges of the functions this kernel can reach (zeroed per block).
  std::vector<std::pair<uint32_t, uint32_t>> slot_ranges;
};

struct Module {
  uint32_t ptx_version = 0;
  uint32_t target_sm = 0;
  uint32_t address_size = 64;
  std::vector<Instr> code;
  std::vector<Function> functions;
  std::vector<Symbol> symbols;
  std::vector<uint64_t> const_pool;  // 32 lanes per entry
  std::vector<Operand> vec_pool;
  std::vector<MatrixOp> matrix_ops;
  // brx.idx target lists (`.branchtargets`), as instruction indices.
  std::vector<std::vector<uint32_t>> branch_tables;
  std::vector<uint8_t> slot_bits;  // declared width of each slot
  uint32_t slot_count = kFirstRegSlot;
  uint32_t shared_symbol_count = 0;
  bool has_indirect_calls = false;
  bool has_dynamic_stack = false;    // alloca: threads need stack beyond their static frames
  bool texmode_independent = false;  // `.target texmode_independent`
  std::vector<KernelDesc> kernels;
  std::vector<KernelInfo> kernel_info;
  std::vector<VariableDesc> variables;
  std::vector<uint32_t> variable_symbol;  // symbol of each variable
  // Initializers that hold addresses of other symbols (`.global .u64 p = generic(x)`):
  // patched into the variable's memory once every target is bound.
  struct Relocation {
    uint32_t variable = 0;
    uint64_t offset = 0;
    uint32_t target_symbol = 0;
    int64_t addend = 0;
    uint32_t size = 8;
  };
  std::vector<Relocation> relocations;
  std::unordered_map<std::string, uint32_t> global_symbols;  // module scope name -> symbol
};

// Parses and lowers; on failure returns false with "line L: ..." in `error`, and sets
// `*not_supported` when the text is valid PTX that uses something the emulator does not implement
// (an instruction, a type/modifier combination, a directive) rather than malformed PTX.
bool parse_module(std::string_view text, Module& module, std::string& error,
                  bool* not_supported = nullptr);

}  // namespace cusnap::emu::ptx

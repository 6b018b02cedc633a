// The forms of every instruction the emulator executes (see modifiers.h), and the matcher.
//
// A form is an opcode, a modifier pattern and a type pattern, read like a PTX ISA syntax line:
//   `{.a|.b}`  optional, at most one of the alternatives     `(.a|.b)`  exactly one of them
//   `.a`       required                                      `{.a.b}`   .a and .b together
//   `$name`    a named set of alternatives (kSets)           `~`        no effect on results
// Types are positional: "u32|s32 f32" is two type suffixes, the first .u32 or .s32 and the second
// .f32; "" is none. Modifiers may be written in any order (ptxas accepts several orders) and a
// modifier repeated verbatim counts once (ptxas accepts that too); two different alternatives of
// one group (`.rn.rz`) are refused.
//
// The forms list what the lowering and the ALU implement with its ISA meaning, or what has no
// effect in the emulator's execution model (marked `~`, each with its reason in kNoEffect). A
// modifier that is valid PTX but absent here is not supported: the module does not load.
#include "modifiers.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "alu.h"
#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

struct FormSpec {
  const char* opcodes;  // space-separated opcodes sharing the form
  const char* mods;
  const char* types;
};

// Named sets of modifier alternatives ($name) and of types ($name in a type position).
constexpr std::pair<const char*, const char*> kSets[] = {
    {"$rnd", ".rn|.rz|.rm|.rp"},
    {"$irnd", ".rni|.rzi|.rmi|.rpi"},
    {"$cmps", ".eq|.ne|.lt|.le|.gt|.ge"},
    {"$cmpu", "$cmps|.lo|.ls|.hi|.hs"},
    {"$cmpb", ".eq|.ne"},
    {"$cmpf", "$cmps|.equ|.neu|.ltu|.leu|.gtu|.geu|.num|.nan"},
    {"$bool", ".and|.or|.xor"},
    {"$scope", ".cta|.cluster|.gpu|.sys"},
    {"$ldss",
     ".const|.global|.local|.param|.param::entry|.param::func|.shared|.shared::cta|"
     ".shared::cluster"},
    {"$stss", ".global|.local|.param|.param::func|.shared|.shared::cta|.shared::cluster"},
    {"$ldcop", ".ca|.cg|.cs|.lu|.cv"},
    {"$stcop", ".wb|.cg|.cs|.wt"},
    {"$l1",
     ".L1::evict_normal|.L1::evict_unchanged|.L1::evict_first|.L1::evict_last|"
     ".L1::no_allocate"},
    {"$l2", ".L2::evict_normal|.L2::evict_first|.L2::evict_last"},
    {"$l2primary", ".L2::evict_last|.L2::evict_normal|.L2::evict_first|.L2::evict_unchanged"},
    {"$l2secondary", ".L2::evict_first|.L2::evict_unchanged"},
    {"$prefetch", ".L2::64B|.L2::128B|.L2::256B"},
    {"$vec", ".v2|.v4|.v8"},
    {"$aspace", ".global|.shared|.shared::cta|.shared::cluster"},
    {"$asem", ".relaxed|.acquire|.release|.acq_rel"},
    {"$wss", ".global|.shared|.shared::cta"},
    {"$wgmma_shape",
     ".m64n8k16|.m64n16k16|.m64n24k16|.m64n32k16|.m64n40k16|.m64n48k16|.m64n56k16|.m64n64k16|"
     ".m64n72k16|.m64n80k16|.m64n88k16|.m64n96k16|.m64n104k16|.m64n112k16|.m64n120k16|"
     ".m64n128k16|.m64n136k16|.m64n144k16|.m64n152k16|.m64n160k16|.m64n168k16|.m64n176k16|"
     ".m64n184k16|.m64n192k16|.m64n200k16|.m64n208k16|.m64n216k16|.m64n224k16|.m64n232k16|"
     ".m64n240k16|.m64n248k16|.m64n256k16"},
    {"$wgmma_tshape",  // tf32: K = 8
     ".m64n8k8|.m64n16k8|.m64n24k8|.m64n32k8|.m64n40k8|.m64n48k8|.m64n56k8|.m64n64k8|"
     ".m64n72k8|.m64n80k8|.m64n88k8|.m64n96k8|.m64n104k8|.m64n112k8|.m64n120k8|.m64n128k8|"
     ".m64n136k8|.m64n144k8|.m64n152k8|.m64n160k8|.m64n168k8|.m64n176k8|.m64n184k8|.m64n192k8|"
     ".m64n200k8|.m64n208k8|.m64n216k8|.m64n224k8|.m64n232k8|.m64n240k8|.m64n248k8|.m64n256k8"},
    {"$wgmma_ishape",  // s8/u8: K = 32, N = 8..32 step 8, then step 16
     ".m64n8k32|.m64n16k32|.m64n24k32|.m64n32k32|.m64n48k32|.m64n64k32|.m64n80k32|.m64n96k32|"
     ".m64n112k32|.m64n128k32|.m64n144k32|.m64n160k32|.m64n176k32|.m64n192k32|.m64n208k32|"
     ".m64n224k32|.m64n240k32|.m64n256k32"},
    {"$cvtaspace",
     ".const|.global|.local|.shared|.shared::cta|.shared::cluster|.param|.param::entry"},
    // types
    {"$int", "u16|u32|u64|s16|s32|s64"},
    {"$ldst", "b8|b16|b32|b64|u8|u16|u32|u64|s8|s16|s32|s64|f32|f64"},
    {"$mov", "pred|b16|b32|b64|u16|u32|u64|s16|s32|s64|f32|f64"},
    {"$selp", "b16|b32|b64|u16|u32|u64|s16|s32|s64|f32|f64"},
    {"$cvt", "u8|u16|u32|u64|s8|s16|s32|s64|f16|bf16|f32|f64"},
};

// Memory ordering in the forms below is implemented, not ignored: ld/st orders are C++ atomic
// accesses of that order (volatile and mmio: relaxed), atom/red are sequentially consistent
// read-modify-writes and membar/fence sequentially consistent fences, which satisfy every
// weaker semantics and every scope (all blocks of a launch share one coherent memory).
constexpr FormSpec kForms[] = {
    // Integer and floating-point arithmetic.
    {"add sub", "", "$int"},
    {"add sub", "{.sat}", "s32"},
    {"add sub", ".cc", "u32|s32|u64|s64"},
    {"add sub", "{$rnd} {.ftz} {.sat}", "f32"},
    {"add sub", "{$rnd}", "f64"},
    {"add sub", "{.rn} {.ftz} {.sat}", "f16|f16x2"},
    {"add sub", "{.rn}", "bf16|bf16x2"},
    {"add", "", "u16x2|s16x2"},
    {"addc subc", "{.cc}", "u32|s32|u64|s64"},
    {"mul", "(.hi|.lo|.wide)", "$int"},
    {"mul", "{$rnd} {.ftz} {.sat}", "f32"},
    {"mul", "{$rnd}", "f64"},
    {"mul", "{.rn} {.ftz} {.sat}", "f16|f16x2"},
    {"mul", "{.rn}", "bf16|bf16x2"},
    {"mad", "(.hi|.lo|.wide)", "$int"},
    {"mad", ".hi .sat", "s32"},
    {"mad", ".cc (.hi|.lo)", "u32|s32|u64|s64"},
    {"mad", "($rnd) {.ftz} {.sat}", "f32"},  // without a rounding mad.f32 is the sm_1x unfused mad
    {"mad", "($rnd)", "f64"},
    {"madc", "{.cc} (.hi|.lo)", "u32|s32|u64|s64"},
    {"mul24", "(.hi|.lo)", "u32|s32"},
    {"mad24", "(.hi|.lo)", "u32|s32"},
    {"mad24", ".hi .sat", "s32"},
    {"sad div rem", "", "$int"},
    {"fma", "($rnd) {.ftz} {.sat}", "f32"},
    {"fma", "($rnd)", "f64"},
    {"fma", ".rn {.ftz} {.sat}", "f16|f16x2"},
    {"fma", ".rn {.ftz} .relu", "f16|f16x2"},
    {"fma", ".rn {.relu}", "bf16|bf16x2"},
    {"div", ".approx {.ftz}", "f32"},
    {"div", ".full {.ftz}", "f32"},
    {"div", "($rnd) {.ftz}", "f32"},
    {"div", "($rnd)", "f64"},
    {"abs neg", "", "s16|s32|s64|f64|bf16|bf16x2"},
    {"abs neg", "{.ftz}", "f32|f16|f16x2"},
    {"min max", "", "u16|u32|u64|s16|s64|f64"},
    {"min max", "{.relu}", "s32"},
    {"min max", "{.ftz} {.NaN} {.xorsign.abs}", "f32|f16|f16x2"},
    {"min max", "{.NaN} {.xorsign.abs}", "bf16|bf16x2"},
    {"min max", "", "u16x2"},
    {"min max", "{.relu}", "s16x2"},
    {"copysign", "", "f32|f64"},
    {"rcp", ".approx {.ftz}", "f32"},
    {"rcp", "($rnd) {.ftz}", "f32"},
    {"rcp", "($rnd)", "f64"},
    {"rcp", ".approx .ftz", "f64"},
    {"sqrt", ".approx {.ftz}", "f32"},
    {"sqrt", "($rnd) {.ftz}", "f32"},
    {"sqrt", "($rnd)", "f64"},
    {"rsqrt", ".approx {.ftz}", "f32|f64"},
    {"sin cos lg2", ".approx {.ftz}", "f32"},
    {"ex2", ".approx {.ftz}", "f32"},
    {"ex2", ".approx", "f16|f16x2"},
    {"ex2", ".approx .ftz", "bf16|bf16x2"},
    {"tanh", ".approx", "f32|f16|f16x2|bf16|bf16x2"},
    {"testp", "(.finite|.infinite|.number|.notanumber|.normal|.subnormal)", "f32|f64"},
    // Bits.
    {"and or xor not", "", "pred|b16|b32|b64"},
    {"cnot", "", "b16|b32|b64"},
    {"lop3 fns", "", "b32"},
    {"shl", "", "b16|b32|b64"},
    {"shr", "", "b16|b32|b64|$int"},
    {"shf", "(.l|.r) (.clamp|.wrap)", "b32"},
    {"bfe", "", "u32|u64|s32|s64"},
    {"bfi brev clz popc", "", "b32|b64"},
    {"bfind", "{.shiftamt}", "u32|u64|s32|s64"},
    {"prmt", "{.f4e|.b4e|.rc8|.ecl|.ecr|.rc16}", "b32"},
    {"dp4a", "", "u32|s32 u32|s32"},
    {"dp2a", "(.lo|.hi)", "u32|s32 u32|s32"},
    {"bmsk", "(.clamp|.wrap)", "b32"},
    {"szext", "(.clamp|.wrap)", "u32|s32"},
    // Moves, selects, comparisons, conversions.
    {"mov", "", "$mov"},
    {"selp", "", "$selp"},
    {"slct", "", "$selp s32"},
    {"slct", "{.ftz}", "$selp f32"},
    {"setp", "($cmps) {$bool}", "s16|s32|s64"},
    {"setp", "($cmpu) {$bool}", "u16|u32|u64"},
    {"setp", "($cmpb) {$bool}", "b16|b32|b64"},
    {"setp", "($cmpf) {$bool} {.ftz}", "f32|f16|f16x2"},
    {"setp", "($cmpf) {$bool}", "f64|bf16|bf16x2"},
    {"set", "($cmps) {$bool}", "u32|s32|f32|f16|bf16 s16|s32|s64"},
    {"set", "($cmpu) {$bool}", "u32|s32|f32|f16|bf16 u16|u32|u64"},
    {"set", "($cmpb) {$bool}", "u32|s32|f32|f16|bf16 b16|b32|b64"},
    {"set", "($cmpf) {$bool} {.ftz}", "u32|s32|f32|f16 f32"},
    {"set", "($cmpf) {$bool}", "u32|s32|f32|f16|bf16 f32|f64"},
    {"set", "($cmpf) {$bool} {.ftz}", "u16|s16|u32|s32|f16 f16"},
    {"set", "($cmpf) {$bool}", "bf16 f16"},
    {"set", "($cmpf) {$bool}", "u16|s16|u32|s32|bf16 bf16"},  // no f16 destination
    {"set", "($cmpf) {$bool} {.ftz}", "f16x2|u32|s32 f16x2"},
    {"set", "($cmpf) {$bool}", "bf16x2|u32|s32 bf16x2"},
    // Which conversions need, allow or forbid a rounding is checked in the lowering (by types).
    {"cvt", "{$irnd} {.ftz} {.sat}", "$cvt $cvt"},
    {"cvt", "{$rnd} {.ftz} {.sat}", "$cvt $cvt"},
    {"cvt", "(.rn|.rz) {.relu} {.satfinite}", "f16|bf16|f16x2|bf16x2 f32"},
    {"cvt", ".rna {.satfinite}", "tf32 f32"},
    {"cvt", "(.rn|.rz) {.satfinite} {.relu}", "tf32 f32"},
    {"cvt", ".rn .satfinite {.relu}", "e4m3x2|e5m2x2 f32|f16x2"},
    {"cvt", ".rn {.relu}", "f16x2 e4m3x2|e5m2x2"},
    {"cvta", "($cvtaspace)", "u32|u64"},
    {"cvta", ".to ($cvtaspace)", "u32|u64"},
    {"isspacep", "($cvtaspace)", ""},
    // Memory.
    {"ld", "{.weak} {$ldss} {~$ldcop} {~.L2::cache_hint} {~$prefetch} {$vec}", "$ldst"},
    {"ld", "{.weak} {$ldss} {~$l1} {~$l2} {~.L2::cache_hint} {~$prefetch} {$vec}", "$ldst"},
    {"ld", ".volatile {$ldss} {~$prefetch} {$vec}", "$ldst"},
    {"ld",
     "(.relaxed|.acquire) ($scope) {$ldss} {~$l1} {~$l2} {~.L2::cache_hint} {~$prefetch} {$vec}",
     "$ldst"},
    {"ld", ".mmio .relaxed .sys {.global}", "$ldst"},
    {"ld", ".global {~.ca|.cg|.cs} ~.nc {~.L2::cache_hint} {~$prefetch} {$vec}", "$ldst"},
    {"ld", ".global ~.nc {~$l1} {~$l2} {~.L2::cache_hint} {~$prefetch} {$vec}", "$ldst"},
    {"ldu", "{.global} {$vec}", "$ldst"},
    {"st", "{.weak} {$stss} {~$stcop} {~.L2::cache_hint} {$vec}", "$ldst"},
    {"st", "{.weak} {$stss} {~$l1} {~$l2} {~.L2::cache_hint} {$vec}", "$ldst"},
    {"st", ".volatile {$stss} {$vec}", "$ldst"},
    {"st", "(.relaxed|.release) ($scope) {$stss} {~$l1} {~$l2} {~.L2::cache_hint} {$vec}", "$ldst"},
    {"st", ".mmio .relaxed .sys {.global}", "$ldst"},
    {"atom", "{$asem} {$scope} {$aspace} (.and|.or|.xor|.exch) {~.L2::cache_hint}", "b32|b64"},
    {"atom", "{$asem} {$scope} {$aspace} .cas", "b16|b32|b64"},
    {"atom", "{$asem} {$scope} {$aspace} .add {~.L2::cache_hint}", "u32|u64|s32|f32|f64"},
    {"atom", "{$asem} {$scope} {$aspace} (.inc|.dec) {~.L2::cache_hint}", "u32"},
    {"atom", "{$asem} {$scope} {$aspace} (.min|.max) {~.L2::cache_hint}", "u32|u64|s32|s64"},
    {"atom", "{$asem} {$scope} {$aspace} .add .noftz {~.L2::cache_hint}", "f16|f16x2|bf16|bf16x2"},
    {"red", "{.relaxed|.release} {$scope} {$aspace} (.and|.or|.xor) {~.L2::cache_hint}", "b32|b64"},
    {"red", "{.relaxed|.release} {$scope} {$aspace} .add {~.L2::cache_hint}",
     "u32|u64|s32|f32|f64"},
    {"red", "{.relaxed|.release} {$scope} {$aspace} (.inc|.dec) {~.L2::cache_hint}", "u32"},
    {"red", "{.relaxed|.release} {$scope} {$aspace} (.min|.max) {~.L2::cache_hint}",
     "u32|u64|s32|s64"},
    {"red", "{.relaxed|.release} {$scope} {$aspace} .add .noftz {~.L2::cache_hint}",
     "f16|f16x2|bf16|bf16x2"},
    {"membar", "(.cta|.gl|.sys)", ""},
    {"membar", "~.proxy ~.alias", ""},
    {"fence", "{.sc|.acq_rel|.acquire|.release} ($scope)", ""},
    {"fence", ".mbarrier_init .release .cluster", ""},  // a sequentially consistent fence too
    {"fence", "~.proxy ~(.alias|.async|.async.global|.async.shared::cta|.async.shared::cluster)",
     ""},
    {"prefetch", "~{.global|.local} ~(.L1|.L2)", ""},
    {"prefetch", "~.global ~(.L2::evict_last|.L2::evict_normal)", ""},
    {"prefetchu", "~.L1", ""},
    {"discard", "~.global ~.L2", ""},
    {"applypriority", "~.global ~.L2::evict_normal", ""},
    {"createpolicy", "~.fractional ~($l2primary) ~{$l2secondary}", "b64"},
    {"createpolicy", "~.range ~{.global} ~($l2primary) ~{$l2secondary}", "b64"},
    {"createpolicy", "~.cvt ~.L2", "b64"},
    {"cp", ".async ~(.ca|.cg) (.shared|.shared::cta) .global {~.L2::cache_hint} {~$prefetch}", ""},
    {"cp", ".async ~(.commit_group|.wait_group|.wait_all)", ""},
    {"cp", ".async .mbarrier .arrive {.noinc} {.shared|.shared::cta}", "b64"},
    // Bulk copies (lower_async.cpp, interp_async.cpp).
    {"cp",
     ".async .bulk (.shared::cluster|.shared::cta) .global .mbarrier::complete_tx::bytes "
     "{~.L2::cache_hint}",
     ""},
    {"cp",
     ".async .bulk .shared::cluster .global .mbarrier::complete_tx::bytes .multicast::cluster "
     "{~.L2::cache_hint}",
     ""},
    {"cp", ".async .bulk .shared::cluster .shared::cta .mbarrier::complete_tx::bytes", ""},
    {"cp", ".async .bulk .global .shared::cta .bulk_group {~.L2::cache_hint}", ""},
    {"cp", ".async .bulk ~.prefetch ~.L2 .global {~.L2::cache_hint}", ""},
    {"cp", ".async .bulk ~(.commit_group|.wait_group)", ""},
    {"cp", ".async .bulk ~.wait_group ~.read", ""},
    {"cp",
     ".async .bulk .tensor (.1d|.2d|.3d|.4d|.5d) (.shared::cluster|.shared::cta) .global {.tile} "
     ".mbarrier::complete_tx::bytes {~.L2::cache_hint}",
     ""},
    {"cp",
     ".async .bulk .tensor (.1d|.2d|.3d|.4d|.5d) .global .shared::cta {.tile} .bulk_group "
     "{~.L2::cache_hint}",
     ""},
    // mbarrier objects (lower_async.cpp, interp_async.cpp).
    {"mbarrier", "(.init|.inval) {.shared|.shared::cta}", "b64"},
    {"mbarrier",
     "(.expect_tx|.complete_tx) {~.relaxed} {~.cta|.cluster} "
     "{.shared|.shared::cta|.shared::cluster}",
     "b64"},
    {"mbarrier",
     "(.arrive|.arrive_drop) {.expect_tx|.noComplete} {~.release|.relaxed} {~.cta|.cluster} "
     "{.shared|.shared::cta|.shared::cluster}",
     "b64"},
    {"mbarrier",
     "(.test_wait|.try_wait) {.parity} {~.acquire|.relaxed} {~.cta|.cluster} "
     "{.shared|.shared::cta}",
     "b64"},
    // Control flow, synchronization, warp collectives.
    {"bra call ret", "{~.uni}", ""},
    {"brx", ".idx {~.uni}", ""},
    {"exit trap brkpt", "", ""},
    {"bar", "{.cta} (.sync|.arrive)", ""},
    {"bar", "{.cta} .red .popc", "u32"},
    {"bar", "{.cta} .red (.and|.or)", "pred"},
    {"bar", ".warp .sync", ""},
    {"barrier", "{.cta} (.sync|.arrive) {~.aligned}", ""},
    {"barrier", "{.cta} .red .popc {~.aligned}", "u32"},
    {"barrier", "{.cta} .red (.and|.or) {~.aligned}", "pred"},
    {"barrier", ".cluster .arrive {~.release|.relaxed} {~.aligned}", ""},
    {"barrier", ".cluster .wait {~.acquire} {~.aligned}", ""},
    {"mapa getctarank", "{.shared::cluster}", "u32|u64"},
    {"shfl", "{.sync} (.up|.down|.bfly|.idx)", "b32"},
    {"vote", "{.sync} (.all|.any|.uni)", "pred"},
    {"vote", "{.sync} .ballot", "b32"},
    {"activemask", "", "b32"},
    {"alloca", "", "u32|u64"},
    {"stacksave", "", "u32|u64"},
    {"stackrestore", "", "u32|u64"},
    {"match", "(.any|.all) .sync", "b32|b64"},
    {"redux", ".sync (.add|.min|.max)", "u32|s32"},
    {"redux", ".sync (.and|.or|.xor)", "b32"},
    {"elect", ".sync", ""},
    {"griddepcontrol", "~(.launch_dependents|.wait)", ""},
    {"setmaxnreg", "~(.inc|.dec) ~.sync ~.aligned", "u32"},
    {"pmevent", "{~.mask}", ""},
    {"nanosleep", "", "u32"},
    // Textures and surfaces through object handles (interp_texture.cpp). Not supported: cube
    // and multisample geometries, tex.grad (no derivatives), .f16x2 results, sparse residency
    // predicates, depth compare, offsets, formatted stores (sust.p), surface reductions.
    {"tex", "{.base} (.1d|.2d|.3d|.a1d|.a2d) .v4", "f32|s32|u32 f32|s32"},
    {"tex", ".level (.1d|.2d|.3d|.a1d|.a2d) .v4", "f32|s32|u32 f32"},
    {"tld4", "(.r|.g|.b|.a) .2d .v4", "f32|s32|u32 f32"},
    {"txq", "(.width|.height|.depth|.array_size|.num_mipmap_levels|.normalized_coords)", "b32"},
    {"suq", "(.width|.height|.depth|.array_size)", "b32"},
    {"suld sust", ".b (.1d|.2d|.3d|.a1d|.a2d) {.v2|.v4} {.trap|.clamp|.zero}", "b8|b16|b32|b64"},
    {"istypep", "(.texref|.samplerref|.surfref)", ""},
    // Warp-level matrix multiply-accumulate (lower_matrix.cpp, interp_matrix.cpp). `.sync
    // .aligned` is the contract the interpreter checks: all 32 lanes execute it together.
    // Warpgroup MMA (sm_90a): each warp computes its 16 rows when it issues the instruction,
    // results in place at once (docs/emulator.md, "Matrix instructions").
    {"wgmma", "(.fence|.commit_group|.wait_group) .sync .aligned", ""},
    {"wgmma", ".mma_async .sync .aligned $wgmma_shape", "f32|f16 f16 f16"},
    {"wgmma", ".mma_async .sync .aligned $wgmma_shape", "f32 bf16 bf16"},
    {"wgmma", ".mma_async .sync .aligned $wgmma_tshape", "f32 tf32 tf32"},
    {"wgmma", ".mma_async .sync .aligned $wgmma_ishape {.satfinite}", "s32 s8|u8 s8|u8"},
    {"mma", ".sync .aligned (.m16n8k8|.m16n8k16) .row .col", "f32|f16 f16 f16 f32|f16"},
    {"mma", ".sync .aligned (.m16n8k8|.m16n8k16) .row .col", "f32 bf16 bf16 f32"},
    {"mma", ".sync .aligned (.m16n8k4|.m16n8k8) .row .col", "f32 tf32 tf32 f32"},
    {"mma", ".sync .aligned (.m8n8k4|.m16n8k4|.m16n8k8|.m16n8k16) .row .col {.rn}",
     "f64 f64 f64 f64"},
    {"mma", ".sync .aligned (.m8n8k16|.m16n8k16|.m16n8k32) .row .col {.satfinite}",
     "s32 s8|u8 s8|u8 s32"},
    // wmma: the fragment layout is the emulator's own (the ISA leaves it opaque; lower_matrix.cpp).
    {"wmma", ".load (.a|.b) .sync .aligned (.row|.col) (.m16n16k16|.m32n8k16|.m8n32k16) {$wss}",
     "f16|bf16|s8|u8"},
    {"wmma", ".load (.a|.b) .sync .aligned (.row|.col) .m16n16k8 {$wss}", "tf32"},
    {"wmma", ".load (.a|.b|.c) .sync .aligned (.row|.col) .m8n8k4 {$wss}", "f64"},
    {"wmma", ".load .c .sync .aligned (.row|.col) (.m16n16k16|.m32n8k16|.m8n32k16) {$wss}",
     "f16|f32|s32"},
    {"wmma", ".load .c .sync .aligned (.row|.col) .m16n16k8 {$wss}", "f32"},
    {"wmma", ".store .d .sync .aligned (.row|.col) (.m16n16k16|.m32n8k16|.m8n32k16) {$wss}",
     "f16|f32|s32"},
    {"wmma", ".store .d .sync .aligned (.row|.col) .m16n16k8 {$wss}", "f32"},
    {"wmma", ".store .d .sync .aligned (.row|.col) .m8n8k4 {$wss}", "f64"},
    {"wmma", ".mma .sync .aligned (.row|.col) {.row|.col} (.m16n16k16|.m32n8k16|.m8n32k16)",
     "f16|f32 f16|f32"},
    {"wmma", ".mma .sync .aligned (.row|.col) {.row|.col} (.m16n16k16|.m32n8k16|.m8n32k16)",
     "f32 bf16 bf16 f32"},
    {"wmma", ".mma .sync .aligned (.row|.col) {.row|.col} .m16n16k8", "f32 tf32 tf32 f32"},
    {"wmma", ".mma .sync .aligned (.row|.col) {.row|.col} .m8n8k4 {.rn}", "f64 f64 f64 f64"},
    {"wmma",
     ".mma .sync .aligned (.row|.col) {.row|.col} (.m16n16k16|.m32n8k16|.m8n32k16) {.satfinite}",
     "s32 s8|u8 s8|u8 s32"},
    {"ldmatrix stmatrix", ".sync .aligned .m8n8 (.x1|.x2|.x4) {.trans} (.shared|.shared::cta)",
     "b16"},
    {"movmatrix", ".sync .aligned .m8n8 .trans", "b16"},
};

// Why each `~` modifier has no effect on results here: opcodes, modifiers, reason (a test checks
// that every `~` modifier of every form has one).
struct NoEffectSpec {
  const char* opcodes;
  const char* modifiers;
  const char* reason;
};
constexpr NoEffectSpec kNoEffect[] = {
    {"ld st atom red cp",
     ".ca .cg .cs .lu .cv .wb .wt .nc .L1::evict_normal .L1::evict_unchanged .L1::evict_first "
     ".L1::evict_last .L1::no_allocate .L2::evict_normal .L2::evict_first .L2::evict_last "
     ".L2::cache_hint .L2::64B .L2::128B .L2::256B",
     "cache operators, eviction priorities, prefetch sizes and cache-policy hints: there are no "
     "caches, every access reads or writes the one coherent memory (for .lu, .cv and .nc that is "
     "one of the results the ISA allows)"},
    {"bra brx call ret", ".uni",
     "a promise that the warp does not diverge; control flow is executed per lane either way"},
    {"barrier", ".aligned",
     "a promise that the whole warp executes the same barrier; barriers count threads, which "
     "gives the same result when the promise holds"},
    {"barrier", ".release .relaxed .acquire",
     "the CTAs of a cluster run on one host thread, one warp at a time, so every access before "
     "a cluster barrier's arrive is visible after its wait whatever the semantics"},
    {"prefetch prefetchu", ".global .local .L1 .L2 .L2::evict_last .L2::evict_normal",
     "prefetches only move data into caches, and there are none"},
    {"discard", ".global .L2",
     "after discard the line's contents are undefined; keeping them is one of the allowed results"},
    {"applypriority", ".global .L2::evict_normal", "a cache priority, and there are no caches"},
    {"createpolicy",
     ".fractional .range .cvt .global .L2 .L2::evict_last .L2::evict_normal .L2::evict_first "
     ".L2::evict_unchanged",
     "the policy is an opaque value that only cache hints consume (it reads as 0)"},
    {"fence membar", ".proxy .alias .async .async.global .async.shared::cta .async.shared::cluster",
     "proxy fences order memory paths the emulator does not have: one path for every access, no "
     "async or tensor proxies (bulk copies are performed when issued, through the same path)"},
    {"cp", ".commit_group .wait_group .wait_all",
     "cp.async copies complete when they are issued, so every group is already complete"},
    {"cp", ".read .prefetch .L2",
     "bulk copies complete when they are issued (their sources are read then), so every bulk "
     "group is complete and there is no cache to prefetch into"},
    {"mbarrier", ".release .acquire .relaxed .cta .cluster",
     "the threads of a block run one at a time on one host thread, so every mbarrier operation "
     "is atomic for them and orders their accesses in program order: every semantics and scope "
     "holds (the CTAs of a cluster, whose threads reach each other's mbarriers, run on one host "
     "thread too)"},
    {"griddepcontrol", ".launch_dependents .wait",
     "a stream runs its grids one after another: prerequisites have finished before a grid "
     "starts, dependents start after it ends"},
    {"setmaxnreg", ".inc .dec .sync .aligned",
     "register-file repartitioning between warps; every thread has all its registers"},
    {"pmevent", ".mask", "performance-monitor events; there are no counters"},
};

struct Element {
  std::vector<std::vector<std::string>> alts;  // each alternative: tokens that go together
  bool required = false;
  bool no_effect = false;
};

struct Form {
  std::vector<Element> elements;
  std::vector<std::vector<Type>> types;  // per type position, the types allowed
};

struct Table {
  std::map<std::string, std::vector<Form>, std::less<>> forms;
  std::set<std::string, std::less<>> known;  // every modifier some form mentions
  std::vector<NoEffectModifier> no_effect;
};

// Concatenation by appending (GCC 12 warns falsely, -Wrestrict, on "literal" + std::string).
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s += p;
  return s;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      if (i > start) out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

const char* set_of(std::string_view name) {
  for (const auto& [n, v] : kSets)
    if (name == n) return v;
  return nullptr;
}

// `.rn|$cmps|.xorsign.abs` -> alternatives, each a list of tokens.
void expand(std::string_view alts, std::vector<std::vector<std::string>>& out) {
  for (const std::string& alt : split(alts, '|')) {
    if (alt[0] == '$') {
      expand(set_of(alt), out);
      continue;
    }
    std::vector<std::string> tokens;
    for (const std::string& t : split(alt, '.')) tokens.push_back(cat({".", t}));
    out.push_back(std::move(tokens));
  }
}

const char* no_effect_reason(std::string_view opcode, const std::string& modifier) {
  for (const NoEffectSpec& spec : kNoEffect) {
    const auto ops = split(spec.opcodes, ' ');
    if (std::find(ops.begin(), ops.end(), opcode) == ops.end()) continue;
    for (const std::string& m : split(spec.modifiers, ' '))
      if (m == modifier) return spec.reason;
  }
  return nullptr;
}

Table build_table() {
  Table t;
  for (const FormSpec& spec : kForms) {
    Form f;
    for (std::string e : split(spec.mods, ' ')) {
      Element el;
      if (e[0] == '~') {
        el.no_effect = true;
        e.erase(0, 1);
      }
      if (e[0] == '{' || e[0] == '(') {
        el.required = e[0] == '(';
        e = e.substr(1, e.size() - 2);
        if (e[0] == '~') {
          el.no_effect = true;
          e.erase(0, 1);
        }
      } else {
        el.required = true;
      }
      expand(e, el.alts);
      for (const auto& alt : el.alts) t.known.insert(alt.begin(), alt.end());
      f.elements.push_back(std::move(el));
    }
    for (const std::string& position : split(spec.types, ' ')) {
      std::vector<std::vector<std::string>> names;
      expand(position, names);  // type names come back as ".u32": the suffix spelling
      std::vector<Type> allowed;
      for (const auto& n : names) allowed.push_back(type_from_suffix(n[0]));
      f.types.push_back(std::move(allowed));
    }
    for (const std::string& op : split(spec.opcodes, ' ')) {
      for (const Element& el : f.elements) {
        if (!el.no_effect) continue;
        for (const auto& alt : el.alts) {
          std::string m;
          for (const std::string& tok : alt) m += tok;
          const bool seen = std::any_of(t.no_effect.begin(), t.no_effect.end(),
                                        [&](auto& x) { return x.opcode == op && x.modifier == m; });
          if (!seen) t.no_effect.push_back({op, m, no_effect_reason(op, m)});
        }
      }
      t.forms[op].push_back(f);
    }
  }
  return t;
}

const Table& table() {
  static const Table t = build_table();
  return t;
}

// Valid PTX modifiers no form accepts: refused as not supported rather than as unknown.
constexpr const char* kKnownUnsupported[] = {
    ".oob",
    ".rs",
    ".f32x2",
    ".e2m1x2",
    ".e2m3x2",
    ".e3m2x2",
    ".ue8m0x2",
    ".b128",
    ".unified",
    ".mbarrier",
    ".tensormap",
    ".tensormap::generic",
    ".multimem",
    ".op_restrict",
    ".mbarrier_init",
    ".grad",
    ".cube",
    ".acube",
    ".2dms",
    ".a2dms",
    ".p",
    // mma / ldmatrix forms not executed: sub-byte, single-bit and fp8 operands, their shapes,
    // sparse mma, the m8n8k4 f16 (sm_70) and m16n8k{4,8,16} f64 (sm_90) layouts.
    ".s4",
    ".u4",
    ".b1",
    ".e4m3",
    ".e5m2",
    ".e2m1",
    ".e3m2",
    ".e2m3",
    ".m8n8k32",
    ".m8n8k128",
    ".m16n8k64",
    ".m16n8k128",
    ".m16n8k256",
    ".m16n16k32",
    ".sp",
    ".sp::ordered_metadata",
    ".kind::f8f6f4",
    ".b8x16",
    ".m8n16",
    ".m16n8",
    ".m16n16",
    ".b6x16_p32",
    ".b4x16_p64",
};

std::string joined(const std::vector<std::string>& tokens) {
  std::string s;
  for (const std::string& t : tokens) s += t;
  return s;
}

// Why `form` does not accept `mods`, or "" when it does. Each modifier goes to the group that
// already holds modifiers it combines with (a verbatim repeat, `.abs` after `.xorsign`), else to
// the first free group that has it; then every used group must hold exactly one alternative.
std::string mismatch(const Form& form, std::string_view opcode,
                     const std::vector<std::string_view>& mods) {
  std::vector<std::set<std::string_view>> held(form.elements.size());
  auto alt_covers = [](const std::vector<std::string>& alt, const std::set<std::string_view>& s) {
    return std::all_of(s.begin(), s.end(), [&](std::string_view m) {
      return std::find(alt.begin(), alt.end(), m) != alt.end();
    });
  };
  for (std::string_view m : mods) {
    int target = -1, conflict = -1;
    for (size_t e = 0; e < form.elements.size() && target < 0; ++e) {
      if (held[e].empty()) continue;
      std::set<std::string_view> with = held[e];
      with.insert(m);
      for (const auto& alt : form.elements[e].alts)
        if (alt_covers(alt, with)) target = static_cast<int>(e);
      if (target < 0 && conflict < 0)
        for (const auto& alt : form.elements[e].alts)
          if (std::find(alt.begin(), alt.end(), m) != alt.end()) conflict = static_cast<int>(e);
    }
    for (size_t e = 0; e < form.elements.size() && target < 0; ++e) {
      if (!held[e].empty()) continue;
      for (const auto& alt : form.elements[e].alts)
        if (std::find(alt.begin(), alt.end(), m) != alt.end()) target = static_cast<int>(e);
    }
    if (target < 0) {
      if (conflict >= 0)
        return cat({"'", m, "' cannot be combined with '",
                    *held[static_cast<size_t>(conflict)].begin(), "'"});
      return cat({"'", m, "' is not a modifier of this form of ", opcode});
    }
    held[static_cast<size_t>(target)].insert(m);
  }
  for (size_t e = 0; e < form.elements.size(); ++e) {
    const Element& el = form.elements[e];
    if (held[e].empty()) {
      if (!el.required) continue;
      std::string names;
      for (const auto& alt : el.alts) names += (names.empty() ? "" : ", ") + joined(alt);
      return std::string(el.alts.size() == 1 ? "it needs " : "it needs one of ") + names;
    }
    // The alternative is exactly the modifiers held (`.xorsign` alone is not `.xorsign.abs`).
    bool exact = false;
    const std::vector<std::string>* partial = nullptr;
    for (const auto& alt : el.alts) {
      if (!alt_covers(alt, held[e])) continue;
      if (std::set<std::string_view>(alt.begin(), alt.end()) == held[e])
        exact = true;
      else
        partial = &alt;
    }
    if (!exact) {
      std::string missing;
      for (const std::string& tok : *partial)
        if (!held[e].count(tok)) missing += tok;
      return cat({"'", *held[e].begin(), "' needs '", missing, "'"});
    }
  }
  return {};
}

bool types_fit(const Form& form, const std::vector<Type>& types) {
  if (types.size() != form.types.size()) return false;
  for (size_t i = 0; i < types.size(); ++i)
    if (std::find(form.types[i].begin(), form.types[i].end(), types[i]) == form.types[i].end())
      return false;
  return true;
}

}  // namespace

ModifierVerdict check_modifiers(std::string_view opcode, const std::vector<std::string_view>& all) {
  const Table& t = table();
  auto it = t.forms.find(opcode);
  if (it == t.forms.end()) return {ModifierVerdict::kUnknownOpcode, {}};
  std::vector<std::string_view> mods;
  std::vector<Type> types;
  for (std::string_view m : all) {
    const Type ty = type_from_suffix(m);
    if (ty != Type::kNone)
      types.push_back(ty);
    else
      mods.push_back(m);
  }
  for (size_t i = 0; i < mods.size(); ++i) {
    const std::string_view m = mods[i];
    const bool known = t.known.count(m) != 0 ||
                       std::find(std::begin(kKnownUnsupported), std::end(kKnownUnsupported), m) !=
                           std::end(kKnownUnsupported);
    if (!known) return {ModifierVerdict::kInvalid, cat({"unknown modifier '", m, "'"})};
    // wmma.mma names the layouts of A and B in turn: `.row.row` is two layouts, not a repeat.
    const bool layout_pair = opcode == "wmma" && (m == ".row" || m == ".col");
    if (!layout_pair && std::find(mods.begin(), mods.begin() + static_cast<long>(i), m) !=
                            mods.begin() + static_cast<long>(i))
      return {ModifierVerdict::kNotSupported, cat({"'", m, "' is written twice"})};
  }
  // fma.oob forces the result to +0 where an operand is the OOB-NaN that tensor loads write for
  // out-of-bounds elements; the PTX ISA does not give that NaN's encoding, so the test for it
  // cannot be emulated exactly.
  if (opcode == "fma" && std::find(mods.begin(), mods.end(), ".oob") != mods.end())
    return {ModifierVerdict::kNotSupported,
            "'.oob' tests its operands for the OOB-NaN of tensor loads, whose encoding the PTX "
            "ISA does not define"};
  std::string first_reason;
  std::vector<std::string> missing;  // per form that takes the types, the modifier it lacks
  bool only_missing = true;
  for (const Form& f : it->second) {
    if (!types_fit(f, types)) continue;
    std::string why = mismatch(f, opcode, mods);
    if (why.empty()) return {};
    // The most telling reason: a conflict or a missing partner in a form that has the modifier
    // says more than a form that lacks it.
    const bool lacks = why.find("is not a modifier") != std::string::npos;
    if (first_reason.empty() ||
        (!lacks && first_reason.find("is not a modifier") != std::string::npos))
      first_reason = why;
    if (why.rfind("it needs ", 0) != 0)
      only_missing = false;
    else if (std::find(missing.begin(), missing.end(), why.substr(9)) == missing.end())
      missing.push_back(why.substr(9));
  }
  // Current PTX has no form without the required modifier (testp without a class, rcp.f32 without
  // .approx or a rounding): not PTX.
  if (!first_reason.empty() && only_missing) {
    std::string list;
    for (const std::string& m : missing) list += cat({list.empty() ? "" : " or ", m});
    return {ModifierVerdict::kInvalid, cat({opcode, " needs ", list})};
  }
  if (first_reason.empty()) {
    std::string ts;
    for (Type ty : types) ts += cat({".", type_name(ty)});
    first_reason = types.empty() ? "it needs a type"
                                 : "no form of it takes the type" +
                                       std::string(types.size() > 1 ? "s " : " ") + ts;
  }
  return {ModifierVerdict::kNotSupported, first_reason};
}

std::vector<NoEffectModifier> no_effect_modifiers() { return table().no_effect; }

}  // namespace cusnap::emu::ptx

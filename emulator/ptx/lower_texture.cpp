// Lowering of the texture and surface instructions: tex, tld4, txq, suld, sust, suq, istypep
// (executed by interp_texture.cpp). Their modifiers were matched against the forms of
// modifiers.cpp already, so every combination reaching here is one the interpreter implements;
// the operand shapes (a handle register, a coordinate vector of the geometry's length) are
// checked here.
#include <algorithm>

#include "parser_internal.h"

namespace cusnap::emu::ptx {
namespace {

bool has(const std::vector<std::string_view>& mods, std::string_view m) {
  return std::find(mods.begin(), mods.end(), m) != mods.end();
}

std::vector<Type> types_of(const std::vector<std::string_view>& mods) {
  std::vector<Type> types;
  for (std::string_view m : mods)
    if (Type t = type_from_suffix(m); t != Type::kNone) types.push_back(t);
  return types;
}

bool geometry(const std::vector<std::string_view>& mods, TexGeom* out) {
  static const std::pair<const char*, TexGeom> kGeoms[] = {
      {".1d", TexGeom::k1d},   {".2d", TexGeom::k2d},   {".3d", TexGeom::k3d},
      {".a1d", TexGeom::kA1d}, {".a2d", TexGeom::kA2d},
  };
  for (const auto& [name, g] : kGeoms)
    if (has(mods, name)) {
      *out = g;
      return true;
    }
  return false;
}

}  // namespace

ParsedOperand Parser::parse_image_tuple() {
  ParsedOperand p;
  p.kind = ParsedOperand::kList;
  p.line = peek().line;
  expect_punct('[', "to open a texture or surface operand");
  for (;;) {
    p.elems.push_back(parse_operand());
    if (accept_punct(']')) break;
    expect_punct(',', "between the elements of a texture or surface operand");
  }
  return p;
}

bool Parser::lower_image(Function& f, Instr& in, std::string_view op,
                         const std::vector<std::string_view>& mods, std::vector<ParsedOperand>& ops,
                         uint32_t line) {
  const bool tex = op == "tex", tld4 = op == "tld4", suld = op == "suld", sust = op == "sust";
  const bool query = op == "txq" || op == "suq";
  if (!tex && !tld4 && !suld && !sust && !query && op != "istypep") return false;
  const std::string text = [&] {
    std::string t(op);
    for (std::string_view m : mods) t += m;
    return t;
  }();
  auto need = [&](size_t n) {
    if (ops.size() != n)
      fail_at(line, text + " expects " + std::to_string(n) + " operands, found " +
                        std::to_string(ops.size()));
  };
  // The object: a 64-bit register holding a texture or surface object handle, or the name of a
  // `.texref` (tex, tld4, txq) / `.surfref` (suld, sust, suq) variable, whose stored handle the
  // driver's reference object owns (engine.h OpaqueKind).
  const OpaqueKind want = tex || tld4 || op == "txq" ? OpaqueKind::kTexref : OpaqueKind::kSurfref;
  auto handle = [&](const ParsedOperand& p) {
    if (p.kind == ParsedOperand::kSymbol && m_.symbols[p.symbol].opaque != OpaqueKind::kNone) {
      const Symbol& s = m_.symbols[p.symbol];
      if (s.opaque != want || op == "istypep")
        not_supported_at(line, "instruction '" + text + "' in function '" + f.name + "' names '" +
                                   s.name + "', a " +
                                   (s.opaque == OpaqueKind::kTexref ? ".texref" : ".surfref") +
                                   ", which the emulator does not support there");
      if (p.offset != 0) fail_at(line, "'" + s.name + "' cannot take an offset in " + text);
      Operand o;
      o.kind = Operand::kRefHandle;
      o.has_symbol = true;
      o.symbol = p.symbol;
      return o;
    }
    if (p.kind != ParsedOperand::kReg)
      not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                                 "': only texture and surface object handles in registers and "
                                 ".texref/.surfref names are supported by the emulator");
    return src(p, Type::kU64);
  };
  // `[handle, {coords}]`: the sampler-less form (unified texture mode); `[tex, sampler, c]`
  // names a separate sampler, which only .samplerref variables provide (not supported).
  auto tuple = [&](const ParsedOperand& p, Type ctype) {
    if (p.kind != ParsedOperand::kList || p.elems.empty())
      fail_at(line, text + " expects a [handle, coordinates] operand");
    if (p.elems.size() == 3)
      not_supported_at(line, "instruction '" + text + "' in function '" + f.name +
                                 "': separate samplers (.samplerref) are not supported by the "
                                 "emulator");
    if (p.elems.size() != 2) fail_at(line, text + " expects [handle, coordinates]");
    in.ops[1] = handle(p.elems[0]);
    const size_t n = kTexCoords[in.sub];
    const ParsedOperand& c = p.elems[1];
    // A one-element coordinate may be written as a scalar; arrays put the layer (.u32) first.
    if (n == 1 && c.kind != ParsedOperand::kVector) {
      ParsedOperand v;
      v.kind = ParsedOperand::kVector;
      v.line = c.line;
      v.elems.push_back(c);
      in.ops[2] = src_vector(v, ctype, 1);
      return;
    }
    in.ops[2] = src_vector(c, ctype, n);
    const TexGeom g = static_cast<TexGeom>(in.sub);
    if ((g == TexGeom::kA1d || g == TexGeom::kA2d) && ctype != Type::kS32)
      m_.vec_pool[in.ops[2].index] = src(c.elems[0], Type::kU32);
  };
  if (op == "istypep") {
    in.op = Op::kIstypep;
    in.image = static_cast<uint8_t>(has(mods, ".texref")       ? ImageType::kTexref
                                    : has(mods, ".samplerref") ? ImageType::kSamplerref
                                                               : ImageType::kSurfref);
    need(2);
    in.nops = 2;
    in.ops[0] = dst(ops[0]);
    in.ops[1] = handle(ops[1]);
    return true;
  }
  if (query) {
    in.op = op == "txq" ? Op::kTxq : Op::kSuq;
    static const std::pair<const char*, ImageQuery> kQueries[] = {
        {".width", ImageQuery::kWidth},
        {".height", ImageQuery::kHeight},
        {".depth", ImageQuery::kDepth},
        {".array_size", ImageQuery::kArraySize},
        {".num_mipmap_levels", ImageQuery::kNumMipmapLevels},
        {".normalized_coords", ImageQuery::kNormalizedCoords},
    };
    for (const auto& [name, q] : kQueries)
      if (has(mods, name)) in.image = static_cast<uint8_t>(q);
    in.type = Type::kB32;
    need(2);
    in.nops = 2;
    in.ops[0] = dst(ops[0]);
    const ParsedOperand& t = ops[1];
    if (t.kind != ParsedOperand::kList || t.elems.size() != 1)
      fail_at(line, text + " expects a [handle] operand");
    in.ops[1] = handle(t.elems[0]);
    return true;
  }
  TexGeom g = TexGeom::k1d;
  if (!geometry(mods, &g)) fail_at(line, text + " needs a geometry (.1d, .2d, .3d, .a1d, .a2d)");
  in.sub = static_cast<uint8_t>(g);
  in.vec = has(mods, ".v4") ? 4 : has(mods, ".v2") ? 2 : 1;
  const std::vector<Type> types = types_of(mods);
  if (tex || tld4) {
    in.op = tex ? Op::kTex : Op::kTld4;
    if (types.size() != 2) fail_at(line, text + " needs a destination and a coordinate type");
    in.type = types[0];
    in.type2 = types[1];
    in.vec = 4;
    if (tex) {
      in.image = has(mods, ".level") ? 1 : 0;
    } else {
      in.image = has(mods, ".g") ? 1 : has(mods, ".b") ? 2 : has(mods, ".a") ? 3 : 0;
    }
    need(in.image == 1 && tex ? 3 : 2);
    in.nops = static_cast<uint8_t>(ops.size() + 1);
    in.ops[0] = dst_vector(ops[0], 4);
    tuple(ops[1], in.type2);
    if (tex && in.image == 1) in.ops[3] = src(ops[2], Type::kF32);
    return true;
  }
  // suld.b / sust.b: raw bits; x is a byte offset into the row, y and z are texel indices.
  in.op = suld ? Op::kSuld : Op::kSust;
  if (types.size() != 1) fail_at(line, text + " needs one element type");
  in.type = types[0];
  in.type2 = Type::kS32;
  in.image = static_cast<uint8_t>(has(mods, ".clamp")  ? SurfaceClamp::kClamp
                                  : has(mods, ".zero") ? SurfaceClamp::kZero
                                                       : SurfaceClamp::kTrap);
  need(2);
  in.nops = 3;
  if (suld) {
    in.ops[0] = in.vec > 1 ? dst_vector(ops[0], in.vec) : dst(ops[0]);
    tuple(ops[1], Type::kS32);
  } else {
    tuple(ops[0], Type::kS32);
    in.ops[0] = in.ops[1];  // the handle first, as the interpreter reads kSust
    in.ops[1] = in.ops[2];
    in.ops[2] = in.vec > 1 ? src_vector(ops[1], in.type, in.vec) : src(ops[1], in.type);
  }
  return true;
}

}  // namespace cusnap::emu::ptx

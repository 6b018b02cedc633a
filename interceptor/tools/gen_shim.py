#!/usr/bin/env python3
"""Generates the interceptor's pass-through layer (the boring 90%) into the build tree.

  gen_shim.py --driver-api driver_api/driver_api.py --stub libcuda.so --typedefs cudaTypedefs.h [--typedefs ...] [--overrides F]
              --annotations interceptor/annotations.json --out-dir DIR SOURCE...

The driver API model (every exported symbol with its exact ABI, and the (name, version,
per-thread flag) -> symbol map cuGetProcAddress answers with) comes from driver_api/driver_api.py,
imported here as by the emulator's generator, so both libraries agree on it by construction.

SOURCEs are the hand-written interceptor files. A hook is any function defined there as
  CUSNAP_PRE_HOOK(<symbol>)(...)   runs before the real call (only while recording)
  CUSNAP_POST_HOOK(<symbol>)(...)  runs after it and writes the call's record
  CUSNAP_CUSTOM(<symbol>)(...)     replaces the whole wrapper (always runs, recording or not)
A hook written for `<symbol>` also serves `<symbol>_ptsz` / `<symbol>_ptds` when their parameter
lists are identical; CallScope::api_name() tells the hook which symbol was really called.

Writes:
  generated_shim_api.h        symbol ids, Fn_<symbol> pointer types, hook declarations
  generated_shim_exports.cpp  one exported wrapper per driver symbol, the symbol name/trait tables
  generated_proc_table.inc    cuGetProcAddress answers: {name, version, per-thread, symbol id}
  generated_shim_exports.map  linker version script: exactly the driver symbols, and the NVTX
                              injection entry point (EXTRA_EXPORTS: src/nvtx.cpp)
  generated_symbols.txt       the exported symbol list (tests compare it with nm of the library)
"""

import argparse
import json
import os
import re
import sys

# Exported besides the driver symbols: the NVTX injection entry point (docs/capture.md, "NVTX").
EXTRA_EXPORTS = ["InitializeInjectionNvtx2"]
_HOOK_RE = re.compile(r"CUSNAP_(PRE_HOOK|POST_HOOK|CUSTOM)\(\s*(cu\w+)\s*\)")


def import_driver_api(path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    import driver_api  # noqa: E402  (the shared model, driver_api/README.md)
    return driver_api


def base_symbol(symbol):
    m = re.match(r"^(.*)_(ptsz|ptds)$", symbol)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--driver-api", required=True, help="path of driver_api/driver_api.py")
    ap.add_argument("--stub", required=True)
    ap.add_argument("--typedefs", action="append", required=True)
    ap.add_argument("--overrides")
    ap.add_argument("--annotations", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("sources", nargs="*")
    args = ap.parse_args()

    driver_api = import_driver_api(args.driver_api)
    api = driver_api.load(args.typedefs, args.stub, args.overrides)
    problems = api.check()
    with open(args.annotations, encoding="utf-8") as f:
        notes = json.load(f)

    symbols = sorted(api.symbols)
    known = set(symbols)
    hooks = {"PRE_HOOK": set(), "POST_HOOK": set(), "CUSTOM": set()}
    for source in args.sources:
        with open(source, encoding="utf-8") as f:
            for m in _HOOK_RE.finditer(f.read()):
                if m.group(2) not in known:
                    problems.append(f"{source}: hook for {m.group(2)}, which is not a driver export")
                hooks[m.group(1)].add(m.group(2))
    for key in ("no_record", "query_patterns", "device_work_patterns"):
        if key not in notes:
            problems.append(f"{args.annotations}: missing key {key}")
    for symbol in notes.get("no_record", []):
        if symbol not in known:
            problems.append(f"{args.annotations}: no_record names {symbol}, not a driver export")
    if problems:
        for p in problems:
            print(f"gen_shim.py: error: {p}", file=sys.stderr)
        return 1

    query_res = [re.compile(p) for p in notes["query_patterns"]]
    device_work_res = [re.compile(p) for p in notes["device_work_patterns"]]
    no_record = set(notes["no_record"])

    def params_of(symbol):
        return api.symbols[symbol].pfn.param_list()

    def hook_for(kind, symbol):
        """The hook serving `symbol`: its own, or its base symbol's when the ABI is identical."""
        if symbol in hooks[kind]:
            return symbol
        base = base_symbol(symbol)
        if base and base in hooks[kind] and base in known and params_of(base) == params_of(symbol):
            return base
        return None

    def traits(symbol):
        bits = []
        name = api.symbols[symbol].pfn.name
        if any(r.search(name) for r in query_res):
            bits.append("kTraitQuery")
        if symbol.endswith("_ptsz") or symbol.endswith("_ptds"):
            bits.append("kTraitPerThreadStream")
        if symbol in no_record:
            bits.append("kTraitNoRecord")
        if any(r.search(name) for r in device_work_res):
            bits.append("kTraitDeviceWork")
        return " | ".join(bits) or "0"

    inputs = ", ".join(os.path.basename(p) for p in [args.stub] + args.typedefs + [args.annotations])
    banner = f"Generated by interceptor/tools/gen_shim.py from {inputs} and the interceptor sources. Do not edit."

    # ---- generated_shim_api.h
    h = [f"// {banner}",
         "// Symbol ids, the real-driver pointer type of every exported symbol, and the declarations of",
         "// the hand-written hooks (a hook whose definition disagrees with the ABI fails to link).",
         "#pragma once", "#ifndef __CUDA_API_VERSION_INTERNAL", "#define __CUDA_API_VERSION_INTERNAL 1",
         "#endif", "#include <cstdint>", "#include <cuda.h>", "#include <cudaProfiler.h>", "",
         "namespace cusnap::icpt {", "class CallScope;", "",
         "enum SymbolId : uint16_t {"]
    h += [f"  k_{s}," for s in symbols]
    h += ["  kSymbolCount", "};", "",
          "// Per-symbol facts the generator derived from annotations.json and the symbol's name.",
          "enum SymbolTrait : uint8_t {",
          "  kTraitQuery = 1,            // reads state only: a generic record of it cannot make replay diverge",
          "  kTraitPerThreadStream = 2,  // a _ptsz/_ptds variant: stream 0 is the per-thread default stream",
          "  kTraitNoRecord = 4,         // never recorded (annotations.json: no_record)",
          "  kTraitDeviceWork = 8,       // may change device memory (annotations.json: device_work_patterns)",
          "};",
          f"inline constexpr int kSymbolTotal = {len(symbols)};",
          "extern const char* const kSymbolNames[kSymbolCount];",
          "extern const uint8_t kSymbolTraits[kSymbolCount];",
          "// The shim's own exported wrapper of every symbol (what cuGetProcAddress hands out).",
          "extern void* const kWrappers[kSymbolCount];", "",
          "namespace fn {"]
    for s in symbols:
        h.append(f"using {s} = CUresult (CUDAAPI*)({params_of(s)});")
    h += ["}  // namespace fn", "", "namespace hooks {"]
    for kind, prefix, extra in (("PRE_HOOK", "pre", "CallScope&"),
                                ("POST_HOOK", "post", "CallScope&, CUresult"),
                                ("CUSTOM", "custom", "CallScope&")):
        for s in sorted(hooks[kind]):
            p = params_of(s)
            plist = extra if p == "void" else f"{extra}, {p}"
            h.append(f"void {prefix}_{s}({plist});" if kind != "CUSTOM"
                     else f"CUresult {prefix}_{s}({plist});")
    h += ["}  // namespace hooks", "}  // namespace cusnap::icpt", ""]

    # ---- generated_shim_exports.cpp
    c = [f"// {banner}",
         "// One exported wrapper per driver symbol. Fast path (nothing to record): one relaxed load and an",
         "// indirect call. Slow path: CallScope (re-entrancy guard, timing), pre hook, real call, post hook",
         "// or a generic record. No exception can leave a hook (CallScope::guard).", "",
         '#include "generated_shim_api.h"', '#include "shim_runtime.h"', "",
         "#define CUSNAP_SHIM_EXPORT extern \"C\" __attribute__((visibility(\"default\")))", "",
         "namespace cusnap::icpt {",
         "const char* const kSymbolNames[kSymbolCount] = {"]
    c += [f'  "{s}",' for s in symbols]
    c += ["};", "const uint8_t kSymbolTraits[kSymbolCount] = {"]
    c += [f"  {traits(s)},  // {s}" for s in symbols]
    c += ["};", "}  // namespace cusnap::icpt", "", "using namespace cusnap::icpt;", ""]
    for s in symbols:
        pfn = api.symbols[s].pfn
        plist = pfn.param_list()
        args_ = pfn.arg_list()
        comma_args = f", {args_}" if args_ else ""
        custom = hook_for("CUSTOM", s)
        pre = hook_for("PRE_HOOK", s)
        post = hook_for("POST_HOOK", s)
        # Locals carry a cusnap_ prefix: driver parameters are named `result`, `call`, ...
        body = [f"CUSNAP_SHIM_EXPORT CUresult CUDAAPI {s}({plist}) {{"]
        if custom:
            body += [f"  CallScope cusnap_call(k_{s}, CallScope::kCustom);",
                     f"  return hooks::custom_{custom}(cusnap_call{comma_args});", "}"]
            c += body
            continue
        body += [f"  auto cusnap_real = reinterpret_cast<fn::{s}>(g_real[k_{s}]);",
                 "  if (!slow_path_wanted() && cusnap_real != nullptr) [[likely]] {",
                 f"    return cusnap_real({args_});",
                 "  }",
                 f"  CallScope cusnap_call(k_{s});",
                 f"  cusnap_real = reinterpret_cast<fn::{s}>(g_real[k_{s}]);",
                 "  if (cusnap_real == nullptr) return cusnap_call.missing();",
                 "  if (!cusnap_call.recording()) {",
                 f"    return cusnap_real({args_});",
                 "  }"]
        if pre:
            body.append(f"  cusnap_call.guard([&] {{ hooks::pre_{pre}(cusnap_call{comma_args}); }});")
        body += [f"  CUresult cusnap_result = cusnap_real({args_});", "  cusnap_call.returned(cusnap_result);"]
        if post:
            body.append(f"  cusnap_call.guard([&] {{ hooks::post_{post}(cusnap_call, cusnap_result{comma_args}); }});")
        body += ["  return cusnap_result;", "}"]
        c += body
    c += ["", "namespace cusnap::icpt {", "void* const kWrappers[kSymbolCount] = {"]
    c += [f"  reinterpret_cast<void*>(&::{s})," for s in symbols]
    c += ["};", "}  // namespace cusnap::icpt", ""]

    # ---- generated_proc_table.inc
    t = [f"// {banner}",
         "// cuGetProcAddress answers sorted by (name, version): {name, cudaVersion, per-thread, SymbolId}."]
    for name, version, stream, symbol in api.proc_entries():
        t.append(f'{{"{name}", {version}, {"true" if stream else "false"}, k_{symbol}}},')
    t.append("")

    vmap = [f"/* {banner} */", "{", "  global:"]
    vmap += [f"    {s};" for s in symbols + EXTRA_EXPORTS]
    vmap += ["  local:", "    *;", "};", ""]

    os.makedirs(args.out_dir, exist_ok=True)
    driver_api.write_if_changed(os.path.join(args.out_dir, "generated_shim_api.h"), "\n".join(h))
    driver_api.write_if_changed(os.path.join(args.out_dir, "generated_shim_exports.cpp"), "\n".join(c))
    driver_api.write_if_changed(os.path.join(args.out_dir, "generated_proc_table.inc"), "\n".join(t))
    driver_api.write_if_changed(os.path.join(args.out_dir, "generated_shim_exports.map"), "\n".join(vmap))
    driver_api.write_if_changed(os.path.join(args.out_dir, "generated_symbols.txt"), "\n".join(symbols) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

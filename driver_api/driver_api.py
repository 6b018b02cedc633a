"""The CUDA driver API as the installed toolkit describes it: a reusable model for generators.

Inputs:
  * cudaTypedefs.h, cudaProfilerTypedefs.h - one `PFN_<name>_v<version>[_ptsz|_ptds]` typedef per ABI of every entry
    point, with the exact parameter list;
  * the stub libcuda.so (lib64/stubs) - the list of symbols a real driver exports;
  * overrides.json (next to this file) - the few facts the headers cannot tell.

Output: `DriverApi`, which knows for every exported symbol its signature, and for every
(name, cudaVersion, per-thread-stream flag) triple which exported symbol `cuGetProcAddress` must
answer with.  The symbol an ABI version maps to follows the driver's naming scheme: the i-th
default-stream ABI of `name` (oldest first) is exported as `name` (i = 1) or `name_v<i>`; a
per-thread ABI `name_v<V>_ptsz|_ptds` uses the newest default ABI not newer than V and appends
the suffix.  Exceptions live in the overrides file; `DriverApi.check()` verifies the result
against the stub's export list so a new toolkit that breaks the scheme fails the build loudly.

Standard library only: it runs at build time from CMake. Every generator of driver entry points
(emulator/tools/gen_entry_points.py, interceptor/tools/gen_shim.py, the interceptor's test
generators) imports this one file, from the path CMake passes (CUSNAP_DRIVER_API_PY).
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass, field

_PFN_RE = re.compile(
    r"typedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*PFN_(cu\w+?)_v(\d+)(?:_(ptsz|ptds))?\s*\)\s*\((.*?)\)\s*;",
    re.S,
)


@dataclass(frozen=True)
class Param:
    type: str  # C type spelled as in the header, without the name ("const void *")
    name: str
    array: str = ""  # trailing array declarator, e.g. "[3]", rarely used


@dataclass(frozen=True)
class Pfn:
    """One ABI version of one entry point, from a `PFN_` typedef."""

    name: str  # API name without version suffix: "cuMemAlloc"
    version: int  # CUDA version that introduced this ABI: 3020
    stream: str  # "", "ptsz" or "ptds"
    params: tuple[Param, ...]
    legacy: bool  # declared only under __CUDA_API_VERSION_INTERNAL (old 32-bit ABIs)

    @property
    def per_thread(self) -> bool:
        return self.stream != ""

    def param_list(self) -> str:
        if not self.params:
            return "void"
        return ", ".join(f"{p.type} {p.name}{p.array}" for p in self.params)

    def arg_list(self) -> str:
        return ", ".join(p.name for p in self.params)


@dataclass
class Symbol:
    """An exported symbol and the ABI (PFN) it implements."""

    symbol: str
    pfn: Pfn | None  # None: exported but not described by cudaTypedefs.h


@dataclass
class DriverApi:
    pfns: list[Pfn]
    exports: list[str]
    # (name, version, stream) -> exported symbol
    mapping: dict[tuple[str, int, str], str] = field(default_factory=dict)
    symbols: dict[str, Symbol] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def proc_entries(self):
        """Sorted (name, version, stream, symbol) tuples for a cuGetProcAddress table."""
        return sorted((k[0], k[1], k[2], v) for k, v in self.mapping.items())

    def check(self) -> list[str]:
        return list(self.problems)


_BUILTIN_TYPE_WORDS = {"int", "char", "short", "long", "unsigned", "signed", "float", "double", "void"}


def _split_params(text: str) -> tuple[Param, ...]:
    text = " ".join(text.split())
    if text in ("", "void"):
        return ()
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    params = []
    for index, part in enumerate(parts):
        array = ""
        m = re.match(r"^(.*?)(\[[^\]]*\])$", part)
        if m:
            part, array = m.group(1).strip(), m.group(2)
        m = re.match(r"^(.*?[\s\*&])(\w+)$", part)
        type_words = set(re.findall(r"\w+", m.group(1))) if m else set()
        if m and m.group(2) not in _BUILTIN_TYPE_WORDS and type_words - {"const", "volatile", "struct"}:
            params.append(Param(m.group(1).strip(), m.group(2), array))
        else:  # unnamed parameter
            params.append(Param(part, f"arg{index}", array))
    return tuple(params)


def parse_typedefs(path: str) -> list[Pfn]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    internal_start = text.find("#if defined(__CUDA_API_VERSION_INTERNAL)")
    internal_end = text.find("#endif", internal_start) if internal_start >= 0 else -1
    pfns = []
    for m in _PFN_RE.finditer(text):
        legacy = internal_start >= 0 and internal_start < m.start() < internal_end
        pfns.append(Pfn(m.group(1), int(m.group(2)), m.group(3) or "", _split_params(m.group(4)), legacy))
    return pfns


def read_elf_exports(path: str) -> list[str]:
    """Defined global function symbols of an ELF64 little-endian shared object (.dynsym)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not an ELF64 little-endian file")
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        (_name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, _info, _align,
         sh_entsize) = struct.unpack_from("<IIQQQQIIQQ", data, off)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))
    names = []
    for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        str_off = sections[sh_link][1]
        for off in range(sh_offset, sh_offset + sh_size, sh_entsize or 24):
            st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from("<IBBHQQ", data, off)
            bind, kind = st_info >> 4, st_info & 0xF
            if st_shndx == 0 or bind not in (1, 2) or kind != 2:  # defined GLOBAL/WEAK FUNC
                continue
            end = data.index(b"\0", str_off + st_name)
            names.append(data[str_off + st_name:end].decode())
    return sorted(set(names))


def parse_results(cuda_h: str) -> list[tuple[str, int, str]]:
    """(name, value, description) for every CUresult in cuda.h; the description is the first
    sentence of the enumerator's doc comment ("invalid value" style strings are not in headers)."""
    with open(cuda_h, encoding="utf-8") as f:
        text = f.read()
    start = text.index("typedef enum cudaError_enum")
    body = text[start:text.index("} CUresult;", start)]
    results = []
    for m in re.finditer(r"/\*\*(.*?)\*/\s*(CUDA_\w+)\s*=\s*(\d+)", body, re.S):
        doc = " ".join(line.strip().lstrip("*").strip() for line in m.group(1).splitlines())
        doc = re.sub(r"\\deprecated\s*", "deprecated: ", " ".join(doc.split()))
        doc = doc.replace("::", "")
        sentence = re.split(r"(?<=[a-z0-9)])\.\s", doc + " ", maxsplit=1)[0].strip().rstrip(".")
        results.append((m.group(2), int(m.group(3)), sentence))
    return results


def write_if_changed(path: str, text: str) -> None:
    """Writes a generated file only when its content changes, so that rebuilds stay incremental."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def default_overrides_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "overrides.json")


def load(typedef_headers: list[str], stub_so: str, overrides_json: str | None = None) -> DriverApi:
    """typedef_headers: cudaTypedefs.h and cudaProfilerTypedefs.h (the cuProfiler* entry points)."""
    pfns = [p for header in typedef_headers for p in parse_typedefs(header)]
    exports = read_elf_exports(stub_so)
    with open(overrides_json or default_overrides_path(), encoding="utf-8") as f:
        overrides = json.load(f)
    api = DriverApi(pfns, exports)
    export_set = set(exports)
    symbol_overrides = overrides.get("symbol", {})  # "name@version[_stream]" -> symbol

    by_name: dict[str, list[Pfn]] = {}
    for p in pfns:
        by_name.setdefault(p.name, []).append(p)
    for name, versions in by_name.items():
        default = sorted((p for p in versions if not p.per_thread), key=lambda p: p.version)
        default_symbol = {}
        for i, p in enumerate(default):
            default_symbol[p.version] = name if i == 0 else f"{name}_v{i + 1}"
        for p in versions:
            key = f"{name}@{p.version}" + (f"_{p.stream}" if p.stream else "")
            if key in symbol_overrides:
                symbol = symbol_overrides[key]
            elif not p.per_thread:
                symbol = default_symbol[p.version]
            else:
                older = [v for v in default_symbol if v <= p.version]
                base = default_symbol[max(older)] if older else name
                symbol = f"{base}_{p.stream}"
            if symbol not in export_set:
                api.problems.append(f"PFN_{name}_v{p.version}{'_' + p.stream if p.stream else ''} "
                                    f"maps to {symbol}, which the stub does not export")
                continue
            api.mapping[(name, p.version, p.stream)] = symbol
            previous = api.symbols.get(symbol)
            if previous and previous.pfn and previous.pfn.param_list() != p.param_list():
                api.problems.append(f"{symbol}: two different ABIs map to it")
            if not previous:
                api.symbols[symbol] = Symbol(symbol, p)

    # Extra (name@version[_stream]) -> symbol answers the PFN typedefs do not imply, e.g. a
    # renamed entry point (cuGraphInstantiate@12000 is cuGraphInstantiateWithFlags).
    for key, symbol in overrides.get("extra_proc", {}).items():
        m = re.match(r"^(cu\w+)@(\d+)(?:_(ptsz|ptds))?$", key)
        if not m or symbol not in export_set:
            api.problems.append(f"driver_api/overrides.json: bad extra_proc entry {key} -> {symbol}")
            continue
        api.mapping[(m.group(1), int(m.group(2)), m.group(3) or "")] = symbol

    undescribed = overrides.get("undescribed", {})  # symbol -> param list text
    for symbol in exports:
        if symbol in api.symbols:
            continue
        if symbol in undescribed:
            params = _split_params(undescribed[symbol])
            api.symbols[symbol] = Symbol(symbol, Pfn(symbol, 0, "", params, False))
        else:
            api.problems.append(f"{symbol}: exported by the stub but no PFN typedef maps to it "
                                "(add it to driver_api/overrides.json)")
    return api


if __name__ == "__main__":  # self-check: python3 driver_api.py libcuda.so cudaTypedefs.h ...
    import sys

    api = load(sys.argv[2:], sys.argv[1])
    print(f"{len(api.pfns)} PFN typedefs, {len(api.exports)} exports, {len(api.mapping)} mappings")
    for problem in api.check():
        print("problem:", problem)

#!/usr/bin/env python3
"""Checks the module dependency rules of docs/architecture.md against the code.

Each module directory's README.md has one paragraph that starts with "May depend on:". Its
backticked `name/` items are the cusnap modules the module may use; `name/include` allows only
that module's public headers, and a backticked `cusnap::target` allows linking that one target;
its other words name the third-party libraries (matched against THIRD_PARTY below). This script then reads every source
file and CMakeLists.txt of the module and fails, naming file and line, when
  - an #include resolves into another module that the README does not allow,
  - an #include names a third-party library the README does not allow,
  - a CMake line links or includes another module's target or directory not allowed,
  - the allowed edges between modules form a cycle.
Run: check_dependencies.py <repository root>
"""
import os
import re
import sys

MODULES = ["format", "fatbin", "common", "driver_api", "emulator", "interceptor", "replayer",
           "compare", "extract", "reduce", "runner", "timeline", "cli", "samples"]
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp", ".inc", ".py", ".S")

# include prefix (angle brackets) -> the name a README must mention for it
THIRD_PARTY = [
    (re.compile(r"^(cuda|cudaTypedefs|cuda_runtime|cuda_runtime_api|driver_types|vector_types|"
                r"cuda_fp16|builtin_types|nvrtc|cuda_bf16)\.h$"), "CUDA"),
    (re.compile(r"^(capnp|kj)/"), "Cap'n Proto"),
    (re.compile(r"^zstd(_errors)?\.h$"), "zstd"),
    (re.compile(r"^lz4(hc|frame)?\.h$"), "lz4"),
    (re.compile(r"^xxhash\.h$"), "xxhash"),
    (re.compile(r"^(spdlog|fmt)/"), "spdlog"),
    (re.compile(r"^CLI/"), "CLI11"),
]

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_rules(root):
    rules = {}
    for m in MODULES:
        readme = os.path.join(root, m, "README.md")
        if not os.path.isfile(readme):
            continue
        text = open(readme, encoding="utf-8").read()
        match = re.search(r"May depend on:(.*?)(\n\s*\n|$)", text, re.S)
        if not match:
            raise SystemExit(f"{readme}: no paragraph starting with 'May depend on:'")
        line = " ".join(match.group(1).split())
        modules = set(re.findall(r"`([a-z_]+)/`", line))
        public = set(re.findall(r"`([a-z_]+)/include[^`]*`", line))
        targets = {"cusnap_" + t for t in re.findall(r"`cusnap::([a-z_]+)`", line)}
        unknown = (modules | public) - set(MODULES)
        if unknown:
            raise SystemExit(f"{readme}: 'May depend on' names unknown modules {sorted(unknown)}")
        rules[m] = {"modules": modules, "public": public, "targets": targets,
                    "text": line.lower()}
    return rules


def module_of(root, path):
    rel = os.path.relpath(path, root)
    top = rel.split(os.sep, 1)[0]
    return top if top in MODULES else None


def resolve(root, including_file, module, name):
    """(module, public) for an include: the module it refers to and whether it is one of that
    module's public headers (under <module>/include), or (None, False) when it is not a file of
    ours. Generated headers that only exist in the build tree match by their cusnap/<lib>/ prefix."""
    candidates = [os.path.dirname(including_file), os.path.join(root, module), root]
    candidates += [os.path.join(root, m, "include") for m in MODULES]
    for base in candidates:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            owner = module_of(root, path)
            public = owner is not None and path.startswith(os.path.join(root, owner, "include") + os.sep)
            return owner, public
    m = re.match(r"cusnap/([a-z_]+)/", name)
    if m:
        for mod in MODULES:
            if os.path.isdir(os.path.join(root, mod, "include", "cusnap", m.group(1))):
                return mod, True
    return None, False


def source_files(root, module):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, module)):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for f in filenames:
            yield os.path.join(dirpath, f)


def cmake_targets(root):
    """target name -> module that defines it (add_library / add_executable in its tree)."""
    targets = {}
    for m in MODULES:
        for path in source_files(root, m):
            if os.path.basename(path) != "CMakeLists.txt" and not path.endswith(".cmake"):
                continue
            for t in re.findall(r"add_(?:library|executable)\(\s*([A-Za-z0-9_]+)",
                                open(path, encoding="utf-8").read()):
                targets[t] = m
    return targets


def check(root):
    rules = read_rules(root)
    targets = cmake_targets(root)
    errors = []
    for m, rule in rules.items():
        allowed = rule["modules"] | {m}
        for path in source_files(root, m):
            rel = os.path.relpath(path, root)
            base = os.path.basename(path)
            if base == "CMakeLists.txt" or base.endswith(".cmake"):
                text = open(path, encoding="utf-8").read()
                for n, line in enumerate(text.splitlines(), 1):
                    if line.lstrip().startswith("#"):
                        continue
                    for word in re.findall(r"[A-Za-z0-9_:]+", line):
                        name = word.split("::")[-1] if word.startswith("cusnap::") else word
                        name = "cusnap_" + name if word.startswith("cusnap::") else name
                        owner = targets.get(name)
                        if (owner and owner not in allowed and name not in rule["targets"] and
                                "link" in line.lower()):
                            errors.append(f"{rel}:{n}: links {word} of module {owner}/, "
                                          f"which {m}/README.md does not allow")
                    for other in re.findall(r"\$\{(?:CMAKE|PROJECT)_SOURCE_DIR\}/([a-z_]+)/", line):
                        if other in MODULES and other not in allowed:
                            errors.append(f"{rel}:{n}: uses {other}/ which {m}/README.md "
                                          "does not allow")
                    if ("link_libraries" in line and m != "samples" and
                            re.search(r"CUDA::cuda_driver|\blibcuda\.so\b|-lcuda\b", line)):
                        errors.append(f"{rel}:{n}: links the CUDA driver (rule: drivers only "
                                      "through dlopen)")
                continue
            if not path.endswith(SOURCE_EXT):
                continue
            try:
                lines = open(path, encoding="utf-8").read().splitlines()
            except UnicodeDecodeError:
                continue
            for n, line in enumerate(lines, 1):
                inc = INCLUDE_RE.match(line)
                if not inc:
                    continue
                kind, name = inc.groups()
                owner, public = resolve(root, path, m, name)
                if owner and owner not in allowed and not (public and owner in rule["public"]):
                    errors.append(f"{rel}:{n}: includes {name} from {owner}/, which "
                                  f"{m}/README.md does not allow")
                if owner is None:
                    for pattern, lib in THIRD_PARTY:
                        if pattern.search(name) and lib.lower() not in rule["text"]:
                            errors.append(f"{rel}:{n}: includes <{name}> ({lib}), which "
                                          f"{m}/README.md does not allow")
    # The allowed module graph must be acyclic.
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in sorted(rules.get(m, {}).get("modules", ())):
            if state.get(d) == "open":
                errors.append("dependency cycle: " + " -> ".join(stack + [m, d]))
            elif d not in state:
                visit(d, stack + [m])
        state[m] = "done"

    for m in rules:
        if m not in state:
            visit(m, [])
    return rules, errors


def self_test():
    """The checker on a small tree with one violation of each kind: each must be reported."""
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            open(os.path.join(root, path), "w", encoding="utf-8").write(text)
        write("format/README.md", "# format/\n\nMay depend on: zstd, `common/`.\n")
        write("format/src/a.cpp", '#include <cuda.h>\n#include "replayer/plan.h"\n#include <zstd.h>\n')
        write("format/CMakeLists.txt", "add_library(cusnap_format a.cpp)\n"
              "target_link_libraries(cusnap_format PRIVATE cusnap_replayer)\n")
        write("common/README.md", "# common/\n\nMay depend on: `format/`.\n")
        write("replayer/README.md", "# replayer/\n\nMay depend on: `interceptor/include`.\n")
        write("replayer/plan.h", "#pragma once\n")
        write("replayer/b.cpp", '#include "cusnap/capture/config.h"\n#include "../interceptor/src/x.h"\n')
        write("replayer/CMakeLists.txt", "add_library(cusnap_replayer b.cpp)\n"
              "target_link_libraries(cusnap_replayer PRIVATE CUDA::cuda_driver)\n")
        write("interceptor/README.md", "# interceptor/\n\nMay depend on: nothing.\n")
        write("interceptor/include/cusnap/capture/config.h", "#pragma once\n")
        write("interceptor/src/x.h", "#pragma once\n")
        _, errors = check(root)
    expected = ["format/src/a.cpp:1: includes <cuda.h>", "format/src/a.cpp:2: includes replayer/plan.h",
                "format/CMakeLists.txt:2: links cusnap_replayer", "dependency cycle",
                "replayer/b.cpp:2: includes ../interceptor/src/x.h",
                "replayer/CMakeLists.txt:2: links the CUDA driver"]
    unexpected = ["a.cpp:3", "b.cpp:1"]
    missing = [e for e in expected if not any(e in x for x in errors)]
    extra = [u for u in unexpected if any(u in x for x in errors)]
    for e in errors:
        print("self-test found:", e)
    if missing or extra:
        print("self-test FAILED: missing", missing, "wrongly reported", extra)
        return 1
    print("self-test: every planted violation was reported")
    return 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    rules, errors = check(root)
    for e in errors:
        print(e)
    print(f"{len(rules)} modules checked, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

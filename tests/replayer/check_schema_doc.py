#!/usr/bin/env python3
"""Checks JSON documents against the field tables of a docs/schemas/*.md file.

  check_schema_doc.py DOC.md FILE.json [FILE.json ...]

The doc's tables have the header `| field | type | meaning |` (docs/schemas/README.md: `a.b`
member, `a[]` array element, `a.*` a member whose name is data; types string, integer, number,
boolean, object, array, `T or null`). The first table describes the document's root; a later
table describes an object kind used at the paths named in backticks on the line before it
("A copy object (`verification.first_mismatch`, `verification.copies[]`):").

Fails when a document holds a value at a path no table lists, or of a type its row does not
allow, and when a listed path without `*` appears in none of the documents (so every field the
doc promises is really written, and every field written is documented).
"""

import json
import re
import sys

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|")
_TYPES = {"string", "integer", "number", "boolean", "object", "array", "null"}


def segments(path):
    """'a.b[].c' -> ('a', 'b', '[]', 'c')."""
    out = []
    for part in path.split("."):
        while part.endswith("[]"):
            part = part[:-2]
            if part:
                out.append(part)
                part = ""
            out.append("[]")
        if part:
            out.append(part)
    return tuple(out)


def parse_doc(path):
    """{pattern segments: allowed types}"""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    fields = {}
    tables = 0
    mounts = [()]
    for i, line in enumerate(lines):
        if re.match(r"^\|\s*field\s*\|\s*type\s*\|", line):
            if tables > 0:
                intro = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
                mounts = [segments(p) for p in re.findall(r"`([^`]+)`", intro)]
                if not mounts:
                    sys.exit(f"{path}:{i + 1}: a second table needs its paths in backticks on the line before")
            tables += 1
            continue
        m = _ROW.match(line)
        if not m or tables == 0:
            continue
        types = {t.strip() for t in m.group(2).split(" or ")}
        if not types <= _TYPES:
            sys.exit(f"{path}:{i + 1}: unknown type {m.group(2)!r}")
        if "number" in types:
            types.add("integer")
        for mount in mounts:
            fields[mount + segments(m.group(1))] = types
    if not fields:
        sys.exit(f"{path}: no field table found")
    return fields


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def walk(value, path, out):
    if path:
        out.append((path, json_type(value)))
    if isinstance(value, dict):
        for name, member in value.items():
            walk(member, path + (name,), out)
    elif isinstance(value, list):
        for element in value:
            walk(element, path + ("[]",), out)


def matches(pattern, path):
    return len(pattern) == len(path) and all(p == "*" and q != "[]" or p == q for p, q in zip(pattern, path))


def main():
    doc, documents = sys.argv[1], sys.argv[2:]
    fields = parse_doc(doc)
    seen = set()
    problems = []
    for name in documents:
        with open(name, encoding="utf-8") as f:
            values = []
            walk(json.load(f), (), values)
        for path, kind in values:
            patterns = [p for p in fields if matches(p, path)]
            shown = ".".join(path).replace(".[]", "[]")
            if not patterns:
                problems.append(f"{name}: {shown} ({kind}) is not in {doc}")
                continue
            seen.update(patterns)
            if not any(kind in fields[p] for p in patterns):
                allowed = " or ".join(sorted(fields[patterns[0]]))
                problems.append(f"{name}: {shown} is {kind}, {doc} says {allowed}")
    for pattern in fields:
        if "*" not in pattern and pattern not in seen:
            problems.append(f"{doc}: {'.'.join(pattern).replace('.[]', '[]')} appears in none of the documents")
    for problem in problems:
        print(problem)
    print(f"{doc}: {len(fields)} documented paths, {len(seen)} seen in {len(documents)} document(s), "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Turns symbol graphs into the committed API dump: one line per public declaration, sorted.

    api_dump.py SYMBOL_GRAPH_DIR API_DIR [--check]

Writes (or with --check compares) API_DIR/MODULE.txt for every MODULE.symbols.json. A line is
`KIND PATH: DECLARATION`, so a diff of two dumps reads as a diff of the API. Also lists public
declarations without a `///` comment; with --check, any such declaration fails the check.
Exit 0 when everything matches, 1 otherwise (the diff is printed).
"""
import difflib
import glob
import json
import os
import sys


def dump(graph_path):
    graph = json.load(open(graph_path))
    lines, undocumented = [], []
    for symbol in graph["symbols"]:
        kind = symbol["kind"]["identifier"].removeprefix("swift.")
        path = ".".join(symbol["pathComponents"])
        declaration = "".join(f["spelling"] for f in symbol.get("declarationFragments", []))
        declaration = " ".join(declaration.split())
        lines.append(f"{kind} {path}: {declaration}")
        if not symbol.get("docComment"):
            undocumented.append(f"{kind} {path}")
    # Conformances are API too: a removed Sendable or Hashable breaks clients.
    names = {s["identifier"]["precise"]: ".".join(s["pathComponents"]) for s in graph["symbols"]}
    for relation in graph.get("relationships", []):
        if relation["kind"] == "conformsTo" and relation["source"] in names:
            target = relation.get("targetFallback") or names.get(relation["target"], relation["target"])
            lines.append(f"conformance {names[relation['source']]}: {target.split('.')[-1]}")
    return sorted(set(lines)), sorted(undocumented)


def main():
    graphs, api_dir = sys.argv[1], sys.argv[2]
    check = "--check" in sys.argv[3:]
    failed = False
    total_symbols = 0
    for graph_path in sorted(glob.glob(os.path.join(graphs, "*.symbols.json"))):
        module = os.path.basename(graph_path).split(".")[0]
        if "@" in os.path.basename(graph_path):
            continue  # extensions of other modules' types are listed in the module's own graph
        lines, undocumented = dump(graph_path)
        text = "".join(line + "\n" for line in lines)
        target = os.path.join(api_dir, module + ".txt")
        declarations = sum(1 for line in lines if not line.startswith("conformance "))
        tops = {line.split(" ", 1)[1].split(":", 1)[0].split(".")[0] for line in lines}
        print(f"{module}: {declarations} public declarations under {len(tops)} top-level names")
        total_symbols += declarations
        if undocumented:
            print(f"{module}: {len(undocumented)} public declarations without a /// comment:")
            for entry in undocumented:
                print(f"    {entry}")
            failed = failed or check
        if check:
            committed = open(target).read() if os.path.exists(target) else ""
            if committed != text:
                failed = True
                print(f"{module}: the public API differs from {target} (run tools/api to update it):")
                sys.stdout.writelines(
                    difflib.unified_diff(committed.splitlines(True), text.splitlines(True), target, "the code", n=0))
        else:
            os.makedirs(api_dir, exist_ok=True)
            open(target, "w").write(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

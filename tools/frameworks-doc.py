#!/usr/bin/env python3
"""Regenerates the entry table of docs/frameworks.md from `llmsim list frameworks --json`, so that the
document mirrors sim/run/framework_catalog.cpp (names, mappings, reasons, recipes and sources).
Usage: tools/frameworks-doc.py [path/to/llmsim]   (default: build/bin/llmsim)"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "frameworks.md")
HEADER = "| name (aliases) | training stand-in | inference stand-in | recipe defaults | source |"
STATIC = {"megatron", "deepspeed", "fsdp", "hf"}  # training profiles whose inference engine is the static one


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def row(e):
    name = f"`{e['name']}`" + (f" ({', '.join(e['aliases'])})" if e["aliases"] else "")
    reason = cell(e["unsupported_reason"])
    train = f"**{e['training']}**: {cell(e['training_mapping'])}" if e["training"] != "-" else f"unsupported: {reason}"
    if e["inference"] == "-":
        infer = f"unsupported: {reason}"
    else:
        label = f"static ({e['inference']})" if e["inference"] in STATIC else e["inference"]
        infer = f"**{label}**: {cell(e['inference_mapping'])}"
    recipe = f"{cell(e['recipe'])}<br>*{cell(e['recipe_source'])}*" if e["recipe"] else "—"
    for r in e.get("earlier_recipes", []):
        recipe += f"<br>releases before {r['before']}: {cell(r['recipe'])}<br>*{cell(r['recipe_source'])}*"
    return f"| {name} | {train} | {infer} | {recipe} | {cell(e['source'])} |"


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "llmsim")
    entries = json.loads(subprocess.run([exe, "list", "frameworks", "--json"], check=True, capture_output=True,
                                        text=True).stdout)["frameworks"]
    lines = open(DOC).read().split("\n")
    start = lines.index(HEADER)
    end = start + 2
    while end < len(lines) and lines[end].startswith("| `"):
        end += 1
    lines[start + 2:end] = [row(e) for e in entries]
    open(DOC, "w").write("\n".join(lines))
    print(f"{DOC}: {len(entries)} entries", file=sys.stderr)


if __name__ == "__main__":
    main()

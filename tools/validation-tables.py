#!/usr/bin/env python3
"""Prints the accuracy tables of docs/validation.md from `llmsim validate --json` outputs, so that every
figure there can be reproduced: per workload (time and memory apart), framework family, GPU generation and
source, the honest leave-one-source-out median |error|, its interval coverage and median width, beside the
no-facts and in-sample medians.

Usage:
  llmsim validate FILES --loso --json loso.json
  llmsim validate FILES --no-source-facts --json nofacts.json
  llmsim validate FILES --json insample.json
  tools/validation-tables.py loso.json nofacts.json insample.json [--data-dir data]

Coverage: the share of predicted rows whose measurement lies in the printed [low .. high]; width: the
median of (high - low) / predicted. Rows of the `fits` metric (a yes/no) are left out."""
import argparse
import json
import os
import re
import statistics

FAMILY = {
    "trt-llm": "TensorRT-LLM", "fsdp": "FSDP", "hf": "HF transformers", "lmdeploy": "LMDeploy", "vllm": "vLLM",
    "megatron": "Megatron", "deepspeed": "DeepSpeed", "tgi": "TGI", "sglang": "SGLang", "lightllm": "LightLLM",
    "static": "static batch", "fastertransformer": "FasterTransformer", "llama.cpp": "llama.cpp",
    "exllamav2": "ExLlama / ExLlamaV2", "mlc-llm": "MLC LLM", "tinychat": "TinyChat (llm-awq)", "autoawq": "AutoAWQ",
}
GENERATION = [(12.0, "Blackwell (consumer)"), (10.0, "Blackwell"), (9.0, "Hopper"), (8.9, "Ada"), (8.0, "Ampere"),
              (7.5, "Turing"), (7.0, "Volta")]


def generation_of(system, data_dir, cache={}):
    if system not in cache:
        cc = None
        path = os.path.join(data_dir, "hardware", system + ".toml")
        if os.path.exists(path):
            m = re.search(r"^compute_capability\s*=\s*([0-9.]+)", open(path).read(), re.M)
            cc = float(m.group(1)) if m else None
        cache[system] = next((name for at, name in GENERATION if cc is not None and cc >= at), "other")
    return cache[system]


def scored(doc):
    return {(r["file"], r["line"], r["metric"]): r for r in doc["rows"]
            if r["status"] == "ok" and r["metric"] != "fits" and r.get("error_pct") is not None}


def kind(r):
    return "memory" if r["metric"].startswith("peak_mem") else "time and throughput"


def band_regime(r):
    m = re.search(r"loso band from \d+ rows of \d+ other sources \(([^)]*)\)", r.get("note", ""))
    return m.group(1) if m else "(no band)"


def median_abs(rows):
    return statistics.median(abs(r["error_pct"]) for r in rows) if rows else float("nan")


def coverage(rows):
    inside = [r for r in rows if r["low"] <= r["measured"] <= r["high"]]
    return 100.0 * len(inside) / len(rows) if rows else float("nan")


def width(rows):
    w = [(r["high"] - r["low"]) / r["predicted"] for r in rows if r["predicted"] > 0]
    return 100.0 * statistics.median(w) if w else float("nan")


def table(title, key, loso, others):
    groups = {}
    for k, r in loso.items():
        groups.setdefault(key(r), []).append(k)
    print(f"| {title} | rows | honest LOSO median \\|e\\| | coverage | median width | no facts | in-sample |")
    print("|---|---|---|---|---|---|---|")
    for name, keys in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        rows = [loso[k] for k in keys]
        cells = [f"{median_abs([o[k] for k in keys if k in o]):5.1f}" for o in others]
        print(f"| {name} | {len(rows)} | {median_abs(rows):5.1f} | {coverage(rows):3.0f} % | {width(rows):3.0f} % | "
              + " | ".join(cells) + " |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("loso")
    ap.add_argument("nofacts")
    ap.add_argument("insample")
    ap.add_argument("--data-dir", default=os.path.join(os.path.dirname(os.path.dirname(__file__)), "data"))
    a = ap.parse_args()
    loso, nofacts, insample = (scored(json.load(open(p))) for p in (a.loso, a.nofacts, a.insample))
    others = [nofacts, insample]
    all_rows = list(loso.values())
    print(f"all: {len(all_rows)} rows, honest LOSO median |e| {median_abs(all_rows):.1f} %, coverage "
          f"{coverage(all_rows):.0f} % at median width {width(all_rows):.0f} %\n")
    table("workload", lambda r: f"{r['workload']}, {kind(r)}", loso, others)
    table("framework family", lambda r: FAMILY.get(r.get("profile") or r["framework"], r.get("profile")), loso,
          others)
    table("GPU generation", lambda r: generation_of(r["system"], a.data_dir), loso, others)
    table("band regime (the one each row's band came from)", band_regime, loso, others)
    table("source", lambda r: r["source"][:60], loso, others)


if __name__ == "__main__":
    main()

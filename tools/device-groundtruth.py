#!/usr/bin/env python3
"""Measured ground truth for llmsim on one GPU, written as measured-run rows (shared/validation/SCHEMA.md).

Runs plain PyTorch + Hugging Face transformers (+ peft for LoRA) with random weights built from llmsim's
own model presets (data/models/*/config.json), so nothing is downloaded:
  * pre-training steps of a Llama-architecture model (custom dims) under AMP (fp32 weights, bf16
    autocast, fused AdamW): the `hf` framework profile of llmsim; SDPA (flash) or eager attention,
    with and without full recomputation (gradient checkpointing);
  * LoRA fine-tuning steps of llama2-7b (bf16 frozen base, rank-16 adapters on every linear projection);
  * QLoRA fine-tuning steps of llama2-7b as the QLoRA repository sets them up (needs bitsandbytes; skipped
    with a note without it), and the memory of the 4-bit base alone;
  * prefill (time to first token) of llama2-7b in bf16;
  * last, torch.profiler breakdowns of two pre-training steps and a LoRA step: every kernel with its
    calls and time, and every op's host (dispatch) and device time (`--profile` runs only these).
Each configuration warms up, then times `--steps` steps with CUDA synchronisation around each step
(wall clock = what a user sees) and records the median; forward / backward / optimizer are timed
separately with CUDA events in the same steps. Rows are appended and flushed as each configuration
finishes, so an interrupted run keeps what it measured. A configuration that fails (out of memory, API
change) is logged and skipped, never guessed.

Usage: python3 tools/device-groundtruth.py --out DIR [--system hgx-h200] [--steps 8] [--only NAME,...]
Writes DIR/groundtruth.csv (SCHEMA rows) and DIR/groundtruth-detail.json (per-phase times, versions).
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import sys
import time
import traceback

COLUMNS = ("run_id,source,workload,model,arch,layers,hidden,heads,kv_heads,ffn,vocab,system,num_gpus,tp,pp,dp,"
           "cp,ep,vp,micro_batch,global_batch,seq_len,input_len,output_len,request_rate,precision,weight_quant,"
           "recompute,sequence_parallel,flash_attn,zero_stage,offload,finetune,lora_rank,framework,memory_measure,"
           "metric,value,"
           "notes").split(",")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The pre-training model: Llama-2-7B's layer shape (hidden 4096, 32 heads, SwiGLU 11008, vocab 32000)
# with 8 layers, so that AMP Adam states (16 bytes/param, ~1.9B params) and activations fit one GPU.
CUSTOM = dict(arch="llama", layers=8, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000)


# Every linear projection of a Llama layer: where the LoRA and QLoRA runs put adapters.
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def log(msg):
    print(f"[groundtruth {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pretrain_configs():
    # name, micro_batch, seq_len, attention implementation, recompute
    return [
        ("pt-b1-s2048", 1, 2048, "sdpa", "none"),
        ("pt-b4-s2048", 4, 2048, "sdpa", "none"),
        ("pt-b2-s4096", 2, 4096, "sdpa", "none"),
        ("pt-b8-s1024", 8, 1024, "sdpa", "none"),
        ("pt-b4-s2048-full", 4, 2048, "sdpa", "full"),
        ("pt-b4-s2048-eager", 4, 2048, "eager", "none"),
    ]


def lora_configs():
    return [("lora7b-b1-s2048", 1, 2048), ("lora7b-b4-s2048", 4, 2048)]


def qlora_configs():
    # The QLoRA paper's memory setting: micro-batch 1, 512 tokens, gradient checkpointing, r = 64.
    return [("qlora7b-b1-s512", 1, 512), ("qlora7b-b4-s512", 4, 512)]


def prefill_configs():
    return [("prefill7b-b1-s512", 1, 512), ("prefill7b-b1-s2048", 1, 2048), ("prefill7b-b8-s2048", 8, 2048)]


class Writer:
    def __init__(self, out_dir, source):
        self.path = os.path.join(out_dir, "groundtruth.csv")
        self.detail_path = os.path.join(out_dir, "groundtruth-detail.json")
        self.source = source
        new = not os.path.exists(self.path)
        self.f = open(self.path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=COLUMNS)
        if new:
            self.w.writeheader()
        self.detail = {"runs": {}}

    def rows(self, base, metrics, notes):
        for metric, value in metrics.items():
            row = {c: "" for c in COLUMNS}
            row.update(base)
            row.update(source=self.source, metric=metric, value=f"{value:.6g}", notes=notes)
            if metric == "peak_mem_gib":
                row["memory_measure"] = "device"  # peak_gib: max_memory_reserved + the CUDA context
            self.w.writerow(row)
        self.f.flush()

    def save_detail(self, key, value):
        self.detail[key] = value
        with open(self.detail_path, "w") as f:
            json.dump(self.detail, f, indent=1, sort_keys=True)


def load_config(name):
    with open(os.path.join(ROOT, "data", "models", name, "config.json")) as f:
        return json.load(f)


def build_model(torch, cfg_dict, attn, dtype):
    from transformers import AutoModelForCausalLM, LlamaConfig
    d = {k: v for k, v in cfg_dict.items() if k not in ("architectures", "model_type", "transformers_version",
                                                         "torch_dtype", "dtype", "_name_or_path")}
    cfg = LlamaConfig(**d)
    with torch.device("cuda"):
        try:
            m = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, dtype=dtype)
        except TypeError:
            m = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn, torch_dtype=dtype)
    m = m.to(dtype)  # whichever spelling the installed transformers took, the weights are in `dtype`
    got = getattr(m.config, "_attn_implementation", attn)
    if got != attn:
        raise RuntimeError(f"asked for attention '{attn}', the model uses '{got}'")
    return m


class PhaseTimer:
    """CUDA events between phases of one step; the step's wall time is taken around it after a sync."""

    def __init__(self, torch, names):
        self.torch = torch
        self.names = names
        self.ev = [torch.cuda.Event(enable_timing=True) for _ in range(len(names) + 1)]
        self.i = 0

    def mark(self):
        self.ev[self.i].record()
        self.i += 1

    def times(self):
        self.torch.cuda.synchronize()
        return {n: self.ev[k].elapsed_time(self.ev[k + 1]) * 1e-3 for k, n in enumerate(self.names)}


def time_steps(torch, step, steps, warmup):
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    walls, phases = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        ph = step()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
        phases.append(ph)
    med = statistics.median(walls)
    spread = (max(walls) - min(walls)) / med
    phase_med = {k: statistics.median(p[k] for p in phases) for k in phases[0]} if phases[0] else {}
    return med, spread, phase_med, walls


def train_step_fn(torch, model, opt, ids, amp):
    def step():
        pt = PhaseTimer(torch, ["forward", "backward", "optimizer"])
        pt.mark()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            out = model(input_ids=ids, labels=ids, use_cache=False)
        pt.mark()
        out.loss.backward()
        pt.mark()
        opt.step()
        opt.zero_grad(set_to_none=True)
        pt.mark()
        return pt.times()
    return step


def kernel_class(name):
    """Operator class of a CUDA kernel, by the library naming conventions of cuBLAS(Lt), FlashAttention
    (PyTorch SDPA), PyTorch's fused optimizers and its elementwise/reduction templates."""
    n = name.lower()
    # Attention first: cuDNN's SDPA kernels carry "sm90_" in their names like cuBLAS's.
    if "flash" in n or "fmha" in n or "attention" in n or "sdpa" in n:
        return "attention"
    if any(k in n for k in ("gemm", "nvjet", "cutlass", "xmma", "cublas", "sm90_", "sm80_")):
        return "gemm"
    if "multi_tensor" in n or "adam" in n:
        return "optimizer"
    if "softmax" in n or "cross_entropy" in n or "nll_loss" in n:
        return "softmax/loss"
    if "reduce" in n or "norm" in n:
        return "reduction"
    if "elementwise" in n or "vectorized" in n or "unrolled" in n or "copy" in n or "cat" in n or "index" in n:
        return "elementwise"
    return "other"


def op_averages(prof, steps):
    """Per aten/Python op, per step: calls, self CPU time (the host cost of dispatching it) and the
    device time of its own kernels -- what attributes the elementwise time to model code and gives the
    eager per-op host cost. Sorted by calls."""
    rows = []
    for e in prof.key_averages():
        device_us = getattr(e, "self_device_time_total", None)
        if device_us is None:
            device_us = getattr(e, "self_cuda_time_total", 0.0)
        rows.append((e.key[:120], e.count / steps, e.self_cpu_time_total * 1e-6 / steps, device_us * 1e-6 / steps))
    rows.sort(key=lambda r: -r[1])
    return rows[:200]


def profile_step(torch, step, name, steps=3):
    """Runs `steps` steps under torch.profiler; returns GPU time by kernel class, the busy union and the
    wall time, from the Chrome trace PyTorch writes (kernel events, microseconds), every kernel with its
    calls and time, and the per-op host and device times (op_averages)."""
    from torch.profiler import ProfilerActivity, profile
    trace = os.path.join("/tmp", f"trace-{name}.json")
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / steps
    prof.export_chrome_trace(trace)
    with open(trace) as f:
        ev = json.load(f)
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    by_class, by_name, calls = {}, {}, {}
    for e in kernels:
        c = kernel_class(e["name"]) if e["cat"] == "kernel" else e["cat"]
        by_class[c] = by_class.get(c, 0.0) + e["dur"]
        by_name[e["name"]] = by_name.get(e["name"], 0.0) + e["dur"]
        calls[e["name"]] = calls.get(e["name"], 0) + 1
    spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in kernels)
    busy, end = 0.0, -1e300
    for a, b in spans:
        if b > end:
            busy += b - max(a, end)
            end = b
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1])
    return dict(wall_s=wall, steps=steps, kernels_per_step=len(kernels) / steps,
                gpu_busy_s=busy * 1e-6 / steps,
                by_class_s={k: v * 1e-6 / steps for k, v in sorted(by_class.items(), key=lambda kv: -kv[1])},
                top_kernels_s=[(n[:160], v * 1e-6 / steps) for n, v in ranked[:25]],
                kernels=[(n[:200], kernel_class(n), calls[n] / steps, v * 1e-6 / steps) for n, v in ranked],
                ops=op_averages(prof, steps))


def pretrain_model(torch, attn, recompute, mb, seq):
    """The CUSTOM model under AMP (fp32 weights) with fused AdamW, and its training step over random tokens."""
    model = build_model(torch, custom_config(), attn, torch.float32)
    model.train()
    if recompute == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, CUSTOM["vocab"], (mb, seq), device="cuda")
    return model, opt, train_step_fn(torch, model, opt, ids, True)


def run_profiles(torch, wr):
    """Kernel- and op-level breakdown of two pre-training configurations and a LoRA step (where the time
    goes, and what each eager op costs the host)."""
    out = {}
    for name, mb, seq in (("pt-b4-s2048", 4, 2048), ("pt-b1-s2048", 1, 2048), ("lora7b-b1-s2048", 1, 2048)):
        model = opt = None
        try:
            reset(torch)
            if name.startswith("lora"):
                model, opt, _ = lora_model(torch)
                ids = torch.randint(0, 32000, (mb, seq), device="cuda")
                step = train_step_fn(torch, model, opt, ids, True)
            else:
                model, opt, step = pretrain_model(torch, "sdpa", "none", mb, seq)
            for _ in range(3):
                step()
            out[name] = profile_step(torch, step, name)
            log(f"profile {name}: {json.dumps(out[name]['by_class_s'])} busy {out[name]['gpu_busy_s']:.4f} "
                f"wall {out[name]['wall_s']:.4f} kernels/step {out[name]['kernels_per_step']:.0f}")
            wr.save_detail("profiles", out)
        except Exception as e:  # noqa: BLE001
            log(f"profile {name}: FAILED {type(e).__name__}: {e}")
            traceback.print_exc()
        finally:
            del model, opt
            reset(torch)


CONTEXT_BYTES = 0  # CUDA context and library handles: device memory in use that PyTorch's allocator does not own


def peak_gib(torch):
    """Peak device memory as the device sees it: the allocator's peak reservation (allocations plus its
    cached, fragmented blocks) plus the CUDA context. max_memory_allocated alone is kept in the detail file."""
    return (torch.cuda.max_memory_reserved() + CONTEXT_BYTES) / 2**30


def reset(torch):
    import gc
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def custom_config():
    """The Hugging Face config of the CUSTOM pre-training model."""
    return dict(model_type="llama", hidden_size=CUSTOM["hidden"], intermediate_size=CUSTOM["ffn"],
                num_hidden_layers=CUSTOM["layers"], num_attention_heads=CUSTOM["heads"],
                num_key_value_heads=CUSTOM["kv_heads"], vocab_size=CUSTOM["vocab"], max_position_embeddings=4096,
                rms_norm_eps=1e-5, tie_word_embeddings=False)


def note_failure(wr, key, text):
    """Keeps why a configuration did not run in the detail file (a failure is logged, never guessed)."""
    wr.detail.setdefault("failed", {})[key] = text
    wr.save_detail("failed", wr.detail["failed"])


def time_adapter_runs(torch, wr, model, opt, todo, steps, row, what, trainable):
    """Times each (name, micro_batch, seq_len) of `todo` on an adapter model (LoRA, QLoRA) and records its
    rows; `row` holds the schema fields they share, `what` the notes' description."""
    for name, mb, seq in todo:
        try:
            torch.cuda.reset_peak_memory_stats()
            ids = torch.randint(0, 32000, (mb, seq), device="cuda")
            timing = time_steps(torch, train_step_fn(torch, model, opt, ids, True), steps, 3)
            record_training(torch, wr, name, row, mb, seq, timing, steps, what, dict(trainable=trainable))
        except Exception as e:  # noqa: BLE001
            log(f"{name}: FAILED {type(e).__name__}: {e}")
            traceback.print_exc()


def record_training(torch, wr, name, base, mb, seq, timing, steps, what, extra):
    """Writes one training configuration's rows (step time, tokens/s, peak memory) and its detail."""
    med, spread, phases, walls = timing
    peak = peak_gib(torch)
    allocated = torch.cuda.max_memory_allocated() / 2**30
    notes = (f"{what}; median of {steps} steps after 3 warm-up (spread {spread:.1%}); "
             f"peak = torch.cuda.max_memory_reserved + CUDA context ({CONTEXT_BYTES / 2**30:.2f} GiB)")
    wr.rows(dict(base, run_id=f"h200-{name}", num_gpus=1, micro_batch=mb, global_batch=mb, seq_len=seq),
            {"step_time_s": med, "tokens_per_s": mb * seq / med, "peak_mem_gib": peak}, notes)
    wr.detail["runs"][name] = dict(step_s=walls, phases_s=phases, peak_gib=peak, allocated_gib=allocated, **extra)
    wr.save_detail("runs", wr.detail["runs"])
    log(f"{name}: step {med*1e3:.1f} ms (spread {spread:.1%}) {mb*seq/med:.0f} tok/s peak {peak:.1f} GiB "
        f"phases { {k: round(v*1e3, 1) for k, v in phases.items()} }")


def run_pretrain(torch, wr, system, steps, only):
    for name, mb, seq, attn, recompute in pretrain_configs():
        if only and name not in only:
            continue
        log(f"{name}: building")
        model = opt = None
        try:
            reset(torch)
            model, opt, step = pretrain_model(torch, attn, recompute, mb, seq)
            timing = time_steps(torch, step, steps, 3)
            n_params = sum(p.numel() for p in model.parameters())
            base = dict(workload="pretrain", model="custom", arch=CUSTOM["arch"], layers=CUSTOM["layers"],
                        hidden=CUSTOM["hidden"], heads=CUSTOM["heads"], kv_heads=CUSTOM["kv_heads"],
                        ffn=CUSTOM["ffn"], vocab=CUSTOM["vocab"], system=system, precision="bf16",
                        weight_quant="none", recompute=recompute, sequence_parallel="no",
                        flash_attn="yes" if attn == "sdpa" else "no", zero_stage=0, offload="none",
                        finetune="full", framework="hf")
            what = (f"PyTorch AMP (fp32 weights, bf16 autocast), fused AdamW, HF LlamaForCausalLM attn={attn}, "
                    f"{n_params} params, random weights")
            record_training(torch, wr, name, base, mb, seq, timing, steps, what, dict(params=n_params))
        except Exception as e:  # noqa: BLE001 — a failed configuration is logged, not guessed
            log(f"{name}: FAILED {type(e).__name__}: {e}")
            traceback.print_exc()
            note_failure(wr, name, f"{type(e).__name__}: {e}")
        finally:
            del model, opt
            reset(torch)


def lora_model(torch):
    """llama2-7b with a bf16 base and peft LoRA r=16 on every projection, its fused AdamW and the number
    of trainable parameters."""
    from peft import LoraConfig, get_peft_model
    model = build_model(torch, load_config("llama2-7b"), "sdpa", torch.bfloat16)
    lcfg = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM", target_modules=LORA_TARGETS)
    model = get_peft_model(model, lcfg)
    model.train()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4, fused=True)
    return model, opt, trainable


def run_lora(torch, wr, system, steps, only):
    todo = [c for c in lora_configs() if not only or c[0] in only]
    if not todo:
        return
    model = None
    try:
        reset(torch)
        log("llama2-7b LoRA: building")
        model, opt, trainable = lora_model(torch)
    except Exception as e:  # noqa: BLE001
        log(f"LoRA setup FAILED {type(e).__name__}: {e}")
        traceback.print_exc()
        return
    row = dict(workload="finetune", model="llama2-7b", system=system, precision="bf16", weight_quant="none",
               recompute="none", sequence_parallel="no", flash_attn="yes", zero_stage=0, offload="none",
               finetune="lora", lora_rank=16, framework="hf")
    what = (f"peft LoRA r=16 alpha=32 on q,k,v,o,gate,up,down; bf16 frozen base, adapters as peft makes "
            f"them ({trainable} trainable params), bf16 autocast, fused AdamW; random weights")
    time_adapter_runs(torch, wr, model, opt, todo, steps, row, what, trainable)
    del model, opt
    reset(torch)


def quantize_to_nf4(torch, model):
    """Every linear projection of the decoder layers becomes a bitsandbytes Linear4bit (NF4, double
    quantization, bf16 compute) -- what BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
    bnb_4bit_use_double_quant=True) does on loading; the embeddings and lm_head stay 16-bit. Params4bit
    quantizes when it is moved to the GPU, so each weight goes through host memory once."""
    import bitsandbytes as bnb
    for layer in model.model.layers:
        for parent in (layer.self_attn, layer.mlp):
            for name, child in list(parent.named_children()):
                if not isinstance(child, torch.nn.Linear):
                    continue
                q = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                      compute_dtype=torch.bfloat16, compress_statistics=True, quant_type="nf4")
                q.weight = bnb.nn.Params4bit(child.weight.data.to("cpu"), requires_grad=False,
                                             compress_statistics=True, quant_type="nf4")
                setattr(parent, name, q.to("cuda"))
                del child
    return model


def run_qlora(torch, wr, system, steps, only):
    """QLoRA as the QLoRA repository's qlora.py sets it up for bf16: NF4 + double-quantized base, norms in
    fp32, embeddings / lm_head and the LoRA adapters (r = 64, alpha 16, every linear projection) in bf16,
    gradient checkpointing, paged AdamW 32-bit. Also records what the quantized base alone holds (the
    paper's "the 4-bit base model consumes 5,048 MB" for LLaMA-7B) in the detail file."""
    todo = [c for c in qlora_configs() if not only or c[0] in only]
    if not todo:
        return
    try:
        import bitsandbytes as bnb
        from peft import LoraConfig, get_peft_model
        from peft.tuners.lora import LoraLayer
    except ImportError as e:
        log(f"QLoRA skipped: {e}")
        note_failure(wr, "qlora", f"skipped: {e}")
        return
    model = opt = None
    try:
        reset(torch)
        log("llama2-7b QLoRA: building and quantizing")
        model = quantize_to_nf4(torch, build_model(torch, load_config("llama2-7b"), "sdpa", torch.bfloat16))
        reset(torch)
        base = dict(allocated_bytes=torch.cuda.memory_allocated(), reserved_bytes=torch.cuda.memory_reserved(),
                    context_bytes=CONTEXT_BYTES, bitsandbytes=getattr(bnb, "__version__", "?"))
        wr.save_detail("qlora_base", base)
        log(f"4-bit base: {base['allocated_bytes'] / 1e6:.0f} MB allocated, "
            f"{(base['reserved_bytes'] + CONTEXT_BYTES) / 1e6:.0f} MB on the device with the context")
        for p in model.parameters():
            p.requires_grad = False
        for name, module in model.named_modules():
            if "norm" in name:
                module.to(torch.float32)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
        lcfg = LoraConfig(r=64, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM",
                          target_modules=LORA_TARGETS)
        model = get_peft_model(model, lcfg)
        for module in model.modules():
            if isinstance(module, LoraLayer):
                module.to(torch.bfloat16)
        model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        trainable = sum(p.numel() for p in params)
        opt = bnb.optim.PagedAdamW32bit(params, lr=2e-4)
    except Exception as e:  # noqa: BLE001
        log(f"QLoRA setup FAILED {type(e).__name__}: {e}")
        traceback.print_exc()
        note_failure(wr, "qlora", f"{type(e).__name__}: {e}")
        del model, opt
        reset(torch)
        return
    row = dict(workload="finetune", model="llama2-7b", system=system, precision="bf16", weight_quant="nf4",
               recompute="full", sequence_parallel="no", flash_attn="yes", zero_stage=0, offload="none",
               finetune="qlora", lora_rank=64, framework="hf")
    what = (f"QLoRA as qlora.py sets it up: bitsandbytes NF4 + double quantization base, fp32 norms, bf16 "
            f"embeddings/lm_head and adapters (r=64 alpha=16 on q,k,v,o,gate,up,down; {trainable} trainable "
            f"params), gradient checkpointing, paged AdamW 32-bit, bf16 autocast; random weights")
    time_adapter_runs(torch, wr, model, opt, todo, steps, row, what, trainable)
    del model, opt
    reset(torch)


def measure_dispatch(torch, wr):
    """Host cost of one eager PyTorch op on a tiny CUDA tensor (Python, dispatcher, launch), where the GPU
    work is negligible: the floor under every eager kernel, which the HF profiles' short kernels hit (batch
    1, 512-token prefill). Median over 5 batches of 2,000 ops after a warm-up; detail key eager_dispatch."""
    x = torch.zeros(16, device="cuda")
    w = torch.zeros(16, 16, device="cuda")
    out = {}
    for name, op in (("add_", lambda: x.add_(1.0)), ("linear", lambda: torch.nn.functional.linear(x, w)),
                     ("mul+add", lambda: x * 2.0 + 1.0)):
        for _ in range(200):
            op()
        torch.cuda.synchronize()
        per = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(2000):
                op()
            torch.cuda.synchronize()
            per.append((time.perf_counter() - t0) / 2000)
        out[name + "_us"] = statistics.median(per) * 1e6
    wr.save_detail("eager_dispatch", out)
    log(f"eager dispatch per op: { {k: round(v, 2) for k, v in out.items()} }")


def run_prefill(torch, wr, system, steps, only):
    todo = [c for c in prefill_configs() if not only or c[0] in only]
    if not todo:
        return
    try:
        reset(torch)
        log("llama2-7b prefill: building")
        model = build_model(torch, load_config("llama2-7b"), "sdpa", torch.bfloat16)
        model.eval()
    except Exception as e:  # noqa: BLE001
        log(f"prefill setup FAILED {type(e).__name__}: {e}")
        return
    for name, b, s in todo:
        try:
            ids = torch.randint(0, 32000, (b, s), device="cuda")

            def step():
                with torch.inference_mode():
                    out = model(input_ids=ids, use_cache=True)
                    out.logits[:, -1].argmax(-1)
                return {}
            med, spread, _, walls = time_steps(torch, step, steps, 3)
            base = dict(run_id=f"h200-{name}", workload="inference", model="llama2-7b", system=system, num_gpus=1,
                        global_batch=b, input_len=s, output_len=1, precision="bf16", weight_quant="none",
                        flash_attn="yes", framework="hf")
            notes = (f"HF LlamaForCausalLM forward over the prompt (SDPA, KV cache built, logits of every "
                     f"position as HF computes them) + argmax of the last; bf16 random weights; median of {steps} "
                     f"after 3 warm-up (spread {spread:.1%}); = time to first token without tokenizer or queueing")
            wr.rows(base, {"ttft_ms": med * 1e3}, notes)
            wr.detail["runs"][name] = dict(step_s=walls)
            wr.save_detail("runs", wr.detail["runs"])
            log(f"{name}: {med*1e3:.2f} ms (spread {spread:.1%})")
        except Exception as e:  # noqa: BLE001
            log(f"{name}: FAILED {type(e).__name__}: {e}")
            traceback.print_exc()
    del model
    reset(torch)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--system", default="hgx-h200")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--only", default="", help="comma-separated configuration names")
    ap.add_argument("--profile", action="store_true", help="only the kernel-level profiles (torch.profiler)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch
    import transformers
    if not torch.cuda.is_available():
        log("no CUDA device visible to PyTorch")
        return 5
    gpu = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    source = (f"measured {date} by llmsim tools/device-groundtruth.py on one {gpu} "
              f"(torch {torch.__version__}, transformers {transformers.__version__}, CUDA {torch.version.cuda})")
    wr = Writer(a.out, source)
    props = torch.cuda.get_device_properties(0)
    wr.save_detail("env", dict(gpu=gpu, sm_count=props.multi_processor_count, memory_bytes=props.total_memory,
                               torch=torch.__version__, transformers=transformers.__version__,
                               cuda=torch.version.cuda, date_utc=date,
                               argv=sys.argv))
    only = set(x for x in a.only.split(",") if x)
    global CONTEXT_BYTES
    torch.zeros(1, device="cuda")  # creates the context and the allocator's first block
    free, total = torch.cuda.mem_get_info()
    CONTEXT_BYTES = total - free - torch.cuda.memory_reserved()
    wr.save_detail("context_bytes", CONTEXT_BYTES)
    torch.backends.cuda.matmul.allow_tf32 = True
    if a.profile:
        run_profiles(torch, wr)
        log(f"done: {wr.detail_path}")
        return 0
    measure_dispatch(torch, wr)
    run_pretrain(torch, wr, a.system, a.steps, only)
    run_lora(torch, wr, a.system, a.steps, only)
    run_qlora(torch, wr, a.system, a.steps, only)
    run_prefill(torch, wr, a.system, a.steps, only)
    # Last, so that a time limit cuts the profiles rather than the measured rows; each profile is saved
    # as it completes.
    run_profiles(torch, wr)
    log(f"done: {wr.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

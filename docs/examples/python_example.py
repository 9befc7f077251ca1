"""llmsim from Python, notebook style (docs/python.md): each block is a cell; run it whole with
PYTHONPATH=<build>/python python3 docs/examples/python_example.py (tests/CMakeLists.txt runs it so)."""
import llmsim

# --- 1. The README's first command: Llama-2-7B on the study's 8 x A800 with ZeRO-3 ---------------------
step = llmsim.train(model="llama2-7b", system="a800-nvlink", gpus=8, zero_stage=3, seq_len=512, micro_batch=4)
print(step["verdict"]["text"])
t = step["step_time_s"]
print("step time %.1f ms [%.1f .. %.1f], MFU %.1f %%" % (1e3 * t["value"], 1e3 * t["low"], 1e3 * t["high"],
                                                         100 * llmsim.value(step["mfu"])))
print("the step goes to:", ", ".join("%s %.0f %%" % (p["name"], 100 * p["fraction"]) for p in step["by_phase"]))

# --- 2. A sweep the CLI would need a shell loop for: ZeRO stage x micro-batch -------------------------
print("\nzero  mb  tokens/s/GPU  GiB/GPU  fits")
for zero in (1, 2, 3):
    for mb in (1, 4, 16):
        r = llmsim.train(model="llama2-7b", system="a800-nvlink", gpus=8, zero_stage=zero, seq_len=512,
                         micro_batch=mb)
        gib = llmsim.value(r["memory"]["gpu_bytes"]) / 2**30
        print("%4d %3d  %12.0f  %7.1f  %s" % (zero, mb, llmsim.value(r["tokens_per_s_per_gpu"]), gib,
                                              "yes" if r["fits"] else "NO"))

# --- 3. A model card, resolved ------------------------------------------------------------------------
card = llmsim.show_model("llama2-70b")
print("\n%s: %d parameters, %d layers, KV %.0f KiB per token at 16 bit" % (
    card["name"], card["params_total"], card["layers"], card["kv_bytes_per_token_16bit"] / 1024))

# --- 4. Serving: p99 latencies of vLLM on one A800 as the request rate grows ---------------------------
print("\nrate/s  p99 TTFT ms  p99 TPOT ms  verdict")
for rate in (2, 8, 16):
    s = llmsim.serve(model="llama2-7b", system="a800-nvlink", engine="vllm", rate=rate, requests=300,
                     slo_ttft=500, slo_tpot=50)
    lat = s["latency_s"]
    print("%6d  %11.1f  %11.1f  %s" % (rate, 1e3 * lat["ttft"]["p99"]["value"], 1e3 * lat["tpot"]["p99"]["value"],
                                       "ok" if s["verdict"]["ok"] else "misses the SLOs"))

# --- 5. What the CLI refuses raises llmsim.Error with its exit code and message -------------------------
try:
    llmsim.train(model="llama2-7b", system="a800-nvlink", gpus=8, zero_stage=4)
except llmsim.Error as e:
    print("\nrefused (exit code %d): %s" % (e.code, e))

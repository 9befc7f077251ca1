#include "llmsim/run/local_engine_profiles.h"

namespace llmsim::sim {

// llama.cpp (ggml-org/llama.cpp; llama-cli, llama-bench, llama-server). A C++ program builds the model's ggml
// graph for every batch and runs it node by node on the CUDA backend: each node is a kernel of its own (ggml
// fuses few of them): RMSNorm and the multiply by its weight, RoPE on q and k, the copies of k and v into the
// cache, the attention output's cont(permute), SiLU and the gate product, the residual adds
// (src/llama-model.cpp llm_build_llama). Quantized weights are read by mul_mat_vec_q at batch 1 (the block
// types of model/block_format.h) and dequantized into cuBLAS GEMMs or integer MMQ kernels for prompts. Token
// generation at batch 1 replays the step as a CUDA graph since PR #6766 (2024-05; "Introduction of CUDA Graphs
// to LLama.cpp": LLaMA-2-7B Q4_0 tg on an RTX 4090 138.3 -> 146.8 t/s, on an RTX 3090 116.3 -> 128.3). The KV
// cache is one buffer of n_ctx f16 cells, allocated up front; prompts run in physical batches of n_ubatch 512
// tokens (common/common.h); one sequence unless --parallel says more (n_parallel = 1).
EngineProfile llamacpp_profile() {
  EngineProfile p;
  p.name = "llama.cpp";
  p.compute_precision = DType::FP16;  // f16 cuBLAS / MMQ paths; norms and softmax in f32
  p.batching = Batching::Continuous;
  p.max_num_seqs = 1;          // common.h n_parallel = 1 (llama-server --parallel)
  p.max_batched_tokens = 512;  // n_ubatch: the physical batch a prompt is split into
  p.chunked_prefill = true;
  p.kv_block_tokens = 1;  // one cell per token in a contiguous buffer
  p.gpu_memory_utilization = 1.0;
  // assumption: per token the host builds and allocates the ggml graph and samples on the CPU; caching the graph
  // saved 3-7 % of a 7B-13B Q4 token on RTX 4090 / A100 / H100 hosts (PR #8366, 2024-07), i.e. ~0.3 ms of ~7 ms.
  p.iteration_overhead_s = 0.3e-3;
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 1;  // graphs for single-token steps (ggml-cuda.cu: batch size 1 only until 2026)
  p.python_dispatch = false;   // C++: ggml_backend_cuda_graph_compute launches each node
  p.decode_split_kv = true;    // the KQ mul_mat spreads the cached keys over the GPU (and FA's vector kernel splits)
  p.glue.rmsnorm_kernels = 2;  // ggml_rms_norm, then ggml_mul by the norm weight
  p.glue.rope_kernels = 1;
  p.glue.attn_output_copy = true;        // ggml_cont(ggml_permute(kqv))
  p.glue.split_gated_activation = true;  // ggml_silu(gate), then ggml_mul(·, up)
  // ggml_cuda_mul_mat_cublas: FP16 weights (and quantized ones dequantized to FP16) multiply with cublasGemmEx in
  // CUBLAS_COMPUTE_16F where the GPU has fast FP16, accumulating in FP16. Since mid-2024 quantized prompts run MMQ's
  // int8 tensor-core kernels instead (PR #7676); the FP16-accumulate peak stands in for them (docs/serving.md).
  p.fp16_accumulate = true;
  // --n-gpu-layers keeps the first layers in host memory, where the CPU computes them; an iteration of 32
  // tokens or more copies their weights to the GPU and computes there (ggml-cuda.cu
  // ggml_backend_cuda_device_offload_op: min_batch_size 32; the scheduler's op offload, on unless
  // --no-op-offload).
  p.host_layers = true;
  p.host_layer_upload_min_tokens = 32;
  p.source =
      "ggml-org/llama.cpp: llm_build_llama (one kernel per ggml node: rms_norm + mul, rope, cpy to the KV cache, "
      "cont(permute), silu + mul), common.h (n_ubatch 512, n_parallel 1), CUDA graphs at batch 1 (PR #6766); "
      "per-token host work is an assumption from PR #8366";
  return p;
}

// ExLlamaV2 (turboderp/exllamav2 v0.2.7): a Python generator loop over the model's modules, each of which calls
// one C++ extension function that issues the module's kernels (ext_c.q_attn_forward_1 for norm, QKV and RoPE;
// q_mlp_forward_ for norm, gate/up, activation and down; attn.py, mlp.py), so the host does not issue the kernels
// one by one from Python. Its q_gemm kernels read EXL2 or GPTQ weights in place. The cache is a static buffer of
// max_seq_len tokens (ExLlamaV2Cache). From v0.1.9 each attention and MLP module replays a CUDA graph of its
// kernels (exllamav2_ext/cuda/q_attn.cu, "Initial graph impl for QAttn and QMLP", 28ff618, 2024-07-28).
EngineProfile exllamav2_profile() {
  EngineProfile p;
  p.name = "exllamav2";
  p.compute_precision = DType::FP16;  // half kernels throughout (q_gemm, cublasHgemm)
  p.batching = Batching::Continuous;  // the dynamic generator batches jobs; one job at batch 1
  p.max_num_seqs = 1;
  p.max_batched_tokens = 2048;  // assumption: a prompt is forwarded in one pass at these lengths
  p.chunked_prefill = true;
  p.kv_block_tokens = 1;  // static cache, token granular
  p.gpu_memory_utilization = 1.0;
  // assumption: logits copied to the host and sampled there each token (ExLlamaV2Sampler), ~0.2 ms.
  p.iteration_overhead_s = 0.2e-3;
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 1;
  p.python_dispatch = false;  // the extension issues each module's kernels from C++
  p.decode_split_kv = true;   // flash_attn_with_kvcache splits the keys
  // Prompts (more rows than q_gemm takes) reconstruct the weights to FP16 and multiply with cublasHgemm
  // (exllamav2_ext/cuda/q_gemm.cu gemm_half_q_half_cuda), accumulating in FP16; ExLlama v1 did the same.
  p.fp16_accumulate = true;
  p.source =
      "turboderp/exllamav2 v0.2.7: attn.py / mlp.py (one extension call per module: q_attn_forward_1, q_mlp_forward_), "
      "exllamav2_ext/cuda/q_attn.cu (CUDA graphs per module from v0.1.9), ExLlamaV2Cache (static); per-token host "
      "work is an assumption";
  return p;
}

// MLC LLM (mlc-ai/mlc-llm): every model is compiled by Apache TVM into fused kernels (q4f16_1 group-quantized
// GEMV, fused norm, RoPE and attention) run by the TVM runtime from C++. `mlc_llm compile` defaults to --opt O2,
// whose flags turn on FlashInfer attention and CUDA graphs (python/mlc_llm/interface/compiler_flags.py
// OPT_FLAG_PRESET["O2"]: flashinfer, cublas_gemm, cudagraph, cutlass). Tensor parallelism shards the model
// across GPUs with an NCCL all-reduce after the attention and the MLP (tensor_parallel_shards).
EngineProfile mlc_llm_profile() {
  EngineProfile p;
  p.name = "mlc-llm";
  p.compute_precision = DType::FP16;  // q4f16_1: 4-bit weights, FP16 activations
  p.batching = Batching::Continuous;
  p.max_num_seqs = 1;           // assumption: the chat / benchmark runs of the rows are one conversation
  p.max_batched_tokens = 2048;  // prefill_chunk_size default (mlc-chat-config: 2048 for most models; assumption)
  p.chunked_prefill = true;
  p.kv_block_tokens = 16;           // paged KV cache (PagedKVCache page_size 16)
  p.gpu_memory_utilization = 0.85;  // gpu_memory_utilization default of the engine config (assumption)
  p.iteration_overhead_s = 0.1e-3;  // assumption: the C++ engine's step bookkeeping and sampling on the GPU
  p.cuda_graphs = true;
  p.cuda_graph_max_batch = 1;
  p.python_dispatch = false;  // TVM's runtime launches the compiled kernels
  p.decode_split_kv = true;   // FlashInfer decode
  p.source =
      "mlc-ai/mlc-llm: compiler_flags.py (O2 default: flashinfer, cudagraph), TVM-compiled fused kernels, "
      "tensor_parallel_shards; batch limit, chunk, utilization and per-step overhead are assumptions";
  return p;
}

// TinyChat (mit-han-lab/llm-awq tinychat/): a PyTorch model with its own fused modules swapped in
// (make_quant_attn: one QKV W4A16 GEMV, RoPE and single-query attention over a preallocated KV cache in one
// kernel; make_quant_norm: fused RMSNorm; make_fused_mlp: gate/up GEMV with the activation fused), run eagerly
// from Python one token at a time (tinychat/benchmark.py: model(inputs, start_pos), torch.cuda.synchronize()
// around each step, greedy argmax), without CUDA graphs.
EngineProfile tinychat_profile() {
  EngineProfile p;
  p.name = "tinychat";
  p.compute_precision = DType::FP16;  // benchmark.py: model.half(); the W4A16 kernels take half inputs
  p.batching = Batching::Static;
  p.max_num_seqs = 1;  // tinychat.utils.constants.max_batch_size = 1 by default (benchmark.py --max_batch_size)
  p.max_batched_tokens = 0;
  p.chunked_prefill = false;
  p.kv_block_tokens = 1;  // preallocated max_seq_len cache
  p.gpu_memory_utilization = 1.0;
  p.iteration_overhead_s = 0.1e-3;  // assumption: argmax, the next token's host tensor and the per-step sync
  p.cuda_graphs = false;
  p.python_dispatch = true;   // eager PyTorch modules
  p.decode_split_kv = false;  // one block per head and sequence in the fused single-query attention
  p.source =
      "mit-han-lab/llm-awq tinychat/: benchmark.py (eager steps, synchronize per token), modules/fused_attn.py, "
      "fused_norm.py, fused_mlp.py; per-step overhead is an assumption";
  return p;
}

// AutoAWQ (casper-hansen/AutoAWQ 0.1.x; examples/benchmark.py): from_quantized(fuse_layers=True) swaps in fused
// modules (QuantAttentionFused with a preallocated cache, fused RMSNorm, the MLP's AWQ kernels) and generates with
// Hugging Face generate(), eagerly from Python: the static (generate) profile without DynamicCache's copies.
EngineProfile autoawq_profile() {
  EngineProfile p;
  p.name = "autoawq";
  p.compute_precision = DType::FP16;  // the AWQ kernels are W4A16 with FP16 activations
  p.batching = Batching::Static;
  p.max_num_seqs = 32;  // assumption, as the static profile
  p.max_batched_tokens = 0;
  p.chunked_prefill = false;
  p.kv_block_tokens = 1;
  p.gpu_memory_utilization = 1.0;
  p.iteration_overhead_s = 1e-3;  // assumption, as the static profile: generate()'s Python loop per step
  p.cuda_graphs = false;
  p.python_dispatch = true;
  p.decode_split_kv = false;
  p.kv_copy_passes = 0;  // the fused attention writes into its preallocated cache
  p.source =
      "casper-hansen/AutoAWQ awq/models/base.py from_quantized (fuse_layers=True), awq/modules/fused (attention with "
      "a preallocated cache, fused norm and MLP), HF generate(); batch limit and per-step overhead are assumptions";
  return p;
}

EngineProfile released_local_profile(Framework f, EngineProfile p, const std::optional<Version>& release) {
  if (f == Framework::ExLlamaV2 && release && *release < Version{0, 1, 9}) {
    p.cuda_graphs = false;
    p.cuda_graph_max_batch = 0;
    p.source += "; before 0.1.9 without CUDA graphs (28ff618)";
  }
  return p;
}

}  // namespace llmsim::sim

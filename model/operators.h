#pragma once
// Operator inventory: for one transformer layer (or the embedding / LM head) of a ModelSpec at a
// given micro-batch, sequence length and tensor-parallel degree, the operators one GPU executes, with
// their GEMM shapes, FLOPs and bytes moved for forward and backward. Knows nothing about hardware; the
// simulator schedules and costs these.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/core/dtype.h"
#include "llmsim/model/model_spec.h"

namespace llmsim::model {

enum class OpKind {
  Gemm,         // dense matmul C[m,n] = A[m,k] * B[k,n], `batch` independent copies
  FlashAttn,    // fused attention kernel (scores, softmax, context in one pass; no s^2 tensor in memory)
  LinearAttn,   // a linear-attention mixer's recurrence (the gated delta rule's chunked kernels)
  Elementwise,  // memory-bound pointwise kernel (RoPE, activation, softmax, dropout, residual add, dequant)
  Norm,         // LayerNorm / RMSNorm (memory bound)
  Embedding,    // table gather
  Loss,         // softmax cross-entropy over the vocabulary
  TpComm,       // tensor-parallel collective point (all-reduce, or reduce-scatter/all-gather with SP)
  MoeComm,      // expert-parallel all-to-all point (dispatch / combine)
};
enum class Module { Embedding, Attention, Mlp, Moe, Norm, Residual, Head, Loss };
// The collective a TpComm / MoeComm op stands for, in forward and (separately) in backward. Megatron
// pairs them: an all-reduce after a row-parallel GEMM has an all-reduce in backward (its conjugate
// before the column-parallel GEMM), an SP all-gather has a reduce-scatter in backward and vice versa.
enum class Collective { None, AllReduce, ReduceScatter, AllGather, AllToAll };

// What an operator is, for the decisions the simulators make about it: which ones selective
// recomputation repeats and the attention kernel prices, what a weight format quantizes, how the time
// breakdown groups them. Set where the operator is made; nothing decides by an operator's name, so
// renaming one changes no prediction.
enum class OpRole {
  Other,
  QkvProj,        // the fused QKV projection
  OutProj,        // the attention output projection
  GateUpProj,     // the fused gate+up GEMM of a gated MLP (or an expert's / the shared expert's)
  Rope,           // rotary position embedding
  AttentionCore,  // the fused FlashAttention kernel, or the unfused chain: scores, softmax, dropout, context
  Dequant,        // the dequantize kernel ahead of a packed-weight GEMM
  Cast,           // an autocast copy of weights or of a projection's input
  Router,         // the MoE router GEMM (high precision)
  SharedGate,     // the shared expert's gate GEMM (high precision)
  LmHead,         // the LM head GEMM (high precision)
};

std::string_view op_kind_name(OpKind k);
std::string_view module_name(Module m);
std::string_view collective_name(Collective c);  // "none", "all_reduce", "reduce_scatter", "all_gather", "all_to_all"

struct Operator {
  std::string name;  // stable id, e.g. "attn.qkv_proj", "mlp.down_proj", "attn.tp_allreduce"
  OpKind kind = OpKind::Gemm;
  Module module = Module::Attention;

  // GEMM shape per GPU (kind == Gemm): C[m,n] = A[m,k] * B[k,n], repeated `batch` times.
  std::int64_t m = 0, n = 0, k = 0, batch = 1;

  double fwd_flops = 0;            // forward FLOPs on one GPU (2 per multiply-add)
  double fwd_bytes = 0;            // forward bytes read + written from GPU memory
  double bwd_flops = 0;            // backward FLOPs: activation gradients + weight gradients
  double bwd_bytes = 0;            // backward bytes read + written
  double bwd_weight_flops = 0;     // the part of bwd_flops that computes weight gradients (0 for frozen / weightless)
  double bwd_weight_bytes = 0;     // the part of bwd_bytes moved by the weight-gradient computation (drop it with
                                   // bwd_weight_flops when the weights are frozen, e.g. LoRA / QLoRA base weights)
  std::int64_t weight_params = 0;  // parameters of this operator held on one GPU (after TP sharding)

  // For TpComm / MoeComm: bytes of the tensor exchanged by the collective, per GPU, each direction.
  // It is the full (unsharded) tensor: the all-reduced tensor, the all-gather's output, the
  // reduce-scatter's input, the tokens x hidden an all-to-all sends. The simulator applies the
  // algorithm factor (ring all-reduce 2(n-1)/n, all-gather / reduce-scatter (n-1)/n).
  double comm_bytes = 0;
  Collective collective = Collective::None;      // forward collective (None: nothing in forward)
  Collective bwd_collective = Collective::None;  // backward collective of the same comm_bytes (None: none)

  OpRole role = OpRole::Other;
  bool routed_expert = false;  // part of the routed experts (weights sharded by expert parallelism)
  bool quantizable = true;     // a GEMM whose weights a weight-only format quantizes (false: router, gates, LM head)
  // Kernels eager code launches for this operator's forward pass (HF's apply_rotary_pos_emb runs RoPE as
  // EagerGlue::rope_kernels kernels on q and on k); a norm's split comes from EagerGlue::norm_kernels at
  // cost time instead. Counted by the host critical path (sim/cost/host_dispatch.h).
  double launches = 1;
  // A GEMM whose projections add a bias (its gradient is a separate reduction over the rows in backward).
  bool bias = false;
};

// Whether the operator is part of the core attention computation (the fused FlashAttention kernel, or
// the unfused chain of scores GEMM, softmax, dropout and context GEMM): what selective recomputation
// repeats and what the simulators cost from sequence lengths instead of the inventory's shapes.
bool is_attention_core(const Operator& op);

// Expert parallelism with uneven routing: the busiest expert-parallel rank computes `imbalance` (max / mean,
// >= 1) times the mean rank's routed rows, and the step or iteration waits for it; it sends and receives that
// much more in dispatch and combine. A routed-expert GEMM keeps its weights (`weight_bytes` of its forward
// bytes, as the caller reads them) and scales its rows, FLOPs and activation bytes; an expert-parallel
// all-to-all scales its bytes; every other operator comes back unchanged.
Operator on_busiest_expert_rank(Operator op, double imbalance, double weight_bytes);

// Expert parallelism, balanced: a rank holds num_experts / ep of the experts and computes as many routed rows
// as it would hold them all (its tokens' assignments go to every rank's experts, and as many come back), so a
// routed-expert GEMM keeps its rows, FLOPs and activation bytes and reads an ep-th of the weights
// (`weight_bytes`: every expert's weights as its forward reads them; backward reads them again for the
// activation gradient and writes a weight gradient of that size). A routed-expert kernel over the weights
// themselves (OpRole::Dequant: unpacking or casting them) touches an ep-th of them. Every other operator comes
// back unchanged. Training and the inference iteration both apply it.
Operator on_own_experts(Operator op, std::int64_t ep, double weight_bytes);

// What the inventory is computed for.
// Memory-bound glue that unfused eager code runs around the kernels this inventory assumes by default
// (one fused kernel per norm, RoPE and gated activation, residual stream in the activation dtype: the
// Megatron-LM / Transformer Engine style). Each field adds the read and write passes the eager code
// makes; everything off (the default) = fused. sim/run/framework_profile.cpp sets them per framework.
struct EagerGlue {
  // Hugging Face transformers modelling code run in eager PyTorch:
  double rmsnorm_kernels = 1;           // kernels an RMSNorm runs as (HF LlamaRMSNorm: to fp32, pow, mean,
                                        // add + rsqrt, mul, to bf16 + mul by weight = 6), each re-reading and
                                        // writing the tensor; applied by the simulator's cost model
  int rope_kernels = 1;                 // kernels apply_rotary_pos_emb runs per rotated tensor (HF: x*cos,
                                        // rotate_half = neg + cat, *sin, add = 5), each reading and writing it
  bool attn_output_copy = false;        // attn_output.transpose(1, 2).contiguous(): one copy of the output
  bool split_gated_activation = false;  // act_fn(gate) * up as two kernels (the product re-reads act(gate))
  bool reference_projections = false;   // the projections run as the reference code writes them: q, k, v and
                                        // gate, up as separate nn.Linear GEMMs where the model does not fuse
                                        // them (attention_input_projections, mlp_input_projections); counted
                                        // as launches only (same FLOPs and bytes as the fused GEMM)
  bool eager_softmax_chain = false;     // unfused attention as HF eager_attention_forward runs it: scores
                                        // scaled, causal mask added, softmax in fp32, cast back (4 kernels)
  // Automatic mixed precision over fp32 weights (torch.autocast):
  double residual_bytes = 0;            // bytes/element of the residual stream, norms and their outputs when
                                        // wider than the activations (AMP: 4, fp32); 0 = activation dtype
  bool cast_projection_inputs = false;  // autocast casts the (fp32) normed input once per projection reading
                                        // it (HF: q, k, v and gate, up separately; fused QKV once), and the
                                        // gradients back, summing them in fp32
  double weight_cast_bytes = 0;         // bytes/param of the stored weights autocast casts to the compute dtype
                                        // each forward (fp32: 4), their bf16 gradients cast back in backward;
                                        // 0 = weights already in the compute dtype
  bool fp32_loss_upcast = false;        // logits.float() before the cross-entropy (HF ForCausalLMLoss)

  // The rules derived from the fields, for activations of `act` bytes per element (one place for the
  // time inventory and the activation memory):
  // kernels a norm of this kind runs as (only RMSNorm is split; LayerNorm is one kernel everywhere);
  double norm_kernels(NormKind norm) const { return norm == NormKind::RmsNorm ? rmsnorm_kernels : 1.0; }
  // bytes per element of the residual stream and the norms;
  double stream_bytes(double act) const { return residual_bytes > 0 ? residual_bytes : act; }
  // whether autocast casts each projection's input (only when the stream is wider than the activations);
  bool casts_inputs(double act) const { return cast_projection_inputs && stream_bytes(act) > act; }
  // whether autocast casts the stored weights (only when they are wider than the activations).
  bool casts_weights(double act) const { return weight_cast_bytes > act; }
};

// How packed weights are expanded before a GEMM.
//  Fused: one kernel reads the packed weights and writes them in the activation dtype, in the forward and
//    again for the backward's activation-gradient GEMM (bitsandbytes dequantize_4bit in MatMul4Bit; exllama's
//    and Marlin's fused paths).
//  TorchUnpack: AutoGPTQ's QuantLinear as PEFT trains on a GPTQ checkpoint (exllama off: it has no backward;
//    at >= kernel_switch_threshold = 128 rows the CUDA matvec kernel is bypassed, qlinear_cuda_old.py
//    forward): five eager kernels over the whole weight: bitwise_right_shift of the broadcast int32 qweight
//    (an int32 per element), .to(int8), bitwise_and in place, subtract the zeros (int8), multiply by the
//    scales (activation dtype), then torch.matmul. Autograd keeps that fp16 weight for the backward's
//    activation-gradient GEMM, so the backward dequantizes nothing (with recomputation the recomputed
//    forward does it again).
enum class DequantKernel { Fused, TorchUnpack };

struct InventoryParams {
  std::int64_t micro_batch = 1;  // sequences
  std::int64_t q_len = 0;        // query tokens per sequence (training / prefill: the sequence length; decode: 1)
  std::int64_t kv_len = 0;       // tokens attended to per sequence (0 = q_len; decode: the context length)
  bool causal = true;            // causal mask (halves attention FLOPs when q_len == kv_len and fused)
  std::int64_t tp = 1;           // tensor-parallel degree (must divide heads and kv heads)
  // Tensor-parallel degree of each routed expert (0 = tp): tp / ep where inference runs expert parallelism
  // inside the tensor-parallel group (sim/run/expert_layout.h), whose ranks then skip the all-to-alls.
  std::int64_t expert_tp = 0;
  bool sequence_parallel = false;    // Megatron SP: norms/dropout on s/tp tokens, RS+AG instead of all-reduce
  bool flash_attn = true;            // fused attention vs the unfused chain
  DType act_dtype = DType::BF16;     // activation dtype
  DType weight_dtype = DType::BF16;  // weight storage dtype (int8/int4/nf4 adds dequantization ops)
  bool training = true;              // include dropout (when the model has dropout) and backward figures
  EagerGlue glue;                    // unfused eager-code traffic (default: fused kernels)
  DequantKernel dequant = DequantKernel::Fused;  // how packed weights are expanded (with a packed weight_dtype)
  // A block format's stored bytes per weight (block_format.h, inference): the packed projections' mean,
  // scales included, in place of weight_dtype's own; and the LM head's (GGUF keeps it in Q6_K, EXL2 at its
  // head bits). 0: the weight_dtype's (and the LM head in the activation dtype).
  double packed_weight_bytes = 0;
  double head_weight_bytes = 0;
};

struct LayerInventory {
  std::vector<Operator> ops;
  double fwd_flops() const;
  double bwd_flops() const;
  double fwd_bytes() const;
  double bwd_bytes() const;
};

// Projections that read the attention block's normed input in the model's reference (Hugging Face)
// code: q_proj, k_proj and v_proj separately (Llama, Mistral, Qwen2, Mixtral), or one fused QKV
// (GPT-2 c_attn, GPT-NeoX query_key_value, Megatron-style custom GPT). Matters only for eager glue.
int attention_input_projections(const ModelSpec& m);
// Projections that read the MLP's normed input: gate and up for a gated MLP, up for a plain one.
int mlp_input_projections(const ModelSpec& m);

// The recurrence of a linear-attention layer on one GPU of a `tp`-way group, per token over the rank's heads
// (model/operators/recurrence.cpp derives each mixer's): in the chunked form of training and prefill (chunks of
// `chunk` tokens) and the recurrent form of a decode step (each state read and written once); what the chunked
// kernels read and write per token besides the chunks' states.
struct RecurrenceWork {
  std::int64_t chunk = 0;
  double chunk_flops_per_token = 0;
  double recurrent_flops_per_token = 0;
  double state_elems = 0;         // the rank's states, all heads
  double io_elems_per_token = 0;  // activations (activation dtype) read or written per token
  double fp32_per_token = 0;      // fp32 values read or written per token (gates, decays, Gated DeltaNet's WY matrix)
};
RecurrenceWork recurrence_work(const ModelSpec& m, std::int64_t tp);

// One decoder layer (layer_index selects dense or MoE for interleaved MoE models, and the token mixer:
// attention or a Gated DeltaNet).
LayerInventory layer_ops(const ModelSpec& m, const InventoryParams& p, std::int64_t layer_index);
// Token (and position) embedding lookup.
LayerInventory embedding_ops(const ModelSpec& m, const InventoryParams& p);
// Final norm, LM head GEMM (vocab-parallel over TP) and the loss (training) or sampling (inference).
LayerInventory head_ops(const ModelSpec& m, const InventoryParams& p);

}  // namespace llmsim::model

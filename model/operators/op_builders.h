#pragma once
// Internal to model/: what the operator builders of each block share. The per-call context
// (Ctx), the linear-projection description (Linear), the per-element FLOP counts, and the builders of
// single operators (GEMMs, norms, dropout, collectives, casts); the blocks themselves are built in
// attention.cpp, mlp_moe.cpp and embedding_head.cpp, and assembled into layers by ../operators.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/model/operators.h"

namespace llmsim::model::inventory {

using i64 = std::int64_t;

// Per-element FLOP counts of the memory-bound kernels. They hardly matter for time (bandwidth
// decides) but make FLOP totals honest.
inline constexpr double kRmsNormFlops = 4;    // square, accumulate, scale by 1/rms, scale by gamma
inline constexpr double kLayerNormFlops = 7;  // mean, subtract, square, accumulate, scale, gamma, beta
inline constexpr double kRopeFlops = 3;       // x*cos + rotate(x)*sin
inline constexpr double kSoftmaxFlops = 6;    // scale, mask, max, subtract+exp, sum, normalize
inline constexpr double kDropoutFlops = 2;    // compare a random number, scale the kept value
inline constexpr double kAddFlops = 1;        // residual add
inline constexpr double kDequantFlops = 2;    // unpack / table lookup, multiply by the scale
// AutoGPTQ's eager unpacking (DequantKernel::TorchUnpack): bytes moved per weight element besides the packed
// read and the final write (int32 write + read, int8 write, and-in-place read + write, zero subtraction
// read + write, scale multiply read), in this many kernels (shift, cast, and, subtract, multiply).
inline constexpr double kTorchUnpackBytes = 4 + 4 + 1 + 2 + 2 + 1;
inline constexpr double kTorchUnpackKernels = 5;
inline constexpr double kLossFlops = 5;    // max, subtract+exp, sum, log, pick the target
inline constexpr double kSampleFlops = 5;  // temperature, max, exp, sum, normalize
inline constexpr double kFp32 = 4;         // softmax statistics, router probabilities, loss buffers
inline constexpr double kIndexBytes = 8;   // int64 token / expert index

inline double dbl(i64 v) { return static_cast<double>(v); }

inline i64 ceil_div(i64 a, i64 b) { return (a + b - 1) / b; }

// Storage formats that a GEMM cannot consume directly in this model: a dequantize kernel expands them
// to the activation dtype first (bitsandbytes / GPTQ-style; fused int4 kernels are faster than this).
inline bool is_packed(DType t) {
  return t == DType::INT8 || t == DType::INT4 || t == DType::NF4 || t == DType::FP8 || t == DType::FP4;
}

// Shared per-call quantities.
struct Ctx {
  const ModelSpec& m;
  const InventoryParams& p;
  i64 b = 0, q = 0, kv = 0, tp = 1;
  i64 etp = 1;         // tensor-parallel degree of a routed expert (InventoryParams::expert_tp, else tp)
  i64 T = 0;           // tokens in the micro-batch
  i64 window = 0;      // the layer's attention window (ModelSpec::window_of; 0 = full attention)
  i64 Tn = 0;          // tokens the norms / dropout / residual see: T, or ceil(T/tp) with sequence parallelism
  bool sp = false;     // sequence parallelism in effect (needs tp > 1)
  double a = 2;        // activation bytes per element
  double r = 2;        // residual-stream (and norm) bytes per element: a, or wider under AMP (EagerGlue)
  bool quant = false;  // layer linear weights are stored packed and dequantized before each GEMM
  double wr = 2;       // bytes per weight element as a layer GEMM reads it
  double wpacked = 0;  // bytes per packed weight element, scales included
  double wdense = 2;   // bytes per element of weights that are never quantized (norms, embeddings, router, LM head)
};

// A linear projection: C[rows, n] = X[rows, k] * W[k, n], possibly `batch` experts each with its own W.
struct Linear {
  std::string name;
  Module module = Module::Attention;
  i64 n = 0, k = 0;
  double rows = 0;          // activation rows over the whole batch (routed tokens for experts)
  i64 batch = 1;            // weight matrices read (experts that receive tokens)
  i64 held = 1;             // weight matrices held on this GPU (all experts)
  bool bias = false;        // column-parallel biases are sharded like n, row-parallel ones are replicated: n either way
  bool quantizable = true;  // the router and gates stay in high precision (as bitsandbytes / GPTQ leave them)
  OpRole role = OpRole::Other;
};

Ctx make_ctx(const ModelSpec& m, const InventoryParams& p);

void require_divides(i64 tp, i64 value, const char* what, const char* why);

void validate(const ModelSpec& m, const InventoryParams& p);

Operator make_op(std::string name, OpKind kind, Module module);

// `op` with its role set (where the operator is made, so that no decision reads its name).
Operator with_role(Operator op, OpRole role);

// A memory-bound kernel with its forward and backward figures.
Operator pointwise(std::string name, OpKind kind, Module module, double flops, double bytes, double bwd_flops,
                   double bwd_bytes);

Operator comm(std::string name, OpKind kind, Module module, double bytes, Collective fwd, Collective bwd);

// Dequantize kernel ahead of a packed-weight GEMM: read the packed weights (+ scales), write them in
// the activation dtype. Backward repeats it for the activation-gradient GEMM (QLoRA keeps no
// dequantized copy).
Operator dequant_op(const Ctx& c, const Linear& l);

Operator gemm_op(const Ctx& c, const Linear& l);

void add_linear(const Ctx& c, std::vector<Operator>& ops, const Linear& l);

// Weightless batched GEMM over activations (attention scores / context). Both gradients are
// activation gradients, each costing one forward in FLOPs and bytes.
Operator batched_gemm(const Ctx& c, std::string name, i64 batch, i64 m, i64 n, i64 k);

// LayerNorm / RMSNorm over `tokens` rows of hidden. Forward reads x, writes y and the per-row
// statistics (fp32); backward reads x, dy and the statistics, writes dx, and reduces dgamma (dbeta).
Operator norm_op(const Ctx& c, std::string name, i64 tokens);

// Dropout on `elems` elements; Megatron keeps a one-byte mask. Backward reads dy and the mask and
// writes dx: the same traffic as forward.
Operator dropout_op(const Ctx& c, std::string name, Module module, double elems);

bool has_dropout(const Ctx& c);

// The tail of an attention or MLP block: partial-sum reduction over TP, dropout, residual add.
// The residual add's backward is the gradient sum at the fork (read two, write one) = forward.
void add_block_tail(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module);

// With sequence parallelism the block input is sharded over tokens and gathered before the first GEMM.
void add_sp_gather(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module);

// Autocast casting the wide (fp32) normed input to the activation dtype once for each of `projections`
// projections reading it; backward casts their input gradients back and sums them in fp32.
void add_input_casts(const Ctx& c, std::vector<Operator>& ops, const std::string& prefix, Module module, double rows,
                     int projections);

// Autocast's copies of the inventory's stored (fp32) GEMM weights in the compute dtype (one op).
void add_weight_casts(const Ctx& c, LayerInventory& inv, const std::string& name, Module module);

// Drops the backward figures when the inventory is for inference.
void finish(const Ctx& c, LayerInventory& inv);

// The blocks of a decoder layer, appended to `ops`.
void add_attention(const Ctx& c, std::vector<Operator>& ops);
void add_gated_deltanet(const Ctx& c, std::vector<Operator>& ops);
void add_mamba2(const Ctx& c, std::vector<Operator>& ops);
// A linear-attention mixer's chunked recurrence as one operator (model/operators/recurrence.cpp).
Operator recurrence_op(const Ctx& c, std::string name);
// The depthwise causal convolution with its SiLU both linear mixers run before the recurrence
// (causal_conv1d_fn) over `channels` per rank with `kernel` taps and, with `bias`, a bias per channel
// (model/operators/recurrence.cpp).
Operator causal_conv_op(const Ctx& c, i64 channels, i64 kernel, bool bias);
void add_mlp(const Ctx& c, std::vector<Operator>& ops);
void add_moe(const Ctx& c, std::vector<Operator>& ops);

}  // namespace llmsim::model::inventory

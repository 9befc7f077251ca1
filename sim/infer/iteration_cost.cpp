#include "llmsim/infer/iteration_cost.h"

#include <algorithm>
#include <cmath>

#include "llmsim/cost/host_dispatch.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/expert_layout.h"

namespace llmsim::sim {

IterationCost& IterationCost::operator+=(const IterationCost& o) {
  time_s += o.time_s;
  linear_s += o.linear_s;
  attention_s += o.attention_s;
  comm_s += o.comm_s;
  other_s += o.other_s;
  host_wait_s += o.host_wait_s;
  cpu_s += o.cpu_s;
  launches += o.launches;
  collective_calls += o.collective_calls;
  return *this;
}

// Model of one engine iteration (docs/serving.md):
//  * Layer GEMMs, norms, RoPE, activations and residuals come from the operator inventory over all T
//    tokens of the iteration (prefill chunks and decode steps batched together), costed like training
//    forward kernels (sim/cost/compute_cost.h), with the engine's per-kernel floor.
//  * Weight-only quantized formats (int8, int4 AWQ/GPTQ, nf4) are read packed by fused dequantising
//    GEMM kernels (Marlin/AWQ/bitsandbytes-style): the inventory's separate dequantize kernel is folded
//    into its GEMM, which reads the packed bytes and computes at the activation precision. fp8 weights
//    (W8A8) compute at the fp8 peak. An engine that dequantizes int8 into a 16-bit copy first
//    (IterationOptions::int8_dequantize_to_16bit, DeepSpeed-Inference) runs the dequantize kernel as its own
//    and a 16-bit GEMM over the copy.
//  * Attention is costed per iteration from the sequences' lengths, not from the inventory: prefill
//    (causal FlashAttention over the chunk against its context) and decode (one query token reading the
//    whole KV cache: memory bound) as one kernel each per layer.
//  * TP all-reduces per block; PP adds one activation hand-off per stage boundary (the replica runs its
//    stages one after another for a batch; pipelining several batches is not modelled).
//  * The LM head and sampling run for one token per sequence; plus the engine's CPU overhead.
//  * Decode attention without split-KV (EngineProfile::decode_split_kv false: FlashAttention-2's
//    flash_attn_func / flash_attn_varlen_func, which HF transformers calls for every step) runs one thread
//    block per decode sequence and query head (grid = query blocks x batch x heads, one query block at
//    q_len 1); with fewer blocks than SMs the longest sequence's block, streaming its head's K and V at one
//    SM's share of the bandwidth, sets the kernel's time (Dao et al., "Flash-Decoding for long-context
//    inference", 2023: at batch 1 FlashAttention uses a small fraction of the GPU during decoding).
//  * Decode attention one block per query head (IterationOptions::decode_kv_per_query_head: vLLM's
//    paged_attention_v1/v2 kernels, grid (num_heads, num_seqs, partitions)): under grouped-query attention
//    each query head's blocks read its KV head's K and V, so the SMs read the cache `group` times; the HBM
//    read happens once and the other reads hit L2, so the kernel takes the longer of the HBM read and
//    group x the cache at the L2 read bandwidth (GpuSpec::l2_read_bandwidth_Bps; not priced where unstated).
//  * KV-cache copies (IterationOptions::kv_copy_passes): HF's DynamicCache.update concatenates each new
//    token's K and V onto the layer's cache with torch.cat, a new tensor every step, and the flash-attention
//    path gathers the whole K and V again (_upad_input's index_first_axis) before calling the kernel: each a
//    read and a write of the sequence's whole cache, per layer, per iteration (two kernels each: K and V).
//  * Host critical path (sim/cost/host_dispatch.h): an iteration whose kernels eager code issues
//    takes at least its launches times the host's seconds per launch; the engine overhead comes on top
//    (it runs between iterations, when the host waits for the forward pass's result).

namespace {

double dbl(std::int64_t v) { return static_cast<double>(v); }

// One LoRA adapter's matrices on one GPU under vLLM's default sharding: column-parallel projections keep A
// whole and shard B's output over TP, row-parallel ones (o, down) shard A's input and keep B whole; routed
// experts' adapters spread over the expert-parallel ranks like the experts.
struct LoraShard {
  double d_in = 0, d_out = 0;  // A is d_in x r, B is r x d_out
  double sets = 1;             // A/B pairs of the layer on this GPU
};
LoraShard lora_shard(const LoraAdapter& a, const ParallelSpec& par) {
  const double tp = dbl(std::max<std::int64_t>(1, par.tp));
  const bool row_parallel = a.slot == LoraSlot::Out || a.slot == LoraSlot::Down;
  LoraShard s;
  s.d_in = row_parallel ? a.d_in / tp : a.d_in;
  s.d_out = row_parallel ? a.d_out : a.d_out / tp;
  s.sets = a.routed ? a.pairs / dbl(std::max<std::int64_t>(1, par.ep)) : a.pairs;
  return s;
}

hardware::SystemSpec with_floor(hardware::SystemSpec s, double floor) {
  // A replayed graph has no host call per kernel: the GEMM call floor falls to the kernel floor too.
  if (floor >= 0) s.efficiency.kernel_launch_s = s.efficiency.gemm_call_s = floor;
  return s;
}

}  // namespace

IterationCostModel::IterationCostModel(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                       const ParallelSpec& par, const InferSpec& infer, const IterationOptions& opt)
    : m_(m),
      sys_(with_floor(sys, opt.kernel_floor_s)),
      par_(par),
      in_(infer),
      opt_(opt),
      compute_(sys_, infer.attn_kernel),
      comm_(sys_) {
  const double layers_per_gpu = std::ceil(dbl(m.num_layers) / dbl(std::max<std::int64_t>(1, par.pp)));
  windowed_layers_ = dbl(m.windowed_layers());  // once: every iteration splits its attention by it
  kv_bytes_per_token_ =
      model::kv_bytes_per_token(m, static_cast<std::int64_t>(layers_per_gpu), par.tp, dtype_bytes(infer.kv_dtype));
  state_bytes_per_sequence_ = model::linear_state_bytes_per_sequence(
      m, static_cast<std::int64_t>(layers_per_gpu), par.tp, dtype_bytes(activation_dtype(infer.precision)));
  // Weights as stored on one GPU: linear layers packed when quantized, the rest 16-bit.
  model::InventoryParams p;
  p.q_len = 1;
  p.tp = par.tp;
  p.expert_tp = expert_tp(par);
  p.training = false;
  double linear = 0, other = 0;
  auto count = [&](const std::vector<model::Operator>& ops, double times) {
    for (const auto& op : ops) {
      // Each expert-parallel rank holds num_experts / ep of the experts.
      const double share = op.routed_expert ? 1.0 / dbl(std::max<std::int64_t>(1, par.ep)) : 1.0;
      // Quantizable projections; the router, shared-expert gate and LM head stay 16-bit.
      const bool lin = op.kind == model::OpKind::Gemm && op.quantizable;
      (lin ? linear : other) += dbl(op.weight_params) * times * share;
    }
  };
  for (std::int64_t l = 0; l < m.num_layers; ++l) count(model::layer_ops(m, p, l).ops, 1.0);
  count(model::embedding_ops(m, p).ops, 1.0);
  count(model::head_ops(m, p).ops, 1.0);
  const double pp = dbl(std::max<std::int64_t>(1, par.pp));
  const model::InferenceWeightBytes wb =
      model::inference_weight_bytes(infer.block_format, infer.weight_quant, infer.precision, m);
  weight_bytes_ = (linear * wb.linear + other * wb.other) / pp;
  for (std::int64_t l = 0; l < m.num_layers; ++l) {
    Layers& kind = m.is_moe_layer(l) ? moe_layers_ : dense_layers_;
    if (kind.count++ == 0) kind.first = l;
  }
  offload_ = layer_offload(infer, m.num_layers);
  if (offload_.any() || opt.embedding_on_host) {
    // One GPU (feasibility): the layers' weights as stored, averaged over the layers; the head at its own format.
    double dense = 0, routed = 0;
    for (std::int64_t l = 0; l < m.num_layers; ++l)
      for (const auto& op : model::layer_ops(m, p, l).ops) {
        const double bytes =
            dbl(op.weight_params) * (op.kind == model::OpKind::Gemm && op.quantizable ? wb.linear : wb.other);
        (op.routed_expert ? routed : dense) += bytes;
      }
    layer_dense_bytes_ = dense / dbl(m.num_layers);
    layer_routed_bytes_ = routed / dbl(m.num_layers);
    head_bytes_ = table_bytes(m, infer, wb).head;
    // What the GPUs hold (the rule of the memory model): the replica's weights less those in host memory.
    weight_bytes_ = weight_residence(m, infer, wb, linear * wb.linear + other * wb.other, true, true).gpu / pp;
  }
  if (infer.block_format) {
    const model::StoredBits bits = model::stored_bits(*infer.block_format, m);
    packed_weight_bytes_ = bits.linear / 8.0;
    head_weight_bytes_ = bits.head / 8.0;
  }
  if (infer.adapter_rank > 0) {
    lora_dense_ = lora_adapters(m, false, infer.adapter_targets);
    lora_moe_ = lora_adapters(m, true, infer.adapter_targets);
    double params = 0;
    for (const auto& [adapters, layers] :
         {std::pair{&lora_dense_, dense_layers_.count}, {&lora_moe_, moe_layers_.count}})
      for (const LoraAdapter& a : *adapters) {
        const LoraShard s = lora_shard(a, par);
        params += dbl(infer.adapter_rank) * (s.d_in + s.d_out) * s.sets * dbl(layers);
      }
    adapter_bytes_ = params * dtype_bytes(activation_dtype(infer.precision)) / pp;
  }
}

// Multi-LoRA serving as vLLM's punica kernels and S-LoRA run it (Chen et al., "Punica", 2023: SGMV; Sheng et
// al., "S-LoRA", 2023): the base model's GEMMs batch every request, and per adapted projection two more
// kernels take the tokens through their own adapter, a shrink x A (d_in -> r) into an fp32 buffer and an
// expand (r -> d_out) added onto the projection's output. Each reads the A or B of every distinct adapter in
// the batch once, so decode pays mostly for those reads. vLLM's default sharding (not fully_sharded_loras):
// column-parallel projections (q, k, v, gate, up) keep A whole and shard B's output, row-parallel ones (o,
// down) shard A's input and keep B whole. One shrink and one expand per LoRA module (vLLM merges q, k, v and
// gate, up into one module each: QKVParallelLinearWithLoRA, MergedColumnParallelLinearWithLoRA).
void IterationCostModel::add_lora(IterationCost& c, double rows, double distinct) const {
  const DType act = activation_dtype(in_.precision);
  const double a = dtype_bytes(act), r = dbl(in_.adapter_rank);
  const auto add_layers = [&](const std::vector<LoraAdapter>& adapters, double layers) {
    if (layers <= 0) return;
    bool qkv = false, gate_up = false;
    double modules = 0;
    for (const LoraAdapter& ad : adapters) {
      const LoraShard s = lora_shard(ad, par_);
      const bool merged_qkv = ad.slot == LoraSlot::Qkv, merged_gu = ad.slot == LoraSlot::GateUp;
      if ((merged_qkv && !qkv) || (merged_gu && !gate_up) || (!merged_qkv && !merged_gu)) modules += 1;
      qkv = qkv || merged_qkv;
      gate_up = gate_up || merged_gu;
      // Routed experts: each expert-parallel rank takes its share of the tokens' top-k rows, and reads the
      // adapters of the experts they reach.
      const double m_rows = std::max(1.0, std::ceil(rows * ad.rows_per_token / (ad.routed ? dbl(par_.ep) : 1.0)));
      const double sets = distinct * std::min(s.sets, m_rows);
      const auto mr = static_cast<std::int64_t>(m_rows);
      const auto rk = static_cast<std::int64_t>(r);
      const Interval shrink = compute_.gemm(mr, rk, static_cast<std::int64_t>(s.d_in), 1, 2.0 * m_rows * r * s.d_in,
                                            m_rows * s.d_in * a + sets * r * s.d_in * a + m_rows * r * 4.0, act);
      const Interval expand =
          compute_.gemm(mr, static_cast<std::int64_t>(s.d_out), rk, 1, 2.0 * m_rows * r * s.d_out,
                        m_rows * r * 4.0 + sets * r * s.d_out * a + 2.0 * m_rows * s.d_out * a, act);
      c.linear_s += (shrink + expand) * layers;
    }
    c.launches += 2.0 * modules * layers;
  };
  // Every layer of the replica, its pipeline stages one after another (as the base model's GEMMs above).
  add_layers(lora_dense_, dbl(dense_layers_.count));
  add_layers(lora_moe_, dbl(moe_layers_.count));
}

void IterationCostModel::add_recurrence(const std::vector<SequenceWork>& batch, double layers, IterationCost& c) const {
  // The recurrence of `layers` linear-attention layers (model::recurrence_work: Gated DeltaNet, Mamba-2): a
  // sequence's prompt or chunk in the chunked form (its activations and fp32 values once, the chunks' fp32 states
  // written and read between the kernels, the sequence's state read and written once), a decode step in the
  // recurrent form (the state read and written for the step; vLLM's fused_recurrent_gated_delta_rule and
  // selective_state_update), with the convolution's state read and written (causal_conv1d_update). Prefill and
  // decode sequences run as one kernel each per layer, as attention does.
  if (layers <= 0) return;
  const model::RecurrenceWork w = model::recurrence_work(m_, par_.tp);
  const double a = dtype_bytes(activation_dtype(in_.precision));
  const double state = w.state_elems * dtype_bytes(m_.linear_state_dtype());
  const double conv_state = dbl(model::conv_channels_per_rank(m_, par_.tp)) *
                            dbl(std::max<std::int64_t>(0, m_.linear_attn.conv_kernel - 1)) * a;
  const double C = dbl(std::max<std::int64_t>(1, w.chunk));
  double pf = 0, pb = 0, df = 0, db = 0;
  for (const auto& s : batch) {
    const double n = dbl(s.new_tokens);
    if (n <= 0) continue;
    const bool prefill = s.new_tokens > 1 || s.context == 0;
    if (prefill) {
      pf += n * w.chunk_flops_per_token;
      pb += n * w.io_elems_per_token * a + n * w.fp32_per_token * 4.0 + 2.0 * std::ceil(n / C) * w.state_elems * 4.0 +
            2.0 * state + 2.0 * conv_state;
    } else {
      df += n * w.recurrent_flops_per_token;
      db += n * w.io_elems_per_token * a + 2.0 * state + 2.0 * conv_state;
    }
  }
  const DType act = activation_dtype(in_.precision);
  if (pf > 0) c.attention_s += compute_.linear_attention(pf, pb, act) * layers;
  if (df > 0) c.attention_s += compute_.linear_attention(df, db, act) * layers;
  c.launches += ((pf > 0 ? 1.0 : 0.0) + (df > 0 ? 1.0 : 0.0)) * layers;
}

IterationCost IterationCostModel::uniform(std::int64_t batch, std::int64_t new_tokens, std::int64_t context) const {
  return iteration(std::vector<SequenceWork>(static_cast<std::size_t>(std::max<std::int64_t>(0, batch)),
                                             SequenceWork{new_tokens, context}));
}

IterationCost IterationCostModel::iteration(const std::vector<SequenceWork>& batch) const {
  IterationCost c;
  const Interval overhead =
      Interval::exact(opt_.overhead_s + opt_.overhead_per_seq_s * static_cast<double>(batch.size()));
  std::int64_t T = 0;
  for (const auto& s : batch) T += s.new_tokens;
  if (T <= 0) {
    c.other_s = overhead;
    c.time_s = overhead;
    return c;
  }
  const auto S = static_cast<std::int64_t>(batch.size());
  // Layers in host memory (llama.cpp --n-gpu-layers): below the engine's upload threshold the CPU computes them
  // and the GPU only its own; from it their weights are copied to the GPU and every layer runs there.
  const bool cpu_layers =
      offload_.any() && (opt_.host_layer_upload_min_tokens <= 0 || T < opt_.host_layer_upload_min_tokens);
  const double gpu_share =
      cpu_layers ? (dbl(m_.num_layers) - dbl(offload_.cpu_layers)) / dbl(std::max<std::int64_t>(1, m_.num_layers))
                 : 1.0;
  const DType act = activation_dtype(in_.precision);
  const DType gemm_dtype = model::gemm_dtype(in_.weight_quant, act, sys_.gpu.peak(DType::FP8) > 0);
  const int domain = hardware::fast_domain_gpus(sys_);
  const CommGroup tp = make_group(static_cast<int>(par_.tp), 1, domain);
  // Expert parallelism: experts spread over `ep` ranks next to the TP group; dispatch and combine are
  // all-to-alls (each rank still computes its share of the routed tokens, so expert GEMM time is unchanged).
  const CommGroup ep = make_group(static_cast<int>(par_.ep), static_cast<int>(par_.tp), domain);
  // Inside the TP group (sim/run/expert_layout.h) every rank already holds every token: no all-to-all runs,
  // and a rank computes only its own experts' assignments of them: an ep-th of the routed work's FLOPs and
  // bytes (weights and activations alike).
  const bool a2a_free = experts_within_tp(par_);
  const auto own_experts_share = [&](model::Operator op) {
    op.fwd_flops /= dbl(par_.ep);
    op.fwd_bytes /= dbl(par_.ep);
    return op;
  };
  const double imbalance = par_.ep > 1 ? std::max(1.0, par_.expert_imbalance) : 1.0;

  model::InventoryParams p;
  p.micro_batch = 1;
  p.q_len = T;
  p.tp = par_.tp;
  p.expert_tp = expert_tp(par_);
  p.flash_attn = true;
  p.act_dtype = act;
  p.weight_dtype = model::stored_dtype(in_.weight_quant, act);
  p.training = false;
  p.glue = opt_.glue;
  p.packed_weight_bytes = packed_weight_bytes_;
  p.head_weight_bytes = head_weight_bytes_;

  // Costs one op list (layers, embedding or head) `times` times.
  const bool unfused_dequant = opt_.int8_dequantize_to_16bit && in_.weight_quant == model::WeightQuant::Int8;
  auto add_ops = [&](const std::vector<model::Operator>& ops, double times) {
    double packed_weight_bytes = -1, dense_weight_bytes = 0;
    for (const auto& op : ops) {
      if (is_attention_core(op)) continue;
      if (op.role == model::OpRole::Dequant && unfused_dequant) {
        // Its own kernel (reads the packed weights, writes the 16-bit copy); the GEMM then reads the copy.
        c.launches += times;
        c.linear_s += compute_.forward(op, act, 1.0) * times;
        continue;
      }
      if (op.role == model::OpRole::Dequant) {
        // Folded into the next GEMM: it reads the packed weights instead of dense ones.
        const double params = op.fwd_flops / 2.0;
        dense_weight_bytes = params * dtype_bytes(act);
        packed_weight_bytes = op.fwd_bytes - dense_weight_bytes;
        continue;
      }
      if (op.kind == model::OpKind::MoeComm && a2a_free) continue;
      // Launches of everything the iteration issues (the dequantization is inside its GEMM's kernel).
      const double norm_kernels = op.kind == model::OpKind::Norm ? opt_.glue.norm_kernels(m_.norm) : 1.0;
      c.launches += forward_launches(op, norm_kernels) * times;
      c.collective_calls += forward_collective_calls(op) * times;
      if (op.kind == model::OpKind::TpComm || op.kind == model::OpKind::MoeComm) {
        // The busiest expert-parallel rank sends and receives `imbalance` times the mean's routed tokens.
        const double bytes = model::on_busiest_expert_rank(op, imbalance, 0).comm_bytes;
        c.comm_s += comm_.collective(op.collective, bytes, op.kind == model::OpKind::TpComm ? tp : ep) * times;
        continue;
      }
      if (op.kind == model::OpKind::Gemm) {
        double bytes = op.fwd_bytes;
        const double weights = dbl(op.k) * dbl(op.n) * dbl(op.batch);
        double weight_bytes = weights * dtype_bytes(act);
        if (packed_weight_bytes >= 0) {
          bytes = bytes - dense_weight_bytes + packed_weight_bytes;
          weight_bytes = packed_weight_bytes;
        }
        // With expert parallelism a rank reads only its own experts' weights (num_experts / ep of the
        // active ones), while computing the same number of routed tokens on average; the busiest rank
        // computes `imbalance` times as many, and the iteration waits for it.
        std::int64_t rows = op.m, experts = op.batch;
        double flops = op.fwd_flops;
        if (par_.ep > 1 && op.routed_expert) {
          model::Operator busiest = op;
          busiest.fwd_bytes = bytes;
          if (a2a_free) {
            busiest = own_experts_share(busiest);  // ep-th of the active experts too, each whole
            busiest.batch = std::max<std::int64_t>(1, (op.batch + par_.ep - 1) / par_.ep);
          } else {
            busiest = model::on_own_experts(busiest, par_.ep, weight_bytes);
          }
          busiest = model::on_busiest_expert_rank(busiest, imbalance, weight_bytes / dbl(par_.ep));
          rows = busiest.m;
          experts = busiest.batch;
          flops = busiest.fwd_flops;
          bytes = busiest.fwd_bytes;
        }
        c.linear_s += compute_.gemm(rows, op.n, op.k, experts, flops, bytes, gemm_dtype, opt_.fp16_accumulate) * times;
        packed_weight_bytes = -1;
        continue;
      }
      if (a2a_free && op.routed_expert) {
        // The experts' own pointwise work (their activation) on the rank's share of the rows, as their GEMMs.
        c.other_s +=
            compute_.forward(model::on_busiest_expert_rank(own_experts_share(op), imbalance, 0), act, norm_kernels) *
            times;
        continue;
      }
      c.other_s += compute_.forward(op, act, norm_kernels) * times;
    }
  };
  for (const Layers& k : {dense_layers_, moe_layers_})
    if (k.count > 0) add_ops(model::layer_ops(m_, p, k.first).ops, dbl(k.count) * gpu_share);
  add_ops(model::embedding_ops(m_, p).ops, 1.0);
  if (in_.adapter_rank > 0) {
    double rows = 0;
    std::vector<std::int64_t> adapters;
    for (const auto& s : batch)
      if (s.adapter >= 0 && s.new_tokens > 0) {
        rows += dbl(s.new_tokens);
        adapters.push_back(s.adapter);
      }
    std::sort(adapters.begin(), adapters.end());
    const auto distinct = std::unique(adapters.begin(), adapters.end()) - adapters.begin();
    if (rows > 0) add_lora(c, rows, static_cast<double>(distinct));
  }
  model::InventoryParams h = p;
  // One sampled token per sequence; HF generate before 4.45.0 ran the head over every new token and upcast
  // all of those logits (priced as the sampling pass over them: one read of 16-bit, one fp32 write).
  // head_ops takes its rows from micro_batch at inference (q_len 1 each).
  h.micro_batch = opt_.all_prompt_logits ? T : S;
  h.q_len = 1;
  if (!(cpu_layers && offload_.head_on_cpu)) add_ops(model::head_ops(m_, h).ops, 1.0);

  // Attention, per layer: prefill chunks as one causal kernel, decode steps as one KV-reading kernel.
  // The layer's attention shape on this rank (model::attention_shape): heads, per-head widths, the cached
  // elements per token (K and V of the rank's KV heads, or MLA's latent), FLOPs per (query, key) pair.
  const model::AttentionShape shape = model::attention_shape(m_, par_.tp);
  const double heads = shape.heads;
  const double kv_row = shape.cache_row;
  const double a = dtype_bytes(act), kvb = dtype_bytes(in_.kv_dtype);
  double cached_keys = 0;  // keys in the caches after this iteration, all sequences
  // Query heads per KV head on this rank (grouped-query attention; 1 without it, and for MLA's latent).
  const double rank_kv_heads = dbl(model::kv_heads_per_rank(m_, par_.tp));
  const double group = !m_.mla.enabled() && rank_kv_heads > 0 ? heads / rank_kv_heads : 1.0;
  // HF's Mistral-derived flash-attention classes before 4.48 expand K and V to the query heads every step
  // (EngineProfile::repeat_kv_for_flash): the kernel and the copies after the expansion move group x the cache.
  const double repeat_group = opt_.repeat_kv_for_flash && m_.flash_class_repeats_kv ? group : 1.0;
  for (const auto& s : batch)
    if (s.new_tokens > 0) cached_keys += dbl(s.context + s.new_tokens);
  // The attention of `layers` layers attending through window `w` (0 = every key).
  const auto attend = [&](double w, double layers) {
    if (layers <= 0) return;
    double pf = 0, pb = 0, df = 0, db = 0;
    double decode_kv = 0;                                     // bytes of cache the decode steps read
    double decode_seqs = 0, longest_keys = 0;                 // for decode attention without split-KV
    double index_flops = 0, index_bytes = 0, index_rows = 0;  // DeepSeek Sparse Attention's indexer
    const model::SparseIndexerSpec& dsa = m_.dsa;
    for (const auto& s : batch) {
      const double n = dbl(s.new_tokens), ctx = dbl(s.context);
      if (n <= 0) continue;
      // Causal: each new token sees the context and its predecessors; under a sliding window of w
      // (Mistral, Phi-3, Gemma's local layers) at most the w latest keys, and the kernel reads only the
      // keys some query sees.
      double pairs = n * ctx + n * (n + 1) / 2;
      double keys = ctx + n;
      if (w > 0) {
        const double full = std::clamp(w - ctx, 0.0, n);  // new tokens whose whole history fits the window
        pairs = full * ctx + full * (full + 1) / 2 + (n - full) * w;
        keys = std::min(ctx + n, w + n - 1);
      }
      const bool prefill = s.new_tokens > 1 || s.context == 0;
      if (dsa.enabled()) {
        // DeepSeek Sparse Attention: the indexer scores every visible key of every new token (fp8 queries and
        // head weights, its key cache once, an fp32 logit per pair written and read back by top-k), and MLA
        // attends to the top-k of them in its absorbed form, prefill too; a decode step gathers top-k latent
        // rows, a prefill reads its context once (model/operators/attention.cpp, add_sparse_indexer).
        index_flops += 2.0 * dbl(dsa.heads) * dbl(dsa.head_dim) * pairs;
        index_rows += n * dbl(dsa.heads);
        index_bytes += n * dbl(dsa.heads) * (dbl(dsa.head_dim) + 4.0) + keys * dsa.cache_bytes_per_token() +
                       2.0 * 4.0 * pairs + n * dsa.cache_bytes_per_token();
        const double k = dbl(dsa.topk);
        const double full = std::clamp(k - ctx, 0.0, n);  // new tokens that see at most top-k keys
        pairs = full * ctx + full * (full + 1) / 2 + (n - full) * k;
        if (!prefill) keys = std::min(keys, k);
      }
      const bool absorbed = !prefill || dsa.enabled();  // MLA's MQA form (decode, and every DSA step)
      const double flops = (absorbed ? shape.decode_flops_per_pair : shape.prefill_flops_per_pair) * pairs;
      // Q and O; read the cache; write the new tokens' entries. Prefill reads K and V expanded (MLA:
      // kv_b_proj's output, per head), decode the cache itself.
      const double qo = absorbed ? n * shape.decode_query_elems : n * heads * (shape.qk + shape.v);
      const double kv_read =
          !absorbed && m_.mla.enabled() ? keys * heads * (shape.qk + shape.v) * a : keys * kv_row * kvb * repeat_group;
      const double bytes = qo * a + kv_read + n * kv_row * kvb;
      if (prefill) {
        pf += flops;
        pb += bytes;
      } else {
        df += flops;
        db += bytes;
        decode_kv += kv_read;
        decode_seqs += 1;
        longest_keys = std::max(longest_keys, keys);
      }
    }
    if (pf > 0) c.attention_s += compute_.attention(pf, pb, act) * layers;
    if (index_flops > 0) {
      // One MQA-logits GEMM (model/operators/attention.cpp, add_sparse_indexer): rows are the batch's new
      // tokens times the index heads, columns their average visible keys, the contraction head_dim; at fp8
      // where the GPU has fp8 tensor cores (DeepGEMM fp8_mqa_logits), else at the activation precision.
      const double keys_avg = index_flops / (2.0 * index_rows * dbl(dsa.head_dim));
      const DType index_dtype = compute_.supports(DType::FP8) ? DType::FP8 : act;
      c.attention_s += compute_.gemm(std::llround(index_rows), std::max<std::int64_t>(1, std::llround(keys_avg)),
                                     dsa.head_dim, 1, index_flops, index_bytes, index_dtype) *
                       layers;
      c.launches += 2.0 * layers;  // the scores, then top-k
    }
    if (df > 0) {
      Interval decode = compute_.attention(df, db, act);
      if (!opt_.decode_split_kv) {
        // Each block reads the K and V rows of its query head's KV head (MLA: the latent row) for every key.
        const double per_row = m_.mla.enabled() ? kv_row : 2.0 * shape.qk;
        const double per_block = longest_keys * per_row * kvb;
        decode = max(decode, compute_.streamed_by_blocks(per_block, decode_seqs * heads));
      }
      if (opt_.decode_kv_per_query_head && group > 1) {
        // One block per query head: every query head of a KV head's group reads that head's K and V, the
        // first read from HBM, the group's others out of L2 (EngineProfile::decode_kv_per_query_head).
        decode = max(decode, compute_.l2_read(group * decode_kv));
      }
      c.attention_s += decode * layers;
    }
    c.launches += ((pf > 0 ? 1.0 : 0.0) + (df > 0 ? 1.0 : 0.0)) * layers;
  };
  // Windowed and global layers apart (ModelSpec::window_of: Gemma's local/global pattern); linear-attention
  // layers (Gated DeltaNet, Mamba-2) keep no K and V and mix by their recurrence below.
  const double L = dbl(m_.attention_layers());
  attend(dbl(m_.sliding_window), windowed_layers_ * gpu_share);
  attend(0, (L - windowed_layers_) * gpu_share);
  if (m_.linear_attn.enabled()) add_recurrence(batch, dbl(m_.linear_attention_layers()) * gpu_share, c);
  if (opt_.kv_copy_passes > 0 || repeat_group > 1) {
    // Each pass reads and writes K and V. The first is the cache's own concatenation; with the expansion,
    // repeat_kv then reads the cache and writes group x it, and the passes after it (the unpad gather) copy
    // the expanded tensors.
    const double cache = cached_keys * kv_row * kvb;
    const double first = std::min(1.0, opt_.kv_copy_passes);
    double bytes = 2.0 * cache * (first + (opt_.kv_copy_passes - first) * repeat_group);
    double kernels = 2.0 * opt_.kv_copy_passes;
    if (repeat_group > 1) {
      bytes += (1.0 + repeat_group) * cache;
      kernels += 2.0;
    }
    c.other_s += compute_.memory_bound(bytes, kernels) * L;
    c.launches += kernels * L;
  }
  if (offload_.any()) {
    const double host_layers = dbl(offload_.cpu_layers);
    const double head = offload_.head_on_cpu ? head_bytes_ : 0.0;
    if (cpu_layers) {
      // The CPU streams each of its layers' weights once per iteration (a token reads its top-k routed experts)
      // and their KV cache at the host's memory bandwidth, one layer after another with the GPU's; the hidden
      // states cross PCIe into its first layer and out of its last.
      const double routed = m_.moe.enabled() ? std::min(1.0, dbl(T) * dbl(m_.moe.experts_per_token) /
                                                                 dbl(std::max<std::int64_t>(1, m_.moe.num_experts)))
                                             : 1.0;
      const double bytes = host_layers * (layer_dense_bytes_ + layer_routed_bytes_ * routed +
                                          cached_keys * kv_row * kvb * model::kv_layer_share(m_)) +
                           head;
      const hardware::Fraction& f = sys_.efficiency.host_memory_bandwidth;
      const double bw = sys_.node.host_memory_bandwidth_Bps;
      c.cpu_s += Interval{bytes / (bw * f.value), bytes / (bw * f.high), bytes / (bw * f.low)};
      c.comm_s += comm_.host_copy(2.0 * dbl(T) * dbl(m_.hidden) * a);
    } else {
      // From the upload threshold every chunk of tokens copies the host layers' weights (and the head) to the GPU
      // from pageable host memory (the model file's mapping).
      const double chunk = opt_.upload_chunk_tokens > 0 ? dbl(opt_.upload_chunk_tokens) : dbl(T);
      const double copies = std::ceil(dbl(T) / chunk);
      c.comm_s += comm_.host_copy(copies * (host_layers * (layer_dense_bytes_ + layer_routed_bytes_) + head),
                                  HostMemory::Pageable, CopyDirection::HostToDevice);
    }
  }

  if (par_.pp > 1) {
    const bool cross = par_.tp * par_.pp > hardware::fast_domain_gpus(sys_);
    c.comm_s += comm_.p2p(dbl(T) * dbl(m_.hidden) * a / dbl(par_.tp), cross) * dbl(par_.pp - 1);
  }
  const Interval gpu = c.linear_s + c.attention_s + c.comm_s + c.other_s + c.cpu_s;
  c.other_s += overhead;
  const Interval span = host_bound(gpu, opt_.host_dispatch * c.launches + opt_.collective_host * c.collective_calls);
  c.host_wait_s = exposed_beyond(span, gpu);
  c.time_s = span + overhead;
  return c;
}

}  // namespace llmsim::sim

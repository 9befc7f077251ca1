#include "llmsim/train/train_layer_cost.h"

#include <algorithm>
#include <vector>

#include "llmsim/cost/host_dispatch.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/lora_adapters.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/step_terms.h"

namespace llmsim::sim {

namespace {

using model::Collective;
using model::Operator;
using model::OpKind;

double dbl(std::int64_t v) { return static_cast<double>(v); }

std::string op_class_key(const Operator& op, bool backward) {
  switch (op.kind) {
    case OpKind::Gemm: return "gemm";
    case OpKind::FlashAttn:
    case OpKind::LinearAttn: return "attention";
    case OpKind::Norm: return "norm";
    case OpKind::TpComm:
    case OpKind::MoeComm: return std::string(model::collective_name(backward ? op.bwd_collective : op.collective));
    default: return "elementwise";
  }
}

// The weight dtype the layer GEMMs read: packed NF4 for QLoRA (dequantized before every GEMM).
DType layer_weight_dtype(const RunSpec& run) {
  const auto& t = run.train;
  if (run.workload != Workload::Finetune || t.finetune == FinetuneKind::Full) return t.precision;
  return model::stored_dtype(t.base_quant, t.finetune == FinetuneKind::Qlora ? DType::NF4 : t.precision);
}

class Builder {
 public:
  Builder(const LayerCostInputs& in, LayerCost& out) : in_(in), out_(out) {}

  // `rerun`: the share of each operator's forward that recomputation runs again in backward.
  void add_ops(const std::vector<Operator>& ops, bool frozen, double attention_scale,
               const std::vector<double>& rerun) {
    const DType prec = in_.run.train.precision;
    const auto& par = in_.run.par;
    const double imbalance = par.ep > 1 ? std::max(1.0, par.expert_imbalance) : 1.0;
    const double weight_bytes_per_param = dtype_bytes(layer_weight_dtype(in_.run));
    for (std::size_t i = 0; i < ops.size(); ++i) {
      Operator op = ops[i];
      // Expert parallelism: a rank reads (and casts) only its own experts' weights, and the step waits for
      // the rank with the most routed tokens.
      const double expert_weight_bytes = dbl(op.weight_params) * weight_bytes_per_param;
      op = model::on_own_experts(op, par.ep, expert_weight_bytes);
      if (imbalance > 1.0)
        op = model::on_busiest_expert_rank(op, imbalance, expert_weight_bytes / dbl(std::max<std::int64_t>(1, par.ep)));
      if (attention_scale != 1.0 && is_attention_core(op)) {
        op.fwd_flops *= attention_scale;
        op.fwd_bytes *= attention_scale;
        op.bwd_flops *= attention_scale;
        op.bwd_bytes *= attention_scale;
      }
      const std::string module = breakdown_module(op);
      const bool weights_trainable = !frozen;
      const double norm_kernels = op.kind == OpKind::Norm ? in_.framework.glue.norm_kernels(in_.model.norm) : 1.0;
      Interval f, b;
      if (op.kind == OpKind::TpComm || op.kind == OpKind::MoeComm) {
        const CommGroup& g = op.kind == OpKind::TpComm ? in_.groups.tp : in_.groups.ep;
        f = in_.comm.collective(op.collective, op.comm_bytes, g);
        b = in_.comm.collective(op.bwd_collective, op.comm_bytes, g);
        out_.fwd_comm += f;
        out_.bwd_comm += b;
      } else {
        f = in_.compute.forward(op, prec, norm_kernels);
        b = in_.compute.backward(op, prec, weights_trainable, norm_kernels);
        const double wflops = weights_trainable ? op.bwd_weight_flops : 0.0;
        out_.fwd_flops += op.fwd_flops;
        out_.bwd_flops += op.bwd_flops - op.bwd_weight_flops + wflops;
        if (weights_trainable) out_.trainable_params += dbl(op.weight_params);
      }
      out_.params += dbl(op.weight_params);
      const bool packed_base = frozen && op.kind == OpKind::Gemm && op.quantizable;
      out_.gather_bytes += packed_base ? dbl(op.weight_params) * frozen_linear_bytes(in_.run.train)
                                       : param_bytes_16bit(dbl(op.weight_params));
      if (op.weight_params > 0) {
        // One module per projection the model code keeps apart (q, k and v are three nn.Linear in HF code:
        // the GEMM's launches), one per norm.
        const double modules = op.kind == OpKind::Gemm ? std::max(1.0, op.launches) : 1.0;
        out_.param_modules += modules;
        if (weights_trainable) {
          out_.trainable_tensors += modules;
          // The tensors a fused wgrad GEMM does not accumulate: a projection's bias (its weight it does); a
          // LayerNorm's weight and bias; any other operator's weight.
          double unfused = 1.0;
          if (op.kind == OpKind::Gemm)
            unfused = op.bias ? modules : 0.0;
          else if (op.kind == OpKind::Norm && in_.model.norm == model::NormKind::LayerNorm)
            unfused = 2.0;
          out_.unfused_grad_tensors += unfused;
          out_.grad_tensors += (op.kind == OpKind::Gemm ? modules : 0.0) + unfused;
        }
      }
      out_.fwd += f;
      out_.bwd += b;
      const double launches = forward_launches(op, norm_kernels);
      out_.fwd_launches += launches;
      out_.bwd_launches += backward_launches(op, weights_trainable, norm_kernels);
      const double calls = forward_collective_calls(op);
      out_.fwd_calls += calls;
      out_.bwd_calls += backward_collective_calls(op);
      const double again = rerun[i];
      if (again > 0) {
        out_.recompute += f * again;
        out_.recompute_launches += launches * again;
        out_.recompute_calls += calls * again;
        if (op.kind == OpKind::TpComm || op.kind == OpKind::MoeComm)
          out_.recompute_comm += f * again;
        else
          out_.recompute_flops += op.fwd_flops * again;
      }
      out_.by_module[module] += f.value * (1.0 + again) + b.value;
      out_.by_class[op_class_key(op, false)] += f.value * (1.0 + again);
      out_.by_class[op_class_key(op, true)] += b.value;
    }
  }

  // LoRA adapters on the layer's projections (sim/run/lora_adapters.h, the memory model's list): two skinny
  // GEMMs forward (x A, then (x A) B), their four backward GEMMs (activation and weight gradients of A
  // and B), and one elementwise pass for dropout on x and the scaled add onto the base output (PEFT
  // LoraLayer.forward). A and B are split over TP; on the routed experts each GPU runs its
  // num_experts / ep pairs as a batch over the top_k rows of every token it holds.
  void add_lora(std::int64_t tokens, bool moe_layer) {
    const auto& t = in_.run.train;
    const auto& par = in_.run.par;
    const DType prec = t.precision;
    const double a = dtype_bytes(prec), r = dbl(t.lora_rank);
    const auto& cc = in_.compute;
    for (const LoraAdapter& ad : lora_adapters(in_.model, moe_layer, t.lora_targets)) {
      const auto R = t.lora_rank;
      const double pairs = ad.routed ? ad.pairs / dbl(par.ep) : ad.pairs;
      const double rows = dbl(tokens) * ad.rows_per_token;
      const double d_in = ad.d_in / dbl(par.tp), d_out = ad.d_out / dbl(par.tp);
      const auto batch = std::max<std::int64_t>(1, static_cast<std::int64_t>(pairs));
      const auto m_rows = std::max<std::int64_t>(1, static_cast<std::int64_t>(rows / pairs));
      const auto din = std::max<std::int64_t>(1, static_cast<std::int64_t>(d_in));
      const auto dout = std::max<std::int64_t>(1, static_cast<std::int64_t>(d_out));
      const double fa = 2 * rows * d_in * r, fb = 2 * rows * r * d_out;
      const double ba = (rows * d_in + pairs * d_in * r + rows * r) * a;
      const double bb = (rows * r + pairs * r * d_out + rows * d_out) * a;
      Interval f = cc.gemm(m_rows, R, din, batch, fa, ba, prec) + cc.gemm(m_rows, dout, R, batch, fb, bb, prec);
      const double ew = (2 * rows * d_in + 3 * rows * d_out) * a;
      f += cc.memory_bound(ew, 2);
      // Backward: dX of B, dB, dX of A, dA; same FLOPs and bytes as forward each.
      Interval b = cc.gemm(m_rows, R, dout, batch, fb, bb, prec) + cc.gemm(R, dout, m_rows, batch, fb, bb, prec) +
                   cc.gemm(m_rows, din, R, batch, fa, ba, prec) + cc.gemm(din, R, m_rows, batch, fa, ba, prec) +
                   cc.memory_bound(ew, 2);
      out_.fwd += f;
      out_.bwd += b;
      // Launches: dropout, x A, (x A) B, the scaled add; backward four GEMMs and two pointwise kernels.
      out_.fwd_launches += 4;
      out_.bwd_launches += 6;
      out_.param_modules += 2;  // lora_A and lora_B, both trainable
      out_.trainable_tensors += 2;
      out_.grad_tensors += 2;
      out_.fwd_flops += fa + fb;
      out_.bwd_flops += 2 * (fa + fb);
      const double p = r * (d_in + d_out) * pairs;
      out_.params += p;
      out_.trainable_params += p;
      out_.gather_bytes += param_bytes_16bit(p);
      const bool again = t.recompute == Recompute::Full;
      if (again) {
        out_.recompute += f;
        out_.recompute_launches += 4;
        out_.recompute_flops += fa + fb;
      }
      out_.by_module["lora"] += f.value + b.value + (again ? f.value : 0.0);
      out_.by_class["gemm"] += f.value + b.value + (again ? f.value : 0.0);
    }
  }

  // The host critical path (sim/cost/host_dispatch.h): each pass of the layer takes at least the
  // time eager PyTorch needs to issue its kernels; the GPU's wait for the host is its own breakdown row.
  void bound_by_host() {
    count_zero_hooks();
    count_grad_accumulation();
    const Interval per_launch = in_.compute.host_dispatch();
    const Interval per_call = in_.compute.collective_host();
    const double per_hook = in_.framework.zero_hooks ? in_.compute.deepspeed_hook_s() : 0.0;
    if (per_launch.high <= 0 && per_call.high <= 0 && per_hook <= 0) return;
    auto bound = [&](Interval& t, double launches, double calls, double hooks) {
      const Interval span = host_bound(t, per_launch * launches + per_call * calls + Interval::exact(per_hook * hooks));
      const double wait = span.value - t.value;
      if (wait > 0) {
        out_.by_module["host_wait"] += wait;
        out_.by_class["host_wait"] += wait;
      }
      t = span;
    };
    bound(out_.fwd, out_.fwd_launches, out_.fwd_calls, out_.fwd_hooks);
    bound(out_.bwd, out_.bwd_launches, out_.bwd_calls, out_.bwd_hooks);
    if (out_.recompute_launches > 0)
      bound(out_.recompute, out_.recompute_launches, out_.recompute_calls, out_.recompute_hooks);
  }

  // DeepSpeed's hooks per pass (FrameworkProfile::zero_hooks). Stage 3 fetches and releases every module
  // with parameters around its forward, its recomputed forward (the share recomputation reruns) and its
  // backward: the partitioned-parameter coordinator's Python (fetch_sub_module / release_sub_module: the
  // module's parameters walked one by one, an all-gather issued and awaited, each parameter freed again),
  // priced per call at Efficiency::deepspeed_hook_s. Stages 1-3 also hook each trainable tensor's gradient
  // in backward, and that hook is one copy of the gradient into the reduction bucket (stage_1_and_2.py
  // reduce_independent_p_g_buckets_and_remove_grads and stage3.py __add_grad_to_ipg_bucket:
  // `new_grad_tensor.copy_(...)` with contiguous_gradients), so it is priced as one more eager launch.
  void count_zero_hooks() {
    if (!in_.framework.zero_hooks) return;
    const int stage = in_.run.train.zero_stage;
    if (stage >= 3) {
      out_.fwd_hooks = 2 * out_.param_modules;
      out_.bwd_hooks = 2 * out_.param_modules;
      if (out_.fwd_launches > 0) out_.recompute_hooks = out_.fwd_hooks * out_.recompute_launches / out_.fwd_launches;
    }
    if (stage >= 1) out_.bwd_launches += out_.trainable_tensors;
  }

  // The kernels that join each micro-batch's gradients to the accumulated ones (FrameworkProfile::
  // grad_accumulation), per micro-batch: Megatron's post-hook adds every tensor its wgrad GEMM did not
  // accumulate, every micro-batch; autograd adds every trainable tensor on the micro-batches after the first
  // ((n - 1) / n of them on average), unless a ZeRO stage hands the gradients to DeepSpeed's hooks.
  void count_grad_accumulation() {
    using GA = FrameworkProfile::GradAccumulation;
    switch (in_.framework.grad_accumulation) {
      case GA::MainGradHook: out_.bwd_launches += out_.unfused_grad_tensors; break;
      case GA::AccumulateGrad: {
        if (in_.run.train.zero_stage > 0) break;
        const double n = dbl(std::max<std::int64_t>(1, micro_batches_per_step(in_.run)));
        out_.bwd_launches += out_.grad_tensors * (n - 1.0) / n;
        break;
      }
      case GA::None: break;
    }
  }

  // Context parallelism: the K/V of the whole sequence are all-gathered over the CP group in forward
  // and their gradients reduce-scattered in backward (Megatron-LM context parallel, ring exchange
  // overlapped with the attention kernel); only what the attention compute cannot hide is charged.
  void add_context_parallel(double kv_bytes, Interval core_fwd, Interval core_bwd) {
    const auto& g = in_.groups.cp;
    if (g.size <= 1) return;
    const Interval f = in_.comm.collective(Collective::AllGather, kv_bytes, g);
    const Interval b = in_.comm.collective(Collective::ReduceScatter, kv_bytes, g);
    auto exposed = [](Interval c, Interval hide) {
      return Interval{std::max(0.0, c.value - hide.value), std::max(0.0, c.low - hide.low),
                      std::max(0.0, c.high - hide.high)};
    };
    const Interval ef = exposed(f, core_fwd), eb = exposed(b, core_bwd);
    // The hidden part runs beside the attention kernel and slows it (CommCost::interference).
    const auto hidden = [](Interval c, Interval e) {
      return Interval{c.value - e.value, c.low - e.low, c.high - e.high};
    };
    const Interval sf = in_.comm.interference(hidden(f, ef)), sb = in_.comm.interference(hidden(b, eb));
    out_.fwd += ef + sf;
    out_.bwd += eb + sb;
    out_.by_module["communication.interference"] += sf.value + sb.value;
    out_.by_class["interference"] += sf.value + sb.value;
    out_.fwd_launches += 1;
    out_.bwd_launches += 1;
    out_.fwd_calls += 1;
    out_.bwd_calls += 1;
    out_.fwd_comm += ef;
    out_.bwd_comm += eb;
    if (in_.run.train.recompute == Recompute::Full) {
      out_.recompute += ef;
      out_.recompute_launches += 1;
      out_.recompute_calls += 1;
      out_.recompute_comm += ef;
    }
    out_.by_module["communication.cp"] += ef.value + eb.value;
    out_.by_class["all_gather"] += ef.value;
    out_.by_class["reduce_scatter"] += eb.value;
  }

 private:
  const LayerCostInputs& in_;
  LayerCost& out_;
};

}  // namespace

std::string breakdown_module(const model::Operator& op) {
  using model::Module;
  using model::OpRole;
  if (op.role == OpRole::Dequant) return "dequantization";
  if (op.role == OpRole::Cast) return "amp_casts";
  if (op.kind == OpKind::TpComm) return "communication.tp";
  if (op.kind == OpKind::MoeComm) return "communication.ep";
  if (op.kind == OpKind::Norm) return "norm";
  if (op.module == Module::Residual) return "residual";
  if (op.role == OpRole::QkvProj) return "attention.qkv";
  if (op.role == OpRole::Rope) return "attention.rope";
  if (op.role == OpRole::OutProj) return "attention.out_proj";
  if (is_attention_core(op)) return "attention.core";
  switch (op.module) {
    case Module::Attention: return "attention.other";
    case Module::Mlp: return "mlp";
    case Module::Moe: return "moe";
    case Module::Embedding: return "embedding";
    case Module::Head:
    case Module::Loss: return "lm_head_loss";
    case Module::Norm:
    case Module::Residual: break;
  }
  return "other";
}

std::vector<double> recompute_shares(const model::ModelSpec& m, const std::vector<model::Operator>& ops,
                                     const model::InventoryParams& p, Recompute recompute,
                                     model::SelectivePolicy selective, bool block) {
  std::vector<double> share(ops.size(), 0.0);
  if (recompute == Recompute::Full) {
    // Only the transformer blocks are checkpointed: transformers' gradient_checkpointing_enable wraps each
    // GradientCheckpointingLayer (the decoder layers), Megatron's TransformerBlock._checkpointed_forward
    // runs over its layers, torchtitan's apply_ac and llm-foundry's activation_checkpointing_fn wrap the
    // blocks. The embedding, final norm, LM head and loss run once (Narayanan et al. 2021 Eq. 3 counts the
    // head's FLOPs three times, the layers' four).
    if (block) share.assign(ops.size(), 1.0);
  } else if (recompute == Recompute::Selective && selective == model::SelectivePolicy::AlternateMatmuls) {
    // Only the transformer blocks are checkpoint-wrapped (torchtitan apply_ac wraps model.layers).
    if (block) share = model::alternate_matmul_checkpoint(m, ops, p).recompute_share;
  } else if (recompute == Recompute::Selective) {
    for (std::size_t i = 0; i < ops.size(); ++i)
      // The unfused chain's kernels; a fused kernel (FlashAttention, the gated delta rule's) keeps its output.
      if (is_attention_core(ops[i]) && ops[i].kind != OpKind::FlashAttn && ops[i].kind != OpKind::LinearAttn)
        share[i] = 1.0;
  }
  return share;
}

LayerCost layer_cost(const LayerCostInputs& in, LayerKind kind, std::int64_t layer_index) {
  const auto& run = in.run;
  const auto& t = run.train;
  const std::int64_t cp = std::max<std::int64_t>(1, run.par.cp);
  model::InventoryParams p;
  p.micro_batch = t.micro_batch;
  p.q_len = t.seq_len / cp;
  p.kv_len = 0;
  p.causal = true;
  p.tp = run.par.tp;
  p.sequence_parallel = run.par.sequence_parallel;
  p.flash_attn = t.flash_attn;
  p.act_dtype = activation_dtype(t.precision);
  p.weight_dtype = layer_weight_dtype(run);
  // LoRA on an int4 (GPTQ) base trains through AutoGPTQ's QuantLinear, the one GPTQ layer with a backward
  // (transformers' GPTQConfig -> optimum -> auto_gptq, exllama disabled for training): its eager unpacking.
  if (run.workload == Workload::Finetune && t.finetune != FinetuneKind::Full &&
      t.base_quant == model::WeightQuant::Int4)
    p.dequant = model::DequantKernel::TorchUnpack;
  p.training = true;
  p.glue = training_glue(in.framework, t);

  const bool lora = run.workload == Workload::Finetune && t.finetune != FinetuneKind::Full;
  LayerCost out;
  out.kind = kind;
  Builder b(in, out);
  const auto shares = [&](const std::vector<Operator>& ops, bool block) {
    return recompute_shares(in.model, ops, p, t.recompute, in.framework.selective, block);
  };
  if (kind == LayerKind::Embedding || kind == LayerKind::Head) {
    const auto ops =
        kind == LayerKind::Embedding ? model::embedding_ops(in.model, p).ops : model::head_ops(in.model, p).ops;
    b.add_ops(ops, lora, 1.0, shares(ops, false));
    b.bound_by_host();
    return out;
  }
  const auto inv = model::layer_ops(in.model, p, layer_index);
  // With CP each rank holds s/cp queries but attends over the whole (causal) sequence: its share of the
  // attention work is 1/cp of the full sequence's, i.e. cp times that of an s/cp-token sequence.
  b.add_ops(inv.ops, lora, static_cast<double>(cp), shares(inv.ops, true));
  if (lora) b.add_lora(t.micro_batch * p.q_len, in.model.is_moe_layer(layer_index));
  if (cp > 1) {
    Interval core_f, core_b;
    for (const auto& op : inv.ops)
      if (is_attention_core(op)) {
        core_f += in.compute.forward(op, t.precision) * static_cast<double>(cp);
        core_b += in.compute.backward(op, t.precision, false) * static_cast<double>(cp);
      }
    const double kv_bytes = dbl(t.micro_batch) * dbl(t.seq_len) * dbl(in.model.kv_dim() + in.model.v_dim()) /
                            dbl(run.par.tp) * dtype_bytes(p.act_dtype);
    b.add_context_parallel(kv_bytes, core_f, core_b);
  }
  // Expert parallelism: each GPU holds num_experts / ep of the experts.
  if (in.model.is_moe_layer(layer_index) && run.par.ep > 1) {
    double expert = 0;
    for (const auto& op : inv.ops)
      if (op.routed_expert) expert += dbl(op.weight_params);
    const double drop = expert * (1.0 - 1.0 / dbl(run.par.ep));
    out.params -= drop;
    if (!lora) out.trainable_params -= drop;
  }
  b.bound_by_host();
  return out;
}

}  // namespace llmsim::sim

#include "sim/train_layer_cost.h"

#include <algorithm>
#include <vector>

#include "model/operators.h"

namespace llmsim::sim {

namespace {

using model::Collective;
using model::OpKind;
using model::Operator;

double dbl(std::int64_t v) { return static_cast<double>(v); }

bool starts_with(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, std::string_view p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::string op_class_key(const Operator& op, bool backward) {
  switch (op.kind) {
    case OpKind::Gemm: return "gemm";
    case OpKind::FlashAttn: return "attention";
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
  switch (t.base_quant) {
    case model::WeightQuant::Int8: return DType::INT8;
    case model::WeightQuant::Int4: return DType::INT4;
    case model::WeightQuant::Nf4: return DType::NF4;
    case model::WeightQuant::Fp8: return DType::FP8;
    case model::WeightQuant::None: break;
  }
  return t.finetune == FinetuneKind::Qlora ? DType::NF4 : t.precision;
}

// One LoRA-adapted projection: x[T, d_in] -> A (d_in x r) -> B (r x d_out), d_* after TP sharding.
struct Adapter {
  const char* target;
  double d_in, d_out;
};

std::vector<Adapter> adapters(const model::ModelSpec& m, const TrainSpec& t, std::int64_t tp, bool dense_mlp) {
  const auto wants = [&](const char* name) {
    return t.lora_targets.empty() || std::find(t.lora_targets.begin(), t.lora_targets.end(), name) != t.lora_targets.end();
  };
  const double h = dbl(m.hidden), q = dbl(m.q_dim()) / dbl(tp), kv = dbl(m.kv_dim()) / dbl(tp);
  const double f = dbl(m.ffn_hidden) / dbl(tp);
  std::vector<Adapter> out;
  if (wants("q")) out.push_back({"q", h, q});
  if (wants("k")) out.push_back({"k", h, kv});
  if (wants("v")) out.push_back({"v", h, kv});
  if (wants("o")) out.push_back({"o", q, h});
  // Adapters on MoE experts are not modelled (each expert would carry its own pair).
  if (dense_mlp && m.ffn_hidden > 0) {
    if (m.mlp == model::MlpKind::Gated && wants("gate")) out.push_back({"gate", h, f});
    if (wants("up")) out.push_back({"up", h, f});
    if (wants("down")) out.push_back({"down", f, h});
  }
  return out;
}

class Builder {
 public:
  Builder(const LayerCostInputs& in, LayerCost& out) : in_(in), out_(out) {}

  void add_ops(const std::vector<Operator>& ops, bool frozen, double attention_scale) {
    const DType prec = in_.run.train.precision;
    const bool recompute_all = in_.run.train.recompute == Recompute::Full;
    const bool recompute_core = in_.run.train.recompute == Recompute::Selective;
    for (Operator op : ops) {
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
      out_.fwd += f;
      out_.bwd += b;
      const bool again = recompute_all || (recompute_core && is_attention_core(op) && op.kind != OpKind::FlashAttn);
      if (again) {
        out_.recompute += f;
        if (op.kind == OpKind::TpComm || op.kind == OpKind::MoeComm) out_.recompute_comm += f;
        else out_.recompute_flops += op.fwd_flops;
      }
      const double total = f.value + b.value + (again ? f.value : 0.0);
      out_.by_module[module] += total;
      out_.by_class[op_class_key(op, false)] += f.value + (again ? f.value : 0.0);
      out_.by_class[op_class_key(op, true)] += b.value;
    }
  }

  // LoRA adapters on the layer's projections: two skinny GEMMs forward (x A, then (x A) B), their
  // four backward GEMMs (activation and weight gradients of A and B), and one elementwise pass for
  // dropout on x and the scaled add onto the base output (PEFT LoraLayer.forward).
  void add_lora(std::int64_t tokens, bool dense_mlp) {
    const auto& t = in_.run.train;
    const DType prec = t.precision;
    const double a = dtype_bytes(prec), r = dbl(t.lora_rank), T = dbl(tokens);
    const auto& cc = in_.compute;
    for (const Adapter& ad : adapters(in_.model, t, in_.run.par.tp, dense_mlp)) {
      const auto R = t.lora_rank;
      const auto din = static_cast<std::int64_t>(ad.d_in), dout = static_cast<std::int64_t>(ad.d_out);
      const double fa = 2 * T * ad.d_in * r, fb = 2 * T * r * ad.d_out;
      const double ba = (T * ad.d_in + ad.d_in * r + T * r) * a, bb = (T * r + r * ad.d_out + T * ad.d_out) * a;
      Interval f = cc.gemm(tokens, R, din, 1, fa, ba, prec) + cc.gemm(tokens, dout, R, 1, fb, bb, prec);
      const double ew = (2 * T * ad.d_in + 3 * T * ad.d_out) * a;
      f += cc.memory_bound(ew, 2);
      // Backward: dX of B, dB, dX of A, dA; same FLOPs and bytes as forward each.
      Interval b = cc.gemm(tokens, R, dout, 1, fb, bb, prec) + cc.gemm(R, dout, tokens, 1, fb, bb, prec) +
                   cc.gemm(tokens, din, R, 1, fa, ba, prec) + cc.gemm(din, R, tokens, 1, fa, ba, prec) +
                   cc.memory_bound(ew, 2);
      out_.fwd += f;
      out_.bwd += b;
      out_.fwd_flops += fa + fb;
      out_.bwd_flops += 2 * (fa + fb);
      const double p = r * (ad.d_in + ad.d_out);
      out_.params += p;
      out_.trainable_params += p;
      const bool again = t.recompute == Recompute::Full;
      if (again) {
        out_.recompute += f;
        out_.recompute_flops += fa + fb;
      }
      out_.by_module["lora"] += f.value + b.value + (again ? f.value : 0.0);
      out_.by_class["gemm"] += f.value + b.value + (again ? f.value : 0.0);
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
    out_.fwd += ef;
    out_.bwd += eb;
    out_.fwd_comm += ef;
    out_.bwd_comm += eb;
    if (in_.run.train.recompute == Recompute::Full) {
      out_.recompute += ef;
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
  const std::string& n = op.name;
  if (ends_with(n, ".dequant")) return "dequantization";
  if (ends_with(n, "_cast")) return "amp_casts";
  if (op.kind == OpKind::TpComm) return "communication.tp";
  if (op.kind == OpKind::MoeComm) return "communication.ep";
  if (op.kind == OpKind::Norm) return "norm";
  if (op.module == model::Module::Residual) return "residual";
  if (n == "attn.qkv_proj") return "attention.qkv";
  if (n == "attn.rope") return "attention.rope";
  if (n == "attn.out_proj") return "attention.out_proj";
  if (is_attention_core(op)) return "attention.core";
  if (starts_with(n, "attn.")) return "attention.other";
  if (starts_with(n, "mlp.")) return "mlp";
  if (starts_with(n, "moe.")) return "moe";
  if (starts_with(n, "embed.")) return "embedding";
  if (starts_with(n, "head.")) return "lm_head_loss";
  return "other";
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
  p.act_dtype = t.precision == DType::FP32 || t.precision == DType::TF32 ? DType::FP32 : DType::BF16;
  if (t.precision == DType::FP16) p.act_dtype = DType::FP16;
  p.weight_dtype = layer_weight_dtype(run);
  p.training = true;
  p.glue = training_glue(in.framework, t);

  const bool lora = run.workload == Workload::Finetune && t.finetune != FinetuneKind::Full;
  LayerCost out;
  out.kind = kind;
  Builder b(in, out);
  if (kind == LayerKind::Embedding) {
    b.add_ops(model::embedding_ops(in.model, p).ops, lora, 1.0);
    return out;
  }
  if (kind == LayerKind::Head) {
    b.add_ops(model::head_ops(in.model, p).ops, lora, 1.0);
    return out;
  }
  const auto inv = model::layer_ops(in.model, p, layer_index);
  // With CP each rank holds s/cp queries but attends over the whole (causal) sequence: its share of the
  // attention work is 1/cp of the full sequence's, i.e. cp times that of an s/cp-token sequence.
  b.add_ops(inv.ops, lora, static_cast<double>(cp));
  if (lora) b.add_lora(t.micro_batch * p.q_len, !in.model.is_moe_layer(layer_index));
  if (cp > 1) {
    Interval core_f, core_b;
    for (const auto& op : inv.ops)
      if (is_attention_core(op)) {
        core_f += in.compute.forward(op, t.precision) * static_cast<double>(cp);
        core_b += in.compute.backward(op, t.precision, false) * static_cast<double>(cp);
      }
    const double kv_bytes = 2.0 * dbl(t.micro_batch) * dbl(t.seq_len) * dbl(in.model.kv_dim()) / dbl(run.par.tp) *
                            dtype_bytes(p.act_dtype);
    b.add_context_parallel(kv_bytes, core_f, core_b);
  }
  // Expert parallelism: each GPU holds num_experts / ep of the experts.
  if (in.model.is_moe_layer(layer_index) && run.par.ep > 1) {
    double expert = 0;
    for (const auto& op : inv.ops)
      if (starts_with(op.name, "moe.experts_")) expert += dbl(op.weight_params);
    const double drop = expert * (1.0 - 1.0 / dbl(run.par.ep));
    out.params -= drop;
    if (!lora) out.trainable_params -= drop;
  }
  return out;
}

}  // namespace llmsim::sim

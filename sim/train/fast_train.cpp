#include "llmsim/train/fast_train.h"

#include <algorithm>
#include <cmath>

#include "llmsim/memory/activation_memory.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/memory/training_stage.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/step_terms.h"
#include "llmsim/train/train_layer_cost.h"

namespace llmsim::sim {

namespace {

using model::Collective;

double dbl(std::int64_t v) { return static_cast<double>(v); }

}  // namespace

FastTrainEvaluator::FastTrainEvaluator(const model::ModelSpec& m, const hardware::SystemSpec& sys)
    : m_(m), sys_(sys), compute_(sys), comm_(sys) {}

void FastTrainEvaluator::check_fixed_part(const RunSpec& run) {
  const auto& t = run.train;
  if (have_fixed_ && workload_ == run.workload && seq_len_ == t.seq_len && finetune_ == t.finetune &&
      lora_rank_ == t.lora_rank && lora_targets_ == t.lora_targets && base_quant_ == t.base_quant &&
      attn_kernel_ == t.attn_kernel && fused_loss_ == t.fused_loss && expert_imbalance_ == run.par.expert_imbalance)
    return;
  cache_.clear();
  stage_params_cache_.clear();
  have_fixed_ = true;
  workload_ = run.workload;
  seq_len_ = t.seq_len;
  finetune_ = t.finetune;
  lora_rank_ = t.lora_rank;
  lora_targets_ = t.lora_targets;
  base_quant_ = t.base_quant;
  attn_kernel_ = t.attn_kernel;
  fused_loss_ = t.fused_loss;
  expert_imbalance_ = run.par.expert_imbalance;
}

const FastTrainEvaluator::Costs& FastTrainEvaluator::costs(const RunSpec& run) {
  check_fixed_part(run);
  const auto& p = run.par;
  const auto& t = run.train;
  const FrameworkProfile& fw = framework_profile(t.framework);
  // Everything layer_cost reads that a search varies: micro-batch, tp, cp, ep, sequence parallelism,
  // FlashAttention, precision, recomputation, the framework (its kernel glue) and the ZeRO stage (DeepSpeed's
  // hooks on the host critical path).
  const std::uint64_t key =
      static_cast<std::uint64_t>(t.micro_batch) | static_cast<std::uint64_t>(p.tp) << 20 |
      static_cast<std::uint64_t>(p.cp) << 30 | static_cast<std::uint64_t>(p.ep) << 38 |
      static_cast<std::uint64_t>(p.sequence_parallel) << 46 | static_cast<std::uint64_t>(t.flash_attn) << 47 |
      static_cast<std::uint64_t>(t.precision) << 48 | static_cast<std::uint64_t>(t.recompute) << 54 |
      static_cast<std::uint64_t>(t.framework) << 56 | static_cast<std::uint64_t>(t.zero_stage & 3) << 60;
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;

  const LayerGroups groups = layer_groups(p, hardware::fast_domain_gpus(sys_));
  const ComputeCost compute(sys_, t.attn_kernel);
  const LayerCostInputs li{m_, run, fw, compute, comm_, groups};
  auto conv = [](const LayerCost& lc) {
    return Cost{lc.fwd.value,      lc.bwd.value,        lc.recompute.value,
                lc.fwd_comm.value, lc.bwd_comm.value,   lc.recompute_comm.value,
                lc.params,         lc.trainable_params, lc.gather_bytes};
  };
  Costs c;
  c.embed = conv(layer_cost(li, LayerKind::Embedding, 0));
  c.head = conv(layer_cost(li, LayerKind::Head, 0));
  for (std::int64_t l = 0; l < m_.num_layers; ++l) {
    if (m_.is_moe_layer(l)) {
      c.moe = conv(layer_cost(li, LayerKind::Moe, l));
      break;
    }
  }
  for (std::int64_t l = 0; l < m_.num_layers; ++l) {
    if (!m_.is_moe_layer(l)) {
      c.dense = conv(layer_cost(li, LayerKind::Dense, l));
      break;
    }
  }
  return cache_.emplace(key, c).first->second;
}

FastTrainEvaluator::Affine FastTrainEvaluator::affine(Collective kind, const CommGroup& g) const {
  if (g.size <= 1) return Affine{};
  constexpr double b1 = 1 << 20, b2 = 1 << 30;
  const double t1 = comm_.collective(kind, b1, g).value, t2 = comm_.collective(kind, b2, g).value;
  const double slope = (t2 - t1) / (b2 - b1);
  return Affine{t1 - slope * b1, slope};
}

const std::vector<FastTrainEvaluator::StageParams>& FastTrainEvaluator::stage_params(std::int64_t pp, std::int64_t tp,
                                                                                     std::int64_t ep, std::int64_t vp,
                                                                                     const TrainSpec& t) {
  // The layout depends on vp only where interleaving splits the layers unevenly (stage_layout.h).
  const std::int64_t split_vp = embedding_loss_split(pp, vp, m_.num_layers) ? vp : 1;
  const std::uint64_t key = static_cast<std::uint64_t>(pp) | static_cast<std::uint64_t>(tp) << 16 |
                            static_cast<std::uint64_t>(ep) << 32 | static_cast<std::uint64_t>(split_vp) << 48;
  if (const auto it = stage_params_cache_.find(key); it != stage_params_cache_.end()) return it->second;
  // The memory model's count per stage (sim::stage_params), with its layer kinds and LoRA adapters.
  // Training keeps expert parallelism across data-parallel ranks (sim/run/expert_layout.h): dp = ep says so.
  const ParallelSpec par{.tp = tp, .pp = pp, .dp = ep, .ep = ep, .vp = split_vp};
  std::vector<StageParams> out(static_cast<std::size_t>(pp));
  for (std::int64_t s = 0; s < pp; ++s) {
    const StageLayers stage = stage_layers(s, pp, m_.num_layers, split_vp);
    StageParams& sp = out[static_cast<std::size_t>(s)];
    const sim::StageParams counted = sim::stage_params(m_, par, s);
    sp.linear = counted.linear;
    sp.other = counted.other;
    sp.largest_layer = counted.largest_layer;
    sp.lora = lora_params(m_, par, stage.first, stage.count, t);
    for (std::int64_t l = stage.first; l < stage.first + stage.count; ++l)
      ++(m_.is_moe_layer(l) ? sp.moe_layers : sp.dense_layers);
  }
  return stage_params_cache_.emplace(key, std::move(out)).first->second;
}

FastMemory FastTrainEvaluator::memory(const RunSpec& run) {
  check_fixed_part(run);
  const auto& par = run.par;
  const auto& t = run.train;
  FastMemory out;
  out.gpu_capacity_bytes = sys_.gpu.memory_bytes;
  out.host_capacity_bytes = sys_.node.host_memory_bytes;
  const bool lora = t.finetune != FinetuneKind::Full;
  const ActivationParams ap = training_activation_params(run);
  // Per layer kind (layer_activations depends on the layer only through is_moe_layer).
  double stored[2] = {0, 0}, working[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    std::int64_t idx = -1;
    for (std::int64_t l = 0; l < m_.num_layers; ++l)
      if (m_.is_moe_layer(l) == (k == 1)) {
        idx = l;
        break;
      }
    if (idx < 0) continue;
    stored[k] = stored_layer_bytes(m_, ap, idx, t.recompute);
    working[k] = recompute_working_bytes(m_, ap, idx, t.recompute, stored[k]);
  }
  const double gpus_on_node = dbl(std::min<std::int64_t>(par.gpus, sys_.node.gpus_per_node));

  double best = -1;
  const std::int64_t L = m_.num_layers, pp = par.pp;
  const auto& stages = stage_params(pp, par.tp, par.ep, par.vp, t);
  for (std::int64_t s = 0; s < pp; ++s) {
    const StageLayers stage = stage_layers(s, pp, L, par.vp);
    const StageParams& sp = stages[static_cast<std::size_t>(s)];
    const double per_mb = dbl(sp.dense_layers) * stored[0] + dbl(sp.moe_layers) * stored[1];
    const double working_set = std::max(sp.dense_layers > 0 ? working[0] : 0.0, sp.moe_layers > 0 ? working[1] : 0.0);
    const double total_params = sp.linear + sp.other;
    const double trainable = lora ? sp.lora : total_params;
    const bool is_first = s == 0, is_last = s == pp - 1;

    // The memory model's items of the stage (training_stage_items), summed; host items per node.
    const StageInputs in{.index = s,
                         .layers = stage.count,
                         .first = is_first,
                         .last = is_last,
                         .linear = sp.linear,
                         .other = sp.other,
                         .largest_layer = sp.largest_layer,
                         .trainable = trainable,
                         .per_mb = per_mb,
                         .recompute_working_set = working_set};
    double gpu = 0, host = 0;
    training_stage_items(m_, sys_, run, in, [&](MemoryKind, MemoryPlace where, double bytes, const auto&) {
      if (where == MemoryPlace::Host)
        host += bytes * gpus_on_node;
      else
        gpu += bytes;
    });
    if (gpu > best) {
      best = gpu;
      out.gpu_bytes = gpu;
      out.host_bytes = host;
      out.peak_stage = s;
    }
  }
  return out;
}

}  // namespace llmsim::sim

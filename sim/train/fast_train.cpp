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
  // The MoE and the dense layers, each at the average of its token mixers (attention, Gated DeltaNet) over the
  // model's layers of that kind (layer_mix): exact for stages that hold whole periods of a hybrid's pattern;
  // the scheduled step (train_graph) prices every layer as it is.
  const auto kind_cost = [&](bool moe) {
    Cost out;
    for (const auto& [layer, weight] : layer_mix(moe)) {
      const Cost k = conv(layer_cost(li, moe ? LayerKind::Moe : LayerKind::Dense, layer));
      out.fwd += weight * k.fwd;
      out.bwd += weight * k.bwd;
      out.recompute += weight * k.recompute;
      out.fwd_comm += weight * k.fwd_comm;
      out.bwd_comm += weight * k.bwd_comm;
      out.recompute_comm += weight * k.recompute_comm;
      out.params += weight * k.params;
      out.trainable += weight * k.trainable;
      out.gather_bytes += weight * k.gather_bytes;
    }
    return out;
  };
  c.moe = kind_cost(true);
  c.dense = kind_cost(false);
  return cache_.emplace(key, c).first->second;
}

std::vector<std::pair<std::int64_t, double>> FastTrainEvaluator::layer_mix(bool moe) const {
  // The first layer of each token mixer among the layers of this kind, weighted by the mixer's share of them.
  std::int64_t first[2] = {-1, -1}, count[2] = {0, 0};
  for (std::int64_t l = 0; l < m_.num_layers; ++l) {
    if (m_.is_moe_layer(l) != moe) continue;
    const int mixer = m_.is_linear_attention_layer(l) ? 1 : 0;
    if (count[mixer]++ == 0) first[mixer] = l;
  }
  std::vector<std::pair<std::int64_t, double>> out;
  const double n = dbl(count[0] + count[1]);
  for (int k = 0; k < 2; ++k)
    if (count[k] > 0) out.emplace_back(first[k], dbl(count[k]) / n);
  return out;
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
    for (std::int64_t l = stage.first; l < stage.first + stage.count; ++l) ++sp.kind_layers[layer_kind(l)];
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
  // Per layer kind (layer_activations depends on the layer only through is_moe_layer and its token mixer).
  std::array<double, 4> stored{}, working{};
  std::array<bool, 4> seen{};
  for (std::int64_t l = 0; l < m_.num_layers; ++l) {
    const std::size_t k = layer_kind(l);
    if (seen[k]) continue;
    seen[k] = true;
    stored[k] = stored_layer_bytes(m_, ap, l, t.recompute);
    working[k] = recompute_working_bytes(m_, ap, l, t.recompute, stored[k]);
  }
  const double gpus_on_node = dbl(std::min<std::int64_t>(par.gpus, sys_.node.gpus_per_node));

  double best = -1;
  const std::int64_t L = m_.num_layers, pp = par.pp;
  const auto& stages = stage_params(pp, par.tp, par.ep, par.vp, t);
  for (std::int64_t s = 0; s < pp; ++s) {
    const StageLayers stage = stage_layers(s, pp, L, par.vp);
    const StageParams& sp = stages[static_cast<std::size_t>(s)];
    double per_mb = 0, working_set = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      per_mb += dbl(sp.kind_layers[k]) * stored[k];
      if (sp.kind_layers[k] > 0) working_set = std::max(working_set, working[k]);
    }
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

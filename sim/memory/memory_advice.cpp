#include "llmsim/memory/memory_advice.h"

#include <functional>

#include <fmt/format.h>

#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"

namespace llmsim::sim {

namespace {
struct Candidate {
  std::string change;
  std::function<bool(RunSpec&)> apply;  // false when the change does not apply to this run
};

std::vector<Candidate> training_candidates(const model::ModelSpec& m) {
  return {
      {"--flash-attn", [](RunSpec& r) { return !r.train.flash_attn && (r.train.flash_attn = true); }},
      {"--fused-loss",
       [](RunSpec& r) {
         const FrameworkProfile& fw = framework_profile(r.train.framework);
         TrainSpec fused = r.train;
         fused.fused_loss = true;
         // Only where it saves bytes (Megatron's loss is already as small).
         if (loss_logits_bytes(fw, fused) >= loss_logits_bytes(fw, r.train)) return false;
         r.train.fused_loss = true;
         return true;
       }},
      {"--recompute selective",
       [](RunSpec& r) {
         return r.train.recompute == Recompute::None && ((r.train.recompute = Recompute::Selective), true);
       }},
      {"--sequence-parallel",
       [](RunSpec& r) { return r.par.tp > 1 && !r.par.sequence_parallel && (r.par.sequence_parallel = true); }},
      {"--recompute full",
       [](RunSpec& r) {
         return r.train.recompute != Recompute::Full && ((r.train.recompute = Recompute::Full), true);
       }},
      {"--micro-batch 1", [](RunSpec& r) { return r.train.micro_batch > 1 && ((r.train.micro_batch = 1), true); }},
      {"--zero-stage 1",
       [](RunSpec& r) { return r.par.dp > 1 && r.train.zero_stage < 1 && ((r.train.zero_stage = 1), true); }},
      {"--zero-stage 2",
       [](RunSpec& r) { return r.par.dp > 1 && r.train.zero_stage < 2 && ((r.train.zero_stage = 2), true); }},
      {"--zero-stage 3",
       [](RunSpec& r) { return r.par.dp > 1 && r.train.zero_stage < 3 && ((r.train.zero_stage = 3), true); }},
      {"--optimizer adam8bit",
       [](RunSpec& r) {
         return r.train.optimizer == Optimizer::Adam && ((r.train.optimizer = Optimizer::Adam8bit), true);
       }},
      {"--optimizer-state-dtype bf16",  // Megatron-LM's precision-aware optimizer
       [](RunSpec& r) {
         if (r.train.framework != Framework::Megatron || r.train.optimizer != Optimizer::Adam ||
             r.train.optimizer_state_dtype)
           return false;
         r.train.optimizer_state_dtype = DType::BF16;
         return true;
       }},
      {"--master-weights none",
       [](RunSpec& r) {
         // No change for an fp32 run or QLoRA's recipe; frameworks without the recipe are filtered by
         // run_problems in suggest_fits.
         if (!r.train.master_weights || r.train.precision == DType::FP32 || r.train.finetune == FinetuneKind::Qlora)
           return false;
         r.train.master_weights = false;
         return true;
       }},
      {"--optimizer-in-backward",  // framework, offload and accumulation rules: run_problems
       [](RunSpec& r) { return !r.train.optimizer_in_backward && (r.train.optimizer_in_backward = true); }},
      {"--zero-stage 2 --offload optimizer",
       [](RunSpec& r) {
         if (r.train.offload != Offload::None) return false;
         r.train.zero_stage = std::max(r.train.zero_stage, 2);
         r.train.offload = Offload::Optimizer;
         return true;
       }},
      {"--zero-stage 3 --offload optimizer+params",
       [](RunSpec& r) {
         if (r.train.offload == Offload::OptimizerParams) return false;
         r.train.zero_stage = 3;
         r.train.offload = Offload::OptimizerParams;
         return true;
       }},
      {"--tp x2",
       [m](RunSpec& r) {
         const auto tp = r.par.tp * 2;
         if (r.par.dp % 2 != 0 || m.num_heads % tp != 0) return false;
         r.par.tp = tp;
         r.par.dp /= 2;
         r.train.global_batch = 0;
         return true;
       }},
      {"--pp x2",
       [m](RunSpec& r) {
         const auto pp = r.par.pp * 2;
         if (r.par.dp % 2 != 0 || pp > m.num_layers) return false;
         r.par.pp = pp;
         r.par.dp /= 2;
         r.train.global_batch = 0;
         return true;
       }},
      {"--lora-rank 16",
       [](RunSpec& r) {
         if (r.workload != Workload::Finetune || r.train.finetune != FinetuneKind::Full) return false;
         r.train.finetune = FinetuneKind::Lora;
         r.train.lora_rank = 16;
         return true;
       }},
      {"--qlora",
       [](RunSpec& r) {
         if (r.workload != Workload::Finetune || r.train.finetune == FinetuneKind::Qlora) return false;
         r.train.finetune = FinetuneKind::Qlora;
         if (r.train.lora_rank == 0) r.train.lora_rank = kQloraDefaultRank;
         return true;
       }},
  };
}

std::vector<Candidate> inference_candidates(const model::ModelSpec& m) {
  const auto quant = [](model::WeightQuant q) {
    return [q](RunSpec& r) {
      return r.infer.weight_quant == model::WeightQuant::None && ((r.infer.weight_quant = q), true);
    };
  };
  return {
      {"--kv-dtype fp8",
       [](RunSpec& r) { return r.infer.kv_dtype != DType::FP8 && ((r.infer.kv_dtype = DType::FP8), true); }},
      {"--weight-quant int8", quant(model::WeightQuant::Int8)},
      {"--weight-quant int4", quant(model::WeightQuant::Int4)},
      {"--batch /2", [](RunSpec& r) { return r.infer.batch > 1 && ((r.infer.batch /= 2), true); }},
      {"--batch 1", [](RunSpec& r) { return r.infer.batch > 2 && ((r.infer.batch = 1), true); }},
      {"--tp x2",
       [m](RunSpec& r) {
         const auto tp = r.par.tp * 2;
         if (m.num_heads % tp != 0) return false;
         r.par.tp = tp;
         r.par.gpus *= 2;
         return true;
       }},
  };
}
}  // namespace

std::vector<FitSuggestion> suggest_fits(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                                        std::size_t limit) {
  std::vector<FitSuggestion> out;
  const RunSpec base = with_defaults(run);
  const auto candidates = base.workload == Workload::Inference ? inference_candidates(m) : training_candidates(m);
  for (const auto& c : candidates) {
    if (out.size() >= limit) break;
    RunSpec changed = base;
    if (!c.apply(changed) || !run_problems(m, sys, changed).empty()) continue;
    const MemoryResult r = evaluate_memory(m, sys, changed);
    if (r.fits()) out.push_back({c.change, r.gpu_bytes, r.host_bytes});
  }
  return out;
}

}  // namespace llmsim::sim

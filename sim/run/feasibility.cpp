#include "llmsim/run/feasibility.h"

#include <algorithm>

#include <fmt/format.h>

#include "llmsim/hardware/attention_support.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/expert_layout.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/sample_lengths.h"
#include "llmsim/run/stage_layout.h"

namespace llmsim::sim {

namespace {
// The inference engines, which have no training recipe.
bool is_engine(Framework f) { return !is_training_framework(f); }

}  // namespace

std::vector<std::string> structural_problems(const RunSpec& run, const model::ModelSpec& m) {
  std::vector<std::string> why;
  const auto& p = run.par;
  if (m.num_heads % p.tp != 0)
    why.push_back(fmt::format("tp {} does not divide the {} attention heads", p.tp, m.num_heads));
  if (run.workload != Workload::Inference && m.num_kv_heads % p.tp != 0)
    // Megatron-LM asserts num_query_groups % tensor_model_parallel_size == 0 (arguments.py); the other
    // training stacks shard the K and V projections the same way.
    why.push_back(
        fmt::format("tp {} does not divide the {} KV heads (training splits them across ranks)", p.tp, m.num_kv_heads));
  else if (model::kv_heads_per_rank(m, p.tp) == 0)
    // vLLM's QKVParallelLinear replicates KV heads when tp >= their count and needs tp % heads == 0.
    why.push_back(
        fmt::format("tp {} and the {} KV heads do not divide one another (engines split the KV heads "
                    "across ranks, or replicate them when tp is a multiple of their count)",
                    p.tp, m.num_kv_heads));
  if (const auto& g = m.linear_attn;
      g.kind == model::LinearMixer::GatedDeltaNet && (g.key_heads % p.tp != 0 || g.value_heads % p.tp != 0))
    // vLLM's and transformers' Gated DeltaNet split its key and value heads across the ranks.
    why.push_back(fmt::format("tp {} does not divide the Gated DeltaNet layers' {} key and {} value heads", p.tp,
                              g.key_heads, g.value_heads));
  if (const auto& g = m.linear_attn; g.kind == model::LinearMixer::Mamba2 && g.ssm_heads % p.tp != 0)
    // vLLM's MambaMixer2 splits its heads across the ranks.
    why.push_back(fmt::format("tp {} does not divide the Mamba-2 layers' {} heads", p.tp, g.ssm_heads));
  if (m.linear_attn.enabled() && p.cp > 1)
    why.push_back(fmt::format(
        "cp {}: context parallelism over {} layers (their recurrence crosses the sequence's shards) is not modelled",
        p.cp, model::linear_mixer_name(m.linear_attn.kind)));
  if (p.tp * p.pp * p.cp * p.dp != p.gpus)
    why.push_back(fmt::format("gpus {} != tp {} x pp {} x cp {} x dp {}", p.gpus, p.tp, p.pp, p.cp, p.dp));
  if (p.pp > m.num_layers) why.push_back(fmt::format("pp {} exceeds the {} layers", p.pp, m.num_layers));
  if (p.vp > 1 && p.pp * p.vp > m.num_layers)
    why.push_back(fmt::format("pp {} x vp {} exceeds the {} layers", p.pp, p.vp, m.num_layers));
  if (p.vp > 1 && p.pp == 1) why.push_back("vp > 1 (interleaved pipeline) needs pp > 1");
  if (p.ep > 1 && (!m.moe.enabled() || m.moe.num_experts % p.ep != 0))
    why.push_back(m.moe.enabled() ? fmt::format("ep {} does not divide the {} experts", p.ep, m.moe.num_experts)
                                  : fmt::format("ep {} needs a mixture-of-experts model", p.ep));
  // EP across DP ranks everywhere; inside the TP group for inference only (sim/run/expert_layout.h).
  if (p.ep > 1 && p.dp % p.ep != 0 && !(run.workload == Workload::Inference && experts_within_tp(p)))
    why.push_back(run.workload == Workload::Inference
                      ? fmt::format("ep {} divides neither dp {} (experts across replicas) nor tp {} (experts inside "
                                    "the tensor-parallel group)",
                                    p.ep, p.dp, p.tp)
                      : fmt::format("ep {} does not divide dp {}", p.ep, p.dp));
  if (run.workload != Workload::Inference) {
    const auto& t = run.train;
    if (t.global_batch % (t.micro_batch * p.dp) != 0)
      why.push_back(fmt::format("global batch {} is not a multiple of micro-batch {} x dp {}", t.global_batch,
                                t.micro_batch, p.dp));
    if (t.seq_len % p.cp != 0) why.push_back(fmt::format("cp {} does not divide seq-len {}", p.cp, t.seq_len));
    if (p.sequence_parallel && t.seq_len % p.tp != 0)
      why.push_back(fmt::format("sequence parallelism needs tp {} to divide seq-len {}", p.tp, t.seq_len));
    if (t.finetune != FinetuneKind::Full && t.lora_rank <= 0)
      why.push_back(fmt::format("{} needs --lora-rank > 0", name_of(t.finetune)));
    // The adapters are laid out on q, k, v, o (run/lora_adapters.h); MLA's q_a/q_b/kv_a/kv_b are not, nor a Gated
    // DeltaNet's in_proj_qkvz / in_proj_ba / out_proj.
    if (t.finetune != FinetuneKind::Full && m.mla.enabled())
      why.push_back(fmt::format("{} on multi-head latent attention (q_a/q_b/kv_a/kv_b projections) is not modelled",
                                name_of(t.finetune)));
    if (t.finetune != FinetuneKind::Full && m.linear_attn.enabled())
      why.push_back(fmt::format("{} on {} layers (their in_proj and out_proj) is not modelled", name_of(t.finetune),
                                model::linear_mixer_name(m.linear_attn.kind)));
    if (t.finetune == FinetuneKind::Full && t.lora_rank > 0)
      why.push_back("--lora-rank given but fine-tuning is full (use --finetune lora or --qlora)");
    if (t.base_quant != model::WeightQuant::None && t.finetune == FinetuneKind::Full)
      why.push_back(fmt::format("a {} quantized base needs frozen weights (--finetune lora or --qlora)",
                                model::weight_quant_name(t.base_quant)));
    if (t.optimizer_state_dtype && t.optimizer != Optimizer::Adam)
      why.push_back(
          fmt::format("--optimizer-state-dtype applies to adam; {} keeps its own state format", name_of(t.optimizer)));
    if (t.optimizer_in_backward && t.global_batch != t.micro_batch * p.dp)
      why.push_back(
          fmt::format("--optimizer-in-backward steps on each micro-batch's gradients, so it cannot "
                      "accumulate {} micro-batches per step (global batch must be micro-batch {} x dp {})",
                      micro_batches_per_step(run), t.micro_batch, p.dp));
    if (t.overlap_param_gather && (t.zero_stage < 1 || t.zero_stage > 2))
      why.push_back(
          fmt::format("--overlap-param-gather overlaps the parameter all-gather of ZeRO-1/2 (the "
                      "distributed optimizer); ZeRO-{} has none after the step",
                      t.zero_stage));
    if (t.optimizer_in_backward && t.offload != Offload::None)
      why.push_back("--optimizer-in-backward runs the optimizer on the GPU during backward; it cannot be offloaded");
    if (t.offload != Offload::None && t.zero_stage == 0)
      why.push_back("offload needs ZeRO stage 1, 2 or 3 (DeepSpeed ZeRO-Offload)");
    if (t.offload == Offload::OptimizerParams && t.zero_stage != 3)
      why.push_back("parameter offload (ZeRO-Infinity) needs ZeRO stage 3");
    if (t.zero_stage > 0 && p.pp > 1 && t.zero_stage >= 2 && t.framework == Framework::DeepSpeed)
      why.push_back("DeepSpeed does not support ZeRO stage 2/3 with pipeline parallelism");
  }
  return why;
}

std::vector<std::string> training_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                           const RunSpec& run) {
  std::vector<std::string> why;
  const auto& t = run.train;
  const auto& p = run.par;
  if (run.workload == Workload::Inference) why.push_back("the workload is inference; use `llmsim infer`");
  if (sys.gpu.peak(t.precision) <= 0)
    why.push_back(fmt::format("{} has no {} compute path in its system profile (no peak given)", sys.gpu.name,
                              dtype_name(t.precision)));
  if (t.flash_attn)
    if (auto k = hardware::attention_kernel_problem(sys, t.attn_kernel); !k.empty()) why.push_back(std::move(k));
  if (is_engine(t.framework))
    why.push_back(
        fmt::format("{} is an inference engine; train with megatron, deepspeed, fsdp or hf", name_of(t.framework)));
  if (t.framework == Framework::Hf && (t.zero_stage > 0 || p.tp > 1 || p.pp > 1))
    why.push_back(
        "the hf profile is plain PyTorch DDP (no ZeRO, TP or PP); use --framework deepspeed, fsdp or megatron");
  // torch.distributed.fsdp.ShardingStrategy: NO_SHARD (stage 0), SHARD_GRAD_OP (2), FULL_SHARD and
  // HYBRID_SHARD (3); sharding the optimizer states alone is torch's ZeroRedundancyOptimizer, not FSDP.
  if (t.framework == Framework::Fsdp && t.zero_stage == 1)
    why.push_back(
        "fsdp has no ZeRO-1 mode: its sharding strategies are NO_SHARD (stage 0), SHARD_GRAD_OP (2) and "
        "FULL_SHARD / HYBRID_SHARD (3)");
  if (t.offload != Offload::None && t.framework != Framework::DeepSpeed && t.framework != Framework::Fsdp)
    why.push_back(
        fmt::format("offload is a DeepSpeed (ZeRO-Offload) / FSDP (CPUOffload) feature, not {}", name_of(t.framework)));
  const FrameworkProfile& fw = framework_profile(t.framework);
  if (t.optimizer_in_backward && !fw.optimizer_in_backward)
    why.push_back(
        fmt::format("{} has no optimizer-in-backward step; it is a PyTorch recipe (torchtune "
                    "optimizer_in_bwd): use --framework fsdp or hf",
                    name_of(t.framework)));
  if (!t.master_weights && !fw.pure_16bit && t.finetune != FinetuneKind::Qlora)
    why.push_back(
        fmt::format("{} always keeps fp32 master weights; pure 16-bit training is a PyTorch recipe "
                    "(torchtune, a model loaded in bf16): use --framework fsdp or hf",
                    name_of(t.framework)));
  // Variable-length samples the step cannot price (sample_lengths.h): one rule for train and search.
  if (std::string why_not = sample_shape(t).problem; !why_not.empty()) why.push_back(std::move(why_not));
  if (t.recompute_layers > 0) {
    // Megatron --recompute-method block --recompute-num-layers N recomputes the first N layers of each
    // pipeline stage (of each virtual chunk with interleaving) and keeps the others' activations; at N >= the
    // layers a chunk holds it is full recomputation.
    // The most layers a chunk of the last stage (or the stage, without interleaving) holds.
    const std::int64_t pp = std::max<std::int64_t>(1, p.pp);
    std::int64_t chunk = 0;
    for (std::int64_t c = 0; c < std::max<std::int64_t>(1, p.vp); ++c)
      chunk = std::max(chunk, stage_chunk(pp - 1, c, pp, p.vp, m.num_layers).count);
    if (t.recompute != Recompute::Full)
      why.push_back(
          fmt::format("recompute_layers {} needs recompute full (it says how many layers of each stage "
                      "recompute fully)",
                      t.recompute_layers));
    else if (t.recompute_layers < chunk)
      why.push_back(fmt::format(
          "recomputing {} of the {} layers of each {} (Megatron --recompute-num-layers) is not modelled: the "
          "memory model and the step graph recompute all of a stage's layers or none",
          t.recompute_layers, chunk, p.vp > 1 ? "virtual chunk" : "pipeline stage"));
  }
  // Interleaving splits the layers evenly over pp x vp chunks, or (Megatron-core with the embedding and the loss
  // counted as layers) num_layers + 2 of them (sim/run/stage_layout.h); Megatron runs no other split.
  if (p.vp > 1 && m.num_layers % (p.pp * p.vp) != 0 && !embedding_loss_split(p.pp, p.vp, m.num_layers))
    why.push_back(fmt::format(
        "interleaving needs pp {} x vp {} = {} to divide the {} layers, or the {} with the embedding and the loss "
        "counted as layers (Megatron account_for_embedding_in_pipeline_split and "
        "account_for_loss_in_pipeline_split)",
        p.pp, p.vp, p.pp * p.vp, m.num_layers, m.num_layers + 2));
  if (p.dp > 0 && t.micro_batch > 0 && t.global_batch % (t.micro_batch * p.dp) == 0 && p.pp > 1) {
    const auto mb = static_cast<int>(micro_batches_per_step(run));
    for (auto& w : pipeline_problems(static_cast<int>(p.pp), static_cast<int>(p.vp), mb, t.schedule)) why.push_back(w);
  }
  if (p.gpus > hardware::fast_domain_gpus(sys) && sys.network.nics_per_node == 0)
    why.push_back(fmt::format("{} GPUs span several {}-GPU fabric domains but {} has no scale-out network", p.gpus,
                              hardware::fast_domain_gpus(sys), sys.name));
  return why;
}

std::vector<std::string> inference_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                            const RunSpec& run) {
  std::vector<std::string> why;
  const auto& in = run.infer;
  if (in.engine_version)
    if (std::string r = release_problem(in.framework, *in.engine_version); !r.empty()) why.push_back(std::move(r));
  if (in.gpu_layers >= 0) {
    const EngineProfile e = released_profile(in.framework, in.engine_version);
    if (!e.host_layers)
      why.push_back(
          fmt::format("--gpu-layers keeps layers in host memory, which only llama.cpp's profile does; {} "
                      "holds every layer on its GPUs",
                      e.name));
    else if (run.par.tp > 1 || run.par.pp > 1)
      why.push_back(
          "--gpu-layers is modelled on one GPU (tp 1, pp 1): layers in host memory beside a split over "
          "several GPUs are not");
  }
  const std::int64_t ctx = in.input_len + in.output_len;
  const std::int64_t served = served_context(m.max_positions, in);
  if (served > 0 && ctx > served)
    why.push_back(
        fmt::format("input {} + output {} = {} tokens exceed the {} maximum context of {}", in.input_len, in.output_len,
                    ctx, context_is_engines(m.max_positions, in) ? "engine's (max-model-len)" : "model's", served));
  const bool fp8_path = sys.gpu.peak(DType::FP8) > 0;
  if (in.weight_quant == model::WeightQuant::Fp8 && !fp8_path) {
    // Without FP8 tensor cores, fp8 weights run only where the engine has a weight-only kernel for them
    // (EngineProfile::fp8_weight_only), and only in dense GEMMs: vLLM's fused-MoE Triton kernel has no FP8
    // Marlin path, so FP8 MoE checkpoints need SM 8.9+ (vLLM fp8 docs; fused_moe Fp8MoEMethod).
    const EngineProfile e = released_profile(in.framework, in.engine_version);
    if (!e.fp8_weight_only)
      why.push_back(
          fmt::format("{} has no fp8 compute path in its system profile and the {} engine has no "
                      "weight-only fp8 kernel (vLLM runs fp8 weights as W8A16 on such GPUs)",
                      sys.gpu.name, e.name));
    else if (m.moe.num_experts > 0)
      why.push_back(
          fmt::format("{} has no fp8 compute path in its system profile and {}'s weight-only fp8 "
                      "kernel (FP8 Marlin) serves dense layers only, not MoE experts",
                      sys.gpu.name, e.name));
  }
  const DType compute = model::gemm_dtype(in.weight_quant, in.precision, fp8_path);
  if (sys.gpu.peak(compute) <= 0)
    why.push_back(fmt::format("{} has no {} compute path in its system profile", sys.gpu.name, dtype_name(compute)));
  if (auto k = hardware::attention_kernel_problem(sys, in.attn_kernel); !k.empty()) why.push_back(std::move(k));
  if ((in.kv_dtype == DType::FP8 || in.kv_dtype == DType::FP4) && sys.gpu.peak(in.kv_dtype) <= 0)
    why.push_back(fmt::format("an {0} KV cache needs {0} support, which {1} lacks in its profile",
                              dtype_name(in.kv_dtype), sys.gpu.name));
  for (auto& p : speculative_problems(m, in.speculative)) why.push_back(std::move(p));
  return why;
}

std::vector<std::string> speculative_problems(const model::ModelSpec& m, const SpeculativeSpec& s) {
  std::vector<std::string> why;
  if (!s.on()) return why;
  const std::string method(name_of(s.method));
  if (s.tokens <= 0)
    why.push_back(fmt::format("--speculative {} needs the draft tokens per step (--spec-tokens K)", method));
  if (s.acceptance < 0)
    why.push_back(
        fmt::format("--speculative {} needs the acceptance rate (--spec-acceptance, 0 to 1; published "
                    "values in docs/serving.md)",
                    method));
  if (s.method == SpecMethod::Draft && !s.draft)
    why.push_back("--speculative draft needs the draft model (--draft-model NAME or config.json path)");
  if (s.method == SpecMethod::Mtp && m.mtp_layers <= 0)
    why.push_back(
        fmt::format("{} has no multi-token prediction module (num_nextn_predict_layers) for --speculative "
                    "mtp",
                    m.name));
  if (s.method == SpecMethod::Draft && s.draft && s.draft->vocab != m.vocab)
    why.push_back(
        fmt::format("the draft model {} has a vocabulary of {} tokens and {} of {}: a drafter must share "
                    "the target's tokenizer",
                    s.draft->name, s.draft->vocab, m.name, m.vocab));
  return why;
}

std::vector<std::string> pipeline_problems(int pp, int vp, int micro_batches, PipelineSchedule s) {
  std::vector<std::string> why;
  if (vp > 1 && s == PipelineSchedule::GPipe) why.push_back("the gpipe schedule has no interleaved variant (vp > 1)");
  if (vp > 1 && pp > 1 && micro_batches % pp != 0)
    why.push_back(fmt::format("interleaved 1F1B needs the {} micro-batches per step to be a multiple of pp {}",
                              micro_batches, pp));
  return why;
}

std::vector<std::string> run_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                      const RunSpec& run_in) {
  const RunSpec run = with_defaults(run_in);
  std::vector<std::string> why = structural_problems(run, m);
  const auto more =
      run.workload == Workload::Inference ? inference_problems(m, sys, run) : training_problems(m, sys, run);
  why.insert(why.end(), more.begin(), more.end());
  return why;
}

}  // namespace llmsim::sim

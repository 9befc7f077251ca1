#include "llmsim/memory/memory_model.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "llmsim/core/units.h"
#include "llmsim/memory/activation_memory.h"
#include "llmsim/memory/training_stage.h"
#include "llmsim/model/param_count.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/run/expert_layout.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/lora_adapters.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/run/train_state_bytes.h"

namespace llmsim::sim {

std::string_view name_of(MemoryKind k) {
  switch (k) {
    case MemoryKind::Weights: return "weights";
    case MemoryKind::FrozenWeights: return "frozen_weights";
    case MemoryKind::AdapterWeights: return "adapter_weights";
    case MemoryKind::Gradients: return "gradients";
    case MemoryKind::OptimizerStates: return "optimizer_states";
    case MemoryKind::OffloadedOptimizer: return "offloaded_optimizer";
    case MemoryKind::OffloadedGradients: return "offloaded_gradients";
    case MemoryKind::OffloadedWeights: return "offloaded_weights";
    case MemoryKind::Zero3GatheredParams: return "zero3_gathered_params";
    case MemoryKind::CommBuckets: return "comm_buckets";
    case MemoryKind::Activations: return "activations";
    case MemoryKind::RecomputeWorkingSet: return "recompute_working_set";
    case MemoryKind::LogitsAndLoss: return "logits_and_loss";
    case MemoryKind::AmpWeightCopies: return "amp_weight_copies";
    case MemoryKind::GradientOverlap: return "gradient_overlap";
    case MemoryKind::OptimizerStepCopy: return "optimizer_step_copy";
    case MemoryKind::KvCache: return "kv_cache";
    case MemoryKind::RecurrentState: return "recurrent_state";
    case MemoryKind::Workspace: return "workspace";
    case MemoryKind::CudaContext: return "cuda_context";
    case MemoryKind::AllocatorReserve: return "allocator_reserve";
  }
  return "weights";
}

namespace {

// The layers a pipeline stage owns. When PP does not divide the layer count the last L % pp stages
// take one extra layer: they hold fewer micro-batches in flight under 1F1B.
struct Stage {
  std::int64_t index = 0;
  std::int64_t first_layer = 0;
  std::int64_t layers = 0;
  bool first = false;
  bool last = false;
};

Stage stage_of(std::int64_t index, std::int64_t pp, std::int64_t num_layers, std::int64_t vp) {
  const StageLayers layers = stage_layers(index, pp, num_layers, vp);
  return Stage{.index = index,
               .first_layer = layers.first,
               .layers = layers.count,
               .first = index == 0,
               .last = index == pp - 1};
}

}  // namespace

StageParams stage_params(const model::ModelSpec& m, const ParallelSpec& par, std::int64_t stage) {
  const StageLayers st = stage_layers(stage, par.pp, m.num_layers, par.vp);
  const double tp = static_cast<double>(par.tp);
  StageParams sp;
  for (std::int64_t l = st.first; l < st.first + st.count; ++l) {
    const auto lp = model::count_layer_params(m, l);
    // An MoE layer's router (and shared-expert gate) is replicated on every rank and stays 16-bit: "other".
    const double router = m.is_moe_layer(l) ? static_cast<double>(model::moe_replicated_params(m)) : 0.0;
    // Replicated KV heads (inference with tp above the KV heads) and MLA's down projections: each rank holds
    // them whole.
    const double replicated = model::replicated_kv_params(m, par.tp) + model::replicated_mla_params(m, par.tp);
    double linear = (static_cast<double>(lp.linear) - router) / tp + replicated;
    // Expert parallelism spreads the experts of an MoE layer over the EP group.
    if (const double split = static_cast<double>(expert_weight_split(par)); m.is_moe_layer(l) && split > 1)
      linear = (static_cast<double>(lp.attention) + (static_cast<double>(lp.mlp) - router) / split) / tp + replicated;
    const double norms = static_cast<double>(lp.total() - lp.linear) + router;  // replicated on every TP rank
    sp.linear += linear;
    sp.other += norms;
    sp.largest_layer = std::max(sp.largest_layer, linear + norms);
  }
  const auto pc = model::count_params(m);
  if (stage == 0) sp.other += static_cast<double>(pc.embedding) / tp + static_cast<double>(pc.position_embedding);
  if (stage == par.pp - 1) {
    sp.other += static_cast<double>(pc.final_norm);
    // Vocab-parallel LM head; a tied head on its own stage keeps a copy of the embedding (Megatron).
    if (pc.lm_head > 0)
      sp.other += static_cast<double>(pc.lm_head) / tp;
    else if (par.pp > 1)
      sp.other += static_cast<double>(pc.embedding) / tp;
  }
  return sp;
}

double lora_params(const model::ModelSpec& m, const ParallelSpec& par, std::int64_t first, std::int64_t count,
                   const TrainSpec& t) {
  const LoraParams dense = lora_layer_params(m, false, t.lora_rank, t.lora_targets);
  const LoraParams moe = lora_layer_params(m, true, t.lora_rank, t.lora_targets);
  double n = 0;
  for (std::int64_t l = first; l < first + count; ++l)
    n += (m.is_moe_layer(l) ? moe : dense).per_gpu(par.tp, expert_weight_split(par));
  return n;
}

namespace {

void add(std::vector<MemoryItem>& items, MemoryKind kind, double bytes, std::string note) {
  if (bytes > 0) items.push_back(MemoryItem{kind, std::string(name_of(kind)), bytes, std::move(note)});
}

double sum(const std::vector<MemoryItem>& items) {
  double s = 0;
  for (const auto& i : items) s += i.bytes;
  return s;
}

}  // namespace

double allocator_reserve_bytes(const hardware::SystemSpec& sys, double tensors) {
  return sys.runtime.allocator_reserve_fraction * std::max(0.0, tensors);
}

std::string allocator_reserve_note(const hardware::SystemSpec& sys, double tensors) {
  return fmt::format(
      "{:.0f}% of the {:.3g} GiB of tensors: the caching allocator's rounding and fragmentation (system "
      "runtime)",
      100.0 * sys.runtime.allocator_reserve_fraction, tensors / units::GiB);
}

namespace {

void add_runtime(std::vector<MemoryItem>& gpu, const hardware::SystemSpec& sys) {
  const double tensors = sum(gpu);
  add(gpu, MemoryKind::CudaContext, sys.runtime.cuda_context_bytes,
      "CUDA context, cuBLAS/NCCL workspaces (system runtime)");
  add(gpu, MemoryKind::AllocatorReserve, allocator_reserve_bytes(sys, tensors), allocator_reserve_note(sys, tensors));
}

struct StageMemory {
  std::vector<MemoryItem> gpu;
  std::vector<MemoryItem> host;  // per GPU; scaled to the node by the caller
  double params = 0;
};

}  // namespace

double amp_weight_copy_bytes(const model::EagerGlue& glue, double act_bytes, double params) {
  return glue.casts_weights(act_bytes) ? params * act_bytes : 0.0;
}

double gradient_overlap_bytes(const FrameworkProfile& fw, const RunSpec& run, std::int64_t micro_batches,
                              double gradients, double freed) {
  // Gradients grow during backward while the activations, logits and weight copies of the layers already
  // done are freed: at the peak only about the larger of the two sets is live.
  if (!fw.grads_transient || run.train.zero_stage != 0 || micro_batches > 1 || run.par.pp != 1) return 0.0;
  return std::max(0.0, std::min(gradients, freed));
}

double optimizer_step_copy_bytes(const FrameworkProfile& fw, const RunSpec& run, double partition) {
  const auto& t = run.train;
  if (fw.step_grad_copy_bytes <= 0 || t.zero_stage < 1 || t.offload != Offload::None) return 0.0;
  const double group =
      t.zero_stage >= 3 && fw.step_sub_group_params > 0 ? std::min(partition, fw.step_sub_group_params) : partition;
  return group * fw.step_grad_copy_bytes;
}

double adam_sqrt_copy_bytes(const FrameworkProfile& fw, const RunSpec& run, double partition, double largest_tensor,
                            double v_bytes) {
  const auto& t = run.train;
  if (t.optimizer != Optimizer::Adam || t.offload != Offload::None) return 0.0;
  const OptimizerImpl impl = t.optimizer_impl.value_or(fw.optimizer_impl);
  if (impl == OptimizerImpl::Fused) return 0.0;
  // Foreach over the whole group, unless the step runs inside backward: then it goes tensor by tensor.
  const bool whole_group = impl == OptimizerImpl::Foreach && !t.optimizer_in_backward;
  return (whole_group ? partition : std::min(partition, largest_tensor)) * v_bytes;
}

namespace {

StageMemory training_stage(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                           const Stage& st) {
  const auto& par = run.par;
  const auto& t = run.train;
  const StageParams sp = stage_params(m, par, st.index);
  StageMemory out;
  out.params = sp.total();
  // Which parameters train: all of them, or only LoRA adapters on a frozen base.
  const bool lora = t.finetune != FinetuneKind::Full;
  StageInputs in{.index = st.index,
                 .layers = st.layers,
                 .first = st.first,
                 .last = st.last,
                 .linear = sp.linear,
                 .other = sp.other,
                 .largest_layer = sp.largest_layer,
                 .trainable = lora ? lora_params(m, par, st.first_layer, st.layers, t) : sp.total()};
  const ActivationParams ap = training_activation_params(run);
  for (std::int64_t l = st.first_layer; l < st.first_layer + st.layers; ++l) {
    const double stored = stored_layer_bytes(m, ap, l, t.recompute);
    in.per_mb += stored;
    in.recompute_working_set =
        std::max(in.recompute_working_set, recompute_working_bytes(m, ap, l, t.recompute, stored));
  }
  training_stage_items(m, sys, run, in, [&](MemoryKind kind, MemoryPlace where, double bytes, const auto& note) {
    (where == MemoryPlace::Host ? out.host : out.gpu)
        .push_back(MemoryItem{kind, std::string(name_of(kind)), bytes, note()});
  });
  return out;
}

StageMemory inference_stage(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                            const Stage& st, std::int64_t batch, double& kv_per_token) {
  const auto& par = run.par;
  const auto& in = run.infer;
  const FrameworkProfile& fw = framework_profile(in.framework);
  const double tp = static_cast<double>(par.tp);
  const double beta = dtype_bytes(in.precision);
  const StageParams sp = stage_params(m, par, st.index);
  StageMemory out;
  out.params = sp.total();
  const model::InferenceWeightBytes wb =
      model::inference_weight_bytes(in.block_format, in.weight_quant, in.precision, m);
  double weights = sp.linear * wb.linear + sp.other * wb.other;
  // An engine that keeps layers in host memory (llama.cpp): the token embedding always stays there, the output
  // layer goes to the GPU only with every layer, and --n-gpu-layers leaves the first layers there too
  // (run_spec.h layer_offload; one GPU, one stage).
  const EngineProfile& engine = engine_profile(in.framework);
  const LayerOffload off = layer_offload(in, m.num_layers);
  double host_layer_share = 0;
  if (engine.host_layers) {
    const WeightResidence r = weight_residence(m, in, wb, weights, st.first, st.last);
    host_layer_share = r.host_layer_share;
    weights = r.gpu;
    add(out.host, MemoryKind::Weights, r.host,
        fmt::format("the token embedding{}{}",
                    off.cpu_layers > 0 ? fmt::format(", {} of {} layers", off.cpu_layers, m.num_layers) : "",
                    off.head_on_cpu ? ", the output layer" : ""));
  }
  add(out.gpu, MemoryKind::Weights, weights,
      fmt::format("{:.3g} params: linear at {:.4g} B ({}), rest at {:.4g} B{}", sp.total(), wb.linear,
                  weight_format_name(in), wb.other, engine.host_layers ? "; the part on the GPU" : ""));

  // KV cache: K and V per layer per token (model::kv_bytes_per_token); layers in host memory keep theirs there.
  kv_per_token = model::kv_bytes_per_token(m, st.layers, par.tp, dtype_bytes(in.kv_dtype)) * (1.0 - host_layer_share);
  double seq_tokens = std::max(static_cast<double>(in.input_len + in.output_len), fw.kv_prealloc_tokens);
  // Under a sliding window over every layer vLLM and TensorRT-LLM keep only the window's blocks; vLLM V1
  // caps a hybrid model's windowed layers alone (run/engine_profile.h kv_window).
  const KvWindow window = kv_window(m, engine_profile(in.framework));
  const bool windowed = window.caps() && seq_tokens > static_cast<double>(window.window);
  if (windowed) seq_tokens = window.tokens_held(seq_tokens);
  // Linear-attention layers (Gated DeltaNet, Mamba-2) keep, per sequence, their recurrent state and the
  // convolution's last inputs instead of K and V per token (model::linear_state_bytes_per_sequence; the
  // convolution's inputs in the activation dtype).
  double state =
      model::linear_state_bytes_per_sequence(m, st.layers, par.tp, dtype_bytes(activation_dtype(in.precision))) *
      (1.0 - host_layer_share);
  // vLLM V1 keeps each state layer's state in a page of the attention pool, whose blocks grow to that page: a
  // sequence holds whole blocks, and its state whole pages (run/engine_profile.h aligned_state_pages).
  StatePages pages;
  if (state > 0 && released_profile(in.framework, in.engine_version).align_state_pages) {
    pages = aligned_state_pages(m, kv_per_token, state, engine.kv_block_tokens);
    const double block = static_cast<double>(pages.block_tokens);
    seq_tokens = std::ceil(seq_tokens / block) * block;
    state = static_cast<double>(pages.state_blocks) * block * kv_per_token;
  }
  add(out.gpu, MemoryKind::KvCache, kv_per_token * seq_tokens * static_cast<double>(batch),
      fmt::format("{} seqs x {:.0f} tokens{} x {:.4g} B/token ({})", batch, seq_tokens,
                  windowed ? (window.windowed < window.layers
                                  ? fmt::format(" (held: {} of {} layers keep their sliding window's blocks)",
                                                window.windowed, window.layers)
                                  : std::string(" (the sliding window's blocks)"))
                           : std::string(),
                  kv_per_token, dtype_name(in.kv_dtype)));
  if (state > 0)
    add(out.gpu, MemoryKind::RecurrentState, state * static_cast<double>(batch),
        fmt::format(
            "{} seqs x {:.4g} B: the recurrent states ({}) and convolution inputs of {} {} layers{}", batch, state,
            dtype_name(m.linear_state_dtype()),
            static_cast<std::int64_t>(std::llround(static_cast<double>(st.layers) * (1.0 - model::kv_layer_share(m)))),
            model::linear_mixer_name(m.linear_attn.kind),
            pages.state_blocks > 0
                ? fmt::format(" in {} pages of {}-token blocks (vLLM V1)", pages.state_blocks, pages.block_tokens)
                : std::string()));
  if (host_layer_share > 0)
    add(out.host, MemoryKind::KvCache,
        kv_per_token / (1.0 - host_layer_share) * host_layer_share * seq_tokens * static_cast<double>(batch),
        fmt::format("the KV cache of the {} layers in host memory", off.cpu_layers));

  // Transient workspace of the prefill of the whole batch: hidden states in and out, the MLP
  // intermediates (gate, up, product), and the logits the LM head produces.
  const double tokens = static_cast<double>(batch * in.input_len);
  const double ffn = static_cast<double>(m.moe.enabled() ? m.moe.expert_ffn * m.moe.experts_per_token : m.ffn_hidden);
  const double mlp_tensors = m.mlp == model::MlpKind::Gated ? 3.0 : 2.0;
  double ws = tokens * beta * (2.0 * static_cast<double>(m.hidden) + mlp_tensors * ffn / tp);
  const bool all_logits = full_prefill_logits(fw, in.engine_version);
  if (st.last) {
    const double logit_rows = all_logits ? tokens : static_cast<double>(batch);
    ws += logit_rows * std::ceil(static_cast<double>(m.vocab) / tp) * (beta + 4.0);
  }
  add(out.gpu, MemoryKind::Workspace, ws,
      fmt::format("prefill of {} x {} tokens: hidden states, MLP intermediates, logits{}", batch, in.input_len,
                  all_logits ? " of every prompt position" : " of the last position"));
  add_runtime(out.gpu, sys);
  return out;
}

// The stage with the largest footprint among [first, last].
MemoryResult pick_peak(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                       std::int64_t batch, double& kv_per_token, std::int64_t first = 0, std::int64_t last = -1) {
  MemoryResult best;
  double best_bytes = -1;
  if (last < 0) last = run.par.pp - 1;
  for (std::int64_t i = first; i <= last; ++i) {
    const Stage st = stage_of(i, run.par.pp, m.num_layers, run.par.vp);
    double kv = 0;
    StageMemory sm = run.workload == Workload::Inference ? inference_stage(m, sys, run, st, batch, kv)
                                                         : training_stage(m, sys, run, st);
    const double bytes = sum(sm.gpu);
    if (bytes > best_bytes) {
      best_bytes = bytes;
      best.gpu = std::move(sm.gpu);
      best.host = std::move(sm.host);
      best.peak_stage = i;
      best.params_per_gpu = sm.params;
      kv_per_token = kv;
    }
  }
  best.gpu_bytes = best_bytes;
  return best;
}

MemoryResult evaluate(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in,
                      std::int64_t only_stage);

}  // namespace

std::string_view name_of(MemoryMeasure v) {
  switch (v) {
    case MemoryMeasure::Device: return "device";
    case MemoryMeasure::Reserved: return "reserved";
    case MemoryMeasure::Allocated: return "allocated";
  }
  return "device";
}

constexpr MemoryMeasure kMemoryMeasures[] = {MemoryMeasure::Device, MemoryMeasure::Reserved, MemoryMeasure::Allocated};

std::vector<std::string> memory_measure_names() {
  std::vector<std::string> names;
  for (MemoryMeasure v : kMemoryMeasures) names.emplace_back(name_of(v));
  return names;
}

bool parse_name(std::string_view s, MemoryMeasure& out) {
  for (MemoryMeasure v : kMemoryMeasures)
    if (s == name_of(v)) {
      out = v;
      return true;
    }
  return false;
}

double peak_gpu_bytes_as(const MemoryResult& m, MemoryMeasure measure) {
  double bytes = m.gpu_bytes;
  for (const MemoryItem& i : m.gpu) {
    // The CUDA context lives outside PyTorch's allocator: neither reserved nor allocated bytes see it.
    if (measure != MemoryMeasure::Device && i.kind == MemoryKind::CudaContext) bytes -= i.bytes;
    // The allocator's cached but unused blocks are reserved, not allocated.
    if (measure == MemoryMeasure::Allocated && i.kind == MemoryKind::AllocatorReserve) bytes -= i.bytes;
  }
  return bytes;
}

MemoryResult evaluate_memory(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run) {
  return evaluate(m, sys, run, -1);
}

MemoryResult evaluate_stage_memory(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run,
                                   std::int64_t stage) {
  return evaluate(m, sys, run, stage);
}

namespace {
MemoryResult evaluate(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in,
                      std::int64_t only_stage) {
  const RunSpec run = with_defaults(run_in);
  MemoryResult r;
  r.problems = structural_problems(run, m);
  r.gpu_capacity_bytes = sys.gpu.memory_bytes;
  r.host_capacity_bytes = sys.node.host_memory_bytes;
  const auto pc = model::count_params(m);
  r.params_total = pc.total;
  r.params_trainable = pc.total;
  if (!r.valid()) return r;

  const bool inference = run.workload == Workload::Inference;
  const std::int64_t batch = inference ? run.infer.batch : 0;
  double kv_per_token = 0;
  const std::int64_t first = only_stage < 0 ? 0 : std::min(only_stage, run.par.pp - 1);
  const std::int64_t last = only_stage < 0 ? run.par.pp - 1 : first;
  MemoryResult peak = pick_peak(m, sys, run, batch, kv_per_token, first, last);
  peak.problems = r.problems;
  peak.gpu_capacity_bytes = r.gpu_capacity_bytes;
  peak.host_capacity_bytes = r.host_capacity_bytes;
  peak.params_total = r.params_total;
  peak.params_trainable = r.params_trainable;
  if (!inference && run.train.finetune != FinetuneKind::Full)
    peak.params_trainable =
        static_cast<std::int64_t>(lora_params(m, ParallelSpec{}, 0, m.num_layers, run.train));  // whole model

  // Host memory is per node: every GPU of the node offloads its own partition.
  const double gpus_on_node = static_cast<double>(std::min<std::int64_t>(run.par.gpus, sys.node.gpus_per_node));
  for (auto& item : peak.host) item.bytes *= gpus_on_node;
  peak.host_bytes = sum(peak.host);

  if (inference) {
    peak.kv_bytes_per_token = kv_per_token;
    // Largest batch at this sequence length that fits, and largest KV token count at this batch.
    std::int64_t lo = 0, hi = 1;
    double kv = 0;
    while (hi < (1 << 24) && pick_peak(m, sys, run, hi, kv, first, last).gpu_bytes <= r.gpu_capacity_bytes) hi *= 2;
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      (pick_peak(m, sys, run, mid, kv, first, last).gpu_bytes <= r.gpu_capacity_bytes ? lo : hi) = mid;
    }
    peak.max_batch = lo;
    double kv_item = 0;
    for (const auto& item : peak.gpu)
      if (item.kind == MemoryKind::KvCache) kv_item = item.bytes;
    const double free_for_kv = r.gpu_capacity_bytes - (peak.gpu_bytes - kv_item);
    peak.max_tokens = kv_per_token > 0 ? static_cast<std::int64_t>(std::max(0.0, free_for_kv) / kv_per_token) : 0;
  }
  return peak;
}
}  // namespace

}  // namespace llmsim::sim

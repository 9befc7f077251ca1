#include "llmsim/serve/serving_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/units.h"
#include "llmsim/cost/comm_cost.h"
#include "llmsim/infer/engine_iteration.h"
#include "llmsim/infer/infer_sim.h"
#include "llmsim/memory/memory_model.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/serve/serving_des.h"

namespace llmsim::sim {

IterationTimeFn exact_time(std::function<double(const std::vector<SequenceWork>&)> seconds) {
  return [f = std::move(seconds)](const std::vector<SequenceWork>& b) { return Interval::exact(f(b)); };
}

EngineProfile serving_profile(Framework f, const hardware::SystemSpec& sys, const std::optional<Version>& release,
                              std::int64_t max_model_len, std::int64_t tp) {
  EngineProfile p = released_profile(f, release, max_model_len);
  if (f == Framework::Sglang) {
    // server_args.py _handle_gpu_memory_settings, by the device's memory: chunked_prefill_size, the decode
    // CUDA-graph batch limit (its first value for tp < 4) and the mem_fraction_static reserve (GiB, + per
    // rank of tp x pp).
    struct Tier {
      double below_GiB;
      std::int64_t chunk, graph_small_tp, graph_large_tp;
      double reserve_GiB, per_rank_GiB;
    };
    static constexpr Tier kTiers[] = {{20, 2048, 8, 8, 2.8, 0.1},       {35, 2048, 24, 80, 2.8, 0.1},
                                      {60, 4096, 32, 160, 9.5, 0.5},    {90, 8192, 256, 512, 9.5, 0.5},
                                      {100, 8192, 256, 512, 12.0, 0.5}, {160, 8192, 256, 512, 12.0, 0.5},
                                      {1e9, 16384, 512, 512, 32.0, 0.0}};
    const double GiB = sys.gpu.memory_bytes / units::GiB;
    for (const Tier& t : kTiers) {
      if (GiB >= t.below_GiB) continue;
      p.max_batched_tokens = t.chunk;
      p.cuda_graph_max_batch = tp < 4 ? t.graph_small_tp : t.graph_large_tp;
      p.static_reserve_bytes = t.reserve_GiB * units::GiB;
      p.static_reserve_per_rank_bytes = t.per_rank_GiB * units::GiB;
      break;
    }
  }
  if (f == Framework::LmDeploy && (!release || *release >= Version{0, 6, 0})) {
    // lmdeploy/utils.py get_max_batch_size, by device name as LMDeploy matches it: from 0.10.0 A100/A800
    // 384 and H100/H800/H200/L20Y 1024; 0.6.0-0.9.x A100/A800 256 and H100/H800 512; any other GPU 128.
    const std::string name = to_lower(sys.gpu.name);
    const bool recent = !release || *release >= Version{0, 10, 0};
    const auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
    if (has("a100") || has("a800"))
      p.max_num_seqs = recent ? 384 : 256;
    else if (has("h100") || has("h800") || (recent && (has("h200") || has("l20y"))))
      p.max_num_seqs = recent ? 1024 : 512;
  }
  if (f == Framework::Vllm && vllm_v1(release)) {
    // vllm/engine/arg_utils.py get_batch_defaults: larger defaults on >= 70 GiB GPUs other than A100
    // (PR #17885 kept A100 on the small ones), OpenAI API server usage context. vLLM itself tells A100
    // apart by the device name, so the rule matches the name too.
    if (sys.gpu.memory_bytes >= 70.0 * units::GiB && to_lower(sys.gpu.name).find("a100") == std::string::npos) {
      p.max_num_seqs = 1024;
      p.max_batched_tokens = 8192;
    }
  }
  return p;
}

namespace {

using des::ceil_div;
using des::dbl;

// Workspace bytes (memory model "workspace" item) of a prefill of `batch` x `input_len` tokens.
double workspace_bytes(const model::ModelSpec& m, const hardware::SystemSpec& sys, RunSpec run, std::int64_t batch,
                       std::int64_t input_len) {
  run.workload = Workload::Inference;
  run.infer.batch = std::max<std::int64_t>(1, batch);
  run.infer.input_len = std::max<std::int64_t>(1, input_len);
  run.infer.output_len = 1;
  const MemoryResult mem = evaluate_memory(m, sys, run);
  for (const auto& item : mem.gpu)
    if (item.kind == MemoryKind::Workspace) return item.bytes;
  return 0;
}

}  // namespace

ServingResult run_serving(const std::vector<Request>& requests, const ServingSetup& setup,
                          const IterationTimeFn& cost) {
  des::Des des(requests, setup, cost);
  return des.run();
}

ServingResult simulate_serving(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in,
                               const ServingConfig& cfg, const std::vector<Request>& requests) {
  RunSpec run = with_defaults(run_in);
  run.workload = Workload::Inference;
  // Requests beyond the model's context are rejected, as the engines reject them (vLLM's "maximum context
  // length" error, TGI's validation error), and the others are served; the result counts and names them.
  std::vector<Request> kept;
  kept.reserve(requests.size());
  std::int64_t rejected = 0;
  const Request* longest = nullptr;
  std::int64_t max_in = 1, max_out = 1, max_total = 2;
  const std::int64_t context = served_context(m.max_positions, run.infer);
  for (const auto& q : requests) {
    if (context > 0 && q.input_tokens + q.output_tokens > context) {
      ++rejected;
      if (!longest || q.input_tokens + q.output_tokens > longest->input_tokens + longest->output_tokens) longest = &q;
      continue;
    }
    kept.push_back(q);
    max_in = std::max(max_in, q.input_tokens);
    max_out = std::max(max_out, q.output_tokens);
    max_total = std::max(max_total, q.input_tokens + q.output_tokens);
  }
  const std::string rejection =
      longest ? fmt::format(
                    "{} request(s) rejected: longer than {}'s maximum context of {} tokens (the longest: "
                    "request {}, {} + {} tokens)",
                    rejected, context_is_engines(m.max_positions, run.infer) ? "the engine" : m.name, context,
                    longest->id, longest->input_tokens, longest->output_tokens)
              : "";
  // The longest prompt and the longest output need not belong to one request: the context checked and
  // sized for is the longest request's, never their sum.
  run.infer.input_len = max_in;
  run.infer.output_len = std::max<std::int64_t>(1, std::min(max_out, max_total - max_in));
  run.infer.batch = 1;

  ServingResult res;
  res.engine = cfg.engine.name;
  res.profile = cfg.engine;
  // A linear-attention layer's state is no prefix's blocks: vLLM V1 caches prefixes of such hybrids only in its
  // experimental mamba cache modes, and the DES reuses none (ServingDes::caching).
  if (m.linear_attn.enabled() && res.profile.prefix_caching) {
    res.profile.prefix_caching = false;
    res.profile.source +=
        fmt::format("; no prefix caching for a model with {} layers", model::linear_mixer_name(m.linear_attn.kind));
  }
  res.problems = structural_problems(run, m);
  res.rejected = rejected;
  if (kept.empty() && rejected > 0) res.problems.push_back(rejection);
  for (auto& p : inference_problems(m, sys, run)) res.problems.push_back(std::move(p));
  if (auto why = scheduler_steps_problem(cfg.engine)) res.problems.push_back(std::move(*why));
  if (!res.problems.empty()) return res;

  const EngineProfile& e = cfg.engine;
  const std::int64_t per_replica = run.par.tp * run.par.pp;
  const std::int64_t replicas = std::max<std::int64_t>(1, run.par.gpus / per_replica);

  auto engine_cost = std::make_shared<EngineIterationCost>(m, sys, run.par, run.infer, e);
  IterationTimeFn cost = [engine_cost](const std::vector<SequenceWork>& b) { return engine_cost->iteration(b).time_s; };

  // KV capacity of one replica: the GPU of its peak stage.
  const double mem = sys.gpu.memory_bytes;
  res.kv_bytes_per_token = engine_cost->kv_bytes_per_token();
  // A model's recurrent states in pages of the attention pool (vLLM V1) make its blocks as large as a state page.
  const double state_bytes = engine_cost->state_bytes_per_sequence();
  const StatePages pages = e.align_state_pages
                               ? aligned_state_pages(m, res.kv_bytes_per_token, state_bytes, e.kv_block_tokens)
                               : StatePages{std::max<std::int64_t>(1, e.kv_block_tokens), 0};
  // The block the engine runs with, as it reports it (vLLM's log: "Setting attention block size to N tokens").
  res.profile.kv_block_tokens = pages.block_tokens;
  res.weight_bytes = engine_cost->weight_bytes_per_gpu();
  res.runtime_bytes = sys.runtime.cuda_context_bytes;
  const bool is_static = e.batching == Batching::Static;
  ServingSetup setup;
  if (is_static) {
    // PyTorch caching allocator: no reservation, fragmentation as in the memory model (a share of the
    // tensors it serves, here at the budget's limit: tensors x (1 + f) + context = the usable memory); the
    // workspace of each batch's prefill is charged when the batch is formed.
    const double usable = mem * e.gpu_memory_utilization - res.runtime_bytes;
    res.runtime_bytes += allocator_reserve_bytes(sys, usable / (1.0 + sys.runtime.allocator_reserve_fraction));
    res.kv_budget_bytes = mem * e.gpu_memory_utilization - res.weight_bytes - res.runtime_bytes;
    auto cache = std::make_shared<std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t>>();
    const double kvpt = res.kv_bytes_per_token;
    setup.static_workspace_tokens = [cache, &m, &sys, run, kvpt](std::int64_t b, std::int64_t len) {
      const auto key = std::make_pair(b, len);
      if (const auto it = cache->find(key); it != cache->end()) return it->second;
      const auto v = static_cast<std::int64_t>(std::ceil(workspace_bytes(m, sys, run, b, len) / kvpt));
      (*cache)[key] = v;
      return v;
    };
  } else {
    // The engines' memory profiling runs one forward pass at the token budget (vLLM profile_run with
    // max_num_batched_tokens over max_num_seqs sequences; TGI warmup at max_batch_prefill_tokens).
    const std::int64_t tokens = std::max<std::int64_t>(1, e.max_batched_tokens);
    const std::int64_t seqs = std::clamp<std::int64_t>(e.max_num_seqs, 1, tokens);
    res.workspace_bytes = workspace_bytes(m, sys, run, seqs, ceil_div(tokens, seqs));
    const double rest = mem - res.weight_bytes - res.workspace_bytes - res.runtime_bytes;
    // Sized as the engine sizes it: a configured count of blocks or a share of the device, whatever the
    // weights take; a fraction of the memory left after them; or a fraction of the device minus them.
    const bool fixed = e.kv_cache_blocks > 0 || e.kv_share_of_device;
    if ((e.static_reserve_bytes > 0 || e.static_fraction > 0) && e.kv_cache_blocks <= 0) {
      // SGLang: mem_fraction_static (rounded to 3 decimals as server_args.py rounds it) of the device holds the
      // weights and the KV pool; the pool is what the free memory after loading exceeds the rest by
      // (model_runner profile_max_num_token), so the CUDA context comes off it too.
      res.static_memory_fraction = static_memory_fraction(e, mem, per_replica);
      res.kv_budget_bytes = res.static_memory_fraction * mem - res.weight_bytes - res.runtime_bytes;
    } else if (e.kv_cache_blocks > 0)
      res.kv_budget_bytes = dbl(e.kv_cache_blocks) * dbl(pages.block_tokens) * res.kv_bytes_per_token;
    else if (e.kv_share_of_device)
      res.kv_budget_bytes = mem * e.gpu_memory_utilization;
    else if (e.utilization_of_free_memory)
      res.kv_budget_bytes = rest * e.gpu_memory_utilization;
    else
      res.kv_budget_bytes = mem * e.gpu_memory_utilization - res.weight_bytes - res.workspace_bytes - res.runtime_bytes;
    // A fixed KV cache can leave too little for the weights.
    if (fixed && res.kv_budget_bytes > rest)
      res.problems.push_back(fmt::format(
          "out of GPU memory: {} takes {:.2f} of {:.2f} GiB per GPU for the KV cache ({}) but the weights, "
          "workspace and runtime leave {:.2f} GiB",
          e.name, res.kv_budget_bytes / units::GiB, mem / units::GiB,
          e.kv_cache_blocks > 0 ? fmt::format("{} blocks of {} tokens", e.kv_cache_blocks, pages.block_tokens)
                                : fmt::format("{:.2f} of the device", e.gpu_memory_utilization),
          std::max(0.0, rest) / units::GiB));
  }
  // Multi-LoRA serving: vLLM preallocates max_loras adapter slots at the adapters' rank on every GPU
  // (LoRAModelManager's stacked lora_a / lora_b buffers), SGLang max_loras_per_batch (its LoRA memory pool):
  // the KV cache gets what they leave.
  const bool adapters = std::any_of(kept.begin(), kept.end(), [](const Request& q) { return q.adapter >= 0; });
  if (adapters && !is_static && e.max_loras > 0) {
    res.adapter_bytes = engine_cost->adapter_bytes_per_gpu();
    res.adapter_copy_s = CommCost(sys).host_copy(res.adapter_bytes).value;
    res.kv_budget_bytes -= dbl(e.max_loras) * res.adapter_bytes;
  }
  const std::int64_t block = pages.block_tokens;
  std::int64_t cap = 0;
  if (res.kv_budget_bytes > 0 && res.kv_bytes_per_token > 0)
    cap = static_cast<std::int64_t>(std::floor(res.kv_budget_bytes / res.kv_bytes_per_token / dbl(block))) * block;
  res.kv_capacity_tokens = cap;
  if (cap <= 0) {
    res.problems.push_back(fmt::format(
        "no memory left for the KV cache: {:.2f} GiB per GPU x {:.2f} utilization minus weights {:.2f} GiB, "
        "workspace {:.2f} GiB and runtime {:.2f} GiB is {:.2f} GiB",
        mem / units::GiB, e.gpu_memory_utilization, res.weight_bytes / units::GiB, res.workspace_bytes / units::GiB,
        res.runtime_bytes / units::GiB, res.kv_budget_bytes / units::GiB));
    return res;
  }
  if (!res.problems.empty()) return res;

  setup.engine = e;
  setup.engine.kv_block_tokens = block;
  setup.engine.prefix_caching = res.profile.prefix_caching;  // off over linear-attention layers (above)
  setup.engine.source = res.profile.source;
  if (e.prefill_first) {
    // SGLang's request pool (model_runner _resolve_max_num_reqs): clamp(KV tokens / context x 512, 2048, 4096),
    // and never above half the KV tokens; a configured limit (--max-num-seqs) stays under both.
    const std::int64_t ctx = std::max<std::int64_t>(1, context > 0 ? context : m.max_positions);
    const std::int64_t pool =
        std::clamp<std::int64_t>(static_cast<std::int64_t>(dbl(cap) / dbl(ctx) * 512.0), 2048, 4096);
    setup.engine.max_num_seqs = std::max<std::int64_t>(1, std::min({e.max_num_seqs, pool, cap / 2}));
  }
  setup.replicas = replicas;
  setup.gpus_per_replica = per_replica;
  setup.kv_capacity_tokens = cap;
  setup.kv_window = kv_window(m, e);
  // Each sequence's recurrent state, in whole blocks of the pool (EngineIterationCost's per-GPU bytes): one page per
  // state group where the engine aligns them, else the bytes in blocks.
  if (pages.state_blocks > 0)
    setup.kv_window.state_blocks = pages.state_blocks;
  else if (state_bytes > 0)
    setup.kv_window.state_blocks =
        static_cast<std::int64_t>(std::ceil(state_bytes / (res.kv_bytes_per_token * dbl(block))));
  setup.closed_loop = cfg.closed_loop;
  setup.concurrency = cfg.concurrency;
  setup.slo_ttft_s = cfg.slo_ttft_s;
  setup.slo_tpot_s = cfg.slo_tpot_s;
  setup.keep_trace = cfg.keep_trace;
  if (const auto& sp = run.infer.speculative; sp.on()) {
    setup.spec_tokens = sp.tokens;
    setup.spec_acceptance = sp.acceptance;
    setup.spec_seed = cfg.seed;
  }
  setup.progress = cfg.progress;
  setup.adapter_load_s = res.adapter_copy_s;
  ServingResult out = run_serving(kept, setup, cost);
  out.rejected = rejected;
  if (rejected > 0) out.notes.push_back(rejection);
  if (setup.kv_window.state_blocks > 0)
    out.notes.push_back(fmt::format(
        "each sequence also holds {} KV blocks ({:.3g} MiB per GPU) for the recurrent state of the model's {} "
        "layers, whatever its length",
        setup.kv_window.state_blocks, engine_cost->state_bytes_per_sequence() / units::MiB,
        model::linear_mixer_name(m.linear_attn.kind)));
  out.kv_bytes_per_token = res.kv_bytes_per_token;
  out.weight_bytes = res.weight_bytes;
  out.workspace_bytes = res.workspace_bytes;
  out.runtime_bytes = res.runtime_bytes;
  out.kv_budget_bytes = res.kv_budget_bytes;
  out.static_memory_fraction = res.static_memory_fraction;
  out.adapter_bytes = res.adapter_bytes;
  out.adapter_copy_s = res.adapter_copy_s;
  return out;
}

}  // namespace llmsim::sim

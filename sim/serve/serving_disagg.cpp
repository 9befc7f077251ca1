#include "llmsim/serve/serving_disagg.h"

#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

namespace llmsim::sim {

namespace {

RunSpec pool_run(const RunSpec& run, std::int64_t replicas, std::int64_t tp) {
  RunSpec r = run;
  r.par.tp = tp;
  r.par.pp = 1;
  r.par.dp = replicas;
  r.par.gpus = replicas * tp;
  return r;
}

}  // namespace

DisaggregatedResult simulate_disaggregated(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                           const RunSpec& run, const ServingConfig& cfg,
                                           const DisaggregatedPools& pools, const std::vector<Request>& requests) {
  DisaggregatedResult out;
  auto& whole = out.whole;
  whole.engine = cfg.engine.name;
  whole.profile = cfg.engine;
  // Both pools, whatever the outcome (an infeasible run's header names its GPUs too).
  const std::int64_t gpus = pools.prefill_replicas * pools.prefill_tp + pools.decode_replicas * pools.decode_tp;
  whole.replicas = pools.prefill_replicas + pools.decode_replicas;
  whole.gpus = gpus;
  if (cfg.closed_loop) {
    whole.problems.push_back(
        "disaggregated serving is simulated pool after pool: give an open-loop stream (--rate, --burst or "
        "--trace-file), not --concurrency");
    return out;
  }
  // The link: both pools inside one fast domain (NVLink / NVSwitch), or across it over the NICs.
  const bool inside = gpus <= hardware::fast_domain_gpus(sys);
  const double per_gpu = inside ? sys.node.fabric_bandwidth_Bps : hardware::nic_share_per_gpu_Bps(sys);
  out.link_Bps = per_gpu * static_cast<double>(std::min(pools.prefill_tp, pools.decode_tp));
  out.link = inside ? fmt::format("{} fabric inside its {}-GPU domain", sys.name, hardware::fast_domain_gpus(sys))
                    : fmt::format("{} scale-out network (each GPU's share of its node's NICs)", sys.name);
  if (out.link_Bps <= 0) {
    whole.problems.push_back(fmt::format("{} has no {} to move the KV cache between the pools", sys.name,
                                         inside ? "intra-node fabric bandwidth" : "scale-out network"));
    return out;
  }

  // Prefill pool: every request's reply is its first token.
  std::vector<Request> first = requests;
  for (auto& q : first) q.output_tokens = 1;
  // One pool's run; its problems are the whole run's, named by pool.
  const auto run_pool = [&](const char* name, std::int64_t replicas, std::int64_t tp, const std::vector<Request>& reqs,
                            ServingResult& into) {
    into = simulate_serving(m, sys, pool_run(run, replicas, tp), cfg, reqs);
    for (const auto& p : into.problems) whole.problems.push_back(std::string(name) + " pool: " + p);
    return into.valid();
  };
  if (!run_pool("prefill", pools.prefill_replicas, pools.prefill_tp, first, out.prefill)) return out;
  // The KV of the whole model for a prompt: the per-GPU bytes of its tensor-parallel shard times the shards.
  const double kv_per_token = out.prefill.kv_bytes_per_token * static_cast<double>(pools.prefill_tp);

  // Decode pool: the requests that have more to say, arriving as their KV lands, in arrival order.
  struct Handoff {
    std::size_t first;  // index in out.prefill.requests
    double at;
  };
  std::unordered_map<std::int64_t, std::size_t> by_id;  // request id -> index in `requests`
  for (std::size_t i = 0; i < requests.size(); ++i) by_id[requests[i].id] = i;
  std::vector<Handoff> handoffs;
  double kv_bytes = 0, transfer_s = 0;
  for (std::size_t i = 0; i < out.prefill.requests.size(); ++i) {
    const auto& p = out.prefill.requests[i];
    const auto& orig = requests[by_id.at(p.id)];
    if (orig.output_tokens <= 1) continue;
    const double bytes = kv_per_token * static_cast<double>(p.input_tokens);
    const double t = bytes / out.link_Bps;
    kv_bytes += bytes;
    transfer_s += t;
    handoffs.push_back({i, p.first_token_s + t});
  }
  std::stable_sort(handoffs.begin(), handoffs.end(), [](const Handoff& a, const Handoff& b) { return a.at < b.at; });
  std::vector<Request> rest;
  rest.reserve(handoffs.size());
  for (std::size_t k = 0; k < handoffs.size(); ++k) {
    const auto& p = out.prefill.requests[handoffs[k].first];
    const auto& orig = requests[by_id.at(p.id)];
    Request q = orig;
    q.id = static_cast<std::int64_t>(k);
    q.arrival_s = handoffs[k].at;
    q.kv_ready_tokens = orig.input_tokens;
    q.generated_tokens = 1;
    q.prefix_key = -1;  // the decode pool computes no prompt: nothing to share
    q.prefix_tokens = 0;
    rest.push_back(q);
  }
  if (!handoffs.empty()) {
    out.kv_bytes_mean = kv_bytes / static_cast<double>(handoffs.size());
    out.transfer_s_mean = transfer_s / static_cast<double>(handoffs.size());
    if (!run_pool("decode", pools.decode_replicas, pools.decode_tp, rest, out.decode)) return out;
  }

  // Each request from arrival to its last token.
  std::vector<RequestMetrics> merged = out.prefill.requests;  // in id order, as the prefill pool served them
  for (const auto& d : out.decode.requests) {  // summarize_requests derives e2e, TPOT and the SLOs from these
    auto& w = merged[handoffs[static_cast<std::size_t>(d.id)].first];
    w.output_tokens = d.output_tokens;
    w.finish_s = d.finish_s;
    w.preemptions += d.preemptions;
  }
  whole.requests = std::move(merged);
  whole.rejected = out.prefill.rejected;
  // Bands: the wider of the two pools' time ratios.
  whole.time_ratio_low = std::min(out.prefill.time_ratio_low, handoffs.empty() ? 1.0 : out.decode.time_ratio_low);
  whole.time_ratio_high = std::max(out.prefill.time_ratio_high, handoffs.empty() ? 1.0 : out.decode.time_ratio_high);
  summarize_requests(whole, cfg.slo_ttft_s, cfg.slo_tpot_s);
  whole.itl = out.decode.itl;  // the gaps after the second token are the decode pool's
  // Occupancy and KV sizing are each pool's: the decode pool's, where the replies are generated.
  const ServingResult& dec = handoffs.empty() ? out.prefill : out.decode;
  whole.mean_batch = dec.mean_batch;
  whole.mean_batch_tokens = dec.mean_batch_tokens;
  whole.kv_utilization = dec.kv_utilization;
  whole.kv_peak_utilization = dec.kv_peak_utilization;
  whole.busy_fraction = dec.busy_fraction;
  whole.kv_bytes_per_token = dec.kv_bytes_per_token;
  whole.weight_bytes = dec.weight_bytes;
  whole.workspace_bytes = dec.workspace_bytes;
  whole.runtime_bytes = dec.runtime_bytes;
  whole.kv_budget_bytes = dec.kv_budget_bytes;
  whole.static_memory_fraction = dec.static_memory_fraction;
  whole.adapter_bytes = dec.adapter_bytes;
  whole.adapter_copy_s = dec.adapter_copy_s;
  whole.adapter_loads = out.prefill.adapter_loads + out.decode.adapter_loads;
  whole.adapter_load_s = out.prefill.adapter_load_s + out.decode.adapter_load_s;
  whole.kv_capacity_tokens = dec.kv_capacity_tokens;
  whole.iterations = out.prefill.iterations + out.decode.iterations;
  whole.preemptions = out.prefill.preemptions + out.decode.preemptions;
  whole.spec_steps = out.decode.spec_steps;
  whole.spec_tokens_emitted = out.decode.spec_tokens_emitted;
  whole.notes = out.prefill.notes;
  whole.notes.push_back(
      fmt::format("disaggregated: {} prefill replica(s) of tp {} and {} decode replica(s) of tp {}; each prompt's KV "
                  "({:.1f} MiB on average) crosses the {} at {:.0f} GB/s in {:.2f} ms on average",
                  pools.prefill_replicas, pools.prefill_tp, pools.decode_replicas, pools.decode_tp,
                  out.kv_bytes_mean / 1048576.0, out.link, out.link_Bps / 1e9, out.transfer_s_mean * 1e3));
  return out;
}

}  // namespace llmsim::sim

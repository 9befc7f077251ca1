#pragma once
// Disaggregated serving (DistServe, Zhong et al. 2024, arXiv:2401.09670; Splitwise, Patel et al. 2024;
// NVIDIA Dynamo; SGLang PD): prompts prefill on one pool of replicas, the KV cache moves to a second pool,
// which decodes. The prefill pool is the serving simulation of the requests with their first token as their
// whole reply; each request reaches the decode pool when its KV has crossed the link between the pools,
// and the decode pool is the serving simulation of the requests with that KV and first token already there.
// A request's TTFT is its prefill pool's; its TPOT spans the transfer and the decode pool's steps.
#include <cstdint>
#include <string>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"

namespace llmsim::sim {

struct DisaggregatedPools {
  std::int64_t prefill_replicas = 1, prefill_tp = 1;
  std::int64_t decode_replicas = 1, decode_tp = 1;
};

struct DisaggregatedResult {
  ServingResult prefill;  // the prefill pool's run (each request's reply: its first token)
  ServingResult decode;   // the decode pool's run (requests arriving with their prompt's KV)
  ServingResult whole;    // per request from arrival to last token, with the run's totals and statistics
  std::string link;       // what carries the KV between the pools
  double link_Bps = 0;    // its bandwidth for one transfer
  double kv_bytes_mean = 0, transfer_s_mean = 0;
  bool valid() const { return whole.valid(); }
};

// The KV of one request crosses `link_Bps` (the fast domain's fabric when both pools fit in it, else the
// GPUs' share of the scale-out NICs, times the GPUs a transfer runs on in parallel: the smaller pool's TP)
// after the prefill pool samples its first token. Closed-loop streams are refused (problems): the pools
// are simulated one after the other.
DisaggregatedResult simulate_disaggregated(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                           const RunSpec& run, const ServingConfig& cfg,
                                           const DisaggregatedPools& pools, const std::vector<Request>& requests);

}  // namespace llmsim::sim

#pragma once
// Where expert parallelism takes its ranks: one rule for the feasibility check, the memory model and the
// inference iteration cost.
//
// Across data-parallel ranks (ep divides dp): Megatron's and DeepSpeed-MoE's training layout and SGLang's
// DP attention; each rank holds ep-th of the experts, each expert tensor-parallel over tp, and the tokens
// travel to their experts' ranks by all-to-all.
//
// Inside a replica's tensor-parallel group (inference, ep divides tp and not dp): vLLM with
// --enable-expert-parallel flattens its TP and DP ranks into the EP group and keeps no tensor parallelism
// inside an expert (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make: "In EP, each
// device owns a set of experts fully"; at data-parallel size 1 the group is the TP group), SGLang's --ep-size
// shards the experts ep ways and each over tp / ep ranks. After tensor-parallel attention every rank of the
// group holds every token, so no all-to-all runs: each rank computes its experts' share of the routed tokens
// and the MoE block's tensor-parallel all-reduce sums the outputs. Per GPU the experts' weights are the same
// as tensor-parallel experts' (ep-th of the experts, each over tp / ep ranks).
#include <algorithm>
#include <cstdint>

#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// Whether the EP group lies inside the TP group (the second layout above; training refuses it).
inline bool experts_within_tp(const ParallelSpec& p) {
  return p.ep > 1 && std::max<std::int64_t>(1, p.dp) % p.ep != 0 && p.tp % p.ep == 0;
}

// The tensor-parallel degree of one routed expert: tp / ep inside the TP group, else tp.
inline std::int64_t expert_tp(const ParallelSpec& p) { return experts_within_tp(p) ? p.tp / p.ep : p.tp; }

// The expert-parallel degree the memory model divides the experts' weights by on top of tp: ep across DP
// ranks, 1 inside the TP group (ep x tp / ep = tp already shards them).
inline std::int64_t expert_weight_split(const ParallelSpec& p) { return experts_within_tp(p) ? 1 : p.ep; }

}  // namespace llmsim::sim

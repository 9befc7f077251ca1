#pragma once
// The document of `llmsim plan serve` (docs/output-schema.md, "plan serve") and its verdict: the question
// (model, rate, SLOs, lengths, what was considered) and every evaluated candidate, feasible first. Built here,
// in the library, from the plan's records.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llmsim/core/interval.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/report/verdict.h"
#include "llmsim/search/plan_serve.h"

namespace llmsim::report {

// How a candidate serves: "aggregated", or its prefill and decode pools ("2P+1D").
std::string serve_layout(const sim::ServePlanCandidate& k);
// A p99 of a candidate with the iteration model's band (its run's latency ratio band).
sim::Interval p99_band(double p99, const sim::ServePlanCandidate& k);
// The answer in one sentence: the cheapest candidate that meets the SLOs, or that none does within the GPUs
// allowed.
Verdict serve_plan_verdict(const sim::ServePlan& plan, std::int64_t max_gpus);
nlohmann::json plan_serve_document(const model::ModelSpec& m, const std::vector<hardware::SystemSpec>& systems,
                                   const sim::ServePlanSpec& spec, const sim::ServePlan& plan);

}  // namespace llmsim::report

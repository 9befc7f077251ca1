#include "llmsim/serve/admission_policy.h"

#include <array>

#include "llmsim/serve/serving_des.h"

namespace llmsim::sim::des {

AdmissionKind admission_kind(const EngineProfile& e) {
  if (e.batching == Batching::Static) return AdmissionKind::Static;
  if (e.prefill_first) return AdmissionKind::PrefillFirst;
  if (e.separate_prefill) return AdmissionKind::Separate;
  return AdmissionKind::Mixed;
}

const AdmissionPolicy& admission_policy(AdmissionKind kind) {
  static const std::array<AdmissionPolicy, 4> registry{{
      {AdmissionKind::Static, "static", "static (HF generate), fastertransformer", &Des::plan_static},
      {AdmissionKind::Mixed, "mixed", "vllm, trt-llm, lmdeploy", &Des::plan_mixed},
      {AdmissionKind::Separate, "separate prefill", "tgi, lightllm", &Des::plan_separate},
      {AdmissionKind::PrefillFirst, "prefill first", "sglang", &Des::plan_prefill_first},
  }};
  for (const AdmissionPolicy& p : registry)
    if (p.kind == kind) return p;
  return registry.front();  // unreachable: every kind has its entry (tested)
}

}  // namespace llmsim::sim::des

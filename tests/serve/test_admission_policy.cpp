// The admission registry: every engine profile runs one policy, picked in one place from its profile.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "llmsim/core/version.h"
#include "llmsim/run/engine_profile.h"
#include "llmsim/serve/admission_policy.h"

using llmsim::sim::Framework;
using llmsim::sim::des::admission_kind;
using llmsim::sim::des::admission_policy;
using llmsim::sim::des::AdmissionKind;

namespace {
std::string policy_of(Framework f) {
  return std::string(admission_policy(admission_kind(llmsim::sim::engine_profile(f))).name);
}
}  // namespace

TEST_CASE("admission registry: one entry per kind, each engine's profile picks its policy") {
  std::set<std::string> names;
  for (const AdmissionKind k :
       {AdmissionKind::Static, AdmissionKind::Mixed, AdmissionKind::Separate, AdmissionKind::PrefillFirst}) {
    const auto& p = admission_policy(k);
    CHECK(p.kind == k);
    CHECK(p.plan != nullptr);
    names.insert(std::string(p.name));
  }
  CHECK(names.size() == 4);
  CHECK(policy_of(Framework::Hf) == "static");
  CHECK(policy_of(Framework::FasterTransformer) == "static");
  CHECK(policy_of(Framework::Vllm) == "mixed");
  CHECK(policy_of(Framework::TrtLlm) == "mixed");
  CHECK(policy_of(Framework::LmDeploy) == "mixed");
  CHECK(policy_of(Framework::Tgi) == "separate prefill");
  CHECK(policy_of(Framework::LightLlm) == "separate prefill");
  CHECK(policy_of(Framework::Sglang) == "prefill first");
  // A release rule that changes the scheduler changes the policy: vLLM's V0 engine prefills apart.
  CHECK(admission_policy(admission_kind(llmsim::sim::released_profile(Framework::Vllm, llmsim::parse_version("0.6.3"))))
            .name == "separate prefill");
}

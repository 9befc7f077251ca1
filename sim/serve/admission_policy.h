#pragma once
// The serving DES's admission policies behind one interface and a registry (as Vidur keeps one scheduler per
// file): a policy forms a replica's next iteration (which sequences run and how many tokens each computes).
// Which one an engine runs is decided in one place, admission_kind, from its profile; each policy's body is
// in its own file (admission_static.cpp, admission_mixed.cpp, admission_separate.cpp, admission_sglang.cpp).
// The bodies are Des members: they read and change the loop's queues, blocks and caches, which stay private
// to Des (serving_des.h), and the registry is its friend.
#include <string_view>

#include "llmsim/run/engine_profile.h"

namespace llmsim::sim::des {

class Des;
struct Replica;

enum class AdmissionKind {
  Static,        // a padded batch prefilled at once and decoded to its longest output (HF generate, FasterTransformer)
  Mixed,         // prefill chunks and decodes in one iteration, running sequences first (vLLM, TensorRT-LLM, LMDeploy)
  Separate,      // a new batch prefilled in an iteration of its own, then joined to the running one (TGI, LightLLM)
  PrefillFirst,  // prefill batches whenever one can be formed, decodes otherwise (SGLang)
};

struct AdmissionPolicy {
  AdmissionKind kind;
  std::string_view name;        // as docs/serving.md names it
  std::string_view engines;     // the engine profiles that run it
  bool (Des::*plan)(Replica&);  // forms the replica's next iteration; false when nothing can run
};

// The policy an engine's profile runs: static batching, else SGLang's prefill-first scheduler, else prefills in
// iterations of their own, else mixed iterations.
AdmissionKind admission_kind(const EngineProfile& e);
// The registry: one entry per kind.
const AdmissionPolicy& admission_policy(AdmissionKind kind);

}  // namespace llmsim::sim::des

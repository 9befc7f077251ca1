#pragma once
// The local and consumer inference engines (issue 40): llama.cpp, ExLlamaV2, MLC LLM, TinyChat and AutoAWQ,
// each as the profile of its code at a named release (local_engine_profiles.cpp). They serve one request at a
// time on a desktop's GPUs: a token's time is the quantized weights streamed once, the engine's small kernels
// and its host loop. Internal to engine_profile.cpp, which hands them out by Framework.
#include <optional>

#include "llmsim/core/version.h"
#include "llmsim/run/engine_profile.h"

namespace llmsim::sim {

EngineProfile llamacpp_profile();
EngineProfile exllamav2_profile();
EngineProfile mlc_llm_profile();
EngineProfile tinychat_profile();
EngineProfile autoawq_profile();

// The profile as `release` ran it, for the engines above (ExLlamaV2 before 0.1.9 without CUDA graphs); the
// profile itself otherwise.
EngineProfile released_local_profile(Framework f, EngineProfile p, const std::optional<Version>& release);

}  // namespace llmsim::sim

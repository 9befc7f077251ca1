#pragma once
// Every reason a run cannot execute at all, whatever the memory: the structural rules of the run spec,
// the pipeline schedule's rules, and what the framework, engine, attention kernel or GPU does not
// support. One place for the rules that `llmsim memory` and its fit advice, the time simulators, the
// search's pruning and validate all apply, so that none offers a configuration another rejects.
#include <string>
#include <vector>

#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/run_spec.h"

namespace llmsim::sim {

// Why this configuration cannot run at all, whatever the memory: TP not dividing the heads or KV heads,
// GPUs not a multiple of TP*PP*CP, PP larger than the layer count, EP not dividing the experts, a
// global batch that is not a multiple of micro_batch*dp, LoRA options without LoRA, … Empty when
// structurally valid. (Range errors such as a negative size are rejected earlier, at parse time.)
std::vector<std::string> structural_problems(const RunSpec& run, const model::ModelSpec& m);

// Problems specific to simulating time (beyond structural_problems and the memory model): framework
// support (Megatron has no ZeRO-2/3, FSDP/HF pipelines), precision support on the GPU, pipeline
// schedule rules, interleaving divisibility.
std::vector<std::string> training_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                           const RunSpec& run);

// Why speculative decoding cannot run as given: a method without its draft tokens, acceptance or draft model,
// MTP on a model without an MTP module, a draft model with another vocabulary.
std::vector<std::string> speculative_problems(const model::ModelSpec& m, const SpeculativeSpec& s);

// Problems specific to inference, beyond structural_problems (which every caller adds: GPUs not a
// multiple of tp*pp, heads not divisible, …): context beyond the model's maximum, a precision, KV type
// or attention kernel the GPU lacks, speculative decoding that cannot run.
std::vector<std::string> inference_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                            const RunSpec& run);

// Why this schedule cannot run (empty if it can): interleaving needs the micro-batch count to be a
// multiple of pp (Megatron-LM's rule), GPipe has no interleaved variant here.
std::vector<std::string> pipeline_problems(int pp, int vp, int micro_batches, PipelineSchedule s);

// All of the above that apply to the run's workload (structural + training or inference).
std::vector<std::string> run_problems(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run);

}  // namespace llmsim::sim

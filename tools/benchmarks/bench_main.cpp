// llmsim benchmarks: prints one `name: value unit` line per figure (tools/bench builds Release and runs
// this). Figures are wall-clock rates of the simulator itself on this machine, not predictions.
#include <chrono>
#include <cstdio>
#include <string>

#include "hardware/system_toml.h"
#include "model/presets.h"
#include "sim/request_stream.h"
#include "sim/serving_sim.h"
#include "sim/train_sim.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  const char* model;
  const char* system;
  llmsim::sim::RunSpec run;
};

llmsim::sim::RunSpec train_run(std::int64_t gpus, std::int64_t tp, std::int64_t pp, std::int64_t micro_batch,
                               std::int64_t global_batch, int zero, llmsim::sim::Framework fw) {
  llmsim::sim::RunSpec r;
  r.workload = llmsim::sim::Workload::Pretrain;
  r.par.gpus = gpus;
  r.par.tp = tp;
  r.par.pp = pp;
  r.train.micro_batch = micro_batch;
  r.train.global_batch = global_batch;
  r.train.seq_len = 4096;
  r.train.zero_stage = zero;
  r.train.framework = fw;
  r.train.recompute = llmsim::sim::Recompute::Selective;
  r.par.sequence_parallel = tp > 1;
  return r;
}

// Evaluations per second of one configuration, measured over at least `min_s` seconds.
double evals_per_s(const Case& c, const std::string& data, double min_s, std::size_t& nodes) {
  const auto m = llmsim::model::resolve_model(c.model, data);
  const auto sys = llmsim::hardware::resolve_system(c.system, data);
  std::size_t n = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    const auto r = llmsim::sim::simulate_training(m, sys, c.run);
    nodes = r.graph_nodes;
    ++n;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < min_s);
  return static_cast<double>(n) / elapsed;
}

// Simulated requests per wall-clock second of `llmsim serve`: 10,000 requests (Poisson 20/s, lognormal
// 512/256 prompts, 128/64 outputs) on llama2-7b under vLLM on one A800, repeated for at least `min_s`.
double serving_requests_per_s(const std::string& data, double min_s, double& per_run_ms) {
  using namespace llmsim;
  const auto m = model::resolve_model("llama2-7b", data);
  const auto sys = hardware::resolve_system("a800-nvlink", data);
  sim::RunSpec run;
  run.workload = sim::Workload::Inference;
  run.infer.framework = sim::Framework::Vllm;
  sim::StreamSpec spec;
  spec.kind = sim::ArrivalKind::Poisson;
  spec.requests = 10000;
  spec.rate = 20;
  spec.input = sim::parse_length_dist("lognormal:512,256", "--input-dist");
  spec.output = sim::parse_length_dist("lognormal:128,64", "--output-dist");
  sim::ServingConfig cfg;
  cfg.engine = sim::serving_profile(sim::Framework::Vllm, sys);
  std::size_t n = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    const auto reqs = sim::generate_requests(spec);
    const auto r = sim::simulate_serving(m, sys, run, cfg, reqs);
    n += static_cast<std::size_t>(r.completed);
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < min_s);
  per_run_ms = 1e3 * elapsed / (static_cast<double>(n) / 10000.0);
  return static_cast<double>(n) / elapsed;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string data = argc > 1 ? argv[1] : LLMSIM_DATA_DIR;
  using llmsim::sim::Framework;
  // The issue-3 reference case: llama2-70b on 1,024 GPUs, TP8 x PP8 x DP16, 64 micro-batches per step.
  const Case big{"llama2_70b_tp8_pp8_dp16_mb64", "llama2-70b", "dgx-h100",
                 train_run(1024, 8, 8, 1, 1024, 1, Framework::Megatron)};
  const Case small{"llama2_7b_zero3_8gpu", "llama2-7b", "a800-nvlink",
                   train_run(8, 1, 1, 4, 32, 3, Framework::DeepSpeed)};
  std::size_t nodes = 0;
  const double big_rate = evals_per_s(big, data, 2.0, nodes);
  std::printf("train_evals_per_s: %.1f evals/s (%s, %zu graph nodes)\n", big_rate, big.name, nodes);
  std::printf("train_eval_ms: %.2f ms (%s)\n", 1e3 / big_rate, big.name);
  const double small_rate = evals_per_s(small, data, 1.0, nodes);
  std::printf("train_evals_per_s_small: %.1f evals/s (%s, %zu graph nodes)\n", small_rate, small.name, nodes);
  double serve_ms = 0;
  const double serve_rate = serving_requests_per_s(data, 1.0, serve_ms);
  std::printf("serving_requests_per_s: %.0f requests/s (llama2_7b_vllm_a800_poisson20_10k, %.1f ms per 10,000 requests)\n",
              serve_rate, serve_ms);
  return 0;
}

// llmsim benchmarks: prints one `name: value unit` line per figure (tools/bench builds Release and runs
// this). Figures are wall-clock rates of the simulator itself on this machine, not predictions.
#include <chrono>
#include <cstdio>
#include <string>

#include "llmsim/hardware/system_toml.h"
#include "llmsim/model/presets.h"
#include "llmsim/search/search.h"
#include "llmsim/serve/request_stream.h"
#include "llmsim/serve/serving_sim.h"
#include "llmsim/train/train_sim.h"

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

// `llmsim search train` over a llama2-70b space on DGX H100 (whole nodes from 256 to 1,024 GPUs, tp 1-8,
// pp 1-16, vp 1-2, micro-batch pow2:1-8, recompute none/selective/full, ZeRO 0-1, SP on/off, Megatron,
// global batch 512-1024 x 4096 tokens): configurations per second of the whole search (enumeration, rules, memory
// model, closed-form estimate) on every hardware thread, repeated for at least `min_s`; also the closed-form
// estimator alone (memory + step estimate) per second on one thread over the configurations that fit.
double search_evals_per_s(const std::string& data, double min_s, std::uint64_t& space, std::uint64_t& estimated,
                          int& threads, double& estimator_rate) {
  using namespace llmsim;
  const auto m = model::resolve_model("llama2-70b", data);
  sim::RunSpec base;
  base.train.seq_len = 4096;
  sim::TrainSpace sp = sim::TrainSpace::defaults(base);
  const std::pair<const char*, const char*> axes[] = {{"system", "dgx-h100"},
                                                      {"gpus", "256-1024"},
                                                      {"tp", "1-8"},
                                                      {"pp", "1-16"},
                                                      {"vp", "1-2"},
                                                      {"micro-batch", "pow2:1-8"},
                                                      {"recompute", "none,selective,full"},
                                                      {"zero-stage", "0-1"},
                                                      {"sequence-parallel", "any"},
                                                      {"framework", "megatron"},
                                                      {"global-batch", "512-1024"}};
  for (const auto& [k, v] : axes) sim::set_train_axis(sp, k, v);
  sim::SearchProblem p;
  p.model = &m;
  p.systems.push_back(hardware::resolve_system("dgx-h100", data));
  p.space = sp;
  sim::SearchOptions opt;
  opt.verify = 0;  // the fast phase only: no re-evaluation with the full simulator
  opt.pareto = false;
  std::uint64_t n = 0;
  const auto t0 = Clock::now();
  double elapsed = 0;
  do {
    const auto o = sim::search_training(p, opt);
    space = o.space_size;
    estimated = o.evaluated;
    threads = o.threads;
    n += o.space_size;
    elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  } while (elapsed < min_s);
  // The estimator alone, on the configurations that fit.
  opt.keep_all = true;
  opt.threads = 1;
  const auto all = sim::search_training(p, opt).all;
  sim::FastTrainEvaluator fe(m, p.systems.front());
  std::size_t k = 0;
  double sink = 0;
  const auto t1 = Clock::now();
  double el1 = 0;
  do {
    for (const auto& e : all) sink += fe.memory(e.run).gpu_bytes + fe.estimate(e.run).step_time_s;
    k += all.size();
    el1 = std::chrono::duration<double>(Clock::now() - t1).count();
  } while (el1 < min_s / 2 && !all.empty());
  estimator_rate = sink > 0 && el1 > 0 ? static_cast<double>(k) / el1 : 0;
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
  std::printf(
      "serving_requests_per_s: %.0f requests/s (llama2_7b_vllm_a800_poisson20_10k, %.1f ms per 10,000 requests)\n",
      serve_rate, serve_ms);
  std::uint64_t space = 0, estimated = 0;
  int threads = 0;
  double estimator_rate = 0;
  const double search_rate = search_evals_per_s(data, 2.0, space, estimated, threads, estimator_rate);
  std::printf(
      "search_evals_per_s: %.0f evals/s (llama2_70b_dgx_h100_256-1024gpus: %llu configurations, %llu fit and "
      "were estimated = %.0f estimates/s, %d threads; closed-form estimator alone %.0f/s on 1 thread)\n",
      search_rate, static_cast<unsigned long long>(space), static_cast<unsigned long long>(estimated),
      space > 0 ? search_rate * static_cast<double>(estimated) / static_cast<double>(space) : 0.0, threads,
      estimator_rate);
  return 0;
}

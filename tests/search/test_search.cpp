// What-if search and capacity planning: axis syntax, pruning by reason, the closed-form estimator
// against the full step simulator, brute force on small spaces, determinism across thread counts,
// empty spaces and contradictory constraints, cancellation, planning.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include <fmt/format.h>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/search/search.h"
#include "llmsim/search/search_space.h"
#include "llmsim/train/fast_train.h"
#include "llmsim/train/step_terms.h"
#include "llmsim/train/train_sim.h"
#include "memory/memory_test_util.h"
#include "test_util.h"

using namespace llmsim;
using llmsim::test::error_of;
using llmsim::test::preset_model;
using llmsim::test::preset_system;

namespace {

std::vector<std::int64_t> vals(std::initializer_list<std::int64_t> v) { return v; }

// A search problem over `model` on `systems` with the given axes (name -> CLI text).
sim::SearchProblem problem(const model::ModelSpec& m, const std::vector<std::string>& systems,
                           const std::vector<std::pair<std::string, std::string>>& axes, std::int64_t seq_len = 2048) {
  sim::RunSpec base;
  base.train.seq_len = seq_len;
  sim::SearchProblem p;
  p.model = &m;
  p.space = sim::TrainSpace::defaults(base);
  std::string sys_list;
  for (const auto& s : systems) sys_list += (sys_list.empty() ? "" : ",") + s;
  sim::set_train_axis(p.space, "system", sys_list);
  for (const auto& s : systems) p.systems.push_back(preset_system(s));
  for (const auto& [k, v] : axes) sim::set_train_axis(p.space, k, v);
  return p;
}

sim::SearchOptions fast_only(int threads) {
  sim::SearchOptions o;
  o.threads = threads;
  o.verify = 0;
  o.pareto = false;
  o.top = 5;
  return o;
}

}  // namespace

TEST_CASE("integer axes: values, lists, ranges, powers of two, any") {
  auto a = sim::parse_int_axis("--tp", "4");
  CHECK(a.mode == sim::AxisMode::Fixed);
  CHECK(a.values == vals({4}));
  a = sim::parse_int_axis("--tp", "1,2,4,8");
  CHECK(a.mode == sim::AxisMode::Listed);
  CHECK(a.values == vals({1, 2, 4, 8}));
  a = sim::parse_int_axis("--micro-batch", "pow2:1-16");
  CHECK(a.mode == sim::AxisMode::Listed);
  CHECK(a.values == vals({1, 2, 4, 8, 16}));
  a = sim::parse_int_axis("--pp", "1-8");
  CHECK(a.values == vals({1, 2, 3, 4, 5, 6, 7, 8}));
  a = sim::parse_int_axis("--pp", "8,1,pow2:2-4,4");  // sorted, duplicates dropped
  CHECK(a.values == vals({1, 2, 4, 8}));
  CHECK(sim::parse_int_axis("--tp", "any").mode == sim::AxisMode::Free);
  CHECK(sim::parse_int_axis("--tp", "*").mode == sim::AxisMode::Free);
  CHECK(sim::parse_int_axis("--zero-stage", "0-3", 0).values == vals({0, 1, 2, 3}));
  CHECK(sim::parse_int_axis("--micro-batch", "pow2:3-20").values == vals({4, 8, 16}));
}

TEST_CASE("axis errors name the flag, the rule and a did-you-mean") {
  auto e = error_of([] { sim::parse_int_axis("--tp", "pow:1-8"); });
  CHECK(e.kind() == ErrorKind::Usage);
  CHECK(e.message().find("did you mean 'pow2'") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "8-1"); });
  CHECK(e.message().find("runs backwards (write 1-8)") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "an"); });
  CHECK(e.message().find("did you mean 'any'") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "two"); });
  CHECK(e.message().find("a range 1-8, pow2:1-16 or any") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "0"); });
  CHECK(e.message().find("values must be >= 1") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "1,,2"); });
  CHECK(e.message().find("empty item") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--tp", "1,any"); });
  CHECK(e.message().find("cannot be combined") != std::string::npos);
  e = error_of([] { sim::parse_int_axis("--micro-batch", "pow2:5-7"); });
  CHECK(e.message().find("no power of two") != std::string::npos);
  e = error_of([] { sim::parse_choice_axis("--recompute", "none,ful", sim::recompute_names()); });
  CHECK(e.message().find("did you mean 'full'") != std::string::npos);
  CHECK(e.where().key == "--recompute");

  auto space = sim::TrainSpace::defaults(sim::RunSpec{});
  e = error_of([&] { sim::set_train_axis(space, "tpp", "2"); });
  CHECK(e.message().find("did you mean 'tp'") != std::string::npos);
  e = error_of([&] { sim::set_train_axis(space, "zero-stage", "0-4"); });
  CHECK(e.message().find("ZeRO stages are 0, 1, 2 and 3") != std::string::npos);
  e = error_of([&] { sim::set_train_axis(space, "framework", "vllm"); });
  CHECK(e.message().find("megatron, deepspeed, fsdp, hf") != std::string::npos);
  e = error_of([&] { sim::set_train_axis(space, "global-batch", "256,512"); });
  CHECK(e.message().find("a range a-b") != std::string::npos);
  sim::set_train_axis(space, "global-batch", "512-2048");
  CHECK(space.global_batch_min == 512);
  CHECK(space.global_batch_max == 2048);
  sim::set_train_axis(space, "sequence-parallel", "on,off");
  CHECK(space.axis(sim::TrainAxis::SequenceParallel).values == vals({1, 0}));
  sim::set_train_axis(space, "flash-attn", "yes");
  CHECK(space.axis(sim::TrainAxis::FlashAttn).values == vals({1}));
  sim::set_train_axis(space, "framework", "megatron-lm,fsdp");
  CHECK(space.axis(sim::TrainAxis::Framework).values == vals({0, 2}));
}

TEST_CASE("pruning reasons drop the tuple's numbers but keep the rule's") {
  CHECK(sim::reason_key("tp 3 does not divide the 32 attention heads") == "tp does not divide the attention heads");
  CHECK(sim::reason_key("vp > 1 (interleaved pipeline) needs pp > 1") == "vp > 1 (interleaved pipeline) needs pp > 1");
  CHECK(sim::reason_key("global batch 1000 is not a multiple of micro-batch 4 x dp 16") ==
        "global batch is not a multiple of micro-batch x dp");
  sim::PruneTally t;
  t.add("a", 7, "seven");
  t.add("a", 3, "three");
  t.add("b", 1, "one", 5);
  CHECK(t.total() == 7);
  CHECK(t.sorted().front().first == "b");
  CHECK(t.reasons().at("a").example == "three");  // the lowest index is the example
}

TEST_CASE("the fast memory model equals the memory model") {
  const auto m7 = preset_model("llama2-7b"), m70 = preset_model("llama2-70b"), mx = preset_model("mixtral-8x7b");
  const auto a800 = preset_system("a800-nvlink"), h100 = preset_system("dgx-h100");
  std::mt19937 rng(7);
  int checked = 0;
  for (int k = 0; k < 6000 && checked < 400; ++k) {
    const model::ModelSpec& m = k % 3 == 0 ? m7 : k % 3 == 1 ? m70 : mx;
    const hardware::SystemSpec& sys = k % 2 ? a800 : h100;
    sim::RunSpec r;
    r.par.tp = 1 << (rng() % 4);
    r.par.pp = 1 << (rng() % 4);
    r.par.gpus = 64;
    r.par.dp = r.par.gpus / (r.par.tp * r.par.pp);
    r.par.vp = r.par.pp > 1 && rng() % 2 ? 2 : 1;
    r.par.sequence_parallel = rng() % 2;
    r.train.micro_batch = 1 << (rng() % 3);
    r.train.global_batch = r.train.micro_batch * r.par.dp * (1 << (rng() % 4));
    r.train.recompute = static_cast<sim::Recompute>(rng() % 3);
    r.train.framework = static_cast<sim::Framework>(rng() % 4);
    r.train.zero_stage = static_cast<int>(rng() % 4);
    r.train.flash_attn = rng() % 3 != 0;
    if (rng() % 5 == 0) r.train.offload = rng() % 2 ? sim::Offload::Optimizer : sim::Offload::OptimizerParams;
    // Every compute precision (fp8 only where the GPU has it: training_problems filters the rest),
    // both pipeline schedules, expert parallelism, the fused loss and the optimizers.
    r.train.precision = static_cast<llmsim::DType>(rng() % 5);
    if (rng() % 4 == 0) r.train.schedule = sim::PipelineSchedule::GPipe;
    if (m.moe.enabled() && rng() % 2) r.par.ep = 1 << (rng() % 3);
    r.train.fused_loss = rng() % 3 == 0;
    if (rng() % 6 == 0) r.train.optimizer = rng() % 2 ? sim::Optimizer::Adam8bit : sim::Optimizer::Sgd;
    if (rng() % 5 == 0) {
      r.workload = sim::Workload::Finetune;
      r.train.finetune = rng() % 3 == 0 ? sim::FinetuneKind::Qlora : sim::FinetuneKind::Lora;
      r.train.lora_rank = 16;
      if (r.train.finetune == sim::FinetuneKind::Lora && rng() % 3 == 0) r.train.base_quant = model::WeightQuant::Int8;
      if (rng() % 2) r.train.lora_targets = {"q", "v"};
    }
    // Optimizer precision options (sim/run/train_state_bytes.h).
    if (rng() % 4 == 0) r.train.master_weights = false;
    if (rng() % 5 == 0) r.train.optimizer_state_dtype = llmsim::DType::BF16;
    if (rng() % 5 == 0) {
      r.train.optimizer_in_backward = true;
      r.train.global_batch = r.train.micro_batch * r.par.dp;
    }
    r = sim::with_defaults(r);
    if (!sim::structural_problems(r, m).empty() || !sim::training_problems(m, sys, r).empty()) continue;
    sim::FastTrainEvaluator fe(m, sys);
    const auto fast = fe.memory(r);
    const auto full = sim::evaluate_memory(m, sys, r);
    CHECK(fast.gpu_bytes == doctest::Approx(full.gpu_bytes).epsilon(1e-12));
    CHECK(fast.host_bytes == doctest::Approx(full.host_bytes).epsilon(1e-12));
    CHECK(fast.peak_stage == full.peak_stage);
    CHECK(fast.fits() == full.fits());
    ++checked;
  }
  CHECK(checked >= 200);
}

// The closed-form estimate against simulate_training on a varied, fixed sample: 600 configurations of
// four models on four systems (every framework and ZeRO stage, GPipe / 1F1B / interleaved pipelines,
// offload, LoRA) and 200 of llama2-70b on 256-1,024 H100s. docs/search.md quotes the printed figures.
TEST_CASE("the closed-form estimate agrees with the full step simulator") {
  const std::vector<std::string> models = {"llama2-7b", "llama2-13b", "llama2-70b", "mixtral-8x7b"};
  const std::vector<std::string> systems = {"a800-nvlink", "dgx-h100", "dgx-a100-40gb", "rtx4090-pcie"};
  std::map<std::string, model::ModelSpec> mc;
  std::map<std::string, hardware::SystemSpec> sc;
  for (const auto& n : models) mc.emplace(n, preset_model(n));
  for (const auto& n : systems) sc.emplace(n, preset_system(n));
  struct Sample {
    std::vector<double> err;
    double worst = 0;
    std::string worst_run;
    int pipelined = 0, zero3 = 0;
  };
  auto run_sample = [&](bool big, std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    Sample out;
    for (int k = 0; k < 200000 && out.err.size() < n; ++k) {
      const auto& mn = big ? models[2] : models[rng() % models.size()];
      const auto& sn = big ? systems[1] : systems[rng() % systems.size()];
      const auto& m = mc.at(mn);
      const auto& sys = sc.at(sn);
      sim::RunSpec r;
      r.par.tp = 1 << (rng() % 4);
      const std::int64_t pps[] = {1, 1, 2, 4, 8, 16};
      r.par.pp = pps[rng() % (big ? 6 : 5)];
      const std::int64_t gpus[] = {8, 16, 32, 64, 128}, big_gpus[] = {256, 512, 1024};
      r.par.gpus = big ? big_gpus[rng() % 3] : gpus[rng() % 5];
      if (r.par.gpus % (r.par.tp * r.par.pp) != 0) continue;
      r.par.dp = r.par.gpus / (r.par.tp * r.par.pp);
      r.par.vp = r.par.pp > 1 && rng() % 3 == 0 ? 2 : 1;
      r.par.sequence_parallel = r.par.tp > 1 && rng() % 2;
      r.train.micro_batch = 1 << (rng() % 3);
      r.train.global_batch = r.train.micro_batch * r.par.dp * (1 << (rng() % 5));
      const std::int64_t seqs[] = {1024, 2048, 4096};
      r.train.seq_len = seqs[rng() % 3];
      r.train.recompute = static_cast<sim::Recompute>(rng() % 3);
      r.train.framework = static_cast<sim::Framework>(rng() % 4);
      r.train.zero_stage = static_cast<int>(rng() % 4);
      r.train.flash_attn = rng() % 4 != 0;
      if (big) {
        r.train.global_batch = 1024;
        r.train.seq_len = 4096;
        if (rng() % 2) r.train.framework = sim::Framework::Megatron;
        if (1024 % (r.par.dp * r.train.micro_batch) != 0) continue;
      } else {
        if (rng() % 6 == 0) r.train.offload = rng() % 2 ? sim::Offload::Optimizer : sim::Offload::OptimizerParams;
        if (rng() % 5 == 0) r.train.schedule = sim::PipelineSchedule::GPipe;
        if (rng() % 8 == 0) {
          r.workload = sim::Workload::Finetune;
          r.train.finetune = sim::FinetuneKind::Lora;
          r.train.lora_rank = 16;
        }
      }
      r = sim::with_defaults(r);
      if (!sim::structural_problems(r, m).empty() || !sim::training_problems(m, sys, r).empty()) continue;
      sim::FastTrainEvaluator fe(m, sys);
      const auto full = sim::simulate_training(m, sys, r);
      REQUIRE(full.valid());
      const double e = std::abs(fe.estimate(r).step_time_s / full.step_time_s.value - 1);
      out.err.push_back(e);
      if (r.par.pp > 1) ++out.pipelined;
      if (r.train.zero_stage == 3) ++out.zero3;
      if (e > out.worst) {
        out.worst = e;
        out.worst_run = mn + " on " + sn + ": " + std::to_string(r.par.gpus) + " GPUs tp " + std::to_string(r.par.tp) +
                        " pp " + std::to_string(r.par.pp) + " vp " + std::to_string(r.par.vp) + " " +
                        std::string(sim::name_of(r.train.framework)) + " ZeRO-" + std::to_string(r.train.zero_stage);
      }
    }
    std::sort(out.err.begin(), out.err.end());
    return out;
  };
  for (const bool big : {false, true}) {
    const Sample s = run_sample(big, big ? 200 : 600, big ? 70 : 2026);
    REQUIRE(s.err.size() == (big ? 200u : 600u));
    const auto within = [&](double tol) {
      return static_cast<double>(std::count_if(s.err.begin(), s.err.end(), [&](double x) { return x <= tol; })) /
             static_cast<double>(s.err.size());
    };
    MESSAGE(fmt::format(
        "{}: fast vs full over {} configurations ({} pipelined, {} ZeRO-3): median {:.2f}%, p90 "
        "{:.2f}%, p99 {:.2f}%, within 2% {:.1f}%, within 10% {:.1f}%, max {:.1f}% ({})",
        big ? "llama2-70b on 256-1,024 H100s" : "mixed sample", s.err.size(), s.pipelined, s.zero3,
        100 * s.err[s.err.size() / 2], 100 * s.err[s.err.size() * 9 / 10], 100 * s.err[s.err.size() * 99 / 100],
        100 * within(0.02), 100 * within(0.10), 100 * s.worst, s.worst_run));
    CHECK(within(0.10) >= 0.97);
    CHECK(within(0.02) >= 0.80);
    CHECK(s.worst < 0.25);
    CHECK(s.pipelined >= static_cast<int>(s.err.size() / 4));
  }
}

TEST_CASE("a small space: the search's best is the best of evaluating every configuration one by one") {
  const auto m = preset_model("llama2-7b");
  sim::SearchProblem p = problem(m, {"a800-nvlink"},
                                 {{"gpus", "8"},
                                  {"tp", "any"},
                                  {"pp", "1-4"},
                                  {"vp", "1,2"},
                                  {"micro-batch", "pow2:1-4"},
                                  {"recompute", "any"},
                                  {"zero-stage", "any"},
                                  {"sequence-parallel", "any"},
                                  {"framework", "megatron,deepspeed"},
                                  {"global-batch", "64"}});
  const sim::SearchOutcome o = sim::search_training(p, fast_only(2));
  REQUIRE(o.status == sim::SearchStatus::Ok);

  // Brute force with the same generator and evaluator.
  const auto rs = sim::resolve_train_space(p.space, m, p.systems);
  const sim::TrainGenerator gen(p.space, rs, m, p.systems);
  sim::FastTrainEvaluator fe(m, p.systems[0]);
  std::map<std::string, std::uint64_t> reasons;
  std::uint64_t evaluated = 0, best_index = 0;
  double best = -1;
  for (std::uint64_t i = 0; i < rs.size; ++i) {
    sim::TrainCandidate c;
    std::string key, msg;
    if (!gen.decode(i, c, key, msg)) {
      ++reasons[key];
      continue;
    }
    const auto mem = fe.memory(c.run);
    if (!mem.fits()) {
      ++reasons["out of GPU memory"];
      continue;
    }
    ++evaluated;
    const auto est = fe.estimate(c.run);
    const double score = sim::objective_score(p, c.system, c.run, est.step_time_s, est.tokens_per_step);
    if (score > best) {
      best = score;
      best_index = i;
    }
  }
  CHECK(o.space_size == rs.size);
  CHECK(o.evaluated == evaluated);
  CHECK(o.evaluated + o.pruned.total() == o.space_size);
  REQUIRE(!o.top.empty());
  CHECK(o.top.front().index == best_index);
  CHECK(o.top.front().score == best);
  for (const auto& [k, n] : reasons) CHECK(o.pruned.reasons().at(k).count == n);
  // Sorted best first, ties by enumeration index.
  for (std::size_t k = 1; k < o.top.size(); ++k)
    CHECK((o.top[k - 1].score > o.top[k].score ||
           (o.top[k - 1].score == o.top[k].score && o.top[k - 1].index < o.top[k].index)));
}

TEST_CASE("results do not depend on the thread count") {
  const auto m = preset_model("llama2-13b");
  sim::SearchProblem p = problem(m, {"dgx-h100", "dgx-a100-80gb"},
                                 {{"gpus", "16-64"},
                                  {"tp", "any"},
                                  {"pp", "1,2,4"},
                                  {"vp", "1,2"},
                                  {"micro-batch", "pow2:1-4"},
                                  {"recompute", "none,full"},
                                  {"zero-stage", "0-1"},
                                  {"sequence-parallel", "any"},
                                  {"framework", "megatron"},
                                  {"global-batch", "256-512"}});
  p.price_per_gpu_hour = {2.5, 1.5};
  p.objective = sim::Objective::TokensPerDollar;
  auto opt = fast_only(1);
  opt.keep_all = true;
  opt.pareto = true;
  opt.verify = 3;
  const auto a = sim::search_training(p, opt);
  opt.threads = 2;
  const auto b = sim::search_training(p, opt);
  opt.threads = 5;
  const auto c = sim::search_training(p, opt);
  REQUIRE(a.status == sim::SearchStatus::Ok);
  for (const auto* o : {&b, &c}) {
    CHECK(o->space_size == a.space_size);
    CHECK(o->evaluated == a.evaluated);
    REQUIRE(o->top.size() == a.top.size());
    for (std::size_t k = 0; k < a.top.size(); ++k) {
      CHECK(o->top[k].index == a.top[k].index);
      CHECK(o->top[k].score == a.top[k].score);
      CHECK(o->top[k].full_score == a.top[k].full_score);
    }
    REQUIRE(o->all.size() == a.all.size());
    for (std::size_t k = 0; k < a.all.size(); ++k) CHECK(o->all[k].index == a.all[k].index);
    REQUIRE(o->pareto.size() == a.pareto.size());
    for (std::size_t k = 0; k < a.pareto.size(); ++k) CHECK(o->pareto[k].index == a.pareto[k].index);
    REQUIRE(o->pruned.reasons().size() == a.pruned.reasons().size());
    for (const auto& [key, r] : a.pruned.reasons()) {
      CHECK(o->pruned.reasons().at(key).count == r.count);
      CHECK(o->pruned.reasons().at(key).example == r.example);
    }
  }
  // The Pareto front rises with the GPU count.
  for (std::size_t k = 1; k < a.pareto.size(); ++k) {
    CHECK(a.pareto[k].run.par.gpus > a.pareto[k - 1].run.par.gpus);
    CHECK(a.pareto[k].fast.tokens_per_s > a.pareto[k - 1].fast.tokens_per_s);
  }
}

TEST_CASE("pruned tuples are counted by the first rule they break") {
  const auto m = preset_model("llama2-7b");
  // 8 GPUs, tp 1/3/8 x pp 1/3: tp 3 or pp 3 do not divide 8; tp 8 pp 1 and tp 1 pp 1 remain.
  sim::SearchProblem p = problem(m, {"a800-nvlink"},
                                 {{"gpus", "8"},
                                  {"tp", "1,3,8"},
                                  {"pp", "1,3"},
                                  {"vp", "1"},
                                  {"micro-batch", "1"},
                                  {"recompute", "none"},
                                  {"zero-stage", "0"},
                                  {"sequence-parallel", "off"},
                                  {"global-batch", "64"}});
  auto o = sim::search_training(p, fast_only(2));
  CHECK(o.space_size == 6);
  CHECK(o.pruned.reasons().at("gpus not a multiple of tp x pp x cp").count == 4);
  const auto oom = o.pruned.reasons().count("out of GPU memory") ? o.pruned.reasons().at("out of GPU memory").count : 0;
  CHECK(o.evaluated + oom == 2);  // tp 1 pp 1 (7B unsharded: out of memory) and tp 8 pp 1
  CHECK(o.pruned.total() + o.evaluated == o.space_size);
  // 12 GPUs with tp 3: 32 heads are not divisible by 3 (the structural rule's message, numbers dropped).
  p = problem(m, {"a800-nvlink"},
              {{"gpus", "6"},
               {"tp", "3"},
               {"pp", "1"},
               {"vp", "1"},
               {"micro-batch", "1"},
               {"recompute", "none"},
               {"zero-stage", "0"},
               {"sequence-parallel", "off"},
               {"global-batch", "64"}});
  o = sim::search_training(p, fast_only(1));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.pruned.reasons().at("tp does not divide the attention heads").count == 1);
  CHECK(o.pruned.reasons().at("tp does not divide the attention heads").example ==
        "tp 3 does not divide the 32 attention heads");
  // Duplicates are pruned as such: selective recomputation under FlashAttention, SP with tp 1.
  p = problem(m, {"a800-nvlink"},
              {{"gpus", "8"},
               {"tp", "1"},
               {"pp", "1"},
               {"vp", "1"},
               {"micro-batch", "1"},
               {"recompute", "any"},
               {"zero-stage", "0"},
               {"sequence-parallel", "any"},
               {"global-batch", "64"}});
  o = sim::search_training(p, fast_only(1));
  CHECK(o.space_size == 6);
  CHECK(o.pruned.reasons().at("sequence parallelism with tp 1 (same as without)").count == 3);
  CHECK(o.pruned.reasons()
            .at("selective recomputation with FlashAttention (same as none: nothing left to recompute)")
            .count == 1);
  CHECK(sim::is_duplicate_reason("sequence parallelism with tp 1 (same as without)"));
  // … but only when the tuple they duplicate is in the space: selective alone is searched.
  p = problem(m, {"a800-nvlink"},
              {{"gpus", "8"},
               {"tp", "1"},
               {"pp", "1"},
               {"vp", "1"},
               {"micro-batch", "1"},
               {"recompute", "selective"},
               {"zero-stage", "3"},
               {"sequence-parallel", "on"},
               {"global-batch", "64"}});
  o = sim::search_training(p, fast_only(1));
  CHECK(o.space_size == 1);
  CHECK(o.evaluated == 1);
}

TEST_CASE("an empty space is a distinct outcome with its reasons") {
  const auto m = preset_model("llama2-70b");
  // 70B on one RTX 4090 box without sharding: nothing fits.
  sim::SearchProblem p = problem(m, {"rtx4090-pcie"}, {{"gpus", "8"}, {"tp", "8"}, {"pp", "1"}, {"zero-stage", "0"}});
  const auto o = sim::search_training(p, fast_only(2));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.feasible == 0);
  CHECK(o.top.empty());
  CHECK(o.pruned.total() == o.space_size);
  CHECK(o.pruned.reasons().at("out of GPU memory").count > 0);
  CHECK(o.pruned.reasons().at("out of GPU memory").example.find("of 24.0 GiB per GPU") != std::string::npos);
}

TEST_CASE("contradictory constraints are reported as the reasons of an empty space") {
  const auto m = preset_model("llama2-7b");
  // --max-gpus below every GPU count of the space.
  sim::SearchProblem p = problem(m, {"dgx-h100"}, {{"gpus", "64"}});
  p.space.max_gpus = 32;
  auto o = sim::search_training(p, fast_only(2));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.pruned.reasons().at("more GPUs than --max-gpus").count == o.space_size);
  // A global batch that no micro-batch x dp divides.
  p = problem(m, {"dgx-h100"}, {{"gpus", "64"}, {"tp", "1"}, {"pp", "1"}, {"global-batch", "1000"}});
  o = sim::search_training(p, fast_only(2));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.pruned.reasons().at("global batch is not a multiple of micro-batch x dp").count > 0);
  // … and a range with no multiple of micro-batch x dp in it.
  p = problem(m, {"dgx-h100"}, {{"gpus", "64"}, {"tp", "1"}, {"pp", "1"}, {"global-batch", "65-127"}});
  o = sim::search_training(p, fast_only(2));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.pruned.reasons().count("no global batch in the --global-batch range is a multiple of micro-batch x dp") == 1);
  // Too little memory headroom asked for.
  p = problem(m, {"dgx-h100"}, {{"gpus", "8"}, {"tp", "1"}, {"pp", "1"}, {"global-batch", "64"}});
  p.space.min_headroom_bytes = 80.0 * (1 << 30);
  o = sim::search_training(p, fast_only(2));
  CHECK(o.status == sim::SearchStatus::EmptySpace);
  CHECK(o.pruned.reasons().at("less free GPU memory than --min-headroom-gib").count > 0);
}

TEST_CASE("the best configurations are re-evaluated with the full simulator") {
  const auto m = preset_model("llama2-7b");
  sim::SearchProblem p = problem(m, {"dgx-h100"}, {{"gpus", "16"}, {"global-batch", "128"}});
  p.train_tokens = 1e10;
  p.price_per_gpu_hour = {2.0};
  sim::SearchOptions opt;
  opt.threads = 2;
  opt.top = 3;
  opt.verify = 5;
  const auto o = sim::search_training(p, opt);
  REQUIRE(o.status == sim::SearchStatus::Ok);
  REQUIRE(o.top.size() == 3);
  for (std::size_t k = 0; k < o.top.size(); ++k) {
    REQUIRE(o.top[k].full.has_value());
    CHECK(o.top[k].full->valid());
    CHECK(o.top[k].full->memory.fits());
    CHECK(o.top[k].full->total_cost > 0);
    CHECK(o.top[k].full->total_energy_J > 0);
    if (k > 0) CHECK(o.top[k - 1].full_score >= o.top[k].full_score);
  }
  CHECK(o.max_fast_error < 0.10);
}

TEST_CASE("a cancelled search returns what it has") {
  const auto m = preset_model("llama2-7b");
  sim::SearchProblem p = problem(m, {"dgx-h100"}, {{"gpus", "64"}});
  std::atomic<bool> cancel{true};
  auto opt = fast_only(2);
  opt.cancel = &cancel;
  const auto o = sim::search_training(p, opt);
  CHECK(o.status == sim::SearchStatus::Interrupted);
  CHECK(o.evaluated == 0);
}

TEST_CASE("planning: the fewest GPUs that meet the deadline") {
  const auto m = preset_model("llama2-7b");
  sim::SearchProblem p = problem(m, {"dgx-a100-80gb"}, {{"global-batch", "256-512"}});
  p.space.max_gpus = 256;
  p.train_tokens = 2e10;
  p.deadline_s = 86400;
  p.objective = sim::Objective::Time;
  sim::SearchOptions opt;
  opt.threads = 2;
  opt.verify = 5;
  const auto o = sim::plan_training(p, opt);
  REQUIRE(o.status == sim::SearchStatus::Ok);
  REQUIRE(o.met);
  REQUIRE(!o.search.top.empty());
  const auto& best = o.search.top.front();
  CHECK(best.run.par.gpus == o.gpus);
  CHECK(best.full->total_time_s.value <= p.deadline_s);
  CHECK(o.lower_bound_gpus > 0);
  CHECK(o.gpus > o.lower_bound_gpus);
  // One node fewer: nothing meets the deadline (by the same fast estimate and re-evaluation).
  sim::SearchProblem q = p;
  sim::set_train_axis(q.space, "gpus", std::to_string(o.gpus - 8));
  q.space.max_gpus = 0;
  auto sopt = opt;
  sopt.top = 20;
  const auto s = sim::search_training(q, sopt);
  bool met_earlier = false;
  for (const auto& e : s.top)
    if (e.full && e.full->valid() && e.full->total_time_s.value <= p.deadline_s) met_earlier = true;
  CHECK_FALSE(met_earlier);

  // Unreachable within --max-gpus: not met, with the fastest configuration found.
  p.space.max_gpus = 40;
  const auto u = sim::plan_training(p, opt);
  CHECK_FALSE(u.met);
  if (u.status == sim::SearchStatus::Ok) {
    REQUIRE(u.fastest.has_value());
    CHECK(u.fastest->run.par.gpus <= 40);
  }
}

TEST_CASE("with the optimizer in backward and no --global-batch, every configuration steps on one micro-batch") {
  const auto m = preset_model("llama2-7b");
  sim::SearchProblem p = problem(
      m, {"a800-nvlink"},
      {{"gpus", "8"}, {"tp", "1,2"}, {"pp", "1"}, {"micro-batch", "1,2"}, {"zero-stage", "3"}, {"framework", "fsdp"}});
  p.space.base.train.optimizer_in_backward = true;
  const auto rs = sim::resolve_train_space(p.space, m, p.systems);
  CHECK(rs.one_micro_batch_per_step);
  const sim::TrainGenerator gen(p.space, rs, m, p.systems);
  int decoded = 0;
  for (std::uint64_t i = 0; i < rs.size; ++i) {
    sim::TrainCandidate c;
    std::string key, msg;
    if (!gen.decode(i, c, key, msg)) continue;
    CHECK(c.run.train.global_batch == c.run.train.micro_batch * c.run.par.dp);
    ++decoded;
  }
  CHECK(decoded >= 4);
  CHECK(sim::search_training(p, fast_only(2)).status == sim::SearchStatus::Ok);
  // A given global batch is kept: then only configurations with one micro-batch per step remain.
  sim::set_train_axis(p.space, "global-batch", "8");
  CHECK_FALSE(sim::resolve_train_space(p.space, m, p.systems).one_micro_batch_per_step);
}

TEST_CASE("GB200 NVL72: the best llama3.1-405b plan on 72 GPUs puts TP across trays, inside the NVLink domain") {
  const auto m = preset_model("llama3.1-405b");
  sim::SearchProblem p = problem(m, {"gb200-nvl72"},
                                 {{"gpus", "72"},
                                  {"framework", "megatron"},
                                  {"micro-batch", "1"},
                                  {"recompute", "selective,full"},
                                  {"zero-stage", "1"},
                                  {"sequence-parallel", "true"},
                                  {"vp", "1"},
                                  {"global-batch", "576"}},
                                 4096);
  const auto& sys = p.systems[0];
  const int domain = hardware::fast_domain_gpus(sys);
  REQUIRE(domain == 72);
  // The TP axis runs up to the domain (64), not the 4-GPU tray.
  const auto rs = sim::resolve_train_space(p.space, m, p.systems);
  const auto& tps = rs.slices.front().values[static_cast<std::size_t>(sim::TrainAxis::Tp)];
  CHECK(tps.back() == 64);
  const sim::SearchOutcome o = sim::search_training(p, fast_only(2));
  REQUIRE(o.status == sim::SearchStatus::Ok);
  REQUIRE(!o.top.empty());
  const auto& best = o.top.front().run;
  CAPTURE(best.par.tp);
  CAPTURE(best.par.pp);
  CAPTURE(best.par.dp);
  // TP wider than a tray, and TP x CP inside the domain: its collectives ride NVLink.
  CHECK(best.par.tp > sys.node.gpus_per_node);
  CHECK(best.par.tp * best.par.cp <= domain);
  const sim::LayerGroups g = sim::layer_groups(best.par, domain);
  CHECK(g.tp.nodes() == 1);
  const sim::CommCost cc(sys);
  CHECK(cc.ring_bandwidth_Bps(g.tp) ==
        doctest::Approx(sys.node.fabric_bandwidth_Bps * sys.efficiency.fabric_bandwidth.value));
  // The same configuration with the tray as the fabric boundary (TP over the NICs) is slower.
  auto trays = sys;
  trays.node.nvlink_domain_gpus = trays.node.gpus_per_node;
  sim::FastTrainEvaluator on_nvlink(m, sys), on_nics(m, trays);
  CHECK(on_nics.estimate(best).exposed_comm_s > 2 * on_nvlink.estimate(best).exposed_comm_s);
  CHECK(on_nics.estimate(best).step_time_s > on_nvlink.estimate(best).step_time_s);
}

TEST_CASE("GB200 NVL72: mixtral-8x7b expert parallelism stays inside the NVLink domain") {
  const auto m = preset_model("mixtral-8x7b");
  sim::SearchProblem p = problem(m, {"gb200-nvl72"},
                                 {{"gpus", "64"},
                                  {"framework", "megatron"},
                                  {"ep", "2,4,8"},
                                  {"micro-batch", "1,2"},
                                  {"recompute", "selective,full"},
                                  {"zero-stage", "1"},
                                  {"vp", "1"},
                                  {"global-batch", "512"}},
                                 4096);
  const auto& sys = p.systems[0];
  const int domain = hardware::fast_domain_gpus(sys);
  const sim::SearchOutcome o = sim::search_training(p, fast_only(2));
  REQUIRE(o.status == sim::SearchStatus::Ok);
  REQUIRE(!o.top.empty());
  const auto& best = o.top.front().run;
  CAPTURE(best.par.tp);
  CAPTURE(best.par.ep);
  CHECK(best.par.ep > 1);
  CHECK(best.par.tp * best.par.cp * best.par.ep <= domain);
  const sim::LayerGroups g = sim::layer_groups(best.par, domain);
  CHECK(g.ep.nodes() == 1);
  const sim::CommCost cc(sys);
  CHECK(cc.ring_bandwidth_Bps(g.ep) ==
        doctest::Approx(sys.node.fabric_bandwidth_Bps * sys.efficiency.fabric_bandwidth.value));
  // With the tray as the boundary, an EP group wider than 4 GPUs would cross the NICs.
  if (best.par.ep * best.par.tp * best.par.cp > sys.node.gpus_per_node)
    CHECK(sim::layer_groups(best.par, sys.node.gpus_per_node).ep.nodes() > 1);
}

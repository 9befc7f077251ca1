#include "llmsim/search/recipe_fill.h"

#include <algorithm>

#include <fmt/format.h>

#include "llmsim/core/suggest.h"
#include "llmsim/search/search.h"

namespace llmsim::sim {

namespace {

bool has(const std::vector<FillAxis>& v, FillAxis a) { return std::find(v.begin(), v.end(), a) != v.end(); }

std::int64_t as_int(bool b) { return b ? 1 : 0; }

}  // namespace

std::string_view name_of(FillAxis a) {
  switch (a) {
    case FillAxis::Recompute: return "recompute";
    case FillAxis::SequenceParallel: return "sequence_parallel";
    case FillAxis::ZeroStage: return "zero_stage";
    case FillAxis::MicroBatch: return "micro_batch";
  }
  return "?";
}

std::string join_axes(const std::vector<FillAxis>& axes) {
  std::vector<std::string> names;
  for (FillAxis a : axes) names.emplace_back(name_of(a));
  return llmsim::join(names);
}

std::optional<RecipeFill> best_feasible_fill(const model::ModelSpec& m, const hardware::SystemSpec& sys,
                                             const RunSpec& run_in, const std::vector<FillAxis>& free_axes,
                                             const std::vector<Recompute>& recompute_modes) {
  const RunSpec run = with_defaults(run_in);
  if (run.workload == Workload::Inference || free_axes.empty()) return std::nullopt;
  const auto& p = run.par;
  const auto& t = run.train;

  TrainSpace space;
  space.systems = {sys.name};
  space.base = run;
  space.precision_given = true;
  using A = TrainAxis;
  space.axis(A::System) = fixed_axis(0);
  space.axis(A::Gpus) = fixed_axis(p.gpus);
  space.axis(A::Tp) = fixed_axis(p.tp);
  space.axis(A::Pp) = fixed_axis(p.pp);
  space.axis(A::Cp) = fixed_axis(p.cp);
  space.axis(A::Ep) = fixed_axis(p.ep);
  space.axis(A::Vp) = fixed_axis(p.vp);
  // Hugging Face stacks shard through DeepSpeed (transformers' integration; the measured-run reader maps
  // an hf row with a stated ZeRO stage the same way): with the stage unstated, both are candidates.
  const bool hf_zero = t.framework == Framework::Hf && has(free_axes, FillAxis::ZeroStage);
  space.axis(A::Framework) =
      hf_zero ? listed_axis({static_cast<std::int64_t>(Framework::Hf), static_cast<std::int64_t>(Framework::DeepSpeed)})
              : fixed_axis(static_cast<std::int64_t>(t.framework));
  space.axis(A::Offload) = fixed_axis(static_cast<std::int64_t>(t.offload));
  space.axis(A::Precision) = fixed_axis(static_cast<std::int64_t>(t.precision));
  space.axis(A::FlashAttn) = fixed_axis(as_int(t.flash_attn));
  space.axis(A::Schedule) = fixed_axis(static_cast<std::int64_t>(t.schedule));
  std::vector<std::int64_t> modes;
  for (Recompute r : recompute_modes.empty()
                         ? std::vector<Recompute>{Recompute::None, Recompute::Selective, Recompute::Full}
                         : recompute_modes)
    modes.push_back(static_cast<std::int64_t>(r));
  space.axis(A::Recompute) =
      has(free_axes, FillAxis::Recompute) ? listed_axis(modes) : fixed_axis(static_cast<std::int64_t>(t.recompute));
  space.axis(A::SequenceParallel) = has(free_axes, FillAxis::SequenceParallel) && p.tp > 1
                                        ? listed_axis({0, 1})
                                        : fixed_axis(as_int(p.sequence_parallel));
  space.axis(A::ZeroStage) = has(free_axes, FillAxis::ZeroStage) ? listed_axis({0, 1, 2, 3}) : fixed_axis(t.zero_stage);
  // The global batch stays what the row states (or its default); micro-batches that divide its share
  // of one data-parallel rank.
  std::vector<std::int64_t> micro{t.micro_batch};
  if (has(free_axes, FillAxis::MicroBatch)) {
    micro.clear();
    const std::int64_t per_rank = std::max<std::int64_t>(1, t.global_batch / std::max<std::int64_t>(1, p.dp));
    for (std::int64_t mb = 1; mb <= per_rank && mb <= 256; ++mb)
      if (per_rank % mb == 0) micro.push_back(mb);
  }
  space.axis(A::MicroBatch) = listed_axis(micro);
  space.dp = fixed_axis(p.dp);
  space.global_batch_min = space.global_batch_max = t.global_batch;

  SearchProblem problem;
  problem.model = &m;
  problem.systems = {sys};
  problem.space = space;
  problem.objective = Objective::TokensPerS;
  SearchOptions options;
  options.threads = 1;
  options.top = 1;
  options.verify = 1;
  options.pareto = false;
  const SearchOutcome out = search_training(problem, options);
  if (out.top.empty()) return std::nullopt;

  RecipeFill fill;
  fill.run = out.top.front().run;
  if (!out.top.front().full) return std::nullopt;  // verify = 1 re-evaluates the best
  fill.result = *out.top.front().full;
  fill.candidates = static_cast<std::size_t>(out.space_size);
  const auto& c = fill.run;
  if (c.train.framework != t.framework)
    fill.chosen.push_back(
        fmt::format("framework={} (transformers' DeepSpeed integration)", name_of(c.train.framework)));
  if (c.train.recompute != t.recompute) fill.chosen.push_back(fmt::format("recompute={}", name_of(c.train.recompute)));
  if (c.par.sequence_parallel != p.sequence_parallel)
    fill.chosen.push_back(fmt::format("sequence_parallel={}", c.par.sequence_parallel ? "yes" : "no"));
  if (c.train.zero_stage != t.zero_stage) fill.chosen.push_back(fmt::format("zero_stage={}", c.train.zero_stage));
  if (c.train.micro_batch != t.micro_batch) fill.chosen.push_back(fmt::format("micro_batch={}", c.train.micro_batch));
  return fill;
}

}  // namespace llmsim::sim

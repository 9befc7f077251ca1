#include "llmsim/search/search_space.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/core/strings.h"
#include "llmsim/core/suggest.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/train/train_sim.h"

namespace llmsim::sim {

// ---- training spaces ------------------------------------------------------------------------------

namespace {

const std::vector<std::string> kOnOff = {"off", "on"};
const std::vector<std::pair<std::string, std::string>> kOnOffAliases = {{"false", "off"}, {"true", "on"}, {"no", "off"},
                                                                        {"yes", "on"},    {"0", "off"},   {"1", "on"}};
const std::vector<std::string> kTrainFrameworks = training_framework_names();  // Framework order
// The aliases of a training framework (megatron-lm, nemo); the engines' are not choices here.
const std::vector<std::pair<std::string, std::string>> kFrameworkAliases = [] {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [alias, name] : framework_aliases())
    if (Framework f{}; parse_name(name, f) && is_training_framework(f)) out.emplace_back(alias, name);
  return out;
}();
const std::vector<std::string> kPrecisions = compute_precision_names();  // DType order

std::size_t idx(TrainAxis a) { return static_cast<std::size_t>(a); }

const std::vector<std::string>& choices_of(TrainAxis a) {
  static const std::vector<std::string> recompute = recompute_names(), offload = offload_names(),
                                        schedule = pipeline_schedule_names();
  switch (a) {
    case TrainAxis::Framework: return kTrainFrameworks;
    case TrainAxis::Offload: return offload;
    case TrainAxis::Precision: return kPrecisions;
    case TrainAxis::FlashAttn:
    case TrainAxis::SequenceParallel: return kOnOff;
    case TrainAxis::Recompute: return recompute;
    case TrainAxis::Schedule: return schedule;
    default: break;
  }
  static const std::vector<std::string> none;
  return none;
}

bool is_choice(TrainAxis a) { return !choices_of(a).empty(); }

Axis free_axis() {
  Axis a;
  a.mode = AxisMode::Free;
  return a;
}

std::vector<std::int64_t> pow2_upto(std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t p = 1; p <= hi; p *= 2) v.push_back(p);
  return v;
}

}  // namespace

Axis fixed_axis(std::int64_t v) {
  Axis a;
  a.values = {v};
  return a;
}

Axis listed_axis(std::vector<std::int64_t> values) {
  Axis a;
  a.mode = values.size() > 1 ? AxisMode::Listed : AxisMode::Fixed;
  a.values = std::move(values);
  return a;
}

const std::vector<std::string>& train_axis_names() {
  static const std::vector<std::string> names = {"system",
                                                 "gpus",
                                                 "tp",
                                                 "pp",
                                                 "cp",
                                                 "ep",
                                                 "vp",
                                                 "framework",
                                                 "zero-stage",
                                                 "offload",
                                                 "precision",
                                                 "flash-attn",
                                                 "recompute",
                                                 "sequence-parallel",
                                                 "pipeline-schedule",
                                                 "micro-batch"};
  return names;
}

TrainSpace TrainSpace::defaults(const RunSpec& base) {
  TrainSpace s;
  s.base = base;
  s.axis(TrainAxis::System) = fixed_axis(0);
  s.axis(TrainAxis::Gpus) = free_axis();
  s.axis(TrainAxis::Tp) = free_axis();
  s.axis(TrainAxis::Pp) = free_axis();
  s.axis(TrainAxis::Cp) = fixed_axis(base.par.cp);
  s.axis(TrainAxis::Ep) = fixed_axis(base.par.ep);
  s.axis(TrainAxis::Vp) = free_axis();
  const auto fw = static_cast<std::int64_t>(base.train.framework);
  s.axis(TrainAxis::Framework) = fixed_axis(fw < static_cast<std::int64_t>(kTrainFrameworks.size()) ? fw : 1);
  s.axis(TrainAxis::ZeroStage) = free_axis();
  s.axis(TrainAxis::Offload) = fixed_axis(static_cast<std::int64_t>(base.train.offload));
  s.axis(TrainAxis::Precision) = fixed_axis(static_cast<std::int64_t>(base.train.precision));
  s.axis(TrainAxis::FlashAttn) = fixed_axis(base.train.flash_attn ? 1 : 0);
  s.axis(TrainAxis::Recompute) = free_axis();
  s.axis(TrainAxis::SequenceParallel) = free_axis();
  s.axis(TrainAxis::Schedule) = fixed_axis(static_cast<std::int64_t>(base.train.schedule));
  s.axis(TrainAxis::MicroBatch) = free_axis();
  s.dp = free_axis();
  return s;
}

void set_train_axis(TrainSpace& space, const std::string& name, const std::string& text) {
  const std::string flag = "--" + name;
  if (name == "dp") {
    space.dp = parse_int_axis(flag, text);
    return;
  }
  if (name == "global-batch") {
    const Axis a = parse_int_axis(flag, text);
    const bool range =
        a.mode == AxisMode::Listed && text.find(',') == std::string::npos && text.find(':') == std::string::npos;
    if (a.mode == AxisMode::Free || (a.mode == AxisMode::Listed && !range))
      axis_error(flag, text,
                 "must be a number of sequences per step, or a range a-b (the largest multiple of "
                 "micro-batch x dp in it is used)");
    space.global_batch_min = a.values.front();
    space.global_batch_max = a.values.back();
    return;
  }
  if (name == "system") {
    Axis a;
    a.text = text;
    const auto items = split_fields(text, ',');
    if (is_free_axis_text(trim_blanks(text)))
      axis_error(flag, text, "'any' must be expanded to the preset names by the front end");
    space.systems.clear();
    for (const auto item : items) {
      if (item.empty()) axis_error(flag, text, "empty item in the list");
      if (std::find(space.systems.begin(), space.systems.end(), item) != space.systems.end()) continue;
      a.values.push_back(static_cast<std::int64_t>(space.systems.size()));
      space.systems.emplace_back(item);
    }
    a.mode = a.values.size() == 1 ? AxisMode::Fixed : AxisMode::Listed;
    space.axis(TrainAxis::System) = a;
    return;
  }
  const auto& names = train_axis_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) {
    std::vector<std::string> all = names;
    all.push_back("dp");
    all.push_back("global-batch");
    throw_usage(flag, fmt::format("'{}' is not a search axis{}; axes: {}", name, did_you_mean(name, all), join(all)));
  }
  const auto a = static_cast<TrainAxis>(it - names.begin());
  if (a == TrainAxis::Framework) {
    space.axis(a) = parse_choice_axis(flag, text, kTrainFrameworks, kFrameworkAliases);
  } else if (a == TrainAxis::FlashAttn || a == TrainAxis::SequenceParallel) {
    space.axis(a) = parse_choice_axis(flag, text, kOnOff, kOnOffAliases);
  } else if (is_choice(a)) {
    space.axis(a) = parse_choice_axis(flag, text, choices_of(a));
    if (a == TrainAxis::Precision) space.precision_given = true;
  } else if (a == TrainAxis::ZeroStage) {
    space.axis(a) = parse_int_axis(flag, text, 0);
    for (auto v : space.axis(a).values)
      if (v > 3) axis_error(flag, text, "ZeRO stages are 0, 1, 2 and 3");
  } else {
    space.axis(a) = parse_int_axis(flag, text, 1);
  }
}

std::string train_axis_value_name(TrainAxis a, std::int64_t v) {
  if (is_choice(a)) {
    const auto& c = choices_of(a);
    return v >= 0 && v < static_cast<std::int64_t>(c.size()) ? c[static_cast<std::size_t>(v)] : "?";
  }
  return std::to_string(v);
}

ResolvedTrainSpace resolve_train_space(const TrainSpace& space, const model::ModelSpec& m,
                                       const std::vector<hardware::SystemSpec>& systems) {
  ResolvedTrainSpace out;
  if (systems.empty() || systems.size() != space.systems.size())
    throw Error(ErrorKind::Usage, Location{.key = "--system"}, "a search needs at least one --system");
  // Global batch: 4 Mi tokens per step unless given (Llama 2's batch; Touvron et al. 2023 Sec. 2.2).
  out.global_batch_min = space.global_batch_min;
  out.global_batch_max = space.global_batch_max;
  if (out.global_batch_min <= 0) {
    const std::int64_t seq = std::max<std::int64_t>(1, space.base.train.seq_len);
    out.global_batch_min = out.global_batch_max = std::max<std::int64_t>(1, (4LL << 20) / seq);
    out.one_micro_batch_per_step = space.base.train.optimizer_in_backward;
  }
  for (const std::int64_t sys_index : space.axis(TrainAxis::System).values) {
    const auto& sys = systems[static_cast<std::size_t>(sys_index)];
    const std::int64_t gpn = std::max(1, sys.node.gpus_per_node);
    ResolvedTrainSpace::Slice sl;
    sl.system = static_cast<int>(sys_index);
    for (std::size_t i = 0; i < kTrainAxes; ++i) {
      const auto a = static_cast<TrainAxis>(i);
      const Axis& ax = space.axes[i];
      auto& v = sl.values[i];
      if (a == TrainAxis::System) {
        v = {sys_index};
        continue;
      }
      if (a == TrainAxis::Precision && !space.precision_given) {
        v = {static_cast<std::int64_t>(sys.gpu.peak(DType::BF16) > 0 ? DType::BF16 : DType::FP16)};
        continue;
      }
      if (ax.mode != AxisMode::Free) {
        v = ax.values;
        if (a == TrainAxis::Gpus && ax.mode == AxisMode::Listed && ax.text.find(',') == std::string::npos &&
            ax.text.find(':') == std::string::npos) {
          // A plain range of GPU counts: whole nodes, or a part of one node that divides it.
          std::erase_if(v, [&](std::int64_t g) { return g % gpn != 0 && gpn % g != 0; });
        }
        continue;
      }
      switch (a) {
        case TrainAxis::Gpus: {
          if (space.max_gpus <= 0)
            throw Error(ErrorKind::Usage, Location{.key = "--gpus"},
                        "give --gpus (a count, a list or a range such as 64-512), or --max-gpus to search every "
                        "count up to it");
          for (std::int64_t g = 1; g < gpn; ++g)
            if (gpn % g == 0 && g <= space.max_gpus) v.push_back(g);
          for (std::int64_t g = gpn; g <= space.max_gpus; g += gpn) v.push_back(g);
          std::erase_if(v, [&](std::int64_t g) { return g < space.min_gpus; });
          break;
        }
        // TP stays inside the fast fabric: the node, or a multi-node NVLink domain (up to 64 on an NVL72).
        case TrainAxis::Tp: v = pow2_upto(hardware::fast_domain_gpus(sys)); break;
        case TrainAxis::Pp:
          for (std::int64_t p = 1; p <= m.num_layers; ++p)
            if (m.num_layers % p == 0 || (p & (p - 1)) == 0) v.push_back(p);
          break;
        case TrainAxis::Cp: v = {1, 2, 4, 8}; break;
        case TrainAxis::Ep:
          v = {1};
          if (m.moe.enabled())
            for (std::int64_t e = 2; e <= m.moe.num_experts; e *= 2)
              if (m.moe.num_experts % e == 0) v.push_back(e);
          break;
        case TrainAxis::Vp: v = {1, 2, 4}; break;
        case TrainAxis::MicroBatch: v = pow2_upto(16); break;
        case TrainAxis::ZeroStage: v = {0, 1, 2, 3}; break;
        case TrainAxis::Precision:  // mixed precision: fp16, bf16, fp8 (fp32 / tf32 only when listed)
          v = {static_cast<std::int64_t>(DType::FP16), static_cast<std::int64_t>(DType::BF16),
               static_cast<std::int64_t>(DType::FP8)};
          break;
        default:
          for (std::size_t c = 0; c < choices_of(a).size(); ++c) v.push_back(static_cast<std::int64_t>(c));
          break;
      }
    }
    std::uint64_t size = 1;
    for (const auto& v : sl.values) {
      if (v.empty()) {
        size = 0;
        break;
      }
      if (size > (std::uint64_t{1} << 50) / v.size())
        throw Error(ErrorKind::Usage, Location{},
                    "the search space has more than 2^50 configurations; fix or narrow some axes");
      size *= v.size();
    }
    sl.offset = out.size;
    sl.size = size;
    out.size += size;
    out.slices.push_back(std::move(sl));
  }
  return out;
}

TrainGenerator::TrainGenerator(const TrainSpace& space, const ResolvedTrainSpace& resolved, const model::ModelSpec& m,
                               const std::vector<hardware::SystemSpec>& systems)
    : space_(space), resolved_(resolved), m_(m), systems_(systems) {}

bool TrainGenerator::decode(std::uint64_t index, TrainCandidate& out, std::string& key, std::string& message,
                            const PruneTally* tally) const {
  return check(seek(index), out, key, message, tally);
}

TrainCursor TrainGenerator::seek(std::uint64_t index) const {
  TrainCursor c;
  c.index = index;
  for (std::size_t k = 0; k < resolved_.slices.size(); ++k)
    if (index >= resolved_.slices[k].offset && index < resolved_.slices[k].offset + resolved_.slices[k].size)
      c.slice = k;
  if (resolved_.slices.empty()) return c;
  const auto& sl = resolved_.slices[c.slice];
  std::uint64_t local = index - sl.offset;
  for (std::size_t i = kTrainAxes; i-- > 0;) {
    const auto n = sl.values[i].size();
    c.digit[i] = n > 0 ? static_cast<std::uint32_t>(local % n) : 0;
    local = n > 0 ? local / n : 0;
  }
  return c;
}

void TrainGenerator::advance(TrainCursor& c) const {
  ++c.index;
  const auto& sl = resolved_.slices[c.slice];
  for (std::size_t i = kTrainAxes; i-- > 0;) {
    if (++c.digit[i] < sl.values[i].size()) return;
    c.digit[i] = 0;
  }
  // Past the end of the slice: the next one starts at all-zero digits.
  if (c.slice + 1 < resolved_.slices.size()) ++c.slice;
}

bool TrainGenerator::check(const TrainCursor& c, TrainCandidate& out, std::string& key, std::string& message,
                           const PruneTally* tally) const {
  const auto& sl = resolved_.slices[c.slice];
  std::array<std::int64_t, kTrainAxes> v{};
  for (std::size_t i = 0; i < kTrainAxes; ++i) v[i] = sl.values[i][c.digit[i]];
  out.index = c.index;
  out.system = sl.system;
  RunSpec& r = out.run;
  // Every field below is set for each tuple; the fixed settings are copied once.
  if (out.primed_by != this) {
    r = space_.base;
    out.primed_by = this;
  }
  auto at = [&](TrainAxis a) { return v[idx(a)]; };
  r.par.gpus = at(TrainAxis::Gpus);
  r.par.tp = at(TrainAxis::Tp);
  r.par.pp = at(TrainAxis::Pp);
  r.par.cp = at(TrainAxis::Cp);
  r.par.ep = at(TrainAxis::Ep);
  r.par.vp = at(TrainAxis::Vp);
  r.train.framework = static_cast<Framework>(at(TrainAxis::Framework));
  r.train.zero_stage = static_cast<int>(at(TrainAxis::ZeroStage));
  r.train.offload = static_cast<Offload>(at(TrainAxis::Offload));
  r.train.precision = static_cast<DType>(at(TrainAxis::Precision));
  r.train.flash_attn = at(TrainAxis::FlashAttn) != 0;
  r.train.recompute = static_cast<Recompute>(at(TrainAxis::Recompute));
  r.par.sequence_parallel = at(TrainAxis::SequenceParallel) != 0;
  r.train.schedule = static_cast<PipelineSchedule>(at(TrainAxis::Schedule));
  r.train.micro_batch = at(TrainAxis::MicroBatch);
  const auto& p = r.par;

  // `msg` formats the message; it runs only when the tally has no example of this reason yet.
  auto fail = [&](const char* k, auto&& msg) {
    key = k;
    if (tally != nullptr && tally->has(key))
      message.clear();
    else
      message = msg();
    return false;
  };
  if (space_.max_gpus > 0 && p.gpus > space_.max_gpus)
    return fail("more GPUs than --max-gpus",
                [&] { return fmt::format("gpus {} > --max-gpus {}", p.gpus, space_.max_gpus); });
  if (p.gpus < space_.min_gpus)
    return fail("fewer GPUs than --min-gpus",
                [&] { return fmt::format("gpus {} < --min-gpus {}", p.gpus, space_.min_gpus); });
  const std::int64_t mp = p.tp * p.pp * p.cp;
  if (p.gpus % mp != 0)
    return fail("gpus not a multiple of tp x pp x cp", [&] {
      return fmt::format("gpus {} is not a multiple of tp {} x pp {} x cp {}", p.gpus, p.tp, p.pp, p.cp);
    });
  r.par.dp = p.gpus / mp;
  if (space_.dp.mode != AxisMode::Free && !space_.dp.contains(p.dp))
    return fail("dp not in --dp", [&] { return fmt::format("dp {} is not in --dp {}", p.dp, space_.dp.text); });
  // Duplicates: tuples equivalent to another tuple of the space (only when that one is in it).
  auto in_axis = [&](TrainAxis a, std::int64_t value) {
    const auto& vs = sl.values[idx(a)];
    return std::find(vs.begin(), vs.end(), value) != vs.end();
  };
  if (p.vp > 1 && p.pp == 1 && in_axis(TrainAxis::Vp, 1))
    return fail("interleaving (vp > 1) without a pipeline (same as vp 1 with pp 1)",
                [] { return std::string("vp > 1 with pp 1"); });
  if (p.sequence_parallel && p.tp == 1 && in_axis(TrainAxis::SequenceParallel, 0))
    return fail("sequence parallelism with tp 1 (same as without)",
                [] { return std::string("sequence parallelism with tp 1"); });
  if (r.train.recompute == Recompute::Selective && r.train.flash_attn &&
      framework_profile(r.train.framework).selective == model::SelectivePolicy::AttentionCore &&
      in_axis(TrainAxis::Recompute, static_cast<std::int64_t>(Recompute::None)))
    return fail("selective recomputation with FlashAttention (same as none: nothing left to recompute)",
                [] { return std::string("selective recomputation with FlashAttention"); });
  if (r.train.zero_stage > 0 && p.dp == 1 && r.train.offload == Offload::None && in_axis(TrainAxis::ZeroStage, 0))
    return fail("ZeRO stage > 0 with dp 1 (same as stage 0: nothing to shard)",
                [&] { return fmt::format("ZeRO-{} with dp 1", r.train.zero_stage); });
  const std::int64_t unit = r.train.micro_batch * p.dp;
  if (resolved_.one_micro_batch_per_step) {
    r.train.global_batch = unit;
  } else if (resolved_.global_batch_min == resolved_.global_batch_max) {
    r.train.global_batch = resolved_.global_batch_min;
  } else {
    r.train.global_batch = resolved_.global_batch_max / unit * unit;
    if (r.train.global_batch < resolved_.global_batch_min)
      return fail("no global batch in the --global-batch range is a multiple of micro-batch x dp", [&] {
        return fmt::format("no multiple of micro-batch {} x dp {} in --global-batch {}-{}", r.train.micro_batch, p.dp,
                           resolved_.global_batch_min, resolved_.global_batch_max);
      });
  }
  const auto& sys = systems_[static_cast<std::size_t>(out.system)];
  if (auto why = structural_problems(r, m_); !why.empty()) {
    key = reason_key(why.front());
    message = std::move(why.front());
    return false;
  }
  if (auto why = training_problems(m_, sys, r); !why.empty()) {
    key = reason_key(why.front());
    message = std::move(why.front());
    return false;
  }
  return true;
}

}  // namespace llmsim::sim

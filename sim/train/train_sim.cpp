#include "llmsim/train/train_sim.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/cost/compute_cost.h"
#include "llmsim/memory/activation_memory.h"
#include "llmsim/model/operators.h"
#include "llmsim/run/feasibility.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/sample_lengths.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/train/list_scheduler.h"
#include "llmsim/train/pipeline_order.h"
#include "llmsim/train/train_graph.h"
#include "llmsim/train/train_layer_cost.h"

namespace llmsim::sim {

namespace {

double dbl(std::int64_t v) { return static_cast<double>(v); }

// Model FLOPs per token (Narayanan et al. 2021 Eq. 3 generalised; docs/training-time.md):
//   linear: 6 FLOPs per trainable weight (forward 2, activation gradient 2, weight gradient 2) and 4 per
//   frozen weight (no weight gradient), over the weights a token actually multiplies (MoE: its top-k
//   experts); the LM head included, the embedding lookup not;
//   attention: 12 * s * (heads * head_dim) per layer (scores and context, forward + backward, no
//   discount for the causal mask, as Megatron-LM and PaLM count it).
// Hardware FLOPs add what recomputation runs again: full = the forward of every transformer layer (2 per
// layer weight + 4 s q_dim; the LM head runs once, as in Narayanan et al. 2021 Eq. 3), selective = the unfused
// attention core's forward (4 s q_dim; nothing with FlashAttention), or under the op-level policy the GEMMs it does not
// save.
struct FlopCount {
  double model = 0;     // per token
  double hardware = 0;  // per token
  // Of which the attention scores and values (full, not halved for a causal mask), in each convention.
  double attention = 0;
  double attention_hardware = 0;
};

FlopCount flops_per_token(const model::ModelSpec& m, const RunSpec& run) {
  const auto& t = run.train;
  model::InventoryParams p;
  p.micro_batch = 1;
  p.q_len = t.seq_len;
  p.tp = 1;
  p.flash_attn = true;
  p.training = true;
  const double T = dbl(t.seq_len);
  const bool lora = run.workload == Workload::Finetune && t.finetune != FinetuneKind::Full;
  const double per_weight = lora ? 4.0 : 6.0;
  auto linear = [&](const std::vector<model::Operator>& ops) {
    double f = 0;
    for (const auto& op : ops)
      if (op.kind == model::OpKind::Gemm && op.bwd_weight_flops > 0) f += op.fwd_flops / (2.0 * T);
    return f;
  };
  FlopCount c;
  double layer_lin = 0;
  for (std::int64_t l = 0; l < m.num_layers; ++l) layer_lin += linear(model::layer_ops(m, p, l).ops);
  const double lin = layer_lin + linear(model::head_ops(m, p).ops);
  // Scores over q_dim and values over o_dim (equal without MLA: 12 T q_dim), forward + backward, in the layers
  // that attend; a linear-attention layer's recurrence in its chunked form (model::recurrence_work), forward +
  // backward at twice the forward as for the weights.
  double attn = 6.0 * T * dbl(m.q_dim() + m.o_dim()) * dbl(m.attention_layers());
  if (m.linear_attn.enabled())
    attn += 3.0 * model::recurrence_work(m, 1).chunk_flops_per_token * dbl(m.linear_attention_layers());
  c.model = per_weight * lin + attn;
  if (lora) {
    // Adapters: r * (d_in + d_out) trainable weights per targeted projection, 6 FLOPs each.
    double adapters = 0;
    const double r = dbl(t.lora_rank), h = dbl(m.hidden), q = dbl(m.q_dim()), kv = dbl(m.kv_dim()),
                 f = dbl(m.ffn_hidden);
    const auto wants = [&](const char* n) {
      return t.lora_targets.empty() ||
             std::find(t.lora_targets.begin(), t.lora_targets.end(), n) != t.lora_targets.end();
    };
    for (std::int64_t l = 0; l < m.num_layers; ++l) {
      if (wants("q")) adapters += r * (h + q);
      if (wants("k")) adapters += r * (h + kv);
      if (wants("v")) adapters += r * (h + kv);
      if (wants("o")) adapters += r * (q + h);
      if (!m.is_moe_layer(l) && f > 0) {
        if (m.mlp == model::MlpKind::Gated && wants("gate")) adapters += r * (h + f);
        if (wants("up")) adapters += r * (h + f);
        if (wants("down")) adapters += r * (f + h);
      }
    }
    c.model += 6.0 * adapters;
  }
  const model::SelectivePolicy selective = framework_profile(t.framework).selective;
  // Full recomputation re-runs the blocks' forward, not the head's (recompute_shares); Megatron's selective
  // policy re-runs the unfused attention core alone.
  const bool attention_again =
      t.recompute == Recompute::Full ||
      (t.recompute == Recompute::Selective && selective == model::SelectivePolicy::AttentionCore && !t.flash_attn);
  const double attn_again = attention_again ? attn / 3.0 : 0.0;
  c.attention = attn;
  c.attention_hardware = attn + attn_again;
  c.hardware = c.model;
  c.hardware += t.recompute == Recompute::Full ? 2.0 * layer_lin + attn_again : attn_again;
  if (t.recompute == Recompute::Selective && selective == model::SelectivePolicy::AlternateMatmuls) {
    // The GEMMs the op-level policy runs again (recompute_shares, the step graph's rule).
    p.flash_attn = t.flash_attn;
    for (std::int64_t l = 0; l < m.num_layers; ++l) {
      const auto ops = model::layer_ops(m, p, l).ops;
      const auto share = recompute_shares(m, ops, p, t.recompute, selective, true);
      for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i].kind == model::OpKind::Gemm) c.hardware += share[i] * ops[i].fwd_flops / T;
    }
  }
  return c;
}

void add_share(std::vector<TimeShare>& v, const std::string& name, double s) {
  if (s <= 0) return;
  for (auto& x : v)
    if (x.name == name) {
      x.seconds += s;
      return;
    }
  v.push_back(TimeShare{name, s, 0});
}

void finish_shares(std::vector<TimeShare>& v) {
  double total = 0;
  for (const auto& x : v) total += x.seconds;
  for (auto& x : v) x.fraction = total > 0 ? x.seconds / total : 0;
  std::stable_sort(v.begin(), v.end(), [](const TimeShare& a, const TimeShare& b) { return a.seconds > b.seconds; });
}

// Why an idle gap on the compute stream ended: the resource of the dependency that released the node.
std::string gap_reason(const TrainGraph& tg, const Schedule& s, NodeId v, int stage) {
  const auto& g = tg.graph.graph();
  const double start = s.nodes[v].start;
  for (auto [e, end] = boost::in_edges(v, g); e != end; ++e) {
    const NodeId u = boost::source(*e, g);
    const double f = g[*e].fraction;
    const double release = s.nodes[u].start + f * (s.nodes[u].end - s.nodes[u].start);
    if (release + 1e-12 * std::max(1.0, start) < start) continue;
    const int r = g[u].resource;
    const auto kind = tg.resource_kind[static_cast<std::size_t>(r)];
    if (kind == ResourceKind::Send || tg.resource_stage[static_cast<std::size_t>(r)] != stage) return "pipeline bubble";
    if (kind == ResourceKind::DpComm) return "exposed communication";
    if (kind == ResourceKind::Pcie || kind == ResourceKind::Cpu) return "offload";
    return "other";
  }
  return "pipeline bubble";  // nothing to wait for but the start of the pipeline
}

}  // namespace

TrainResult simulate_training(const model::ModelSpec& m, const hardware::SystemSpec& sys, const RunSpec& run_in,
                              const TrainOptions& opt) {
  const RunSpec stated = with_defaults(run_in);
  TrainResult r;
  r.problems = structural_problems(stated, m);
  for (auto& w : training_problems(m, sys, stated)) r.problems.push_back(std::move(w));
  // The memory peak is the longest sample's (seq_len); the step runs the samples' own lengths.
  r.memory = evaluate_memory(m, sys, stated);
  if (!r.problems.empty()) return r;  // training_problems holds the sample lengths' (sample_shape) too
  const SampleShape shape = sample_shape(stated.train);
  RunSpec run = stated;
  run.train.seq_len = shape.simulated_len;

  const auto& t = run.train;
  const FrameworkProfile& fw = framework_profile(t.framework);
  const ComputeCost compute(sys, t.attn_kernel);
  const CommCost comm(sys);
  const TrainGraph tg = build_train_graph(TrainGraphInputs{m, sys, run, fw, compute, comm});
  const Schedule s = schedule(tg.graph);
  r.graph_nodes = tg.graph.size();
  r.micro_batches = tg.micro_batches;

  // Throughput and FLOPs.
  const double gpus = dbl(run.par.gpus);
  r.step_time_s = s.makespan;
  r.samples_per_step = dbl(t.global_batch) * shape.samples_per_sequence;
  r.tokens_per_step = dbl(t.global_batch) * shape.tokens_per_sequence;
  r.tokens_per_s = per_second(r.tokens_per_step, r.step_time_s);
  r.samples_per_s = per_second(r.samples_per_step, r.step_time_s);
  r.tokens_per_s_per_gpu = r.tokens_per_s * (1.0 / gpus);
  r.samples_per_s_per_gpu = r.samples_per_s * (1.0 / gpus);
  const FlopCount fc = flops_per_token(m, run);
  r.model_flops_per_step = fc.model * r.tokens_per_step;
  r.hardware_flops_per_step = fc.hardware * r.tokens_per_step;
  r.attention_flops_per_step = fc.attention * r.tokens_per_step;
  r.attention_hardware_flops_per_step = fc.attention_hardware * r.tokens_per_step;
  r.peak_flops_per_gpu = sys.gpu.peak(t.precision);
  r.model_tflops_per_gpu = per_second(r.model_flops_per_step / gpus / 1e12, r.step_time_s);
  r.mfu = per_second(r.model_flops_per_step / gpus / r.peak_flops_per_gpu, r.step_time_s);
  r.hfu = per_second(r.hardware_flops_per_step / gpus / r.peak_flops_per_gpu, r.step_time_s);

  // The critical stage: the one holding the node that ends last; and, in the same pass, each stage's
  // compute-stream busy time beside its layers.
  const auto& g = tg.graph.graph();
  r.stages.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, run.par.pp)), {});
  for (std::size_t st = 0; st < r.stages.size(); ++st)
    r.stages[st].layers =
        stage_layers(static_cast<std::int64_t>(st), run.par.pp, m.num_layers, std::max<std::int64_t>(1, run.par.vp))
            .count;
  NodeId last = 0;
  for (NodeId v = 0; v < tg.graph.size(); ++v) {
    if (s.nodes[v].end > s.nodes[last].end) last = v;
    const StepNode& n = g[v];
    if (n.stage >= 0 && static_cast<std::size_t>(n.stage) < r.stages.size() &&
        tg.resource_kind[static_cast<std::size_t>(n.resource)] == ResourceKind::Compute)
      r.stages[static_cast<std::size_t>(n.stage)].compute_s += s.nodes[v].end - s.nodes[v].start;
  }
  r.critical_stage = g[last].stage;
  const int cs = r.critical_stage;

  // Phase breakdown on the critical stage's compute stream: busy time by phase (blocking collectives
  // moved to exposed communication) and idle gaps by what the stream waited for; sums to the step.
  double prev_end = 0, interference = 0;
  std::map<int, double> exec_count;  // cost index -> forward executions on the critical stage
  for (NodeId v = 0; v < tg.graph.size(); ++v) {
    const StepNode& n = g[v];
    const NodeInfo& info = tg.info[v];
    if (n.stage == cs && info.cost >= 0 && info.forward) exec_count[info.cost] += 1;
    if (n.stage != cs || tg.resource_kind[static_cast<std::size_t>(n.resource)] != ResourceKind::Compute) continue;
    const double gap = s.nodes[v].start - prev_end;
    if (gap > 0) add_share(r.by_phase, gap_reason(tg, s, v, cs), gap);
    // What communication beside the node cost it (list_scheduler.cpp) is a row of its own.
    const double slowed = s.nodes[v].interference;
    interference += slowed;
    add_share(r.by_phase, "communication interference", slowed);
    const double busy = s.nodes[v].end - s.nodes[v].start - slowed;
    const double comm_s = std::min(busy, info.comm_s);
    add_share(r.by_phase, n.phase == Phase::Communication ? "exposed communication" : std::string(phase_name(n.phase)),
              busy - (n.phase == Phase::Communication ? 0.0 : comm_s));
    if (n.phase != Phase::Communication) add_share(r.by_phase, "exposed communication", comm_s);
    prev_end = s.nodes[v].end;
  }
  if (s.makespan.value > prev_end) {
    const auto kind = tg.resource_kind[static_cast<std::size_t>(g[last].resource)];
    add_share(r.by_phase,
              kind == ResourceKind::Pcie || kind == ResourceKind::Cpu ? "offload"
              : kind == ResourceKind::Compute                         ? "other"
                                                                      : "exposed communication",
              s.makespan.value - prev_end);
  }
  for (const auto& x : r.by_phase) {
    if (x.name == "pipeline bubble") r.bubble_s = x.seconds;
    if (x.name == "exposed communication") r.exposed_comm_s = x.seconds;
  }
  finish_shares(r.by_phase);

  // Module and operator-class busy time on the critical stage: layer executions from their shared
  // per-layer costs, everything else from the graph's nodes.
  for (const auto& [cost, count] : exec_count) {
    const LayerCost& lc = tg.costs[static_cast<std::size_t>(cost)];
    for (const auto& [k, sec] : lc.by_module) add_share(r.by_module, k, sec * count);
    for (const auto& [k, sec] : lc.by_class) add_share(r.by_op_class, k, sec * count);
  }
  for (NodeId v = 0; v < tg.graph.size(); ++v) {
    const StepNode& n = g[v];
    const NodeInfo& info = tg.info[v];
    if (n.stage != cs || info.cost >= 0) continue;
    add_share(r.by_module, info.module, n.duration.value);
    add_share(r.by_op_class, std::string(op_class_name(n.op_class)), n.duration.value);
  }
  add_share(r.by_module, "communication.interference", interference);
  add_share(r.by_op_class, "interference", interference);
  finish_shares(r.by_module);
  finish_shares(r.by_op_class);

  // Micro-batches in flight per stage from the schedule (a model chunk counts 1/vp), and the memory
  // timeline's peak: the memory model's activations rescaled from its in-flight count to the schedule's.
  std::vector<double> in_flight(static_cast<std::size_t>(run.par.pp), 0.0);
  const auto ps = static_cast<std::size_t>(std::clamp<std::int64_t>(r.memory.peak_stage, 0, run.par.pp - 1));
  std::vector<std::pair<double, double>> peak_stage_events;  // (time, change of micro-batches in flight)
  for (std::size_t st = 0; st < tg.tasks.size(); ++st) {
    std::vector<std::pair<double, double>> ev;
    for (const auto& task : tg.tasks[st]) {
      if (task.forward)
        ev.emplace_back(s.nodes[task.first].start, 1.0 / dbl(run.par.vp));
      else
        ev.emplace_back(s.nodes[task.last].end, -1.0 / dbl(run.par.vp));
    }
    std::sort(ev.begin(), ev.end());
    double cur = 0, peak = 0;
    for (const auto& [time, d] : ev) peak = std::max(peak, cur += d);
    in_flight[st] = peak;
    if (st == ps) peak_stage_events = std::move(ev);
  }
  r.peak_in_flight = static_cast<std::int64_t>(std::ceil(*std::max_element(in_flight.begin(), in_flight.end()) - 1e-9));
  {
    const double model_held =
        in_flight_factor(static_cast<std::int64_t>(ps), run.par.pp, run.par.vp, r.micro_batches, run.train.schedule);
    double act = 0;
    for (const auto& item : r.memory.gpu)
      if (item.kind == MemoryKind::Activations) act = item.bytes;
    // The memory model holds `model_held` micro-batches' activations; each one in flight holds its share.
    const double per_micro_batch = model_held > 0 ? act / model_held : 0.0;
    const double without_activations = r.memory.gpu_bytes - act;
    r.memory_timeline_peak_bytes =
        r.memory.gpu_bytes + (model_held > 0 ? act * (in_flight[ps] / model_held - 1.0) : 0.0);
    if (opt.keep_trace) {
      double cur = 0;
      r.memory_timeline.push_back({0.0, without_activations});
      for (const auto& [time, d] : peak_stage_events) {
        cur += d;
        r.memory_timeline.push_back({time, without_activations + per_micro_batch * cur});
      }
    }
  }

  if (opt.keep_trace) {
    r.trace.reserve(tg.graph.size());
    for (NodeId v = 0; v < tg.graph.size(); ++v) {
      const StepNode& n = g[v];
      std::string name = n.name;
      const NodeInfo& info = tg.info[v];
      if (info.cost >= 0) {
        const auto kind = tg.costs[static_cast<std::size_t>(info.cost)].kind;
        name += kind == LayerKind::Embedding ? " embedding"
                : kind == LayerKind::Head    ? " head+loss"
                                             : fmt::format(" L{}", info.layer);
      }
      if (n.micro_batch >= 0) name += fmt::format(" mb{}", n.micro_batch);
      const double start = s.nodes[v].start, dur = s.nodes[v].end - s.nodes[v].start;
      // The blocking collectives inside a layer execution (TP, and CP / EP where used) run on the compute
      // stream; they get a track of their own, drawn at the end of the layer's slice, so that the compute
      // track shows the layers and this one what of them is communication.
      r.trace.push_back(TraceEvent{name, tg.graph.resources()[static_cast<std::size_t>(n.resource)], n.stage, start,
                                   dur, std::string(phase_name(n.phase))});
      if (info.cost >= 0 && info.comm_s > 0 && dur > 0) {
        const double blocking = std::min(dur, info.comm_s);
        r.trace.push_back(TraceEvent{"comm " + name, fmt::format("stage{}.tp_comm", n.stage), n.stage,
                                     start + dur - blocking, blocking, "communication"});
      }
    }
  }

  if (opt.train_tokens > 0 || opt.train_steps > 0) {
    r.total_steps = opt.train_steps > 0 ? dbl(opt.train_steps) : std::ceil(opt.train_tokens / r.tokens_per_step);
    r.total_time_s = r.step_time_s * r.total_steps;
    r.total_cost = opt.price_per_gpu_hour * gpus * r.total_time_s.value / 3600.0;
    r.total_energy_J = gpus * sys.gpu.tdp_W * r.total_time_s.value;
  }
  return r;
}

}  // namespace llmsim::sim

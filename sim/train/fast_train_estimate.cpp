// FastTrainEvaluator::estimate: the step time of a training configuration in closed form, from the
// cached per-layer costs (fast_train.cpp): the run's derived settings, each layer's passes, each
// stage's sums over its chunks (with the bucketed gradient reductions of the last micro-batch), the
// pipeline's compute span, and each stage's end with its step tail.
#include <algorithm>
#include <cmath>
#include <optional>

#include "llmsim/run/framework_profile.h"
#include "llmsim/run/sample_lengths.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/fast_train.h"
#include "llmsim/train/step_terms.h"

namespace llmsim::sim {

namespace {

using model::Collective;

double dbl(std::int64_t v) { return static_cast<double>(v); }

// Layers [first, first + count) of one pipeline chunk: how many are MoE layers.
std::int64_t moe_layers_in(const model::ModelSpec& m, std::int64_t first, std::int64_t count) {
  if (!m.moe.enabled() || m.moe.sparse_step <= 0) return 0;
  const std::int64_t step = m.moe.sparse_step;
  return (first + count) / step - first / step;
}

}  // namespace

// The run's settings the estimate reads, derived once: pipeline shape, ZeRO and offload flags, the
// data-parallel collectives and the PCIe copy as affine models, the recipe's state bytes.
struct FastTrainEvaluator::Step {
  const Costs& c;
  const ParallelSpec& par;
  const TrainSpec& t;
  const FrameworkProfile& fw;
  std::int64_t pp;
  std::int64_t vp;
  std::int64_t dp;
  std::int64_t L;
  std::int64_t mbs;
  double m;
  bool zero3;
  bool every_mb;
  bool on_compute;
  bool after_schedule;
  bool opt_offload;
  bool param_offload;
  bool copies_on_compute;  // offload copies hold up the compute stream (step_terms.h)
  Affine red;
  Affine gather;
  Affine pcie;
  TrainStateBytes state;
  double grb;
  double send;
  double bucket;
  double interference;  // compute seconds lost per second of communication beside it (CommCost)
};

// One layer's (or the embedding's / head's) passes per micro-batch. Under ZeRO-3 the DP stream
// prefetches one layer ahead, so each pass takes the longer of its compute and its communication.
struct FastTrainEvaluator::LayerPass {
  double f = 0, b = 0;          // effective seconds per micro-batch
  double raw_f = 0, raw_b = 0;  // compute stream busy (blocking collectives included)
  double comm = 0;              // blocking collectives inside raw_f + raw_b
  double trainable = 0;
  double rs_tail = 0;  // ZeRO-3: the layer's reduce-scatter (+ copy) when nothing follows it
  // ZeRO-3 offload copies that hold up the compute stream: per micro-batch (inside b), and the last
  // micro-batch's beyond them.
  double copies_mb = 0, copy_last = 0;
};

struct FastTrainEvaluator::LayerPasses {
  LayerPass E, H, D, M;  // embedding, head, dense layer, MoE layer
};

// Per stage: forward / backward time per micro-batch of each chunk, bucketed gradient reduction of
// each chunk's backward, trainable parameters.
struct FastTrainEvaluator::StageSum {
  double F = 0, B = 0;              // per micro-batch, all chunks (effective)
  double F_saved = 0, B_saved = 0;  // ZeRO-3: gather waits a pass that waits for its input avoids
  double B0 = 0;                    // chunk 0's backward (the drain towards stage 0)
  double raw = 0, comm = 0;         // per micro-batch: compute-stream busy and its blocking collectives
  double red = 0;                   // one reduction of all chunks' gradients (sum of buckets)
  double red_in = 0;                // blocking reductions inside the last micro-batch's backward passes
  double red_final = 0;             // blocking reductions after the last backward pass of each chunk
  double red_tail = 0;              // overlapped: DP stream time left after the last backward pass ends
  double red_slowed = 0;            // overlapped: compute the last micro-batch's reductions cost (interference)
  double pcie_tail = 0;             // offload: gradient copies left after the reductions
  double copy_tail = 0;             // offload copies on the compute stream beyond the per-micro-batch ones
  double trainable = 0;
  double zero3_tail = 0;
};

FastTrainEvaluator::Step FastTrainEvaluator::step_of(const RunSpec& run) {
  const Costs& c = costs(run);
  const auto& par = run.par;
  const auto& t = run.train;
  const FrameworkProfile& fw = framework_profile(t.framework);
  const std::int64_t pp = par.pp, vp = std::max<std::int64_t>(1, par.vp), dp = par.dp, L = m_.num_layers;
  const int gpn = hardware::fast_domain_gpus(sys_);
  const std::int64_t mbs = micro_batches_per_step(run);
  const double m = dbl(mbs);

  const bool zero3 = t.zero_stage >= 3 && dp > 1;
  const bool opt_offload = t.offload != Offload::None;
  // ZeRO-2/3 reduce every micro-batch; under offload the buckets pass the hooks on one rank too.
  const bool every_mb = t.zero_stage >= 2 && (dp > 1 || opt_offload);
  const bool on_compute = grad_reduce_on_compute_stream(fw, t.zero_stage, t.overlap_grad_reduce);
  const bool after_schedule = grad_reduce_after_schedule(fw, t.zero_stage, t.overlap_grad_reduce);
  const bool param_offload = t.offload == Offload::OptimizerParams;
  const bool copies_on_compute = offload_copies_on_compute_stream(fw, t);
  const CommGroup dpg = dp_group(par, gpn);
  const Affine red = affine(grad_reduce_collective(t.zero_stage), dpg);
  const Affine gather = affine(Collective::AllGather, dpg);
  const Interval h1 = comm_.host_copy(1 << 20), h2 = comm_.host_copy(1 << 30);
  const double h_slope = (h2.value - h1.value) / ((1 << 30) - (1 << 20));
  const Affine pcie{h1.value - h_slope * (1 << 20), h_slope};
  const TrainStateBytes state = train_state_bytes(fw, t);
  const double grb = state.grad_wire;

  // Pipeline send of one micro-batch's activations (or their gradients) between neighbouring stages.
  double send = 0;
  if (pp > 1) {
    send = comm_.p2p(pipeline_send_bytes(m_, t, par), pipeline_crosses_nodes(par, gpn)).value;
  }
  const double bucket = fw.grad_bucket_elements;
  return Step{c,
              par,
              t,
              fw,
              pp,
              vp,
              dp,
              L,
              mbs,
              m,
              zero3,
              every_mb,
              on_compute,
              after_schedule,
              opt_offload,
              param_offload,
              copies_on_compute,
              red,
              gather,
              pcie,
              state,
              grb,
              send,
              bucket,
              comm_.interference_rate().value};
}

// Per layer kind: compute-stream time of a forward and a backward (+ recompute) pass, and under
// ZeRO-3 the time with the parameter gathers and gradient reduce-scatters: the DP stream prefetches
// one layer ahead, so each layer takes the longer of its compute and its communication.
FastTrainEvaluator::LayerPass FastTrainEvaluator::layer_pass(const Step& step, const Cost& k) const {
  const auto& fw = step.fw;
  const bool zero3 = step.zero3;
  const bool opt_offload = step.opt_offload;
  const bool param_offload = step.param_offload;
  const auto& red = step.red;
  const auto& gather = step.gather;
  const auto& pcie = step.pcie;
  const double grb = step.grb;
  const std::int64_t dp = step.dp;
  LayerPass e;
  e.raw_f = k.fwd;
  e.raw_b = k.bwd + k.recompute;
  e.comm = k.fwd_comm + k.bwd_comm + k.recompute_comm;
  e.trainable = k.trainable;
  e.f = e.raw_f;
  e.b = e.raw_b;
  if (zero3) {
    const double g = gather(k.gather_bytes);
    const double h2d = param_offload ? pcie(offload_shard_bytes(k.params, dp)) : 0.0;
    const double rs = k.trainable > 0 ? red(k.trainable * grb) : 0.0;
    double d2h = opt_offload && k.trainable > 0 ? pcie(offload_shard_bytes(k.trainable, dp)) : 0.0;
    if (d2h > 0 && (fw.offload.zero3_round_trip || step.copies_on_compute)) {
      // The copies of this layer's partition: a middle micro-batch's, and the last one's (step_terms.h).
      const double mid = offload_bucket_copies(comm_, fw, step.t, k.trainable, dp, 0, step.mbs).total().value;
      const double last =
          offload_bucket_copies(comm_, fw, step.t, k.trainable, dp, step.mbs - 1, step.mbs).total().value;
      if (step.copies_on_compute) {
        // Every micro-batch's backward waits for them; the last one's beyond that at the end of the step.
        e.copies_mb = step.mbs > 1 ? mid : 0.0;
        e.copy_last = last - e.copies_mb;
        d2h = 0;
      } else {
        d2h = last;
      }
    }
    // Pageable offload copies hold the host until the layer's reduce-scatter and they are done.
    const double held = step.copies_on_compute && rs > 0 ? rs + e.copies_mb : 0.0;
    if (fw.zero3_overlap) {
      // Resources (compute, DP stream, PCIe) and the prefetch chain: layer i+1's copy and gather
      // start when layer i-1 is done, so two layers take at least copy + gather + compute. The next
      // layer's gather (and in backward the last layer's reduce-scatter) run beside the compute and slow it.
      const double cf = interfered_span(e.raw_f, g, step.interference);
      const double cb = interfered_span(e.raw_b, g + rs, step.interference) + held;
      e.f = std::max({cf, g, h2d, 0.5 * (h2d + g + cf)});
      e.b = std::max({cb, g + rs, h2d + d2h, 0.5 * (h2d + g + cb)});
      // ZeRO-Infinity: the gradient copy queues before the next parameter copy on the PCIe link,
      // chaining reduce-scatter, copy out, copy in and gather for every layer.
      if (param_offload) e.b = std::max(e.b, g + rs + h2d + d2h);
    } else {
      e.f = e.raw_f + g + h2d;
      e.b = e.raw_b + g + h2d + e.copies_mb;
    }
    e.rs_tail = held > 0 ? 0.0 : rs + d2h;
  }
  return e;
}

// Buckets of one chunk's backward pass in backward order (head, layers last to first, embedding); a
// bucket closes when it holds the framework's bucket size or at the end of the pass. On the DP stream
// (overlapped) they run as the pass releases them; what is left when the pass ends is exposed.
void FastTrainEvaluator::chunk_buckets(const Step& step, const LayerPasses& P, std::int64_t first, std::int64_t count,
                                       bool has_e, bool has_h, std::int64_t ch, double& b, double& dp_free,
                                       double& pcie_free, StageSum& S) const {
  const std::int64_t pp = step.pp;
  const bool every_mb = step.every_mb;
  const bool on_compute = step.on_compute;
  const bool after_schedule = step.after_schedule;
  const bool opt_offload = step.opt_offload;
  const auto& red = step.red;
  const double grb = step.grb;
  const std::int64_t dp = step.dp;
  const double bucket = step.bucket;
  const LayerPass &E = P.E, &H = P.H, &D = P.D, &M = P.M;
  const double pass_start = -dbl(ch * pp) * b - b;
  double acc = 0, tcomp = pass_start, sum = 0, final_r = 0;
  // Offload copies on the compute stream: those of a middle micro-batch (every micro-batch under ZeRO-2
  // accumulation) and what the last micro-batch copies beyond them.
  double copies_mb = 0, copies_last = 0;
  const std::int64_t mbs = step.mbs;
  double slowed = 0;  // compute seconds the overlapped reductions cost this pass
  auto exec = [&](const LayerPass& k, bool last) {
    // Buckets still reducing on the DP stream run beside this layer's backward.
    const double span = on_compute ? k.b : interfered_span(k.b, dp_free - tcomp, step.interference);
    slowed += span - k.b;
    tcomp += span;
    acc += k.trainable;
    if (acc > 0 && (acc >= bucket || last)) {
      const double r = red(acc * grb);
      sum += r;
      if (last) final_r = r;
      if (on_compute) {
        tcomp += r;
        dp_free = tcomp;
      } else {
        dp_free = std::max(dp_free, tcomp) + r;
      }
      if (opt_offload) {
        const double last_copies = offload_bucket_copies(comm_, step.fw, step.t, acc, dp, mbs - 1, mbs).total().value;
        if (step.copies_on_compute) {
          const double mid = every_mb && mbs > 1
                                 ? offload_bucket_copies(comm_, step.fw, step.t, acc, dp, mbs / 2, mbs).total().value
                                 : 0.0;
          copies_mb += mid;
          copies_last += last_copies - mid;
          tcomp = std::max(tcomp, dp_free) + last_copies;  // after its reduction (train_graph: host_wait)
          dp_free = tcomp;
        } else {
          pcie_free = std::max(pcie_free, dp_free) + last_copies;
        }
      }
      acc = 0;
    } else if (last) {
      acc = 0;
    }
  };
  // Layer order inside the chunk, last to first; MoE layers are those with (l + 1) % step == 0.
  if (has_h) exec(H, count == 0 && !has_e);
  for (std::int64_t l = first + count - 1; l >= first; --l) exec(m_.is_moe_layer(l) ? M : D, l == first && !has_e);
  if (has_e) exec(E, true);
  S.red += sum;
  if (after_schedule) {
    // Megatron: every bucket after the stage's schedule, delaying only its own later work.
    S.red_final += sum;
  } else if (on_compute && !every_mb) {
    // Blocking reductions run between the layers of the pass and delay its send to the previous
    // stage, except the pass's last bucket, which only delays this stage's own later work.
    S.red_in += sum - final_r;
    S.red_final += final_r;
  }
  if (ch == 0) {
    S.red_tail = on_compute ? 0.0 : std::max(0.0, dp_free - tcomp);
    S.pcie_tail = std::max(0.0, pcie_free - std::max(dp_free, tcomp));
  }
  // ZeRO-2 without overlap, or copies that hold the host until their reductions: every micro-batch, blocking.
  if (every_mb && (on_compute || step.copies_on_compute)) b += sum;
  b += copies_mb;
  S.copy_tail += copies_last;
  // What the overlapped reductions cost the compute beside them: every micro-batch under ZeRO-2, else once,
  // in the last micro-batch's backward.
  if (every_mb)
    b += slowed;
  else
    S.red_slowed += slowed;
}

void FastTrainEvaluator::stage_sum(const Step& step, const LayerPasses& P, std::int64_t s, StageSum& S) const {
  const std::int64_t pp = step.pp;
  const std::int64_t vp = step.vp;
  const std::int64_t dp = step.dp;
  const std::int64_t L = step.L;
  const bool zero3 = step.zero3;
  const LayerPass &E = P.E, &H = P.H, &D = P.D, &M = P.M;
  // The last micro-batch's backward passes, in schedule order (chunk vp-1 first), on times relative
  // to the end of chunk 0's pass: under interleaving the pass of chunk c ends about c x pp backward
  // passes before it. The DP stream and the PCIe link carry their backlog from chunk to chunk.
  double dp_free = -1e300, pcie_free = -1e300;
  for (std::int64_t ch = vp - 1; ch >= 0; --ch) {
    const auto [first, count] = stage_chunk(s, ch, pp, vp, L);  // sim/run/stage_layout.h, no allocation
    const std::int64_t nm = moe_layers_in(m_, first, count), nd = count - nm;
    const bool has_e = s == 0 && ch == 0, has_h = s == pp - 1 && ch == vp - 1;
    double f = dbl(nd) * D.f + dbl(nm) * M.f + (has_e ? E.f : 0.0) + (has_h ? H.f : 0.0);
    double b = dbl(nd) * D.b + dbl(nm) * M.b + (has_e ? E.b : 0.0) + (has_h ? H.b : 0.0);
    // A pass's send to the next (previous) virtual stage runs beside the stage's next pass: in the steady
    // state each micro-batch's forward and backward compute has one send beside it.
    if (pp > 1) {
      if (!(s == pp - 1 && ch == vp - 1)) f = interfered_span(f, step.send, step.interference);
      if (!(s == 0 && ch == 0)) b = interfered_span(b, step.send, step.interference);
    }
    S.raw += dbl(nd) * (D.raw_f + D.raw_b) + dbl(nm) * (M.raw_f + M.raw_b) + (has_e ? E.raw_f + E.raw_b : 0.0) +
             (has_h ? H.raw_f + H.raw_b : 0.0);
    S.comm += dbl(nd) * D.comm + dbl(nm) * M.comm + (has_e ? E.comm : 0.0) + (has_h ? H.comm : 0.0);
    S.trainable +=
        dbl(nd) * D.trainable + dbl(nm) * M.trainable + (has_e ? E.trainable : 0.0) + (has_h ? H.trainable : 0.0);
    if (zero3) {
      // The last exec of the backward pass (embedding on stage 0, else the chunk's first layer).
      if (ch == 0) S.zero3_tail = has_e ? E.rs_tail : (m_.is_moe_layer(first) ? M.rs_tail : D.rs_tail);
      S.copy_tail +=
          dbl(nd) * D.copy_last + dbl(nm) * M.copy_last + (has_e ? E.copy_last : 0.0) + (has_h ? H.copy_last : 0.0);
      // A pass that waits for its input (pipeline fill and drain) has the gathers of its first two
      // layers prefetched during the wait.
      if (pp > 1) {
        auto layer_at = [&](std::int64_t l) -> const LayerPass& { return m_.is_moe_layer(l) ? M : D; };
        const LayerPass* fwd_order[2] = {nullptr, nullptr};
        const LayerPass* bwd_order[2] = {nullptr, nullptr};
        int nf = 0, nb = 0;
        if (has_e) fwd_order[nf++] = &E;
        for (std::int64_t l = first; l < first + count && nf < 2; ++l) fwd_order[nf++] = &layer_at(l);
        if (has_h && nf < 2) fwd_order[nf++] = &H;
        if (has_h) bwd_order[nb++] = &H;
        for (std::int64_t l = first + count - 1; l >= first && nb < 2; --l) bwd_order[nb++] = &layer_at(l);
        if (has_e && nb < 2) bwd_order[nb++] = &E;
        for (int i = 0; i < nf; ++i) S.F_saved += fwd_order[i]->f - fwd_order[i]->raw_f;
        for (int i = 0; i < nb; ++i) S.B_saved += bwd_order[i]->b - bwd_order[i]->raw_b;
      }
    } else if (dp > 1 || step.opt_offload) {
      chunk_buckets(step, P, first, count, has_e, has_h, ch, b, dp_free, pcie_free, S);
    }
    S.F += f;
    S.B += b;
    if (ch == 0) S.B0 = b;
  }
}

// Compute-stream span of the pipeline (to the end of stage 0's last backward): fill and drain of
// one micro-batch through every stage, then the slowest stage once per further micro-batch
// (interleaving divides the fill and drain by vp), plus a send per hop each way.
// Under ZeRO-3 the fill and drain passes wait for their inputs and prefetch their first gathers.
double FastTrainEvaluator::pipeline_span(const Step& step, const std::vector<StageSum>& st) {
  const auto& t = step.t;
  const std::int64_t pp = step.pp;
  const std::int64_t vp = step.vp;
  const double m = step.m;
  const double send = step.send;
  double sum_t = 0, max_t = 0, sum_f = 0, max_f = 0, sum_b = 0, max_b = 0, max_t_saved = 0;
  for (const auto& S : st) {
    sum_t += S.F + S.B - S.F_saved - S.B_saved;
    if (S.F + S.B > max_t) {
      max_t = S.F + S.B;
      max_t_saved = S.F_saved + S.B_saved;
    }
    sum_f += S.F - S.F_saved;
    max_f = std::max(max_f, S.F);
    sum_b += S.B - S.B_saved;
    max_b = std::max(max_b, S.B);
  }
  const double hops = 2.0 * dbl(pp - 1) * send;
  double span = 0;
  if (pp == 1)
    span = m * sum_t;
  else if (t.schedule == PipelineSchedule::GPipe)
    span = sum_f + (m - 1) * max_f + sum_b + (m - 1) * max_b + hops;
  else if (vp == 1)
    span = sum_t + (m - 1) * max_t + hops;
  else
    span = m * max_t + (sum_t - (max_t - max_t_saved)) / dbl(vp) + hops;
  return span;
}

// Each stage's end: its last backward (earlier than stage 0's by the drain behind it), then the
// reductions, the optimizer and the ZeRO-1/2 parameter all-gather (or the offloaded update).
FastTrainEstimate FastTrainEvaluator::stage_ends(const Step& step, const std::vector<StageSum>& st, double span) const {
  const auto& par = step.par;
  const auto& t = step.t;
  const std::int64_t pp = step.pp;
  const std::int64_t dp = step.dp;
  const std::int64_t mbs = step.mbs;
  const double m = step.m;
  const bool zero3 = step.zero3;
  const bool every_mb = step.every_mb;
  const bool on_compute = step.on_compute;
  const bool opt_offload = step.opt_offload;
  const auto& gather = step.gather;
  const auto& state = step.state;
  const double send = step.send;
  FastTrainEstimate out;
  out.micro_batches = mbs;
  double best_end = -1;
  // Blocking reductions inside the last micro-batch's backward passes lengthen the drain wave that
  // ends on stage 0.
  for (const auto& S : st) span += S.red_in;
  double drain = 0;
  for (std::int64_t s = 0; s < pp; ++s) {
    const StageSum& S = st[static_cast<std::size_t>(s)];
    const double end_compute = span - drain;
    drain += S.B0 + S.red_in + send;
    double comm_tail = 0;
    if (zero3) {
      comm_tail = S.zero3_tail;
    } else if (dp > 1) {
      if (on_compute) {
        if (!every_mb) comm_tail = S.red_final;  // the last bucket, after the last backward
      } else if (every_mb) {
        // Overlapped every micro-batch: hidden unless the DP stream is the bottleneck.
        // GPipe runs every backward after every forward; 1F1B interleaves them.
        const double window = m * S.B + (t.schedule == PipelineSchedule::GPipe ? 0.0 : (m - 1) * S.F);
        comm_tail = std::max(S.red_tail, m * S.red - window);
      } else {
        comm_tail = S.red_tail;
      }
    }
    const double shard = optimizer_shard(S.trainable, t, dp);
    double opt = 0, off = 0;
    if (opt_offload) {
      off = S.pcie_tail + S.copy_tail + cpu_adam_seconds(shard, sys_, par.gpus, host_update_bytes(step.state)) +
            offload_param_return(comm_, step.fw, t, shard).value;
    } else {
      opt = compute_.memory_bound(optimizer_update_bytes(state, shard), 2).value;
    }
    double ag = gathers_params_after_step(t, dp) ? gather(param_bytes_16bit(S.trainable)) : 0.0;
    // --overlap-param-gather: the gather runs beside the next step's first forward (as train_graph).
    if (t.overlap_param_gather) ag = std::max(0.0, ag - S.F);
    const double end = end_compute + S.red_slowed + comm_tail + opt + off + ag;
    if (end > best_end + 1e-15) {
      best_end = end;
      out.critical_stage = static_cast<int>(s);
      out.step_time_s = end;
      const double busy = m * (S.raw - S.comm);
      out.compute_s = busy;
      out.optimizer_s = opt;
      out.offload_s = off;
      // Exposed communication: blocking collectives in the layers, waits for ZeRO-3 gathers, reductions.
      out.exposed_comm_s = m * S.comm + m * std::max(0.0, S.F + S.B - S.raw) + comm_tail + ag;
      out.bubble_s = std::max(0.0, end - busy - out.exposed_comm_s - opt - off);
    }
  }
  return out;
}

FastTrainEstimate FastTrainEvaluator::estimate(const RunSpec& stated) {
  // Variable-length samples: the step runs at the samples' own length and counts their tokens, as
  // simulate_training does (sample_lengths.h; training_problems refuses what it cannot price).
  const SampleShape shape = sample_shape(stated.train);
  std::optional<RunSpec> priced;  // copied only when the samples run at another length: a search estimates millions
  if (shape.simulated_len != stated.train.seq_len) {
    priced = stated;
    priced->train.seq_len = shape.simulated_len;
  }
  const RunSpec& run = priced ? *priced : stated;
  const Step step = step_of(run);
  const Costs& c = step.c;
  const LayerPasses P{layer_pass(step, c.embed), layer_pass(step, c.head), layer_pass(step, c.dense),
                      layer_pass(step, c.moe)};
  std::vector<StageSum> st(static_cast<std::size_t>(step.pp));
  for (std::int64_t s = 0; s < step.pp; ++s) stage_sum(step, P, s, st[static_cast<std::size_t>(s)]);
  FastTrainEstimate out = stage_ends(step, st, pipeline_span(step, st));
  out.tokens_per_step = dbl(run.train.global_batch) * shape.tokens_per_sequence;
  out.tokens_per_s = out.step_time_s > 0 ? out.tokens_per_step / out.step_time_s : 0;
  return out;
}

}  // namespace llmsim::sim

#include "llmsim/train/train_graph.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "llmsim/core/error.h"
#include "llmsim/run/stage_layout.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/pipeline_order.h"
#include "llmsim/train/step_terms.h"

namespace llmsim::sim {

namespace {

using model::Collective;
constexpr NodeId kNone = static_cast<NodeId>(-1);

// One layer execution in a stage's program: a layer (or the embedding / head) in one pass of one
// micro-batch.
struct Exec {
  int cost = 0;    // index into TrainGraph::costs
  int layer = -1;  // global layer index; -1 for the embedding and the head
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;
  bool first_in_task = false;
  bool last_in_task = false;
};

struct StageState {
  std::vector<Exec> execs;
  std::size_t next = 0;          // next exec to emit
  std::vector<NodeId> gather;    // ZeRO-3 gather node per exec (kNone until emitted)
  std::vector<NodeId> done;      // last compute node per exec
  std::vector<NodeId> reduces;   // gradient reductions (buckets, reduce-scatters)
  std::vector<NodeId> offloads;  // gradient copies to the host
  NodeId host_wait = kNone;      // a copy that holds the host: the next compute is launched after it
  double bucket_elements = 0;    // gradient elements waiting for the next bucket
  std::vector<double> deferred;  // buckets reduced after the schedule (sim::grad_reduce_after_schedule)
  ResourceId compute = 0, dp = 0, send = 0, pcie = 0, cpu = 0;
  TaskSpan span;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(const TrainGraphInputs& in) : in_(in), run_(in.run), t_(in.run.train), fw_(in.framework) {}

  TrainGraph build() {
    const auto& par = run_.par;
    pp_ = static_cast<int>(par.pp);
    vp_ = static_cast<int>(par.vp);
    dp_ = par.dp;
    gpn_ = hardware::fast_domain_gpus(in_.system);
    m_ = static_cast<int>(micro_batches_per_step(run_));
    out_.micro_batches = m_;
    groups_ = layer_groups(par, gpn_);
    dp_group_ = dp_group(par, gpn_);
    pp_cross_node_ = pipeline_crosses_nodes(par, gpn_);
    lora_ = run_.workload == Workload::Finetune && t_.finetune != FinetuneKind::Full;
    state_ = train_state_bytes(fw_, t_);

    make_costs();
    const auto order = pipeline_order(pp_, vp_, m_, t_.schedule);
    stages_.resize(static_cast<std::size_t>(pp_));
    out_.tasks.resize(static_cast<std::size_t>(pp_));
    out_.stage_trainable.assign(static_cast<std::size_t>(pp_), 0.0);
    sends_.assign(static_cast<std::size_t>(pp_) * vp_ * m_ * 2, kNone);
    out_.graph.set_interference_rate(in_.comm.interference_rate());
    for (int s = 0; s < pp_; ++s) {
      auto& st = stages_[static_cast<std::size_t>(s)];
      st.compute = add_resource(fmt::format("stage{}.compute", s), ResourceKind::Compute, s);
      st.dp = add_resource(fmt::format("stage{}.dp_comm", s), ResourceKind::DpComm, s);
      st.send = add_resource(fmt::format("stage{}.pp_send", s), ResourceKind::Send, s);
      st.pcie = add_resource(fmt::format("stage{}.pcie", s), ResourceKind::Pcie, s);
      st.cpu = add_resource(fmt::format("stage{}.cpu", s), ResourceKind::Cpu, s);
      // The DP collectives and pipeline sends run NCCL kernels on the stage's GPU beside its compute; PCIe
      // copies run on the copy engines and do not take SMs.
      out_.graph.add_interference(st.dp, st.compute);
      out_.graph.add_interference(st.send, st.compute);
      expand(s, order[static_cast<std::size_t>(s)], st);
    }
    emit_all();
    for (int s = 0; s < pp_; ++s) emit_step_tail(s, stages_[static_cast<std::size_t>(s)]);
    return std::move(out_);
  }

 private:
  ResourceId add_resource(std::string name, ResourceKind kind, int stage) {
    out_.resource_kind.push_back(kind);
    out_.resource_stage.push_back(stage);
    return out_.graph.add_resource(std::move(name));
  }

  NodeId add(StepNode n, NodeInfo info = {}) {
    const NodeId id = out_.graph.add_node(std::move(n));
    out_.info.push_back(info);
    return id;
  }

  void make_costs() {
    const LayerCostInputs li{in_.model, run_, fw_, in_.compute, in_.comm, groups_};
    out_.costs.push_back(layer_cost(li, LayerKind::Embedding, 0));  // 0
    out_.costs.push_back(layer_cost(li, LayerKind::Head, 0));       // 1
    embed_ = 0;
    head_ = 1;
    // One cost per distinct layer kind (dense or MoE, attention or a Gated DeltaNet), shared by every layer of
    // that kind.
    for (std::int64_t l = 0; l < in_.model.num_layers; ++l) {
      int& slot = kinds_[kind_of(l)];
      if (slot < 0) {
        slot = static_cast<int>(out_.costs.size());
        out_.costs.push_back(layer_cost(li, in_.model.is_moe_layer(l) ? LayerKind::Moe : LayerKind::Dense, l));
      }
    }
  }

  std::size_t kind_of(std::int64_t layer) const {
    return (in_.model.is_moe_layer(layer) ? 1U : 0U) + (in_.model.is_linear_attention_layer(layer) ? 2U : 0U);
  }
  int layer_cost_index(std::int64_t layer) const { return kinds_[kind_of(layer)]; }

  // The stage's program as layer executions.
  void expand(int s, const std::vector<PipeTask>& tasks, StageState& st) {
    const auto chunks = stage_chunks(s, pp_, vp_, in_.model.num_layers);
    auto& trainable = out_.stage_trainable[static_cast<std::size_t>(s)];
    for (int c = 0; c < vp_; ++c) {
      const auto [first, count] = chunks[static_cast<std::size_t>(c)];
      for (std::int64_t l = first; l < first + count; ++l)
        trainable += out_.costs[static_cast<std::size_t>(layer_cost_index(l))].trainable_params;
    }
    if (s == 0) trainable += out_.costs[static_cast<std::size_t>(embed_)].trainable_params;
    if (s == pp_ - 1) trainable += out_.costs[static_cast<std::size_t>(head_)].trainable_params;

    for (const auto& task : tasks) {
      const auto [first, count] = chunks[static_cast<std::size_t>(task.chunk)];
      std::vector<std::pair<int, int>> seq;  // (cost, layer)
      const bool has_embed = s == 0 && task.chunk == 0, has_head = s == pp_ - 1 && task.chunk == vp_ - 1;
      auto layer = [&](std::int64_t l) { return std::pair{layer_cost_index(l), static_cast<int>(l)}; };
      if (task.forward) {
        if (has_embed) seq.emplace_back(embed_, -1);
        for (std::int64_t l = first; l < first + count; ++l) seq.push_back(layer(l));
        if (has_head) seq.emplace_back(head_, -1);
      } else {
        if (has_head) seq.emplace_back(head_, -1);
        for (std::int64_t l = first + count - 1; l >= first; --l) seq.push_back(layer(l));
        if (has_embed) seq.emplace_back(embed_, -1);
      }
      for (std::size_t i = 0; i < seq.size(); ++i)
        st.execs.push_back(
            Exec{seq[i].first, seq[i].second, task.forward, task.micro_batch, task.chunk, i == 0, i + 1 == seq.size()});
    }
    st.gather.assign(st.execs.size(), kNone);
    st.done.assign(st.execs.size(), kNone);
  }

  std::size_t send_slot(int stage, int chunk, int mb, bool forward) const {
    return ((static_cast<std::size_t>(stage) * vp_ + chunk) * m_ + mb) * 2 + (forward ? 1 : 0);
  }

  // The stage/chunk a pass hands its output to (forward: next virtual stage; backward: previous).
  std::optional<std::pair<int, int>> successor(int s, int c, bool forward) const {
    if (forward) {
      if (s + 1 < pp_) return std::pair{s + 1, c};
      if (c + 1 < vp_) return std::pair{0, c + 1};
      return std::nullopt;
    }
    if (s > 0) return std::pair{s - 1, c};
    if (c > 0) return std::pair{pp_ - 1, c - 1};
    return std::nullopt;
  }
  bool needs_input(int s, int c, bool forward) const {
    return forward ? !(s == 0 && c == 0) : !(s == pp_ - 1 && c == vp_ - 1);
  }

  void emit_all() {
    std::size_t remaining = 0;
    for (const auto& st : stages_) remaining += st.execs.size();
    while (remaining > 0) {
      bool progress = false;
      for (int s = 0; s < pp_; ++s) {
        auto& st = stages_[static_cast<std::size_t>(s)];
        while (st.next < st.execs.size()) {
          const Exec& e = st.execs[st.next];
          NodeId input = kNone;
          if (e.first_in_task && needs_input(s, e.chunk, e.forward)) {
            input = sends_[send_slot(s, e.chunk, e.micro_batch, e.forward)];
            if (input == kNone) break;  // waits for another stage
          }
          emit_exec(s, st, st.next, input);
          ++st.next;
          --remaining;
          progress = true;
        }
      }
      if (!progress)
        throw Error(ErrorKind::Internal, Location{}, "pipeline schedule deadlocks (no stage can make progress)");
    }
  }

  const LayerCost& cost(int i) const { return out_.costs[static_cast<std::size_t>(i)]; }

  bool zero3() const { return t_.zero_stage >= 3 && dp_ > 1; }
  bool param_offload() const { return t_.offload == Offload::OptimizerParams; }
  bool optimizer_offload() const { return t_.offload != Offload::None; }

  // ZeRO-3 / FSDP: all-gather the layer's 16-bit parameters over DP (ZeRO-Infinity first copies the
  // shard from host memory).
  NodeId emit_gather(int s, StageState& st, std::size_t i, NodeId after) {
    const Exec& e = st.execs[i];
    const double params = cost(e.cost).params;
    const double bytes = cost(e.cost).gather_bytes;
    NodeId h2d = kNone;
    if (param_offload()) {
      h2d = add(StepNode{"param h2d", st.pcie, in_.comm.host_copy(offload_shard_bytes(params, dp_)), Phase::Offload,
                         OpClass::Memcpy, s, e.micro_batch},
                NodeInfo{.module = "offload.pcie"});
      if (after != kNone) out_.graph.add_edge(after, h2d);
    }
    const NodeId g =
        add(StepNode{"param all-gather", st.dp, in_.comm.collective(Collective::AllGather, bytes, dp_group_),
                     Phase::Communication, OpClass::CollectiveAllGather, s, e.micro_batch},
            NodeInfo{.module = "communication.dp"});
    if (h2d != kNone)
      out_.graph.add_edge(h2d, g);
    else if (after != kNone)
      out_.graph.add_edge(after, g);
    st.gather[i] = g;
    return g;
  }

  // Whether this backward pass reduces gradients: ZeRO-2/3 shard gradients, so every micro-batch
  // reduces; otherwise only the last micro-batch of each chunk (gradient accumulation).
  // Under ZeRO-Offload the buckets pass through the same hooks on one rank too: their gradients go to the host.
  bool reduces_now(const Exec& e) const {
    if ((dp_ <= 1 && !optimizer_offload()) || e.forward) return false;
    return t_.zero_stage >= 2 || e.micro_batch == m_ - 1;
  }

  void emit_reduce(int s, StageState& st, NodeId after, double elements, int mb) {
    if (elements <= 0) return;
    const bool on_compute = grad_reduce_on_compute_stream(fw_, t_.zero_stage, t_.overlap_grad_reduce);
    const Collective kind = grad_reduce_collective(t_.zero_stage);
    const OpClass oc = kind == Collective::AllReduce ? OpClass::CollectiveAllReduce : OpClass::CollectiveReduceScatter;
    const Interval d = in_.comm.collective(kind, elements * state_.grad_wire, dp_group_);
    const NodeId r = add(StepNode{kind == Collective::AllReduce ? "grad all-reduce" : "grad reduce-scatter",
                                  on_compute ? st.compute : st.dp, d, Phase::Communication, oc, s, mb},
                         NodeInfo{.comm_s = on_compute ? d.value : 0.0, .module = "communication.dp"});
    out_.graph.add_edge(after, r);
    st.reduces.push_back(r);
    if (optimizer_offload()) {
      // ZeRO-Offload: the reduced gradient partition goes to host memory (with gradient accumulation the
      // host's running sum may first come back to be added to); on the compute stream where the copies
      // block the host or queue behind a blocking reduction (step_terms.h).
      const OffloadBucketCopies copies = offload_bucket_copies(in_.comm, fw_, t_, elements, dp_, mb, m_);
      const ResourceId link = offload_copies_on_compute_stream(fw_, t_) ? st.compute : st.pcie;
      NodeId prev = r;
      if (copies.h2d.high > 0) {
        prev = add(StepNode{"grad sum h2d", link, copies.h2d, Phase::Offload, OpClass::Memcpy, s, mb},
                   NodeInfo{.module = "offload.pcie"});
        out_.graph.add_edge(r, prev);
      }
      const NodeId c = add(StepNode{"grad d2h", link, copies.d2h, Phase::Offload, OpClass::Memcpy, s, mb},
                           NodeInfo{.module = "offload.pcie"});
      out_.graph.add_edge(prev, c);
      st.offloads.push_back(c);
      // A pageable copy returns to the host only once done (and waits for the reduction before it): nothing
      // more is launched until then.
      if (offload_copies_hold_host(fw_, t_)) st.host_wait = c;
    }
  }

  void emit_exec(int s, StageState& st, std::size_t i, NodeId input) {
    const Exec& e = st.execs[i];
    const LayerCost& lc = cost(e.cost);
    NodeId gather = kNone;
    if (zero3()) {
      if (st.gather[i] == kNone) emit_gather(s, st, i, i >= 1 ? st.done[i - 1] : kNone);
      gather = st.gather[i];
      // Prefetch the next layer's parameters while this one computes (live: this, next).
      if (i + 1 < st.execs.size() && fw_.zero3_overlap && st.gather[i + 1] == kNone)
        emit_gather(s, st, i + 1, i >= 1 ? st.done[i - 1] : kNone);
    }
    if (e.first_in_task) {
      st.span = TaskSpan{e.micro_batch, e.chunk, e.forward, 0, 0};
    }
    auto link = [&](NodeId n) {
      if (input != kNone) out_.graph.add_edge(input, n);
      if (gather != kNone) out_.graph.add_edge(gather, n);
      if (st.host_wait != kNone) out_.graph.add_edge(st.host_wait, n);
      st.host_wait = kNone;
    };
    NodeId first = kNone, last = kNone;
    if (e.forward) {
      last = first = add(StepNode{"fwd", st.compute, lc.fwd, Phase::Forward, OpClass::Other, s, e.micro_batch},
                         NodeInfo{.cost = e.cost, .forward = true, .comm_s = lc.fwd_comm.value, .layer = e.layer});
      link(first);
    } else {
      if (lc.recompute.value > 0) {
        first = add(StepNode{"recompute", st.compute, lc.recompute, Phase::Recompute, OpClass::Other, s, e.micro_batch},
                    NodeInfo{.cost = e.cost, .forward = false, .comm_s = lc.recompute_comm.value, .layer = e.layer});
        link(first);
      }
      last = add(StepNode{"bwd", st.compute, lc.bwd, Phase::Backward, OpClass::Other, s, e.micro_batch},
                 NodeInfo{.cost = e.cost, .forward = false, .comm_s = lc.bwd_comm.value, .layer = e.layer});
      if (first == kNone) {
        first = last;
        link(last);
      } else {
        out_.graph.add_edge(first, last);
      }
    }
    st.done[i] = last;
    if (e.first_in_task) st.span.first = first;

    if (!e.forward && zero3()) {
      emit_reduce(s, st, last, lc.trainable_params, e.micro_batch);
    } else if (reduces_now(e)) {
      st.bucket_elements += lc.trainable_params;
      if (st.bucket_elements >= fw_.grad_bucket_elements || e.last_in_task) {
        if (reduce_after_schedule())
          st.deferred.push_back(st.bucket_elements);
        else
          emit_reduce(s, st, last, st.bucket_elements, e.micro_batch);
        st.bucket_elements = 0;
      }
    }

    if (e.last_in_task) {
      st.span.last = last;
      out_.tasks[static_cast<std::size_t>(s)].push_back(st.span);
      if (const auto to = successor(s, e.chunk, e.forward)) {
        const double bytes = pipeline_send_bytes(in_.model, t_, run_.par);
        const NodeId send =
            add(StepNode{e.forward ? "send act" : "send grad", st.send, in_.comm.p2p(bytes, pp_cross_node_),
                         Phase::Communication, OpClass::P2p, s, e.micro_batch},
                NodeInfo{.module = "communication.pp"});
        out_.graph.add_edge(last, send);
        sends_[send_slot(to->first, to->second, e.micro_batch, e.forward)] = send;
      }
    }
  }

  // The blocking reduction waits for the whole schedule (Megatron without --overlap-grad-reduce).
  bool reduce_after_schedule() const { return grad_reduce_after_schedule(fw_, t_.zero_stage, t_.overlap_grad_reduce); }

  void emit_step_tail(int s, StageState& st) {
    const double trainable = out_.stage_trainable[static_cast<std::size_t>(s)];
    const double shard = optimizer_shard(trainable, t_, dp_);
    NodeId last_compute = st.done.empty() ? kNone : st.done.back();
    // Deferred buckets, one after another on the compute stream once the stage's schedule is done.
    for (const double elements : st.deferred) {
      emit_reduce(s, st, last_compute, elements, m_ - 1);
      last_compute = st.reduces.back();
    }
    NodeId ready = kNone;
    if (optimizer_offload()) {
      // ZeRO-Offload: CPU Adam over the node's GPUs' partitions, then the updated 16-bit partition back.
      const double v = cpu_adam_seconds(shard, in_.system, run_.par.gpus, host_update_bytes(state_));
      // Band: the CPU-Adam rate is an uncalibrated literature figure; -30 % / +50 % (engineering assumption).
      const NodeId cpu =
          add(StepNode{"cpu adam", st.cpu, Interval{v, 0.7 * v, 1.5 * v}, Phase::Offload, OpClass::CpuOptimizer, s, -1},
              NodeInfo{.module = "offload.cpu_adam"});
      for (NodeId c : st.offloads) out_.graph.add_edge(c, cpu);
      for (NodeId r : st.reduces) out_.graph.add_edge(r, cpu);
      if (last_compute != kNone) out_.graph.add_edge(last_compute, cpu);
      ready = add(StepNode{"param h2d", st.pcie, offload_param_return(in_.comm, fw_, t_, shard), Phase::Offload,
                           OpClass::Memcpy, s, -1},
                  NodeInfo{.module = "offload.pcie"});
      out_.graph.add_edge(cpu, ready);
    } else {
      const Interval d = in_.compute.memory_bound(optimizer_update_bytes(state_, shard), 2);
      ready = add(StepNode{"optimizer", st.compute, d, Phase::Optimizer, OpClass::Elementwise, s, -1},
                  NodeInfo{.module = "optimizer"});
      for (NodeId r : st.reduces) out_.graph.add_edge(r, ready);
      if (last_compute != kNone) out_.graph.add_edge(last_compute, ready);
    }
    // ZeRO-1/2 (and Megatron's distributed optimizer): every rank updated its partition; all-gather
    // the 16-bit parameters (not overlapped: Megatron's --overlap-param-gather is off by default; with
    // it, the gather runs beside the next step's first forward and only what that cannot hide is left).
    if (gathers_params_after_step(t_, dp_)) {
      const double bytes = param_bytes_16bit(trainable);
      Interval d = in_.comm.collective(Collective::AllGather, bytes, dp_group_);
      if (t_.overlap_param_gather) d = exposed_beyond(d, first_forward(st));
      if (d.high <= 0) return;
      const NodeId g =
          add(StepNode{"param all-gather", st.dp, d, Phase::Communication, OpClass::CollectiveAllGather, s, -1},
              NodeInfo{.module = "communication.dp"});
      out_.graph.add_edge(ready, g);
    }
  }

  // The compute time of the stage's first micro-batch's forward, over all its chunks.
  Interval first_forward(const StageState& st) const {
    Interval f;
    for (const Exec& e : st.execs)
      if (e.forward && e.micro_batch == 0) f += out_.costs[static_cast<std::size_t>(e.cost)].fwd;
    return f;
  }

  const TrainGraphInputs& in_;
  const RunSpec& run_;
  const TrainSpec& t_;
  const FrameworkProfile& fw_;
  TrainGraph out_;
  std::vector<StageState> stages_;
  std::vector<NodeId> sends_;
  LayerGroups groups_;
  CommGroup dp_group_;
  int pp_ = 1, vp_ = 1, m_ = 1, gpn_ = 8;
  std::int64_t dp_ = 1;
  bool pp_cross_node_ = false, lora_ = false;
  TrainStateBytes state_;  // bytes per trainable parameter (weights, gradients on the wire, update)
  int embed_ = 0, head_ = 1;
  std::array<int, 4> kinds_{-1, -1, -1, -1};  // cost index per layer kind (kind_of), -1 until seen
};

}  // namespace

std::vector<std::pair<std::int64_t, std::int64_t>> stage_chunks(std::int64_t stage, std::int64_t pp, std::int64_t vp,
                                                                std::int64_t layers) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::int64_t c = 0; c < std::max<std::int64_t>(1, vp); ++c) {
    const StageLayers chunk = stage_chunk(stage, c, pp, vp, layers);
    out.emplace_back(chunk.first, chunk.count);
  }
  return out;
}

TrainGraph build_train_graph(const TrainGraphInputs& in) { return GraphBuilder(in).build(); }

}  // namespace llmsim::sim

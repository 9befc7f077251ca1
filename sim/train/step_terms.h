#pragma once
// The terms of a training step that both the step graph (train_graph.cpp) and the fast estimator
// (fast_train_estimate.cpp) price: the process groups, the pipeline send between stages, the gradient
// reduction and its offload copy, the ZeRO parameter gathers and copies, the optimizer update (on the
// GPU or CPU Adam) and the ZeRO-1/2 parameter all-gather after it. One definition each, so that the
// search's estimate and the simulated step cannot drift apart.
#include <cstdint>

#include "llmsim/cost/comm_cost.h"
#include "llmsim/hardware/system_spec.h"
#include "llmsim/model/model_spec.h"
#include "llmsim/run/framework_profile.h"
#include "llmsim/run/run_spec.h"
#include "llmsim/run/train_state_bytes.h"
#include "llmsim/train/train_layer_cost.h"

namespace llmsim::sim {

// The groups below take `domain_gpus` = hardware::fast_domain_gpus(sys): the GPUs joined by the fast
// fabric (the node, or a multi-node NVLink domain).

// The TP, CP and EP groups of a layer in Megatron rank order (TP innermost, then CP, then DP; EP
// inside DP).
LayerGroups layer_groups(const ParallelSpec& p, int domain_gpus);
// The data-parallel group: dp ranks strided by tp x cp.
CommGroup dp_group(const ParallelSpec& p, int domain_gpus);
// Whether neighbouring pipeline stages sit in different fast-fabric domains, so that their sends go
// over the NICs (a stage spans tp x cp x dp ranks).
bool pipeline_crosses_nodes(const ParallelSpec& p, int domain_gpus);

// Bytes of one micro-batch's activations (or their gradients) sent to the neighbouring stage: the
// micro-batch's tokens of this CP rank x hidden, in the activation dtype, split over TP.
double pipeline_send_bytes(const model::ModelSpec& m, const TrainSpec& t, const ParallelSpec& p);

// The data-parallel gradient reduction: all-reduce without ZeRO, reduce-scatter with it.
model::Collective grad_reduce_collective(int zero_stage);

// 16-bit bytes of `params` parameters: what a parameter copy and the ZeRO-1/2 all-gather move, and a
// ZeRO-3 gather of unquantized parameters (LayerCost::gather_bytes).
double param_bytes_16bit(double params);
// ZeRO-Offload: bytes of the reduced 16-bit gradient partition of `elements` copied to the host, and
// ZeRO-Infinity: of a layer's parameter shard copied back before its gather.
double offload_shard_bytes(double elements, std::int64_t dp);

// ZeRO-Offload as the framework moves data (FrameworkProfile::offload): the copies of one gradient bucket of
// `elements` trainable parameters (the rank's 1/dp partition of them) in micro-batch `mb` of `m`. Under
// ZeRO-1/2, before a later micro-batch adds its gradients, the host's running sum comes back to the GPU
// (h2d); then the sum, or at the last micro-batch the gradient in the framework's copy width, goes to the
// host (d2h). Under ZeRO-3 with OffloadCopies::zero3_round_trip every micro-batch copies the partition out
// and back, the last once more out. Host gradient buffers are pageable unless pinned
// (TrainSpec::offload_pin_memory).
struct OffloadBucketCopies {
  Interval h2d;
  Interval d2h;
  Interval total() const { return h2d + d2h; }
};
OffloadBucketCopies offload_bucket_copies(const CommCost& comm, const FrameworkProfile& fw, const TrainSpec& t,
                                          double elements, std::int64_t dp, std::int64_t mb, std::int64_t m);
// The updated partition of `shard` parameters back to the GPU after the host step (under ZeRO-1/2 from the
// pinned fp32 partition; under ZeRO-3 the 16-bit partition, from a pageable temporary where the framework
// casts on the host).
Interval offload_param_return(const CommCost& comm, const FrameworkProfile& fw, const TrainSpec& t, double shard);
// Whether the host gradient buffers of ZeRO-Offload are page-locked: the run's setting, else the framework's.
bool offload_buffers_pinned(const FrameworkProfile& fw, const TrainSpec& t);
// Whether the offload copies hold the host thread that launches the compute until they are done (they are
// pageable), so the next compute is launched after them.
bool offload_copies_hold_host(const FrameworkProfile& fw, const TrainSpec& t);
// Whether the offload copies hold up the compute stream: they hold the host, or under ZeRO-1/2 the
// framework queues them on a reduction that blocks the compute stream.
bool offload_copies_on_compute_stream(const FrameworkProfile& fw, const TrainSpec& t);

// Seconds a compute span of `base` seconds takes when `comm` seconds of communication on another stream
// of the same GPU run beside it from its start (Efficiency::comm_interference at `rate` < 1): the compute
// loses rate x the overlap, the overlap taken over the lengthened span. The closed form of the list
// scheduler's fixed point (list_scheduler.cpp), for the fast estimate.
double interfered_span(double base, double comm, double rate);

// The parameters whose optimizer state one rank updates: its stage's trainable parameters, divided
// over DP under ZeRO >= 1.
double optimizer_shard(double trainable, const TrainSpec& t, std::int64_t dp);
// Bytes the GPU optimizer step moves for `shard` parameters (read and write of weights, master,
// states, gradients: TrainStateBytes::update_traffic).
double optimizer_update_bytes(const TrainStateBytes& state, double shard);
// Bytes the host optimizer step streams per parameter: read the gradient (in the width of the copy it
// updates), read and write the master (or the weights when there is none) and the states. The working
// 16-bit copy is cast on the GPU after the copy back, not written on the host.
double host_update_bytes(const TrainStateBytes& state);
// Bytes per parameter of the layout Efficiency::cpu_adam_params_per_s is defined on: fp32 parameters,
// gradients and both moments, as DeepSpeed's CPU Adam and calibrate's cpu_adam bench update them.
inline constexpr double kCpuAdamRateBytes = 28;
// CPU Adam over the partitions of the node's GPUs, seconds (0 without a rate in the profile): a
// memory-bound stream (calibrate's bench moves 57 GB/s at 2.04e9 params/s on a host whose STREAM triad
// reaches 73 GB/s), so the rate scales with the bytes each parameter moves (host_update_bytes).
double cpu_adam_seconds(double shard, const hardware::SystemSpec& sys, std::int64_t gpus,
                        double bytes_per_param = kCpuAdamRateBytes);
// Whether every rank all-gathers the updated 16-bit parameters after the step (ZeRO-1/2 and
// Megatron's distributed optimizer, over more than one DP rank).
bool gathers_params_after_step(const TrainSpec& t, std::int64_t dp);

}  // namespace llmsim::sim

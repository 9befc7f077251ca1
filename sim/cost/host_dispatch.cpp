#include "llmsim/cost/host_dispatch.h"

namespace llmsim::sim {

namespace {
bool is_comm(const model::Operator& op) {
  return op.kind == model::OpKind::TpComm || op.kind == model::OpKind::MoeComm;
}
}  // namespace

Interval host_dispatch_band(const hardware::Efficiency& e) {
  return Interval::banded(e.host_dispatch_s, e.host_dispatch_low_s, e.host_dispatch_high_s);
}

double forward_collective_calls(const model::Operator& op) {
  return is_comm(op) && op.collective != model::Collective::None ? 1.0 : 0.0;
}

double backward_collective_calls(const model::Operator& op) {
  return is_comm(op) && op.bwd_collective != model::Collective::None ? 1.0 : 0.0;
}

Interval collective_host_band(const hardware::Efficiency& e) {
  return Interval::banded(e.collective_host_s, e.collective_host_low_s, e.collective_host_high_s);
}

double forward_launches(const model::Operator& op, double norm_kernels) {
  if (is_comm(op)) return op.collective == model::Collective::None ? 0.0 : 1.0;
  if (op.kind == model::OpKind::Norm) return norm_kernels;
  return op.launches;
}

double backward_launches(const model::Operator& op, bool weight_grads, double norm_kernels) {
  if (is_comm(op)) return op.bwd_collective == model::Collective::None ? 0.0 : 1.0;
  if (op.bwd_flops <= 0 && op.bwd_bytes <= 0) return 0.0;
  if (op.kind == model::OpKind::Gemm) {
    // Per GEMM of the forward: the activation gradient, and the weight gradient when trained. A weightless batched GEMM
    // (attention scores / context) has two activation-gradient GEMMs. A trained bias is summed over the rows by a
    // kernel of its own (autograd's AddmmBackward0 reduces grad_output over dim 0; Megatron-LM's
    // LinearWithGradAccumulationAndAsyncCommunication.backward: grad_output.sum(dim=0)).
    if (op.bwd_weight_flops <= 0) return 2.0 * op.launches;
    if (!weight_grads) return op.launches;
    return (op.bias ? 3.0 : 2.0) * op.launches;
  }
  // A trained norm's weight (and bias) gradient is a reduction over the rows, a kernel beside the input
  // gradient's (PyTorch's layer_norm_backward_cuda launches GammaBetaBackwardCUDAKernel after the dX kernel;
  // apex's fused layer norm two: cuComputePartGradGammaBeta and cuComputeGradGammaBeta; HF's eager RMSNorm
  // sums weight x grad over the rows): at least one more launch than the forward's.
  if (op.kind == model::OpKind::Norm) return norm_kernels + (weight_grads && op.weight_params > 0 ? 1.0 : 0.0);
  return op.launches;
}

}  // namespace llmsim::sim

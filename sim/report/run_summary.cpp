#include "llmsim/report/run_summary.h"

#include <fmt/format.h>

#include "llmsim/hardware/attention_kernel.h"

namespace llmsim::report {

namespace {
// "8 GPUs (tp 2, pp 1, dp 4)": the parallel layout every run description starts with.
std::string describe_layout(const sim::ParallelSpec& p) {
  return fmt::format("{} GPU{} (tp {}, pp {}, dp {}{}{}{})", p.gpus, p.gpus == 1 ? "" : "s", p.tp, p.pp, p.dp,
                     p.cp > 1 ? fmt::format(", cp {}", p.cp) : "", p.ep > 1 ? fmt::format(", ep {}", p.ep) : "",
                     p.vp > 1 ? fmt::format(", vp {}", p.vp) : "");
}
}  // namespace

std::string describe_serving_run(const sim::RunSpec& r, std::string_view stream) {
  const auto& i = r.infer;
  return describe_layout(r.par) + fmt::format(", serving, {}, {} weights {}, kv {}; {}", sim::name_of(i.framework),
                                              dtype_name(i.precision), sim::weight_format_name(i),
                                              dtype_name(i.kv_dtype), stream);
}

std::string describe_run(const sim::RunSpec& r) {
  const auto& p = r.par;
  std::string s = describe_layout(p);
  if (r.workload == sim::Workload::Inference) {
    const auto& i = r.infer;
    return s + fmt::format(
                   ", inference, batch {}, {} + {} tokens, {} weights {}, kv {}, {}{}", i.batch, i.input_len,
                   i.output_len, dtype_name(i.precision), sim::weight_format_name(i), dtype_name(i.kv_dtype),
                   sim::name_of(i.framework),
                   i.attn_kernel == AttentionKernel::Fa2 ? "" : fmt::format(", attention {}", name_of(i.attn_kernel)));
  }
  const auto& t = r.train;
  s += fmt::format(", {}, {}, micro-batch {}, global batch {}, seq {}, {}, ZeRO-{}", sim::name_of(r.workload),
                   sim::name_of(t.framework), t.micro_batch, t.global_batch, t.seq_len, dtype_name(t.precision),
                   t.zero_stage);
  if (t.offload != sim::Offload::None) s += fmt::format(", offload {}", sim::name_of(t.offload));
  s += fmt::format(", recompute {}, {}", sim::name_of(t.recompute),
                   !t.flash_attn                           ? "no flash-attn"
                   : t.attn_kernel == AttentionKernel::Fa2 ? "flash-attn"
                                                           : fmt::format("flash-attn ({})", name_of(t.attn_kernel)));
  if (t.fused_loss) s += ", fused loss";
  if (p.sequence_parallel) s += ", sequence parallel";
  if (p.pp > 1) s += fmt::format(", {} pipeline", sim::name_of(t.schedule));
  if (t.finetune != sim::FinetuneKind::Full) s += fmt::format(", {} rank {}", sim::name_of(t.finetune), t.lora_rank);
  if (t.base_quant != model::WeightQuant::None) s += fmt::format(", {} base", model::weight_quant_name(t.base_quant));
  if (t.optimizer != sim::Optimizer::Adam) s += fmt::format(", {}", sim::name_of(t.optimizer));
  if (!t.master_weights) s += ", no master weights";
  if (t.optimizer_state_dtype) s += fmt::format(", {} optimizer states", dtype_name(*t.optimizer_state_dtype));
  if (t.optimizer_impl) s += fmt::format(", {} AdamW step", sim::name_of(*t.optimizer_impl));
  if (t.optimizer_in_backward) s += ", optimizer in backward";
  if (t.overlap_grad_reduce) s += *t.overlap_grad_reduce ? ", overlapped grad reduce" : ", blocking grad reduce";
  if (t.overlap_param_gather) s += ", overlapped param gather";
  if (t.offload_pin_memory) s += *t.offload_pin_memory ? ", pinned offload buffers" : ", pageable offload buffers";
  return s;
}

}  // namespace llmsim::report

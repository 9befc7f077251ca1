#pragma once
// Numeric formats shared by models (weights, KV cache), hardware (peak rate per precision) and runs.
#include <string>
#include <string_view>
#include <vector>

namespace llmsim {

// FP4 is NVFP4: E2M1 elements with one FP8 (E4M3) scale per 16 (NVIDIA Blackwell; TensorRT-LLM and
// Transformer Engine recipes), 4.5 bits an element. The compute precisions come first (compute_precision_names).
enum class DType { FP32, TF32, FP16, BF16, FP8, FP4, INT8, INT4, NF4 };

// Storage bytes per element (TF32 is stored as fp32; INT4/NF4 are 0.5 without quantization scales; FP4
// 0.5625 with its scales).
double dtype_bytes(DType t);
std::string_view dtype_name(DType t);  // "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4", "nf4"
// Parses a name ("bf16", also "bfloat16", "float16", "float32"); nullopt-like: returns false when unknown.
bool parse_dtype(std::string_view name, DType& out);
std::vector<std::string> dtype_names();
// The formats a run may compute in, in DType order (its index is the DType value): fp32, tf32, fp16,
// bf16, fp8, fp4. The others are storage formats only.
std::vector<std::string> compute_precision_names();

// The element type of the activations a run at this compute precision stores and moves: fp32 for fp32
// and tf32 (TF32 is a tensor-core math mode over fp32 tensors), fp16 for fp16, and bf16 for bf16, fp8
// and fp4 (fp8 and NVFP4 recipes — Transformer Engine, torchao float8 — keep activations between layers
// in 16 bits and quantize inside the GEMMs). The one definition used by the memory model, the step graph, the fast
// estimator and the inference iteration cost.
DType activation_dtype(DType precision);

}  // namespace llmsim

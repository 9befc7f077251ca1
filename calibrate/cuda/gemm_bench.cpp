// gemm and gemm_batched: C[m, n] = A[m, k] · B[k, n] with cuBLAS, laid out like PyTorch's nn.Linear
// (column-major "TN": A stored k x m and transposed, B stored k x n; lda = ldb = k, ldc = m).
//   fp32  cublasGemmEx, fp32 in/out, CUBLAS_COMPUTE_32F
//   tf32  cublasGemmEx, fp32 in/out, CUBLAS_COMPUTE_32F_FAST_TF32
//   fp16, bf16   cublasGemmEx, 16-bit in/out, fp32 accumulation (CUBLAS_COMPUTE_32F)
//   fp8   cublasLtMatmul, e4m3 in, bf16 out, fp32 accumulation; compute capability >= 8.9 only
// gemm_batched runs `group` independent GEMMs per operation (cublasGemmStridedBatchedEx, or the
// cuBLASLt batch attributes for fp8). flops = 2 m n k (x batch); bytes (the item's) = A + B + C once.
// Every operation uses the next of several A/B/C sets whose total exceeds twice the L2.
#include <climits>
#include <memory>
#include <optional>
#include <string>

#include "llmsim/calibrate/cuda/bench.h"

namespace llmsim::calibrate::cuda {
namespace {

struct GemmType {
  Elem in, out;
  cudaDataType_t a_type, c_type;
  cublasComputeType_t compute;
  bool fp8 = false;
};

std::optional<GemmType> gemm_type(const std::string& d) {
  if (d == "fp32") return GemmType{Elem::F32, Elem::F32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F};
  if (d == "tf32") return GemmType{Elem::F32, Elem::F32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
  if (d == "fp16") return GemmType{Elem::F16, Elem::F16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F};
  if (d == "bf16") return GemmType{Elem::BF16, Elem::BF16, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F};
  if (d == "fp8" || d == "fp8_e4m3" || d == "e4m3")
    return GemmType{Elem::FP8E4M3, Elem::BF16, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, true};
  return std::nullopt;
}

// Owners of cuBLASLt descriptors.
struct LtDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* p) const { (void)cublasLtMatmulDescDestroy(p); }
  void operator()(cublasLtMatrixLayoutOpaque_t* p) const { (void)cublasLtMatrixLayoutDestroy(p); }
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const { (void)cublasLtMatmulPreferenceDestroy(p); }
};
using LtDesc = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter>;
using LtLayout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter>;
using LtPref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, LtDeleter>;

LtLayout lt_layout(cudaDataType_t t, std::int64_t rows, std::int64_t cols, std::int64_t ld, int batch) {
  cublasLtMatrixLayout_t l = nullptr;
  LLMSIM_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&l, t, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), ld));
  LtLayout owned(l);
  if (batch > 1) {
    const std::int32_t count = batch;
    const std::int64_t stride = rows * cols;
    LLMSIM_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    LLMSIM_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return owned;
}

}  // namespace

Sample bench_gemm(Context& ctx, const BenchItem& item, bool batched) {
  const auto type = gemm_type(item.dtype);
  if (!type) throw Skip{"GEMM dtype '" + item.dtype + "' is not one of fp32, tf32, fp16, bf16, fp8"};
  if (type->fp8 && ctx.cc < 89) throw Skip{"fp8 GEMM needs compute capability 8.9 or newer"};
  if (item.m <= 0 || item.n <= 0 || item.k <= 0 || item.m > INT_MAX || item.n > INT_MAX || item.k > INT_MAX)
    throw Skip{"GEMM shape m, n, k must be positive 32-bit sizes"};
  const int m = static_cast<int>(item.m), n = static_cast<int>(item.n), k = static_cast<int>(item.k);
  const int batch = batched ? std::max(1, item.group) : 1;

  // One set = the A, B and C of one operation; sets lie in three arenas (all A's, all B's, all C's).
  const std::size_t ea = elem_size(type->in), ec = elem_size(type->out);
  const std::size_t a_bytes = align_up(std::size_t(batch) * std::size_t(m) * std::size_t(k) * ea, 256);
  const std::size_t b_bytes = align_up(std::size_t(batch) * std::size_t(k) * std::size_t(n) * ea, 256);
  const std::size_t c_bytes = align_up(std::size_t(batch) * std::size_t(m) * std::size_t(n) * ec, 256);
  const int sets = rotation_sets(a_bytes + b_bytes + c_bytes, ctx.l2_bytes);
  require_free_memory(sets * (a_bytes + b_bytes + c_bytes) + Context::kWorkspaceBytes, "GEMM");
  DeviceBuffer A(sets * a_bytes), B(sets * b_bytes), C(sets * c_bytes);
  cudaStream_t s = ctx.stream->get();
  fill_random(A.get(), A.size(), type->in, 1, s);
  fill_random(B.get(), B.size(), type->in, 2, s);
  fill_random(C.get(), C.size(), type->out, 3, s);
  LLMSIM_CUDA_CHECK(cudaStreamSynchronize(s));

  const float alpha = 1.0f, beta = 0.0f;
  long next = 0;
  TimedOp op;
  op.stream = s;

  // fp8 descriptors, chosen once (the algorithm does not depend on the pointers).
  LtDesc desc;
  LtLayout la, lb, lc;
  cublasLtMatmulHeuristicResult_t algo{};
  if (type->fp8) {
    cublasLtMatmulDesc_t d = nullptr;
    LLMSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    desc.reset(d);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LLMSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LLMSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    la = lt_layout(type->a_type, k, m, k, batch);
    lb = lt_layout(type->a_type, k, n, k, batch);
    lc = lt_layout(type->c_type, m, n, m, batch);
    cublasLtMatmulPreference_t p = nullptr;
    LLMSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    LtPref pref(p);
    const std::uint64_t ws = Context::kWorkspaceBytes;
    LLMSIM_CUBLAS_CHECK(
        cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt(), d, la.get(), lb.get(), lc.get(), lc.get(),
                                                             p, 1, &algo, &returned);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && returned == 0))
      throw Skip{"cuBLASLt has no fp8 kernel for this shape (fp8 needs m, n, k multiples of 16)"};
    LLMSIM_CUBLAS_CHECK(st);
    void* ws_ptr = ctx.workspace();
    op.enqueue = [&, ws_ptr](long count) {
      for (long i = 0; i < count; ++i, ++next) {
        const long set = next % sets;
        void* c = C.bytes() + set * c_bytes;
        LLMSIM_CUBLAS_CHECK(cublasLtMatmul(ctx.cublas_lt(), desc.get(), &alpha, A.bytes() + set * a_bytes, la.get(),
                                           B.bytes() + set * b_bytes, lb.get(), &beta, c, lc.get(), c, lc.get(),
                                           &algo.algo, ws_ptr, Context::kWorkspaceBytes, s));
      }
    };
  } else {
    cublasHandle_t h = ctx.cublas();
    op.enqueue = [&, h](long count) {
      for (long i = 0; i < count; ++i, ++next) {
        const long set = next % sets;
        const void* a = A.bytes() + set * a_bytes;
        const void* b = B.bytes() + set * b_bytes;
        void* c = C.bytes() + set * c_bytes;
        if (batch == 1) {
          LLMSIM_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, type->a_type, k, b,
                                           type->a_type, k, &beta, c, type->c_type, m, type->compute,
                                           CUBLAS_GEMM_DEFAULT));
        } else {
          LLMSIM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
              h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a, type->a_type, k, static_cast<long long>(m) * k, b,
              type->a_type, k, static_cast<long long>(k) * n, &beta, c, type->c_type, m, static_cast<long long>(m) * n,
              batch, type->compute, CUBLAS_GEMM_DEFAULT));
        }
      }
    };
  }
  const Timing t = measure(op, ctx.timing);
  const double flops = 2.0 * static_cast<double>(m) * n * k * batch;
  return make_sample(item, flops, t);
}

}  // namespace llmsim::calibrate::cuda

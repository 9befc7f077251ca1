# Run by cli_llmsim_links_no_gpu_libraries: the llmsim executable must not load CUDA, cuBLAS, NCCL or MPI
# (they belong to llmsim-calibrate alone, which `llmsim calibrate` runs), so that every other command starts
# in milliseconds (issue 18). Reads the dynamic dependencies with ldd.
execute_process(COMMAND ldd "${LLMSIM}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${LLMSIM} failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "lib(cudart|cublas|cublasLt|nccl|mpi|mpi_cxx|open-pal)[^ \t\n]*" found "${out}")
if(found)
  message(FATAL_ERROR "llmsim links GPU or MPI libraries: ${found}")
endif()

cmake_minimum_required(VERSION 3.25)
# Calibration folders are never damaged by an import or a refit:
#  1. importing an nccl-tests log into a folder holding a GPU calibration keeps its fingerprint (the GPU
#     it measured and its quality counts) and notes the import;
#  2. an import that fails (a missing log, a log of other GPUs than the system's) creates nothing;
#  3. a refit of a folder whose samples.csv holds no samples fails (exit 3) and leaves the profile as it was.
#   -DLLMSIM=<exe> -DCALIBRATION=<data/calibration/h200-...> -DLOG=<nccl-tests log> -DWORK=<scratch dir>
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
file(COPY "${CALIBRATION}/" DESTINATION "${WORK}/cal")
# The log's Rank lines name its GPUs, which must be the system's: the same log as if run on H200s.
file(READ "${LOG}" log_text)
string(REGEX REPLACE "NVIDIA A100-SXM4-80GB" "NVIDIA H200" log_text "${log_text}")
file(WRITE "${WORK}/all_reduce_perf.txt" "${log_text}")
execute_process(COMMAND ${LLMSIM} calibrate import-nccl-tests ${LOG} --system hgx-h200 --out ${WORK}/refused
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 3 OR EXISTS "${WORK}/refused" OR NOT err MATCHES "the log ran on NVIDIA A100-SXM4-80GB")
  message(FATAL_ERROR "an A100 log imported against an H200 system: exit ${rc}\n${err}")
endif()
execute_process(COMMAND ${LLMSIM} calibrate import-nccl-tests ${WORK}/all_reduce_perf.txt --system hgx-h200 --out ${WORK}/cal
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import into a calibration folder failed (${rc}): ${err}")
endif()
file(READ "${WORK}/cal/fingerprint.json" fp)
foreach(kept "\"name\": \"NVIDIA H200\"" "\"throttled_samples\": 645" "\"noisy_samples\": 21" "collectives imported")
  string(FIND "${fp}" "${kept}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the fingerprint lost '${kept}' on import:\n${fp}")
  endif()
endforeach()

execute_process(COMMAND ${LLMSIM} calibrate import-nccl-tests ${WORK}/no-such.log --system hgx-h200 --out ${WORK}/fresh
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0 OR EXISTS "${WORK}/fresh")
  message(FATAL_ERROR "a failed import left ${WORK}/fresh behind (exit ${rc})")
endif()

file(MAKE_DIRECTORY "${WORK}/empty")
file(COPY "${CALIBRATION}/fingerprint.json" "${CALIBRATION}/hgx-h200-calibrated.toml" DESTINATION "${WORK}/empty")
file(STRINGS "${CALIBRATION}/samples.csv" header LIMIT_COUNT 1)
file(WRITE "${WORK}/empty/samples.csv" "${header}\n")
file(SHA256 "${WORK}/empty/hgx-h200-calibrated.toml" before)
execute_process(COMMAND ${LLMSIM} calibrate refit ${WORK}/empty --system hgx-h200
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(SHA256 "${WORK}/empty/hgx-h200-calibrated.toml" after)
if(NOT rc EQUAL 3 OR NOT before STREQUAL after OR NOT err MATCHES "holds no samples")
  message(FATAL_ERROR "refit of a header-only samples.csv: exit ${rc}, profile changed: ${before} ${after}\n${err}")
endif()

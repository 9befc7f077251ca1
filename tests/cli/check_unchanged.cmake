cmake_minimum_required(VERSION 3.25)
# Copies SOURCE to COPY, runs one llmsim command line whose arguments name COPY (as @COPY@), and checks
# its exit code and that COPY is byte for byte what was copied: an output path equal to an input must be
# refused before anything is written.
#   -DLLMSIM=<exe> -DSOURCE=<file> -DCOPY=<path> -DARGS="a|@COPY@|c" -DEXPECT_RC=<n>
file(COPY_FILE "${SOURCE}" "${COPY}")
file(SHA256 "${COPY}" before)
string(REPLACE "@COPY@" "${COPY}" args "${ARGS}")
string(REPLACE "|" ";" args "${args}")
execute_process(COMMAND ${LLMSIM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(context "command: llmsim ${args}\n--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\n${context}")
endif()
file(SHA256 "${COPY}" after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "${COPY} was changed by the command\n${context}")
endif()
if(NOT err MATCHES "is one of this command's input files")
  message(FATAL_ERROR "no refusal naming the input on stderr\n${context}")
endif()

cmake_minimum_required(VERSION 3.25)
# Runs two llmsim command lines and checks that they print the same number: the first capture group of
# REGEX_A in the stdout of ARGS_A equals that of REGEX_B in the stdout of ARGS_B, character for character
# (both JSON printers write doubles in their shortest round-trip form, so equal text = equal doubles).
#   -DLLMSIM=<exe> -DARGS_A="a|b" -DREGEX_A=... -DARGS_B="c|d" -DREGEX_B=...
foreach(side A B)
  string(REPLACE "|" ";" args "${ARGS_${side}}")
  execute_process(COMMAND ${LLMSIM} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "llmsim ${args}: exit code ${rc}\n${out}\n${err}")
  endif()
  if(NOT out MATCHES "${REGEX_${side}}")
    message(FATAL_ERROR "llmsim ${args}: stdout does not match '${REGEX_${side}}'\n${out}")
  endif()
  set(value_${side} "${CMAKE_MATCH_1}")
endforeach()
if(NOT value_A STREQUAL value_B)
  message(FATAL_ERROR "the two commands disagree: ${value_A} (${ARGS_A}) vs ${value_B} (${ARGS_B})")
endif()
message(STATUS "both print ${value_A}")

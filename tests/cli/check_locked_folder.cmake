cmake_minimum_required(VERSION 3.25)
# Two writers of one calibration folder: while another process holds the folder's lock (flock(1) on the
# folder, as a running `llmsim calibrate` does), `llmsim calibrate --resume` of it is refused (exit 3,
# the folder named) and its samples.csv is byte for byte what it was; once the lock is free, `calibrate
# refit` of a folder whose samples repeat an item fits each item once and says so.
#   -DLLMSIM=<exe> -DFLOCK=<flock(1)> -DWORK=<folder> -DSYSTEM=<preset> -DFINGERPRINT=<a fingerprint.json>
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(header "bench,dtype,m,n,k,bytes,group,flops,time_s,spread,repeats,noisy,sm_clock_MHz,throttled,nodes")
set(row "host_triad,,0,0,0,1073741824,8,0,0.01,0.01,5,0,0,0,1")
file(WRITE "${WORK}/samples.csv" "${header}\n${row}\n${row}\n")
file(SHA256 "${WORK}/samples.csv" before)
execute_process(COMMAND ${FLOCK} "${WORK}" ${LLMSIM} calibrate --resume "${WORK}" --only cpu --quick --system ${SYSTEM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(context "--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT rc STREQUAL "3")
  message(FATAL_ERROR "calibrate --resume of a locked folder: exit code ${rc}, expected 3\n${context}")
endif()
if(NOT err MATCHES "another llmsim calibrate is writing to this folder")
  message(FATAL_ERROR "no refusal naming the lock on stderr\n${context}")
endif()
file(SHA256 "${WORK}/samples.csv" after)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "samples.csv of the locked folder was changed\n${context}")
endif()
# refit: the repeated host_triad row is fitted once, with a note.
file(COPY_FILE "${FINGERPRINT}" "${WORK}/fingerprint.json")
execute_process(COMMAND ${LLMSIM} calibrate refit "${WORK}" --system ${SYSTEM}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(context "--- stdout ---\n${out}\n--- stderr ---\n${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "calibrate refit: exit code ${rc}, expected 0\n${context}")
endif()
if(NOT out MATCHES "1 samples from" OR NOT err MATCHES "1 repeated sample\\(s\\) of items already in")
  message(FATAL_ERROR "refit did not fit the repeated item once with a note\n${context}")
endif()

# Run by the install_and_consume test: install, run the installed executable elsewhere, build a consumer.
file(REMOVE_RECURSE "${WORK}")
set(prefix "${WORK}/prefix")
set(elsewhere "${WORK}/elsewhere")
file(MAKE_DIRECTORY "${elsewhere}")

function(run_checked what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${elsewhere}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

run_checked("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f bin/llmsim bin/llmsim-calibrate share/llmsim/hardware/a800-nvlink.toml share/llmsim/models/llama2-7b/config.json
          include/llmsim/model/param_count.h lib/cmake/llmsim/llmsimConfig.cmake)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${prefix}/${f}")
  endif()
endforeach()

# The README's first command, from a folder that is neither the source nor the build tree, with no
# LLMSIM_DATA_DIR: the presets must come from <prefix>/share/llmsim.
unset(ENV{LLMSIM_DATA_DIR})
run_checked("installed llmsim train" "${prefix}/bin/llmsim" train --model llama2-7b --system a800-nvlink --gpus 8
            --zero-stage 3 --seq-len 512 --micro-batch 4)
if(NOT last_out MATCHES "llmsim train: llama2-7b on a800-nvlink")
  message(FATAL_ERROR "unexpected output of the installed llmsim:\n${last_out}")
endif()
# The presets are the installed ones, wherever the tree is: moved, and given a system only it holds, the
# installed llmsim lists that system (the build's fallback, the source tree's data/, does not have it).
file(RENAME "${prefix}" "${WORK}/moved")
set(prefix "${WORK}/moved")
file(COPY_FILE "${prefix}/share/llmsim/hardware/a800-nvlink.toml" "${prefix}/share/llmsim/hardware/installed-only.toml")
run_checked("installed llmsim list systems" "${prefix}/bin/llmsim" list systems)
if(NOT last_out MATCHES "installed-only")
  message(FATAL_ERROR "the moved llmsim does not read its own share/llmsim:\n${last_out}")
endif()

# The installed Python package (when the module was built): imported from the moved tree, it reads the same
# share/llmsim, and its train returns the figures the installed executable prints as --json. (Lines of the
# Python code are separated by \n: a ';' would split the argument.)
if(PYTHON)
  set(ENV{PYTHONPATH} "${prefix}/${PYTHON_DIR}")
  run_checked("installed python module" ${PYTHON} -c
              "import llmsim\nprint(sorted(s['name'] for s in llmsim.list_systems()['systems']))")
  if(NOT last_out MATCHES "installed-only")
    message(FATAL_ERROR "the installed Python package does not read its own share/llmsim:\n${last_out}")
  endif()
  run_checked("installed python train" ${PYTHON} -c
              "import json, subprocess, sys, llmsim\na = ['--model', 'llama2-7b', '--system', 'a800-nvlink', '--gpus', '8']\nd = llmsim.train(model='llama2-7b', system='a800-nvlink', gpus=8)\nc = json.loads(subprocess.run([sys.argv[1], 'train'] + a + ['--json'], capture_output=True, text=True).stdout)\nprint('same' if d == c else 'differ')"
              "${prefix}/bin/llmsim")
  if(NOT last_out MATCHES "^same")
    message(FATAL_ERROR "the installed Python package's train differs from the installed llmsim's --json:\n${last_out}")
  endif()
endif()

# A consumer: find_package(llmsim) and llmsim::sim.
run_checked("consumer configure" ${CMAKE_COMMAND} -S "${CONSUMER}" -B "${WORK}/consumer-build"
            -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
run_checked("consumer build" ${CMAKE_COMMAND} --build "${WORK}/consumer-build" --parallel 2)
run_checked("consumer run" "${WORK}/consumer-build/llmsim_consumer" "${prefix}/share/llmsim")
# llama2-7b's exact parameter count (tests/model/test_param_count.cpp's golden figure).
if(NOT last_out MATCHES "llama2-7b: 6738415616 parameters")
  message(FATAL_ERROR "unexpected consumer output:\n${last_out}")
endif()
message(STATUS "installed, run elsewhere, consumed: ${last_out}")

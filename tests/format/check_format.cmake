# Fails when a C++ source of the repository differs from what .clang-format says (clang-format 14, the
# Debian version the style was fixed with; other versions format a few constructs differently, so the
# check skips with them). Run `git ls-files '*.h' '*.cpp' '*.cu' | xargs clang-format -i` to reformat.
execute_process(COMMAND ${CLANG_FORMAT} --version OUTPUT_VARIABLE version)
if(NOT version MATCHES "version 14\\.")
  message("skipped: ${version} is not clang-format 14")
  return()
endif()
execute_process(COMMAND ${GIT} ls-files *.h *.cpp *.cu WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE files RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message("skipped: ${SRC} is not a git checkout")
  return()
endif()
string(REPLACE "\n" ";" files "${files}")
list(FILTER files EXCLUDE REGEX "^$")
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${files} WORKING_DIRECTORY ${SRC}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "sources differ from .clang-format:\n${err}")
endif()
list(LENGTH files n)
message("${n} sources follow .clang-format")

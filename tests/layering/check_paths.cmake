# Fails when a tracked file lies in, or names, a folder the areas left when they moved to the design
# card's top level (core/, model/, hardware/, calibrate/, sim/<stage>/, cli/). Asks git, so that an
# untracked leftover (an editor's or a build's file) in an old folder does not fail it.
# The old names are assembled here so that this file does not match itself.
string(CONCAT old_src "src" "/llmsim")
string(CONCAT old_cli "apps" "/cli")
execute_process(COMMAND ${GIT} ls-files -- src apps WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE tracked RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message("skipped: ${SRC} is not a git checkout")
  return()
endif()
if(NOT tracked STREQUAL "")
  message(FATAL_ERROR "files under src/ or apps/: the areas live at the top level (docs/architecture.md)\n${tracked}")
endif()
execute_process(COMMAND ${GIT} grep -n -F -e "${old_src}" -e "${old_cli}" WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE hits RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "old layout paths (${old_src}, ${old_cli}) still named:\n${hits}")
elseif(NOT rc EQUAL 1)
  message(FATAL_ERROR "git grep failed (${rc}) in ${SRC}")
endif()
message("no tracked file lies in or names ${old_src} or ${old_cli}")

# Fails when a tracked file still names a folder the areas left when they moved to the design card's
# top level (core/, model/, hardware/, calibrate/, sim/<stage>/, cli/), or when such a folder is back.
# The old names are assembled here so that this file does not match itself.
string(CONCAT old_src "src" "/llmsim")
string(CONCAT old_cli "apps" "/cli")
foreach(dir "src" "apps")
  if(EXISTS "${SRC}/${dir}")
    message(FATAL_ERROR "${SRC}/${dir} exists: the areas live at the top level (docs/architecture.md)")
  endif()
endforeach()
execute_process(COMMAND ${GIT} grep -n -F -e "${old_src}" -e "${old_cli}" WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE hits RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "old layout paths (${old_src}, ${old_cli}) still named:\n${hits}")
elseif(NOT rc EQUAL 1)
  message("skipped: ${SRC} is not a git checkout")
  return()
endif()
message("no tracked file names ${old_src} or ${old_cli}")

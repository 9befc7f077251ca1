# One library per pipeline stage ("area"), and a build that enforces the layering. The areas sit at the
# design card's top level: core/, model/, hardware/, calibrate/ and the simulation stages sim/<stage>/.
#
# Every area's headers are included as "llmsim/<area>/<file>.h", wherever its folder is. No include path
# exposes the source tree as a whole: each area gets its own include root in the build tree,
# <build>/include_roots/<area>/, that holds only the link llmsim/<area> -> the area's folder. The root is
# a PUBLIC include directory of the area's target, so it reaches exactly the targets that link the area
# (directly or through the areas above it). An include across a forbidden edge (model including
# llmsim/train/...) does not find the header and fails to compile; tests/layering checks that it does.
function(llmsim_area area)
  cmake_parse_arguments(A "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  set(target llmsim_${area})
  add_library(${target} STATIC ${A_SOURCES})
  add_library(llmsim::${area} ALIAS ${target})
  set(root "${PROJECT_BINARY_DIR}/include_roots/${area}")
  file(MAKE_DIRECTORY "${root}/llmsim")
  file(CREATE_LINK "${CMAKE_CURRENT_SOURCE_DIR}" "${root}/llmsim/${area}" SYMBOLIC)
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${root}>" "$<INSTALL_INTERFACE:include>")
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${area})  # installed as llmsim::<area> too
  target_link_libraries(${target} PUBLIC ${A_DEPS} PRIVATE ${A_PRIVATE_DEPS} llmsim_warnings)
  set_property(GLOBAL APPEND PROPERTY LLMSIM_AREAS ${area})
endfunction()

# Installation (issue 18): `cmake --install build --prefix P` puts the llmsim executable in P/bin, the shipped
# presets in P/share/llmsim (which the executable finds relative to itself: cli/cli_context.cpp), and
# the simulation libraries with their headers and a CMake package, so that another project can
#   find_package(llmsim CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE llmsim::sim)   # or one stage: llmsim::model, llmsim::serve, ...
# tests/install builds such a consumer against an installed tree. calibrate is not exported: it is the one
# area with optional CUDA, NCCL and MPI parts, which only the llmsim executable needs.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Every stage that simulates (each area llmsim_area made, in the order the build added them, but
# calibrate), and the umbrella target over them (validate and report sit on top of all).
get_property(LLMSIM_EXPORTED_AREAS GLOBAL PROPERTY LLMSIM_AREAS)
list(REMOVE_ITEM LLMSIM_EXPORTED_AREAS calibrate)
add_library(llmsim_sim INTERFACE)
add_library(llmsim::sim ALIAS llmsim_sim)
target_link_libraries(llmsim_sim INTERFACE llmsim::validate llmsim::report)
set_target_properties(llmsim_sim PROPERTIES EXPORT_NAME sim)
set_target_properties(llmsim_warnings PROPERTIES EXPORT_NAME warnings)  # a link-only dependency of each area

set(llmsim_targets llmsim_sim llmsim_warnings)
foreach(area IN LISTS LLMSIM_EXPORTED_AREAS)
  list(APPEND llmsim_targets llmsim_${area})
  get_target_property(area_dir llmsim_${area} SOURCE_DIR)  # core/, model/, ... or sim/<stage>/
  install(DIRECTORY "${area_dir}/" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/llmsim/${area}"
          FILES_MATCHING PATTERN "*.h")
endforeach()
install(TARGETS ${llmsim_targets} EXPORT llmsimTargets ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")
install(TARGETS llmsim llmsim-calibrate RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/data/" DESTINATION "${CMAKE_INSTALL_DATADIR}/llmsim")

set(config_dir "${CMAKE_INSTALL_LIBDIR}/cmake/llmsim")
install(EXPORT llmsimTargets NAMESPACE llmsim:: DESTINATION "${config_dir}" FILE llmsimTargets.cmake)
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/llmsimConfig.cmake.in"
                              "${PROJECT_BINARY_DIR}/llmsimConfig.cmake" INSTALL_DESTINATION "${config_dir}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/llmsimConfigVersion.cmake" COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/llmsimConfig.cmake" "${PROJECT_BINARY_DIR}/llmsimConfigVersion.cmake"
        DESTINATION "${config_dir}")

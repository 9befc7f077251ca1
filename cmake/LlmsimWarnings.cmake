# The warning flags every llmsim target compiles with (the code builds clean under -Wconversion).
add_library(llmsim_warnings INTERFACE)
target_compile_options(llmsim_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Wno-missing-field-initializers)
# GCC 12 reports -Wrestrict false positives inside libstdc++ string concatenation (GCC bug 105329).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(llmsim_warnings INTERFACE -Wno-restrict)
endif()
if(LLMSIM_WARNINGS_AS_ERRORS)
  target_compile_options(llmsim_warnings INTERFACE -Werror)
endif()

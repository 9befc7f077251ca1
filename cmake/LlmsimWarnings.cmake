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
# -DLLMSIM_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer on everything this project compiles and
# links (C++ only; tools/test-sanitize builds build-asan/ with it and runs the suite, which tools/test and so
# .ci/run do after the Release suite; docs/robustness.md).
if(LLMSIM_SANITIZE)
  # One flag per sanitizer: a comma inside $<HOST_LINK:...> would split the option in two.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address> $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options($<HOST_LINK:-fsanitize=address> $<HOST_LINK:-fsanitize=undefined>)  # not nvcc's device link
endif()

# devplace_library(NAME SOURCES file... [PUBLIC lib...] [PRIVATE lib...]): one of devplace's libraries, built from
# the repository root's include paths with the project's warnings. Dependencies on other devplace libraries must
# be allowed by cmake/dependencies.cmake.
function(devplace_library name)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  add_library(${name} ${L_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_compile_options(${name} PRIVATE ${DEVPLACE_WARNINGS})
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
endfunction()

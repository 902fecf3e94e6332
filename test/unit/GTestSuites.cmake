# One ctest entry per GoogleTest suite, not per test (run with cmake -P after
# each build of a test program; see mixc_gtest_suites in CMakeLists.txt).
#
# Why: gtest_discover_tests starts one process per test, and each start of a
# program that links LibTorch costs about 0.9 s of CPU (over 2 s under ASan):
# 271 runtime tests spent more time starting than testing. A suite's tests
# run in one process, as the program runs them by hand; `ctest -R Suite`
# still selects a suite, and --output-on-failure names the failing test.
#
# Inputs (-D): PROGRAM, the test program; OUT, the ctest file to write;
# LABELS, the labels of every entry (a ;-list); TIMEOUT, seconds an entry may
# run; COSTLY, suites (a ;-list) that run long and should start first.
execute_process(COMMAND "${PROGRAM}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --gtest_list_tests failed (${rc}): ${err}")
endif()
# Suite lines start in column 0 and end with '.' ("Models/Generated." for a
# parameterised suite); test lines are indented.
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.$")
    list(APPEND suites "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${PROGRAM} lists no tests")
endif()
get_filename_component(program_name "${PROGRAM}" NAME)
set(script "# Written by GTestSuites.cmake from ${program_name} --gtest_list_tests.\n")
foreach(suite IN LISTS suites)
  set(name "${program_name}/${suite}")
  string(APPEND script "add_test([=[${name}]=] [=[${PROGRAM}]=] [=[--gtest_filter=${suite}.*]=])\n")
  set(cost 0)
  foreach(costly IN LISTS COSTLY)
    if(suite MATCHES "(^|/)${costly}$")
      set(cost 1000)
    endif()
  endforeach()
  string(APPEND script "set_tests_properties([=[${name}]=] PROPERTIES LABELS [=[${LABELS}]=] "
                       "TIMEOUT ${TIMEOUT} COST ${cost})\n")
endforeach()
file(WRITE "${OUT}.new" "${script}")
file(RENAME "${OUT}.new" "${OUT}")

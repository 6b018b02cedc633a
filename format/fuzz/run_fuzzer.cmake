# Runs one libFuzzer target for a fixed number of inputs (ctest, label fuzz): the inputs it finds
# go to a fresh work directory, so every run starts from the same seeds and is deterministic.
#   -DFUZZER=<binary> -DWORK=<dir> -DRUNS=<n> -DCORPORA=<dir;dir...> [-DMAX_LEN=<bytes>]
if(NOT MAX_LEN)
  set(MAX_LEN 65536)
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(
  COMMAND ${FUZZER} -runs=${RUNS} -seed=1 -max_len=${MAX_LEN} -rss_limit_mb=2048
          -malloc_limit_mb=1024 -timeout=30 -artifact_prefix=${WORK}/ ${WORK} ${CORPORA}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${rc}); the failing input is in ${WORK} (see above)")
endif()

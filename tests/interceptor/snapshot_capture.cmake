# Memory snapshot tests (docs/capture.md, "Memory snapshots"). Arguments (-D):
#   MODE CUSNAP INSPECT (inspect_snapshots) OUT_DIR, and per mode:
#   sample  NAME SAMPLE EMU_DIR [MODEL=1]: the sample run directly on the emulator and captured with
#           --snapshot-kernels regex:. : same stdout (timings masked, device printf lines sorted)
#           and exit code; every launch has before/after snapshots that tile exactly the live
#           allocations, continuity between launches, and (MODEL=1) the first snapshot equals the
#           memory recomputed from the capture's own host-to-device payloads.
#   select  SAMPLE (reduction): --launch-skip/--launch-count over regex:., an exact name, a
#           regex, and a plain substring (Nsight Compute: exact match, so it selects nothing).
#   options SAMPLE (vector_add): --snapshot-outputs and --snapshot-chunk 4096.
#   size    APP IMAGE: 100 launches over 8 MiB, 10 vs 100 selected: the file grows with the
#           bytes that change, not with launches x memory; the device and host hashing routes
#           record the same snapshots, and the device route copies only changed chunks back.
#   host    APP IMAGE EMU_DIR CUDA_ROOT GENERATOR CXX (snapshot_host_app): mapped, registered and
#           pinned host memory covered on both hashing routes, with the content the kernels
#           wrote there; the --emit-cpp reproducer of one launch matches over all of it.
#   hostfunc APP IMAGE EMU_DIR HOSTFUNC EXPECT (hostfunc_app): a launch whose stream waits on a
#           host function that has not run yet is skipped with the reason, never deadlocks.
#   fake_capture / fake_fail  APP FAKE SHIM_DIR: the skip paths on a fake driver (stream capture;
#           a failing copy disables snapshots), with the application's output unchanged.
function(mask_timings text out)
  string(REGEX REPLACE "[0-9]+(\\.[0-9]+)? (ms|s|us)" "<time>" text "${text}")
  string(REGEX REPLACE "\\([0-9]+ launches/s\\)" "(<rate>)" text "${text}")
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  list(SORT lines)
  string(REPLACE ";" "\n" text "${lines}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# capture(<name> <out-var-prefix> args...): cusnap capture on the emulator; sets <prefix>_rc/_out/_err.
function(capture file prefix)
  file(REMOVE ${file})
  execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${file} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${prefix}_rc "${rc}" PARENT_SCOPE)
  set(${prefix}_out "${out}" PARENT_SCOPE)
  set(${prefix}_err "${err}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "capture ${file} failed (rc ${rc}):\n${out}${err}")
  endif()
endfunction()

# snapshot_records(<file> <out-var>): the capture's memorySnapshot records as `cusnap dump` prints
# them, each reduced to its phase and its chunks without addresses, sorted (each run allocates
# anew, and the order of its allocations in the address space is not fixed), one per line.
function(snapshot_records file out)
  execute_process(COMMAND ${CUSNAP} dump ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE dump ERROR_QUIET)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cusnap dump ${file} failed (rc ${rc})")
  endif()
  string(REGEX MATCHALL "memorySnapshot[^\n]*" records "${dump}")
  set(result "")
  foreach(record IN LISTS records)
    string(REGEX MATCH "phase=[a-zA-Z]+" phase "${record}")
    string(REGEX MATCHALL "size=[0-9]+ blob=[0-9a-f]+ hashOnly=[a-z]+" chunks "${record}")
    list(SORT chunks)
    string(REPLACE ";" "," chunks "${chunks}")
    string(APPEND result "${phase} ${chunks}\n")
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(inspect file prefix)
  execute_process(COMMAND ${INSPECT} ${ARGN} ${file} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("inspect_snapshots ${file}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "inspect_snapshots failed (rc ${rc}) on ${file}")
  endif()
  set(${prefix}_out "${out}" PARENT_SCOPE)
endfunction()

# The ordinals of the snapshotted launches, as a list.
function(snapped text out)
  string(REGEX MATCHALL "\nsnap [0-9]+ " lines "\n${text}")
  set(ordinals "")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "[0-9]+" n "${line}")
    list(APPEND ordinals ${n})
  endforeach()
  set(${out} "${ordinals}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "sample")
  set(capture_file ${OUT_DIR}/snap-${NAME}.cusnap)
  set(ENV{LD_LIBRARY_PATH} "${EMU_DIR}")
  execute_process(COMMAND ${SAMPLE} ${ARGS} RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
  unset(ENV{LD_LIBRARY_PATH})
  capture(${capture_file} snap --snapshot-kernels "regex:." -- ${SAMPLE} ${ARGS})
  message("direct (rc ${direct_rc}):\n${direct_out}${direct_err}\nwith snapshots (rc ${snap_rc}):\n${snap_out}${snap_err}")
  if(NOT direct_rc STREQUAL snap_rc)
    message(FATAL_ERROR "exit code with snapshots ${snap_rc}, without ${direct_rc}")
  endif()
  mask_timings("${direct_out}" direct_masked)
  mask_timings("${snap_out}" snap_masked)
  if(NOT direct_masked STREQUAL snap_masked)
    message(FATAL_ERROR "stdout differs with snapshots:\n--- direct\n${direct_masked}\n--- snapshots\n${snap_masked}")
  endif()
  # A launch may be skipped only because other device work overlapped it (another stream or
  # thread still writing: its memory would not be the launch's alone) or, with several threads,
  # because another thread freed memory it could reach while it ran; never for anything else.
  if(THREADS)
    inspect(${capture_file} result --require-all --threads)
  else()
    inspect(${capture_file} result --require-all)
  endif()
  string(REGEX MATCHALL "\nskip [^\n]*" skips "\n${result_out}")
  foreach(line IN LISTS skips)
    if(NOT line MATCHES "other device work overlapped the launch" AND
       NOT (THREADS AND line MATCHES "another thread freed memory the launch could reach while it ran"))
      message(FATAL_ERROR "unexpected skip: ${line}")
    endif()
  endforeach()
  string(REGEX MATCH "summary launches=([0-9]+) snapshotted=([0-9]+) skipped=([0-9]+) continuity_chunks=([0-9]+) model_bytes=([0-9]+)"
         _ "${result_out}")
  math(EXPR covered "${CMAKE_MATCH_2} + ${CMAKE_MATCH_3}")
  if(NOT CMAKE_MATCH_1 GREATER 0 OR NOT CMAKE_MATCH_1 EQUAL covered)
    message(FATAL_ERROR "not every launch was snapshotted or skipped with its reason")
  endif()
  # A single-threaded program has launches no other work overlaps (its first one at least): an
  # overlap check that refused everything would be as wrong as none.
  if(NOT THREADS AND NOT CMAKE_MATCH_2 GREATER 0)
    message(FATAL_ERROR "no launch was snapshotted")
  endif()
  # (A skipped launch ran unobserved: the model then has nothing exact to compare with.)
  if(MODEL AND CMAKE_MATCH_3 EQUAL 0 AND NOT CMAKE_MATCH_5 GREATER 0)
    message(FATAL_ERROR "the first snapshot could not be compared with the recorded host-to-device data")
  endif()
  if(NOT result_out MATCHES "options mode=snapshot filter=regex:\\. skip=0 count=0 chunk=65536")
    message(FATAL_ERROR "the header does not record the snapshot options")
  endif()
elseif(MODE STREQUAL "select")
  set(f ${OUT_DIR}/snap-select.cusnap)
  # reduction: launches 0..3 are reduce_sum_u32, reduce_sum_u32, reduce_max_i32, reduce_max_i32
  # (checked below from the capture itself).
  capture(${f} all --snapshot-kernels "regex:." -- ${SAMPLE})
  inspect(${f} all)
  snapped("${all_out}" all_ordinals)
  if(NOT all_ordinals STREQUAL "0;1;2;3" OR NOT all_out MATCHES "\nsnap 0 reduce_sum_u32 .*\nsnap 2 reduce_max_i32 ")
    message(FATAL_ERROR "unexpected launches in reduction: ${all_ordinals}")
  endif()
  foreach(case "regex:.|1|2|1;2" "regex:.|3|0|3" "regex:.|0|1|0" "reduce_max_i32|0|0|2;3"
               "reduce_max_i32|1|0|3" "regex:^reduce_s|0|0|0;1" "regex:max|0|1|2" "reduce_max|0|0|")
    string(REPLACE "|" ";" fields "${case}")
    list(GET fields 0 filter)
    list(GET fields 1 skip)
    list(GET fields 2 count)
    list(LENGTH fields n)
    set(expected "")
    if(n GREATER 3)
      list(SUBLIST fields 3 -1 expected)
    endif()
    capture(${f} sel --snapshot-kernels "${filter}" --launch-skip ${skip} --launch-count ${count} -- ${SAMPLE})
    inspect(${f} sel)
    snapped("${sel_out}" ordinals)
    if(NOT "${ordinals}" STREQUAL "${expected}")
      message(FATAL_ERROR "filter '${filter}' skip ${skip} count ${count}: snapshots of launches '${ordinals}', expected '${expected}'")
    endif()
  endforeach()
  # A filter that is not a valid regex is a usage error, before the application runs.
  execute_process(COMMAND ${CUSNAP} capture --driver emulator --force-overwrite -o ${f} --snapshot-kernels "regex:(" -- ${SAMPLE}
                  RESULT_VARIABLE bad_rc OUTPUT_VARIABLE bad_out ERROR_VARIABLE bad_err)
  if(bad_rc EQUAL 0 OR NOT bad_err MATCHES "snapshot-kernels")
    message(FATAL_ERROR "an invalid regex was accepted (rc ${bad_rc}): ${bad_err}")
  endif()
elseif(MODE STREQUAL "options")
  # --snapshot-outputs stores every changed after chunk; --snapshot-chunk sets the tiling.
  set(f ${OUT_DIR}/snap-options.cusnap)
  capture(${f} run --snapshot-kernels "regex:." --snapshot-outputs --snapshot-chunk 4096 -- ${SAMPLE})
  inspect(${f} result --require-all)
  if(NOT result_out MATCHES "options mode=snapshot filter=regex:\\. skip=0 count=0 chunk=4096")
    message(FATAL_ERROR "the header does not record the 4096-byte chunks")
  endif()
  string(REGEX MATCHALL "\nsnap [^\n]*" snaps "\n${result_out}")
  list(LENGTH snaps n)
  if(n EQUAL 0)
    message(FATAL_ERROR "no snapshots")
  endif()
  foreach(line IN LISTS snaps)
    if(NOT line MATCHES " after=([0-9]+) changed=([1-9][0-9]*) stored_after=([0-9]+)" OR
       NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_3)
      message(FATAL_ERROR "with --snapshot-outputs every after chunk has its bytes in the file: ${line}")
    endif()
  endforeach()
elseif(MODE STREQUAL "size")
  set(sizes "")
  foreach(count 0 10 100)
    set(f ${OUT_DIR}/snap-size-${count}.cusnap)
    if(count EQUAL 0)
      capture(${f} run -- ${APP} ${IMAGE} 100 8)
    else()
      capture(${f} run --snapshot-kernels step --launch-count ${count} -- ${APP} ${IMAGE} 100 8)
      inspect(${f} result)
      if(NOT result_out MATCHES "snapshotted=${count} ")
        message(FATAL_ERROR "expected ${count} snapshotted launches")
      endif()
    endif()
    file(SIZE ${f} size_${count})
    message("${count} snapshotted launches: ${size_${count}} bytes; ${run_out}")
  endforeach()
  math(EXPR memory "8 << 20")
  math(EXPR first "${size_10} - ${size_0}")
  math(EXPR more "${size_100} - ${size_10}")
  # The first snapshots store the (incompressible) memory once...
  if(first LESS memory)
    message(FATAL_ERROR "10 snapshots of ${memory} bytes of random data added only ${first} bytes")
  endif()
  # ...and 90 more add what changes plus index entries: far below 90 copies (5% of them here).
  math(EXPR limit "90 * ${memory} / 20")
  if(NOT more LESS limit)
    message(FATAL_ERROR "90 more snapshots added ${more} bytes (limit ${limit}): growth with launches x memory")
  endif()
  message("growth: first 10 snapshots ${first} bytes, 90 more ${more} bytes (${memory} bytes of memory)")
  # Both hashing routes (CUSNAP_SNAPSHOT_HASH), all 100 launches selected: the same snapshot
  # records (addresses aside: each run allocates anew), and the bytes the emulator copied to the
  # host (its own CUSNAP_EMU_STATS count). The host route copies every chunk twice per launch; the
  # device route copies the memory once, then per launch only the changed chunk, once (after the
  # launch; the next before-state stores it from the bytes kept then, since without
  # --snapshot-outputs the after-state did not) and the hashes. The application's own read-back
  # of the buffer is in both counts.
  # (The host route through the CLI's --snapshot-hash, the device route through the environment.)
  foreach(route host device)
    set(f ${OUT_DIR}/snap-size-${route}.cusnap)
    set(ENV{CUSNAP_EMU_STATS} ${OUT_DIR}/snap-size-${route}.stats.json)
    file(REMOVE $ENV{CUSNAP_EMU_STATS})
    if(route STREQUAL "host")
      capture(${f} run --snapshot-kernels step --snapshot-hash host -- ${APP} ${IMAGE} 100 8)
    else()
      set(ENV{CUSNAP_SNAPSHOT_HASH} ${route})
      capture(${f} run --snapshot-kernels step -- ${APP} ${IMAGE} 100 8)
    endif()
    unset(ENV{CUSNAP_EMU_STATS})
    unset(ENV{CUSNAP_SNAPSHOT_HASH})
    inspect(${f} result)
    if(NOT result_out MATCHES "snapshotted=100 ")
      message(FATAL_ERROR "expected 100 snapshotted launches on the ${route} route")
    endif()
    file(READ ${OUT_DIR}/snap-size-${route}.stats.json stats)
    string(JSON dtoh_${route} GET "${stats}" copies deviceToHost bytes)
    snapshot_records(${f} records_${route})
    string(REGEX MATCHALL "\n" lines "${records_${route}}")
    list(LENGTH lines count)
    message("${route} route: ${count} snapshot records, ${dtoh_${route}} bytes copied to the host")
    if(NOT count EQUAL 200 OR NOT records_${route} MATCHES "phase=afterLaunch size=65536 blob=")
      message(FATAL_ERROR "${route} route: expected 200 snapshot records with chunks")
    endif()
  endforeach()
  if(NOT records_host STREQUAL records_device)
    message(FATAL_ERROR "the device and host hashing routes recorded different snapshots")
  endif()
  math(EXPR chunks "${memory} / 65536")
  math(EXPR device_limit "2 * ${memory} + 100 * 65536 + 2 * 100 * ${chunks} * 16")
  math(EXPR host_least "200 * ${memory}")
  if(dtoh_device GREATER device_limit)
    message(FATAL_ERROR "the device route copied ${dtoh_device} bytes to the host (limit ${device_limit}): "
                        "unchanged chunks crossed the bus")
  endif()
  if(dtoh_host LESS host_least)
    message(FATAL_ERROR "the host route copied only ${dtoh_host} bytes (at least ${host_least} expected)")
  endif()
elseif(MODE STREQUAL "host")
  # Host memory the device reaches is covered, on both hashing routes: exact tiling with the host
  # ranges (inspect_snapshots, which also sees them leave at cuMemHostUnregister / cuMemFreeHost),
  # and the after-launch content of the mapped and registered memory the kernel wrote is what
  # the application itself reads there.
  foreach(route host device)
    set(f ${OUT_DIR}/snap-host-${route}.cusnap)
    set(ENV{CUSNAP_SNAPSHOT_HASH} ${route})
    capture(${f} run --snapshot-kernels step --snapshot-outputs -- ${APP} ${IMAGE})
    unset(ENV{CUSNAP_SNAPSHOT_HASH})
    inspect(${f} result)
    # (--snapshot-outputs: every after chunk is stored.)
    if(NOT result_out MATCHES "snap 0 step before=5 after=5 changed=1 stored_after=5\n"
       OR NOT result_out MATCHES "snap 1 step before=5 after=5 changed=1 stored_after=5\n"
       OR NOT result_out MATCHES "snap 2 step before=4 after=4 changed=1 stored_after=4\n"
       OR NOT result_out MATCHES "snap 3 step before=2 after=2 changed=1 stored_after=2\n")
      message(FATAL_ERROR "${route} route: expected the mapped (2 chunks), registered and pinned "
                          "host memory and the device buffer covered while live, one chunk "
                          "changed per launch")
    endif()
    string(REGEX MATCH "mapped ([0-9a-f]+)" _ "${run_out}")
    set(mapped ${CMAKE_MATCH_1})
    string(REGEX MATCH "registered ([0-9a-f]+)" _ "${run_out}")
    set(registered ${CMAKE_MATCH_1})
    execute_process(COMMAND ${CUSNAP} dump ${f} RESULT_VARIABLE rc OUTPUT_VARIABLE dump ERROR_QUIET)
    string(REGEX MATCHALL "memorySnapshot phase=afterLaunch[^\n]*" afters "${dump}")
    list(GET afters 0 after0)
    list(GET afters 1 after1)
    if(mapped STREQUAL "" OR NOT after0 MATCHES "blob=${mapped} hashOnly=false"
       OR registered STREQUAL "" OR NOT after1 MATCHES "blob=${registered} hashOnly=false")
      message(FATAL_ERROR "${route} route: the after snapshots do not hold the host memory the kernels "
                          "wrote (mapped ${mapped}, registered ${registered}):\n${after0}\n${after1}")
    endif()
    snapshot_records(${f} records_${route})
    string(REGEX MATCHALL "phase=[a-zA-Z]+ size=[0-9]+ blob=[0-9a-f]+ hashOnly=false[^\n]*\n" lines
           "${records_${route}}")
    list(LENGTH lines count)
    if(NOT count EQUAL 8)
      message(FATAL_ERROR "${route} route: expected 8 snapshot records with chunks:\n${records_${route}}")
    endif()
  endforeach()
  if(NOT records_host STREQUAL records_device)
    message(FATAL_ERROR "the device and host hashing routes recorded different snapshots")
  endif()
  # The first launch (it writes the mapped memory) cut out with `cusnap extract --emit-cpp`: the
  # reproducer restores and compares every covered byte, the host memory's included
  # (65536 + 4196 mapped, 8192 registered, 4096 pinned, 4096 device), and matches.
  set(repro ${OUT_DIR}/snap-host-repro)
  file(REMOVE_RECURSE ${repro})
  execute_process(COMMAND ${CUSNAP} extract ${OUT_DIR}/snap-host-host.cusnap --kernel-name step
                          --launch-count 1 -o ${OUT_DIR}/snap-host-extract.cusnap --emit-cpp ${repro}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cusnap extract failed (rc ${rc}):\n${out}${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${repro} -B ${repro}/build -G ${GENERATOR}
                          -DCMAKE_CXX_COMPILER=${CXX} -DCUDAToolkit_ROOT=${CUDA_ROOT}
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0)
    execute_process(COMMAND ${CMAKE_COMMAND} --build ${repro}/build RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_VARIABLE err)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the reproducer did not build:\n${out}${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMU_DIR}
                          ${repro}/build/reproducer ${repro}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("reproducer (rc ${rc}):\n${out}${err}")
  if(NOT rc EQUAL 0 OR NOT out MATCHES "MATCH \\(86116 bytes compared:")
    message(FATAL_ERROR "the reproducer of the launch writing mapped memory did not match over "
                        "all 86116 covered bytes")
  endif()
elseif(MODE MATCHES "^fake_")
  set(f ${OUT_DIR}/snap-${MODE}.cusnap)
  file(REMOVE ${f})
  set(ENV{CUSNAP_REAL_DRIVER} "${FAKE}")
  execute_process(COMMAND ${APP} RESULT_VARIABLE plain_rc OUTPUT_VARIABLE plain_out ERROR_VARIABLE plain_err)
  set(ENV{CUSNAP_CAPTURE_OUTPUT} "${f}")
  set(ENV{CUSNAP_SNAPSHOT_KERNELS} "fake_kernel")
  if(MODE STREQUAL "fake_fail")
    set(ENV{FAKE_DRIVER_FAIL_COPY} 1)
  endif()
  execute_process(COMMAND ${APP} RESULT_VARIABLE snap_rc OUTPUT_VARIABLE snap_out ERROR_VARIABLE snap_err)
  message("without (rc ${plain_rc}):\n${plain_out}${plain_err}\nwith snapshots (rc ${snap_rc}):\n${snap_out}${snap_err}")
  if(NOT plain_rc EQUAL 0 OR NOT snap_rc EQUAL 0 OR NOT plain_out STREQUAL snap_out)
    message(FATAL_ERROR "the application's output or exit code changed with snapshots")
  endif()
  inspect(${f} result)
  if(NOT result_out MATCHES "\nskip 0 fake_kernel reason=\"the launch's stream is being captured into a graph")
    message(FATAL_ERROR "the launch on the capturing stream has no skippedReason record")
  endif()
  if(MODE STREQUAL "fake_capture")
    if(NOT result_out MATCHES "\nsnap 1 fake_kernel before=4 after=4 changed=2 stored_after=2\nsnap 2 fake_kernel before=4 after=4 changed=2 stored_after=2"
       OR NOT result_out MATCHES "snapshotted=2 skipped=1 ")
      message(FATAL_ERROR "launches 1 and 2 should have snapshots in which the first chunk of each buffer changed")
    endif()
    # The fake driver has no PTX JIT (no cuModuleLoadData): the device hashing route falls back
    # to the host route, logged once, and the snapshots above are still taken.
    string(REGEX MATCHALL "the snapshot hashing kernel did not load" lines "${snap_err}")
    list(LENGTH lines n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "expected one logged line about the hashing kernel falling back, got ${n}")
    endif()
    # An unknown route: no snapshots, said once; the application is unaffected.
    set(ENV{CUSNAP_SNAPSHOT_HASH} "gpu")
    set(bad ${OUT_DIR}/snap-${MODE}-bad-route.cusnap)
    file(REMOVE ${bad})
    set(ENV{CUSNAP_CAPTURE_OUTPUT} "${bad}")
    execute_process(COMMAND ${APP} RESULT_VARIABLE bad_rc OUTPUT_VARIABLE bad_out ERROR_VARIABLE bad_err)
    unset(ENV{CUSNAP_SNAPSHOT_HASH})
    if(NOT bad_rc EQUAL 0 OR NOT bad_out STREQUAL plain_out
       OR NOT bad_err MATCHES "CUSNAP_SNAPSHOT_HASH 'gpu': expected device or host; no snapshots")
      message(FATAL_ERROR "CUSNAP_SNAPSHOT_HASH=gpu: expected the application unchanged and the "
                          "setting refused:\n${bad_out}${bad_err}")
    endif()
    inspect(${bad} result)
    if(NOT result_out MATCHES "snapshotted=0 skipped=0 ")
      message(FATAL_ERROR "CUSNAP_SNAPSHOT_HASH=gpu: no snapshots expected")
    endif()
  else()
    if(NOT result_out MATCHES "\nskip 1 fake_kernel reason=\"snapshot failed, snapshots disabled for the rest of the run"
       OR NOT result_out MATCHES "snapshotted=0 skipped=2 ")
      message(FATAL_ERROR "a failing copy must skip launch 1 with the reason and take no snapshot of launch 2")
    endif()
    string(REGEX MATCHALL "memory snapshots disabled" lines "${snap_err}")
    list(LENGTH lines n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "expected one logged line about the disabled snapshots, got ${n}")
    endif()
  endif()
elseif(MODE STREQUAL "hostfunc")
  # The launch's stream waits on a host function that blocks until the application's main thread
  # releases it after the launch returned (hostfunc_app.cpp, HOSTFUNC=<its mode>). EXPECT=skip:
  # no snapshot, the reason recorded and listed by `cusnap info`; snap: the host function had run,
  # the snapshot is taken; overlap: it blocks another stream only, the launch's overlap rule
  # applies. In every case the application's output and exit code are those of a direct run
  # (it exits 3 after its watchdog's wait if the launch never returns: the deadlock).
  set(f ${OUT_DIR}/snap-hostfunc-${HOSTFUNC}.cusnap)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${EMU_DIR} ${APP} ${IMAGE} ${HOSTFUNC}
                  RESULT_VARIABLE direct_rc OUTPUT_VARIABLE direct_out ERROR_VARIABLE direct_err)
  if(NOT direct_rc EQUAL 0)
    message(FATAL_ERROR "direct run failed (rc ${direct_rc}):\n${direct_out}${direct_err}")
  endif()
  if(HOSTFUNC STREQUAL "race")
    # Test-only: the shim calls the application's hook between its host-function check and its
    # wait for the stream; the hook has another thread enqueue the blocking host function there.
    set(ENV{CUSNAP_TEST_HOST_FUNC_CHECKED} hostfunc_app_host_func_checked)
  endif()
  capture(${f} snap --snapshot-kernels step -- ${APP} ${IMAGE} ${HOSTFUNC})
  message("direct:\n${direct_out}\nwith snapshots:\n${snap_out}${snap_err}")
  if(NOT direct_out STREQUAL snap_out)
    message(FATAL_ERROR "stdout differs with snapshots:\n--- direct\n${direct_out}\n--- snapshots\n${snap_out}")
  endif()
  if(NOT snap_out MATCHES "host function ran 1 time\\(s\\), user data 5eed")
    message(FATAL_ERROR "the host function did not run once with its user data")
  endif()
  inspect(${f} result --require-all)
  execute_process(COMMAND ${CUSNAP} info ${f} RESULT_VARIABLE info_rc OUTPUT_VARIABLE info_out ERROR_VARIABLE info_err)
  if(NOT info_rc EQUAL 0)
    message(FATAL_ERROR "cusnap info failed (rc ${info_rc}): ${info_err}")
  endif()
  set(reason "the launch's stream waits on a host function that has not run yet")
  if(EXPECT STREQUAL "skip")
    if(NOT result_out MATCHES "summary launches=1 snapshotted=0 skipped=1 ")
      message(FATAL_ERROR "expected the one launch skipped")
    endif()
    if(NOT result_out MATCHES "skip 0 step reason=\"${reason}\"")
      message(FATAL_ERROR "expected the skip reason '${reason}'")
    endif()
    if(NOT info_out MATCHES "launch #0 \\(call [0-9]+\\) step, beforeLaunch: ${reason}")
      message(FATAL_ERROR "cusnap info does not list the skipped launch:\n${info_out}")
    endif()
  elseif(EXPECT STREQUAL "snap")
    if(NOT result_out MATCHES "summary launches=1 snapshotted=1 skipped=0 ")
      message(FATAL_ERROR "expected the one launch snapshotted")
    endif()
  elseif(EXPECT STREQUAL "overlap")
    if(NOT result_out MATCHES "skip 0 step reason=\"snapshot not taken: other device work overlapped")
      message(FATAL_ERROR "expected the launch skipped for the other stream's queued work")
    endif()
  else()
    message(FATAL_ERROR "unknown EXPECT ${EXPECT}")
  endif()
else()
  message(FATAL_ERROR "unknown MODE ${MODE}")
endif()

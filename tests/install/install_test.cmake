# `cmake --install` into a fresh prefix, then use only that prefix (docs/install.md):
#   - bin/cusnap resolves its own interceptor and emulator under the prefix (`driver --paths`),
#     never the build tree it was built in, even after the prefix was moved;
#   - capture -> replay of a sample on the installed emulator;
#   - a man page for cusnap and every subcommand `cusnap --help` lists, and bash/zsh
#     completions that offer every one of them (the bash one is run);
#   - the schema and the CMake package: a consumer outside the tree (consumer/) built with
#     find_package(cusnap) reads the capture and counts its launches as `cusnap info --json` does.
# Arguments: -DBUILD_DIR= -DWORK= -DSAMPLE= -DCONSUMER_SOURCE= -DCXX= -DGENERATOR=
# (tests/interceptor/installed_copy.cmake checks the emulator fallback rules of an installed copy.)
cmake_minimum_required(VERSION 3.25)
# The prefix lies outside the build tree (a prefix inside it would count as the build tree).
set(tmp /tmp)
if(DEFINED ENV{TMPDIR} AND IS_DIRECTORY "$ENV{TMPDIR}")
  set(tmp $ENV{TMPDIR})
endif()
string(RANDOM LENGTH 12 suffix)
set(prefix ${tmp}/cusnap-prefix-${suffix})
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run)
  cmake_parse_arguments(arg "" "OUTPUT" "COMMAND" ${ARGN})
  execute_process(COMMAND ${arg_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${arg_COMMAND}")
    message(FATAL_ERROR "${shown}: exit ${rc}\n${out}\n${err}")
  endif()
  if(arg_OUTPUT)
    set(${arg_OUTPUT} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# Installed to one prefix, then moved: nothing may depend on the prefix it was installed to.
run(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${tmp}/cusnap-installed-${suffix})
file(RENAME ${tmp}/cusnap-installed-${suffix} ${prefix})
set(cusnap ${prefix}/bin/cusnap)

# What the installed binary resolved for itself: exactly the prefix's files.
run(COMMAND ${cusnap} driver --paths OUTPUT paths)
foreach(part "executable ${prefix}/bin/cusnap" "interceptor ${prefix}/lib/cusnap/interceptor/libcuda.so.1"
             "emulator ${prefix}/lib/cusnap/emulator/libcuda.so.1")
  string(FIND "${paths}" "${part}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "installed cusnap resolved\n${paths}\nexpected the line '${part}'")
  endif()
endforeach()

# capture -> replay, on the installed emulator through the installed shim.
set(capture ${WORK}/app.cusnap)
run(COMMAND ${cusnap} capture --driver emulator -o ${capture} -- ${SAMPLE} --size 2000)
run(COMMAND ${cusnap} replay ${capture} --driver emulator --report ${WORK}/replay.json
    OUTPUT replay_out)
file(READ ${WORK}/replay.json report)
string(JSON driver_path GET "${report}" driver path)
if(NOT driver_path STREQUAL "${prefix}/lib/cusnap/emulator/libcuda.so.1")
  message(FATAL_ERROR "the replay ran on ${driver_path}, not the installed emulator")
endif()
string(JSON verdict GET "${report}" verification result)
if(NOT verdict STREQUAL "matched")
  message(FATAL_ERROR "installed replay: verification ${verdict}\n${replay_out}")
endif()
run(COMMAND ${cusnap} info --json ${capture} OUTPUT info)
string(JSON launches GET "${info}" counts launches)

# Every subcommand of the installed binary has its man page and both completions offer it.
run(COMMAND ${cusnap} --help OUTPUT help)
string(REGEX REPLACE ".*\nSubcommands:\n" "" listing "${help}")
string(REGEX MATCHALL "(^|\n)  [a-z][a-z-]*" subcommands "${listing}")
list(TRANSFORM subcommands STRIP)
list(LENGTH subcommands subcommand_count)
if(subcommand_count LESS 10)
  message(FATAL_ERROR "found only '${subcommands}' in cusnap --help:\n${help}")
endif()
file(READ ${prefix}/share/zsh/site-functions/_cusnap zsh_completion)
# (The completion is run by a script file: `;` would split a CMake argument.)
function(complete out)
  string(REPLACE ";" " " words "${ARGN}")
  list(LENGTH ARGN count)
  math(EXPR cword "${count} - 1")
  file(WRITE ${WORK}/complete.sh
       "source '${prefix}/share/bash-completion/completions/cusnap'\n"
       "COMP_WORDS=(${words})\nCOMP_CWORD=${cword}\n_cusnap\necho \" \${COMPREPLY[*]} \"\n")
  run(COMMAND bash ${WORK}/complete.sh OUTPUT offered)
  set(${out} "${offered}" PARENT_SCOPE)
endfunction()
complete(offered cusnap "''")
complete(capture_offered cusnap capture --snap)
if(NOT capture_offered MATCHES "--snapshot-kernels")
  message(FATAL_ERROR "bash completion of 'cusnap capture --snap' offers '${capture_offered}'")
endif()
foreach(sub IN LISTS subcommands)
  if(NOT EXISTS ${prefix}/share/man/man1/cusnap-${sub}.1)
    message(FATAL_ERROR "no man page cusnap-${sub}.1")
  endif()
  string(FIND "${offered}" " ${sub} " at)
  if(at EQUAL -1)
    message(FATAL_ERROR "bash completion does not offer '${sub}': ${offered}")
  endif()
  string(FIND "${zsh_completion}" "\n    '${sub}:" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "zsh completion does not describe '${sub}'")
  endif()
endforeach()
if(NOT EXISTS ${prefix}/share/man/man1/cusnap.1 OR NOT EXISTS ${prefix}/share/cusnap/capture.capnp)
  message(FATAL_ERROR "cusnap.1 or share/cusnap/capture.capnp missing")
endif()

# A consumer outside the tree: find_package(cusnap) from the prefix alone.
run(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK}/consumer -G ${GENERATOR}
            -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(COMMAND ${CMAKE_COMMAND} --build ${WORK}/consumer)
run(COMMAND ${WORK}/consumer/launch_count ${capture} OUTPUT counted)
if(NOT counted MATCHES "^launches ${launches}\nfirst kernel vector_add\nfirst image [1-9]")
  message(FATAL_ERROR "consumer printed\n${counted}\ncusnap info says ${launches} launches")
endif()
file(REMOVE_RECURSE ${prefix})
message(STATUS "installed into ${prefix}: capture, replay, man pages, completions and "
               "find_package(cusnap) work (${launches} launches)")

# `cusnap redact` on a capture the interceptor recorded (tests/data): the redacted capture
# verifies, replays matched on the emulator, says what it is in `cusnap info`, and holds none of
# the original upload bytes; the same seed writes the same file; a corrupt capture exits 3.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run expected_rc)
  execute_process(COMMAND ${CUSNAP} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "cusnap ${ARGN}: exit ${rc}, expected ${expected_rc}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

set(red ${WORK}/redacted.cusnap)
run(0 redact ${CAPTURE} -o ${red} --reference-driver ${EMULATOR})
if(NOT out MATCHES "payload bytes replaced" OR NOT out MATCHES "expectations: resealed")
  message(FATAL_ERROR "redact did not say what it replaced:\n${out}")
endif()
run(0 verify ${red})
run(0 replay ${red} --driver ${EMULATOR} --progress off)
if(NOT out MATCHES "MATCHED")
  message(FATAL_ERROR "the redacted capture does not replay matched:\n${out}")
endif()
run(0 info ${red})
if(NOT out MATCHES "redacted +[0-9.]+ [KMG]?i?B of payload replaced" OR
   NOT out MATCHES "expectations resealed")
  message(FATAL_ERROR "info lacks the redacted line:\n${out}")
endif()
run(0 info ${red} --json)
string(JSON replaced GET "${out}" header redact replacedBytes)
if(replaced LESS_EQUAL 0)
  message(FATAL_ERROR "info --json: header.redact.replacedBytes is ${replaced}")
endif()

# Same seed, same bytes.
run(0 redact ${CAPTURE} -o ${WORK}/again.cusnap --reference-driver ${EMULATOR})
file(SHA256 ${red} first)
file(SHA256 ${WORK}/again.cusnap second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "two redactions with the same seed differ")
endif()

# Code images: names hashed and PTX comments stripped; a fatbin keeps only its PTX (the cubins,
# which are not rewritten, are left out), the capture still replays matched, `info` says what
# was done on its `code` line, no record names the kernel, and the same salt writes the same file.
set(names ${WORK}/names.cusnap)
run(0 redact ${CAPTURE} -o ${names} --reference-driver ${EMULATOR} --hash-names
    --strip-ptx-comments --salt s3cret)
if(NOT out MATCHES
   "code images: 1 rewritten, PTX comments and .file/.loc stripped, [1-9][0-9]* kernel and variable names hashed \\(salted\\)")
  message(FATAL_ERROR "redact --hash-names did not say what it rewrote:\n${out}")
endif()
run(0 replay ${names} --driver ${EMULATOR} --progress off)
if(NOT out MATCHES "MATCHED")
  message(FATAL_ERROR "the capture with hashed names does not replay matched:\n${out}")
endif()
run(0 info ${names})
if(NOT out MATCHES "code +PTX comments and .file/.loc stripped, kernel and variable names hashed")
  message(FATAL_ERROR "info lacks the code line:\n${out}")
endif()
run(0 dump ${CAPTURE})
if(NOT out MATCHES "name=${KERNEL}")
  message(FATAL_ERROR "the capture does not name ${KERNEL}: the check below cannot fail")
endif()
run(0 dump ${names})
if(out MATCHES "${KERNEL}")
  message(FATAL_ERROR "a record of the redacted capture still names ${KERNEL}:\n${out}")
endif()
run(0 redact ${CAPTURE} -o ${WORK}/names-again.cusnap --reference-driver ${EMULATOR} --hash-names
    --strip-ptx-comments --salt s3cret)
file(SHA256 ${names} first)
file(SHA256 ${WORK}/names-again.cusnap second)
if(NOT first STREQUAL second)
  message(FATAL_ERROR "two redactions with the same seed and salt differ")
endif()

# A flipped byte in the middle of the file: verify calls it corrupt, redact refuses it (exit 3).
file(READ ${CAPTURE} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR middle "(${n} / 4) * 2")
string(SUBSTRING "${hex}" 0 ${middle} head)
math(EXPR rest "${middle} + 2")
string(SUBSTRING "${hex}" ${rest} -1 tail)
string(SUBSTRING "${hex}" ${middle} 2 byte)
if(byte STREQUAL "00")
  set(byte "01")
else()
  set(byte "00")
endif()
set(bad_hex "${head}${byte}${tail}")
# CMake writes no binary files: the hex goes through the test interpreter.
file(WRITE ${WORK}/bad.hex "${bad_hex}")
execute_process(COMMAND ${PYTHON} -c
  "import sys; open(sys.argv[2],'wb').write(bytes.fromhex(open(sys.argv[1]).read()))"
  ${WORK}/bad.hex ${WORK}/bad.cusnap RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not write the damaged capture")
endif()
run(3 verify ${WORK}/bad.cusnap)
run(3 redact ${WORK}/bad.cusnap -o ${WORK}/bad-redacted.cusnap --reference-driver ${EMULATOR})
if(EXISTS ${WORK}/bad-redacted.cusnap)
  message(FATAL_ERROR "a refused redaction left a file")
endif()

# interceptor.proc_choice: proc_choice_app under `cusnap capture --driver <fake_driver.cpp>`,
# whose cuGetProcAddress answers differ from the toolkit headers on purpose. The application
# must still work (every call reaches the export the driver chose, exit code 0), and the capture
# must record each call as exactly that export -- not the ABI the headers would select -- while
# the answer that is no export (cuFutureEntryPoint) is called but not recorded.
# Arguments (-D): APP FAKE CUSNAP INSPECT OUT_DIR
file(MAKE_DIRECTORY ${OUT_DIR})
set(capture ${OUT_DIR}/proc_choice.cusnap)
file(REMOVE ${capture})
execute_process(COMMAND ${CUSNAP} capture --driver ${FAKE} -o ${capture} -- ${APP} ${FAKE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("proc_choice_app (rc ${rc}):\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the application failed under the shim")
endif()
set(reached
    "cuMemAlloc@3020/0 -> cuMemAlloc" "cuLaunchKernel@7000/0 -> cuLaunchKernel_ptsz"
    "cuLaunchKernel@7000/2 -> cuLaunchKernel" "cuStreamBeginCapture@10000/0 -> cuStreamBeginCapture_v2"
    "cuMemcpy@7000/2 -> cuMemcpy_ptds" "cuCtxSynchronize@2000/0 -> cuCtxSynchronize"
    "cuFutureEntryPoint@13000/0 -> (future entry point)")
foreach(line IN LISTS reached)
  string(FIND "${out}" "called ${line} (801)" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected 'called ${line} (801)'")
  endif()
endforeach()
execute_process(COMMAND ${INSPECT} ${capture} RESULT_VARIABLE irc OUTPUT_VARIABLE iout ERROR_VARIABLE ierr)
message("inspect (rc ${irc}):\n${iout}${ierr}")
if(NOT irc EQUAL 0)
  message(FATAL_ERROR "inspect_capture failed")
endif()
# Each export the driver chose, once; none of the ABIs the headers would have selected instead.
foreach(api cuMemAlloc cuLaunchKernel_ptsz cuLaunchKernel cuStreamBeginCapture_v2 cuMemcpy_ptds
            cuCtxSynchronize)
  if(NOT iout MATCHES "\napi ${api} 1\n")
    message(FATAL_ERROR "expected exactly one recorded call of ${api}")
  endif()
endforeach()
foreach(api cuMemAlloc_v2 cuStreamBeginCapture cuMemcpy)
  if(iout MATCHES "\napi ${api} ")
    message(FATAL_ERROR "${api} recorded: that is the headers' choice, not the driver's")
  endif()
endforeach()

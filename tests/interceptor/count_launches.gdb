# Counts calls of the (emulator's) kernel launch entry points, independently of the interceptor.
set pagination off
set confirm off
set breakpoint pending on
set $launches = 0
break cuLaunchKernel
break cuLaunchKernel_ptsz
break cuLaunchKernelEx
break cuLaunchKernelEx_ptsz
break cuLaunchCooperativeKernel
break cuLaunchCooperativeKernel_ptsz
commands 1-6
silent
set $launches = $launches + 1
continue
end
run
printf "GDB_LAUNCHES %d\n", $launches

// Keeps the static zstd inside cusnap's two libcuda.so.1 (the interceptor's and the emulator's)
// from reaching into the application (docs/capture.md, "Isolation").
//
// Debian's libzstd.a is built with tracing: it calls ZSTD_trace_{compress,decompress}_{begin,end}
// through weak undefined references, which a shared object resolves at run time against the
// whole process. An application (or any library it loads) that defines them, say a zstd built
// with tracing or a profiler, would then receive our private (de)compression contexts, of
// another zstd version perhaps. Defining them hidden in every shared object that links zstd
// statically binds zstd's references inside it at link time: tracing is off (a zero context means
// "not traced", so the *_end hooks are never called). An OBJECT library (cusnap_zstd_trace_hooks),
// not a member of a static archive, because a weak reference does not pull archive members.

extern "C" {

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;
struct ZSTD_Trace;

[[gnu::visibility("hidden")]] unsigned long long ZSTD_trace_compress_begin(const ZSTD_CCtx_s*) {
  return 0;
}
[[gnu::visibility("hidden")]] void ZSTD_trace_compress_end(unsigned long long, const ZSTD_Trace*) {}
[[gnu::visibility("hidden")]] unsigned long long ZSTD_trace_decompress_begin(const ZSTD_DCtx_s*) {
  return 0;
}
[[gnu::visibility("hidden")]] void ZSTD_trace_decompress_end(unsigned long long,
                                                             const ZSTD_Trace*) {}

}  // extern "C"

// libcusnap_icpt_hostile.so: an application's "own" Cap'n Proto and zstd, as the dynamic linker
// sees them. It defines some of the exact Cap'n Proto / kj functions the shim calls while
// recording (same C++ signatures as the installed headers, so the same mangled names) and zstd's
// tracing hooks (which Debian's libzstd.a calls through weak references), with hostile bodies:
// each one says what was called on stderr and aborts. An application linked with this library
// has these definitions ahead of everything else in its global lookup scope, as a program built
// with another Cap'n Proto version, or with a tracing zstd, would; a shim whose dependencies are
// not private binds its calls to them and kills the application (interceptor.isolation.hostile).
//
// Only plain member functions are defined: a constructor would also call the real base-class
// constructor, which this library does not have.
#include <capnp/layout.h>
#include <capnp/message.h>
#include <kj/array.h>

#include <cstdio>
#include <cstdlib>

namespace {

[[noreturn]] void hostile(const char* what) {
  std::fprintf(stderr, "hostile_lib: %s was bound to the application's definition\n", what);
  std::abort();
}

}  // namespace

// The application calls this, so that its link to the library is real (never dropped by
// --as-needed) and the test can see the library is there.
extern "C" __attribute__((visibility("default"))) int cusnap_hostile_marker() { return 1729; }

namespace capnp {

kj::ArrayPtr<const kj::ArrayPtr<const word>> MessageBuilder::getSegmentsForOutput() {
  hostile("capnp::MessageBuilder::getSegmentsForOutput");
}

AnyPointer::Builder MessageBuilder::getRootInternal() {
  hostile("capnp::MessageBuilder::getRootInternal");
}

namespace _ {  // private

StructBuilder PointerBuilder::initStruct(StructSize) {
  hostile("capnp::_::PointerBuilder::initStruct");
}

}  // namespace _
}  // namespace capnp

namespace kj::_ {

void* HeapArrayDisposer::allocateImpl(size_t, size_t, size_t, void (*)(void*), void (*)(void*)) {
  hostile("kj::_::HeapArrayDisposer::allocateImpl");
}

}  // namespace kj::_

// zstd's tracing hooks (zstd_trace.h is not installed: the ABI is that of zstd 1.5). The shim
// compresses (capture), the emulator, this test's driver, decompresses fatbins: both link zstd
// statically and must bind these inside themselves.
extern "C" __attribute__((visibility("default"))) unsigned long long ZSTD_trace_compress_begin(
    const void*) {
  hostile("ZSTD_trace_compress_begin");
}
extern "C" __attribute__((visibility("default"))) unsigned long long ZSTD_trace_decompress_begin(
    const void*) {
  hostile("ZSTD_trace_decompress_begin");
}

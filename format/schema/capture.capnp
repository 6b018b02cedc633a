# cusnap capture schema. docs/format.md describes how these messages sit in the container.
#
# Rules for changing this file: field ordinals and enumerant orders are append-only; never
# renumber, retype or remove anything (mark it obsolete in a comment instead). Bump
# `schemaVersion` when adding fields a reader might want to know about.
#
# Schema versions: 1 first release. 2 adds GenericCall.affectsDeviceState, the deferredResult
# record (replacing "deferred ..." toolEvent messages) and MemAlloc.accessDescriptors.
# 3 gives memory snapshots their meaning (MemorySnapshot.launchSeq/skippedReason,
# MemoryChunk.hashOnly) and adds CaptureHeader.extract for captures cut out by `cusnap extract`.
# 4 adds ExtractInfo.droppedInputBytes/droppedExpectedBytes/droppedRanges (`--minimize`) and
# MemAlloc.devicePointer (host allocations: the device address kernels reach them at).
# 5 adds CUDA graphs and stream capture as typed records (graph, graphNode, graphExec,
# streamCapture), DeferredResult.graphNode (checksums of copies inside graph launches),
# CaptureHeader.redact (RedactInfo) for captures scrubbed by `cusnap redact`, and GlobalGet.byTool
# (module variables the interceptor resolved for memory snapshots).
# 6 adds CUDA arrays (array: cuArrayCreate, cuArray3DCreate, mipmapped arrays and their levels),
# texture and surface objects (texObject, with their resource, texture and view descriptors), and
# gives copies with an array endpoint (Memcpy.kind arrayInvolved) their host payload / checksum
# and the 1-D array copies (cuMemcpyHtoA, ...) their geometry (CopyGeometry.arrayApi).
# It also adds the nvtx record (NvtxEvent): the application's NVTX ranges and marks.
# 7 adds CaptureHeader.minimize (MinimizeInfo) for captures reduced by `cusnap minimize`, and
# CaptureHeader.range (RangeInfo) and the memory snapshot phase rangeStart: captures of one
# capture range (`cusnap capture --capture-range`).
# 8 adds the tensorMap record (TensorMapCall): cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col,
# cuTensorMapEncodeIm2colWide and cuTensorMapReplaceAddress with every argument and the 128
# bytes the capturing driver encoded, so that a replay re-encodes maps on its own driver.
# 8 also adds CaptureOptions.kernelFiltered: a kernel-filtered capture (`cusnap capture --kernel-name`)
# records only the launches its filter selects, with the state calls their replay needs and a
# beforeLaunch snapshot that replay restores.
#
# Conventions:
# - Handles (CUcontext, CUmodule, CUlibrary, CUfunction, CUkernel, CUstream, CUevent,
#   CUmemoryPool, CUmemGenericAllocationHandle, ...) are the UInt64 value the application saw.
#   0 means NULL (e.g. the legacy default stream).
# - Device addresses and host pointers are UInt64.
# - Bulk bytes never live in records: they are blobs, referenced by BlobId (XXH3-128 of the
#   content). The all-zero BlobId means "no blob".
# - Times are nanoseconds of CLOCK_MONOTONIC unless a name says otherwise;
#   CaptureHeader.monotonicAtCreationNs relates them to creationTimeNs (wall clock).

@0xe3dd443518fced3b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cusnap::format::schema");

const schemaVersion :UInt32 = 9;

struct BlobId {
  high @0 :UInt64;
  low @1 :UInt64;
}

struct KeyValue {
  key @0 :Text;
  value @1 :Text;
}

# ------------------------------------------------------------------------------------------------
# Header (frame 0)

struct CaptureHeader {
  toolName @0 :Text;                # "cusnap"
  toolVersion @1 :Text;
  schemaVersion @2 :UInt32;         # the schemaVersion constant of the writer
  containerVersion @3 :UInt32;      # major << 16 | minor
  creationTimeNs @4 :Int64;         # wall clock, ns since the Unix epoch
  monotonicAtCreationNs @5 :Int64;  # CLOCK_MONOTONIC at the same instant
  hostName @6 :Text;
  pid @7 :UInt32;
  commandLine @8 :List(Text);       # argv
  workingDirectory @9 :Text;
  environment @10 :List(KeyValue);  # selected variables only (CUDA_*, LD_*, ...)
  driverVersion @11 :Int32;         # cuDriverGetVersion of the real driver, 0 if unknown
  driverPath @12 :Text;             # path of the real libcuda that was interposed
  devices @13 :List(DeviceProperties);
  options @14 :CaptureOptions;
  extract @15 :ExtractInfo;         # schema 3: set only in a capture written by `cusnap extract`
  redact @16 :RedactInfo;           # schema 5: set only in a capture written by `cusnap redact`
  minimize @17 :MinimizeInfo;       # schema 7: set only in a capture written by `cusnap minimize`
  range @18 :RangeInfo;             # schema 7: set only in a capture of one capture range
}

# What `cusnap minimize` kept of its input (docs/minimize.md): the search's units (launches,
# copies/memsets, allocations) and, for an extracted capture, its input chunks.
struct MinimizeInfo {
  condition @0 :Text;               # --until CONDITION, as given
  sourceCreationTimeNs @1 :Int64;   # the input capture's creationTimeNs (its identity)
  callsBefore @2 :UInt64;           # records of the input
  callsAfter @3 :UInt64;            # records of this capture
  unitsBefore @4 :UInt32;           # removable units of the input
  unitsAfter @5 :UInt32;            # those kept
  inputChunksBefore @6 :UInt32;     # extracted captures: chunks of the input snapshot
  inputChunksKept @7 :UInt32;       # those kept as they were (the others are zero bytes)
  dataBytesBefore @8 :UInt64;       # distinct blob bytes referenced
  dataBytesAfter @9 :UInt64;
  evaluations @10 :UInt32;          # candidates decided (the input included)
  replays @11 :UInt32;              # driver replays they took (0 for command:)
  minimal @12 :Bool;                # false: --max-evaluations stopped the search first
  kept @13 :List(Text);             # the units kept, described ("launch call 7 scale", ...)
}

# A capture of one capture range (`cusnap capture --capture-range`, docs/capture.md "Capture
# ranges"): it starts mid-run. Its first records restate the state live when the range started
# (contexts, modules with their images, functions, variables, streams, events, allocations,
# arrays, texture objects: ordinary creation records), then one memorySnapshot with phase
# rangeStart holds the contents of every live allocation and module variable, to be restored
# before the next record; the calls of the range follow.
struct RangeInfo {
  trigger @0 :Trigger;
  number @1 :UInt32;                # 1-based range number in the process; 0: the range never
                                    # started (the file holds no call)
  endMode @2 :Text;                 # --capture-range-end as given: "stop", "repeat", "repeat:N"
  nvtxCapture @3 :Text;             # trigger nvtx: the --nvtx-capture MESSAGE[@DOMAIN] matched

  enum Trigger {
    cudaProfilerApi @0;             # cuProfilerStart .. cuProfilerStop
    nvtx @1;                        # an NVTX push/start of a matching message .. its pop/end
    signal @2;                      # SIGUSR1 .. the next SIGUSR1
  }
}

# What `cusnap redact` replaced and kept (docs/redact.md): payload bytes replaced by seeded data
# of the same size, except device pointers, kept allocations and what --verify brought back.
struct RedactInfo {
  seed @0 :UInt64;                  # --seed the replacement bytes were generated from
  replacedBytes @1 :UInt64;         # payload bytes replaced (copies and snapshot chunks)
  pointerBytes @2 :UInt64;          # bytes kept because they hold device pointers (8-byte words)
  keptAllocationBytes @3 :UInt64;   # bytes kept because they lie in a kept allocation
  restoredBytes @4 :UInt64;         # bytes --verify had to bring back for its condition to hold
  restored @5 :List(RedactedRange); # those bytes: where they lie
  keptAllocations @6 :List(RedactedRange);  # --keep-alloc / --keep-kernel-inputs ranges
  condition @7 :Text;               # --verify CONDITION; empty: not verified
  expectations @8 :Expectations;
  referenceDriver @9 :Text;         # expectations resealed: the driver whose replay gave them
  headerSalted @10 :Bool;           # scrubbed header fields hold salted hashes (else blank)
  sourceCreationTimeNs @11 :Int64;  # the redacted capture's creationTimeNs (its identity)
  ptxCommentsStripped @12 :Bool;    # --strip-ptx-comments: PTX comments, .file/.loc removed
  namesHashed @13 :Bool;            # --hash-names: kernel and variable names hashed, with the
                                    # salt (--salt, else the seed) in every image and record
  cubinEntriesDropped @14 :UInt32;  # either: cubin entries left out of fatbins (not rewritten)

  enum Expectations {
    original @0;                    # nothing needed resealing (no payload byte was replaced)
    resealed @1;                    # checksums and afterLaunch chunks recomputed by a replay
                                    # of the redacted capture on referenceDriver
    dropped @2;                     # that replay failed (a call returned an error): the capture
                                    # holds no expectations (checksums cleared, snapshots that
                                    # were compared marked skipped): it verifies nothing
  }
}

struct RedactedRange {
  address @0 :UInt64;               # device address (captured)
  size @1 :UInt64;
  allocationAddress @2 :UInt64;     # the allocation (or module variable) it lies in; 0: none
  allocationSeq @3 :UInt64;         # the record that made that allocation
  what @4 :Text;                    # "memcpy call 12", "beforeLaunch snapshot of call 30", ...
}

# What an extracted capture is: one launch cut out of another capture, with the device memory it
# starts from and the memory it is expected to leave (docs/format.md, "Memory snapshots").
struct ExtractInfo {
  sourcePath @0 :Text;              # the capture it was cut from, as given to `cusnap extract`
  sourceCreationTimeNs @1 :Int64;   # that capture's CaptureHeader.creationTimeNs (its identity)
  sourceHostName @2 :Text;
  sourcePid @3 :UInt32;
  launchSeq @4 :UInt64;             # the launch's seq in the source capture
  launchOrdinal @5 :UInt64;         # and its Launch.ordinal there
  kernelName @6 :Text;
  route @7 :Route;
  routeDriver @8 :Text;             # route replay: the driver the prefix was replayed on
  minimized @9 :Bool;               # memory reduced to what the launch reads / compares writes
  inputBytes @10 :UInt64;           # bytes of memory restored before the launch
  expectedBytes @11 :UInt64;        # bytes of memory compared after it
  droppedInputBytes @12 :UInt64;    # schema 4, minimized: snapshot bytes left out of the input
  droppedExpectedBytes @13 :UInt64; #   and of the expected output (the launch never touched)
  droppedRanges @14 :UInt32;        #   allocations and module variables left out entirely
  graphNode @15 :UInt64;            # schema 9: the launch was a kernel node (this CUgraphNode) of
  graphKernelIndex @16 :UInt64;     #   the graph launch at launchSeq, the Nth (0-based) kernel
                                    #   node that launch ran; 0, 0: a launch record

  enum Route {
    snapshot @0;                    # copied from the source's snapshots (file work, no driver)
    replay @1;                      # the source was replayed up to the launch and read there
  }
}

struct DeviceProperties {
  ordinal @0 :Int32;
  name @1 :Text;
  uuid @2 :Data;                    # 16 bytes (CUuuid)
  totalMemoryBytes @3 :UInt64;
  computeCapabilityMajor @4 :Int32;
  computeCapabilityMinor @5 :Int32;
  multiprocessorCount @6 :Int32;
  pciBusId @7 :Text;
  attributes @8 :List(DeviceAttribute);  # any CU_DEVICE_ATTRIBUTE_* the tool queried
}

struct DeviceAttribute {
  id @0 :Int32;                     # CUdevice_attribute
  value @1 :Int32;
}

struct CaptureOptions {
  mode @0 :CaptureMode;
  kernelRegex @1 :Text;             # snapshot filter, Nsight Compute style
  launchSkip @2 :UInt64;
  launchCount @3 :UInt64;           # 0 = unlimited
  compressionLevel @4 :Int32;
  snapshotChunkBytes @5 :UInt64;
  recordDeviceToHostChecksums @6 :Bool;
  extra @7 :List(KeyValue);         # options not covered above, verbatim
  kernelFiltered @8 :Bool;          # schema 8: only the launches kernelRegex/launchSkip/
                                    # launchCount select are recorded, each with a beforeLaunch
                                    # snapshot to restore; of the other calls only those that
                                    # create or destroy state (docs/capture.md, "Kernel filters")

  enum CaptureMode {
    stream @0;                      # calls + every byte entering device memory
    snapshot @1;                    # stream + device memory around selected launches
  }
}

# ------------------------------------------------------------------------------------------------
# Call records (call frames)

struct CallRecord {
  seq @0 :UInt64;                   # global call order, 0-based, gap-free; set by the writer
  threadId @1 :UInt64;              # OS thread id (gettid) of the calling thread
  startNs @2 :Int64;
  endNs @3 :Int64;
  result @4 :Int32;                 # CUresult returned to the application
  apiName @5 :Text;                 # exported symbol actually called, e.g. "cuLaunchKernel_ptsz"
  context @6 :UInt64;               # context current on the thread when the call returned

  union {
    generic @7 :GenericCall;
    toolEvent @8 :ToolEvent;
    contextCreate @9 :ContextCreate;
    contextDestroy @10 :ContextDestroy;
    contextSetCurrent @11 :ContextSetCurrent;
    primaryContext @12 :PrimaryContext;
    contextSynchronize @13 :ContextSynchronize;
    moduleLoad @14 :ModuleLoad;
    moduleUnload @15 :ModuleUnload;
    functionGet @16 :FunctionGet;
    functionSetAttribute @17 :FunctionSetAttribute;
    globalGet @18 :GlobalGet;
    memAlloc @19 :MemAlloc;
    memFree @20 :MemFree;
    memcpy @21 :Memcpy;
    memset @22 :Memset;
    launch @23 :Launch;
    streamCreate @24 :StreamCreate;
    streamDestroy @25 :StreamDestroy;
    streamWaitEvent @26 :StreamWaitEvent;
    streamSynchronize @27 :StreamSynchronize;
    streamQuery @28 :StreamQuery;
    eventCreate @29 :EventCreate;
    eventRecord @30 :EventRecord;
    eventSynchronize @31 :EventSynchronize;
    eventDestroy @32 :EventDestroy;
    eventElapsedTime @33 :EventElapsedTime;
    eventQuery @34 :EventQuery;
    hostFunc @35 :HostFunc;
    memorySnapshot @36 :MemorySnapshot;
    deferredResult @37 :DeferredResult;   # schema 2
    graph @38 :GraphCall;                 # schema 5: graph create/destroy/clone, edges
    graphNode @39 :GraphNode;             # schema 5: a node added or changed, explicitly or by
                                          #   work enqueued on a stream being captured
    graphExec @40 :GraphExecCall;         # schema 5: instantiate, update, launch, ...
    streamCapture @41 :StreamCapture;     # schema 5: cuStreamBeginCapture, ...
    array @42 :ArrayCall;                 # schema 6: CUDA arrays and mipmapped arrays
    texObject @43 :TexObjectCall;         # schema 6: texture and surface objects
    nvtx @44 :NvtxEvent;                  # schema 6: an NVTX range or mark of the application
    tensorMap @45 :TensorMapCall;         # schema 8: a tensor map encoded or re-addressed
    texRef @46 :TexRefCall;               # schema 8: legacy texture/surface references
    memPool @47 :MemPoolCall;             # schema 8: memory pools
  }
}

# A call the tool passes through without modelling its effect.
struct GenericCall {
  args @0 :Text;                    # optional human-readable arguments
  affectsDeviceState @1 :Bool;      # schema 2: the call is not a pure query, so replaying a
                                    # capture without modelling it may diverge (graphs, textures,
                                    # arrays, ...). False for queries and in schema-1 files.
}

# Schema 2. What a call produced that could only be observed after it returned, in stream
# order: for an asynchronous copy, what it delivered when it executed. Written by the tool
# (apiName "cusnap") some time after the call `callSeq`; at most one per call and field.
struct DeferredResult {
  callSeq @0 :UInt64;               # seq of the call this completes (a memcpy record)
  hostChecksum @1 :UInt64;          # XXH3-64 of the bytes the application received (device to
  hasHostChecksum @2 :Bool;         #   host), valid when hasHostChecksum
  payload @3 :BlobId;               # host to device from pinned memory: the bytes the copy read
                                    # when it executed, stored because they differ from the
                                    # call-time Memcpy.payload. Null when they did not differ.
  missing @4 :Text;                 # non-empty: the result could not be observed, and why
                                    # (e.g. the stream was being captured into a graph)
  graphNode @5 :UInt64;             # schema 5: callSeq is a graph launch (graphExec launch) and
                                    # this is about the device-to-host memcpy node `graphNode`
                                    # (GraphNode.node) of the graph it launched
}

struct ToolEvent {
  kind @0 :Kind;
  message @1 :Text;
  relatedSeq @2 :UInt64;            # a call this event is about, if any (see hasRelatedSeq)
  hasRelatedSeq @3 :Bool;

  enum Kind {
    info @0;
    warning @1;
    internalError @2;
    captureDisabled @3;             # recording stops after this record; the app keeps running
    captureEnabled @4;
    recordsDropped @5;              # message says how many and why
  }
}

struct ContextCreate {
  context @0 :UInt64;
  device @1 :Int32;
  flags @2 :UInt32;
  params @3 :List(KeyValue);        # cuCtxCreate_v3/v4 extras (exec affinity, CIG), as text
}

struct ContextDestroy {
  context @0 :UInt64;
}

struct ContextSetCurrent {
  op @0 :Op;
  context @1 :UInt64;               # the context made current (set/push) or popped (pop)

  enum Op {
    set @0;
    push @1;
    pop @2;
  }
}

struct PrimaryContext {
  op @0 :Op;
  device @1 :Int32;
  context @2 :UInt64;               # retain: the primary context returned
  flags @3 :UInt32;                 # setFlags

  enum Op {
    retain @0;
    release @1;
    reset @2;
    setFlags @3;
  }
}

struct ContextSynchronize {}

struct JitOption {
  option @0 :Int32;                 # CUjit_option or CUlibraryOption value
  value @1 :UInt64;                 # scalar value (or the pointer the app passed)
  text @2 :Text;                    # for string-valued options, the string
}

struct ModuleLoad {
  kind @0 :ImageKind;
  handle @1 :UInt64;                # CUmodule, or CUlibrary when isLibrary
  isLibrary @2 :Bool;               # cuLibraryLoad*
  image @3 :BlobId;                 # the code image as the driver received it (file: its contents)
  imageSize @4 :UInt64;
  path @5 :Text;                    # for *LoadFromFile / cuLibraryLoadFromFile
  jitOptions @6 :List(JitOption);
  libraryOptions @7 :List(JitOption);

  enum ImageKind {
    unknown @0;
    ptx @1;
    cubin @2;
    fatbin @3;
    fatbinWrapper @4;               # __fatBinC_Wrapper_t; image holds the fatbin it points to
    file @5;
  }
}

struct ModuleUnload {
  handle @0 :UInt64;
  isLibrary @1 :Bool;
}

struct ParamSlot {
  offset @0 :UInt32;
  size @1 :UInt32;
}

struct FunctionGet {
  kind @0 :Kind;
  module @1 :UInt64;                # CUmodule or CUlibrary it came from
  handle @2 :UInt64;                # the CUfunction or CUkernel returned
  name @3 :Text;                    # mangled entry name
  params @4 :List(ParamSlot);
  layoutSource @5 :LayoutSource;
  kernel @6 :UInt64;                # kernelGetFunction: the CUkernel that was converted

  enum Kind {
    moduleFunction @0;              # cuModuleGetFunction
    libraryKernel @1;               # cuLibraryGetKernel
    kernelGetFunction @2;           # cuKernelGetFunction
    enumerated @3;                  # cuModuleEnumerateFunctions / cuLibraryEnumerateKernels
  }
  enum LayoutSource {
    unknown @0;
    driverQuery @1;                 # cuFuncGetParamInfo / cuKernelGetParamInfo
    nvInfo @2;                      # EIATTR_KPARAM_INFO in the cubin
    ptxSignature @3;                # the .entry parameter list
  }
}

struct FunctionSetAttribute {
  function @0 :UInt64;
  isKernel @1 :Bool;
  attribute @2 :Int32;              # CUfunction_attribute, or -1 for cuFuncSetCacheConfig
  value @3 :Int64;
  device @4 :Int32;                 # cuKernelSetAttribute
}

struct GlobalGet {
  module @0 :UInt64;
  isLibrary @1 :Bool;
  name @2 :Text;
  address @3 :UInt64;
  size @4 :UInt64;
  byTool @5 :Bool;                  # schema 5: no call of the application's: the interceptor
                                    # looked the variable up for a memory snapshot (apiName
                                    # "cusnap"; docs/capture.md, "Memory snapshots")
}

struct MemAlloc {
  kind @0 :Kind;
  address @1 :UInt64;               # device address or host pointer produced / affected
  size @2 :UInt64;
  pitch @3 :UInt64;                 # pitch: returned pitch
  widthBytes @4 :UInt64;            # pitch
  height @5 :UInt64;                # pitch
  elementSize @6 :UInt32;           # pitch
  flags @7 :UInt64;                 # alloc/host/register/managed flags
  pool @8 :UInt64;                  # fromPool
  stream @9 :UInt64;                # async / fromPool
  handle @10 :UInt64;               # CUmemGenericAllocationHandle (vmm*)
  offset @11 :UInt64;               # vmmMap: offset into the allocation
  alignment @12 :UInt64;            # vmmReserve
  locationType @13 :Int32;          # CUmemLocationType (vmmCreate, vmmSetAccess)
  locationId @14 :Int32;
  accessFlags @15 :UInt64;          # vmmSetAccess
  hostPointer @16 :UInt64;          # hostRegister: registered range; hostAlloc with devicePointer
  allocationType @17 :Int32;        # vmmCreate: CUmemAllocationType
  handleTypes @18 :UInt64;          # vmmCreate: requested shareable handle types
  accessDescriptors @19 :List(AccessDescriptor);  # schema 2, vmmSetAccess: every descriptor in
                                    # the order given; locationType/locationId/accessFlags
                                    # above repeat the first one (what schema-1 readers read)
  devicePointer @20 :UInt64;        # schema 4, host/hostAlloc/hostRegister: the device address
                                    # of the host memory (cuMemHostGetDevicePointer after the
                                    # call), 0 when the driver gave none (not mapped, or older
                                    # writers: with unified addressing it is the host pointer)

  enum Kind {
    device @0;                      # cuMemAlloc
    pitch @1;                       # cuMemAllocPitch
    async @2;                       # cuMemAllocAsync
    fromPool @3;                    # cuMemAllocFromPoolAsync
    managed @4;                     # cuMemAllocManaged
    host @5;                        # cuMemAllocHost
    hostAlloc @6;                   # cuMemHostAlloc
    hostRegister @7;                # cuMemHostRegister
    vmmCreate @8;                   # cuMemCreate
    vmmReserve @9;                  # cuMemAddressReserve
    vmmMap @10;                     # cuMemMap
    vmmSetAccess @11;               # cuMemSetAccess
  }
}

struct AccessDescriptor {          # CUmemAccessDesc
  locationType @0 :Int32;           # CUmemLocationType
  locationId @1 :Int32;
  flags @2 :UInt64;                 # CUmemAccess_flags
}

struct MemFree {
  kind @0 :Kind;
  address @1 :UInt64;
  size @2 :UInt64;
  stream @3 :UInt64;
  handle @4 :UInt64;

  enum Kind {
    device @0;                      # cuMemFree
    async @1;                       # cuMemFreeAsync
    host @2;                        # cuMemFreeHost
    hostUnregister @3;              # cuMemHostUnregister
    vmmUnmap @4;                    # cuMemUnmap
    vmmRelease @5;                  # cuMemRelease
    vmmAddressFree @6;              # cuMemAddressFree
  }
}

struct CopyGeometry {
  srcXInBytes @0 :UInt64;
  srcY @1 :UInt64;
  srcZ @2 :UInt64;
  srcPitch @3 :UInt64;
  srcHeight @4 :UInt64;
  dstXInBytes @5 :UInt64;
  dstY @6 :UInt64;
  dstZ @7 :UInt64;
  dstPitch @8 :UInt64;
  dstHeight @9 :UInt64;
  widthInBytes @10 :UInt64;
  height @11 :UInt64;
  depth @12 :UInt64;
  srcMemoryType @13 :Int32;         # CUmemorytype
  dstMemoryType @14 :Int32;
  srcArray @15 :UInt64;             # CUarray, if an array is involved
  dstArray @16 :UInt64;
  arrayApi @17 :ArrayApi;           # schema 6: which 1-D array copy (dimensions 1); an array
                                    # side's offset is its x*InBytes, widthInBytes the size

  enum ArrayApi {
    none @0;                        # not a 1-D array copy (cuMemcpy2D/3D, or no array)
    hostToArray @1;                 # cuMemcpyHtoA[Async]
    arrayToHost @2;                 # cuMemcpyAtoH[Async]
    deviceToArray @3;               # cuMemcpyDtoA
    arrayToDevice @4;               # cuMemcpyAtoD
    arrayToArray @5;                # cuMemcpyAtoA
  }
}

struct Memcpy {
  kind @0 :Kind;
  dst @1 :UInt64;
  src @2 :UInt64;
  size @3 :UInt64;                  # bytes copied (for 2D/3D: width * height * depth)
  async @4 :Bool;
  stream @5 :UInt64;
  payload @6 :BlobId;               # bytes that entered device memory from the host
  hostChecksum @7 :UInt64;          # XXH3-64 of bytes the app received (toHost), if hasHostChecksum
  hasHostChecksum @8 :Bool;
  dimensions @9 :UInt8;             # 1, 2 or 3
  geometry @10 :CopyGeometry;       # 2D/3D only
  srcContext @11 :UInt64;           # peer copies
  dstContext @12 :UInt64;

  enum Kind {
    hostToDevice @0;
    deviceToHost @1;
    deviceToDevice @2;
    hostToHost @3;
    unified @4;                     # cuMemcpy / CU_MEMORYTYPE_UNIFIED: direction from the pointers
    peer @5;
    arrayInvolved @6;               # an endpoint is a CUarray (geometry: memory types, arrays,
                                    # offsets); schema 6: a host source's bytes are `payload`,
                                    # a host destination's checksum `hostChecksum`, as for the
                                    # other kinds
  }
}

struct Memset {
  address @0 :UInt64;
  value @1 :UInt32;
  elementSize @2 :UInt8;            # 1, 2 or 4 (D8/D16/D32)
  width @3 :UInt64;                 # elements per row (1D: element count)
  height @4 :UInt64;                # 1 for 1D
  pitch @5 :UInt64;                 # bytes between rows (2D)
  async @6 :Bool;
  stream @7 :UInt64;
}

struct LaunchAttribute {
  id @0 :UInt32;                    # CUlaunchAttributeID
  value @1 :Data;                   # the raw CUlaunchAttributeValue bytes
}

struct Launch {
  kind @0 :Kind;
  function @1 :UInt64;              # CUfunction (or CUkernel cast to CUfunction)
  gridX @2 :UInt32;
  gridY @3 :UInt32;
  gridZ @4 :UInt32;
  blockX @5 :UInt32;
  blockY @6 :UInt32;
  blockZ @7 :UInt32;
  sharedBytes @8 :UInt32;
  stream @9 :UInt64;
  params @10 :Data;                 # packed parameter bytes laid out per `layout`
  layout @11 :List(ParamSlot);      # where each parameter sits in `params`
  layoutSeq @12 :UInt64;            # seq of the functionGet record the layout came from, if any
  viaExtra @13 :Bool;               # the app passed CU_LAUNCH_PARAM_BUFFER_POINTER (`extra`)
  attributes @14 :List(LaunchAttribute);
  cooperative @15 :Bool;
  ordinal @16 :UInt64;              # launch number, 0-based, gap-free; set by the writer
  kernelName @17 :Text;             # convenience copy of the function's name

  enum Kind {
    launchKernel @0;
    launchKernelEx @1;
    launchCooperativeKernel @2;
    launchCooperativeKernelMultiDevice @3;
  }
}

struct StreamCreate {
  stream @0 :UInt64;
  flags @1 :UInt32;
  priority @2 :Int32;
}

struct StreamDestroy {
  stream @0 :UInt64;
}

struct StreamWaitEvent {
  stream @0 :UInt64;
  event @1 :UInt64;
  flags @2 :UInt32;
}

struct StreamSynchronize {
  stream @0 :UInt64;
}

struct StreamQuery {
  stream @0 :UInt64;
}

struct EventCreate {
  event @0 :UInt64;
  flags @1 :UInt32;
}

struct EventRecord {
  event @0 :UInt64;
  stream @1 :UInt64;
  flags @2 :UInt32;
}

struct EventSynchronize {
  event @0 :UInt64;
}

struct EventDestroy {
  event @0 :UInt64;
}

struct EventElapsedTime {
  start @0 :UInt64;
  end @1 :UInt64;
  milliseconds @2 :Float32;
}

struct EventQuery {
  event @0 :UInt64;
}

struct HostFunc {
  stream @0 :UInt64;
  function @1 :UInt64;              # host function pointer (not replayable; recorded for order)
  userData @2 :UInt64;
}

struct MemoryChunk {
  address @0 :UInt64;
  size @1 :UInt64;
  blob @2 :BlobId;                  # XXH3-128 of the chunk's bytes (the BlobId of its content)
  hashOnly @3 :Bool;                # schema 3: only the hash is recorded, the file holds no blob
}

# Device memory contents around a selected launch (snapshot captures, extracted captures).
# Written after the launch record it belongs to (launchSeq), so both phases name a known launch;
# the blobs of a beforeLaunch snapshot hold the memory as it was before that launch ran.
# Chunks tile each covered allocation in CaptureOptions.snapshotChunkBytes pieces (the last one
# shorter), in address order; a chunk equal to one already stored costs its id, not its bytes.
struct MemorySnapshot {
  phase @0 :Phase;
  launchOrdinal @1 :UInt64;
  chunks @2 :List(MemoryChunk);
  launchSeq @3 :UInt64;             # schema 3: seq of the launch record
  skippedReason @4 :Text;           # schema 3: non-empty: no snapshot was taken, and why

  enum Phase {
    beforeLaunch @0;
    afterLaunch @1;
    onDemand @2;
    rangeStart @3;                  # schema 7 (range captures): every live allocation and module
                                    # variable when the range started; launchSeq/launchOrdinal 0;
                                    # restored by a replay before the next record
  }
}

# ------------------------------------------------------------------------------------------------
# CUDA graphs and stream capture (schema 5; docs/format.md, "Graphs and stream capture").
# Graphs, nodes and executable graphs are the handles the application saw (CUgraph,
# CUgraphNode, CUgraphExec). Work enqueued on a stream that is being captured is not executed
# where it is recorded: its record is a graphNode (op add, `captured` set) with the
# launch/copy/memset inside, in the graph the capture builds, with the node the driver made and
# the edges it gave it, so a replay rebuilds the graph node by node. Executing a graph is a
# graphExec launch record: one per cuGraphLaunch, naming the executable graph, never a copy of it.

struct GraphEdge {                  # one dependency: `from` must finish before `to` starts
  from @0 :UInt64;                  # CUgraphNode
  to @1 :UInt64;
  fromPort @2 :UInt8;               # CUgraphEdgeData (all 0: a default edge)
  toPort @3 :UInt8;
  type @4 :UInt8;                   # CUgraphDependencyType
}

struct GraphCall {
  op @0 :Op;
  graph @1 :UInt64;                 # the graph created, destroyed, cloned (the clone) or edited
  flags @2 :UInt32;                 # create
  original @3 :UInt64;              # clone: the graph that was cloned
  edges @4 :List(GraphEdge);        # add/removeDependencies: the edges given
  node @5 :UInt64;                  # destroyNode

  enum Op {
    create @0;                      # cuGraphCreate
    destroy @1;                     # cuGraphDestroy
    clone @2;                       # cuGraphClone
    addDependencies @3;             # cuGraphAddDependencies[_v2]
    removeDependencies @4;          # cuGraphRemoveDependencies[_v2]
    destroyNode @5;                 # cuGraphDestroyNode
  }
}

struct GraphNode {
  op @0 :Op;
  kind @1 :Kind;
  graph @2 :UInt64;                 # add: the graph the node was added to
  node @3 :UInt64;                  # the node added / changed
  dependencies @4 :List(GraphEdge); # add: the edges into the node (to = node), in driver order
  captured @5 :Bool;                # add: made by work enqueued on a capturing stream (apiName
  captureStream @6 :UInt64;         #   is the launch/copy/memset call), on this stream,
  captureId @7 :UInt64;             #   in this capture (cuStreamGetCaptureInfo's id)
  kernel @8 :Launch;                # kernel: function, geometry, params and layout exactly as a
                                    #   launch record has them (stream, ordinal: unused, 0)
  memcpy @9 :Memcpy;                # memcpy: as a copy record (payload, geometry; no checksum:
                                    #   the bytes arrive when the graph runs, see DeferredResult)
  memset @10 :Memset;               # memset
  hostFunction @11 :UInt64;         # host: the function pointer (not replayable) and its data
  userData @12 :UInt64;
  event @13 :UInt64;                # eventRecord / eventWait
  childGraph @14 :UInt64;           # childGraph: the graph embedded (the driver clones it)
  address @15 :UInt64;              # memAlloc: the address the driver chose; memFree: freed
  size @16 :UInt64;                 # memAlloc
  apiKind @17 :Int32;               # CUgraphNodeType as the driver reported it

  enum Op {
    add @0;                         # cuGraphAdd*Node, cuGraphAddNode, or captured work
    setParams @1;                   # cuGraph*NodeSetParams, cuGraphNodeSetParams
  }
  enum Kind {
    empty @0;
    kernel @1;
    memcpy @2;
    memset @3;
    host @4;
    eventRecord @5;
    eventWait @6;
    childGraph @7;
    memAlloc @8;
    memFree @9;
    externalSemaphoreSignal @10;    # recorded, refused at replay
    externalSemaphoreWait @11;
    batchMemOp @12;
    conditional @13;
    other @14;                      # a kind this writer does not model (apiKind says which)
  }
}

struct GraphExecCall {
  op @0 :Op;
  exec @1 :UInt64;                  # CUgraphExec
  graph @2 :UInt64;                 # instantiate, update: the graph
  flags @3 :UInt64;                 # instantiate: CUgraphInstantiate_flags
  stream @4 :UInt64;                # launch, upload; instantiateWithParams: its upload stream
  node @5 :UInt64;                  # setNodeParams, setNodeEnabled: the node (of the graph)
  params @6 :GraphNode;             # setNodeParams: the node's new parameters (kind, fields)
  enabled @7 :Bool;                 # setNodeEnabled
  updateResult @8 :Int32;           # update: CUgraphExecUpdateResult
  errorNode @9 :UInt64;             # update / instantiate: the node the driver blamed, if any
  launchIndex @10 :UInt64;          # launch: launches of this exec before this one (0-based)

  enum Op {
    instantiate @0;                 # cuGraphInstantiate*, all variants
    update @1;                      # cuGraphExecUpdate[_v2]
    setNodeParams @2;               # cuGraphExec*NodeSetParams, cuGraphExecNodeSetParams
    setNodeEnabled @3;              # cuGraphNodeSetEnabled
    upload @4;                      # cuGraphUpload
    launch @5;                      # cuGraphLaunch
    destroy @6;                     # cuGraphExecDestroy
  }
}

struct StreamCapture {
  op @0 :Op;
  stream @1 :UInt64;
  mode @2 :Int32;                   # begin: CUstreamCaptureMode; exchangeMode: the mode set
  previousMode @3 :Int32;           # exchangeMode: the mode returned
  graph @4 :UInt64;                 # begin: the graph captured into (asked right after the call);
                                    # end: the graph returned; getInfo: the graph reported
  captureId @5 :UInt64;             # begin, getInfo
  status @6 :Int32;                 # isCapturing, getInfo: CUstreamCaptureStatus
  dependencies @7 :List(GraphEdge); # beginToGraph, updateDependencies, getInfo: the nodes
                                    # (from), with their edge data
  flags @8 :UInt32;                 # updateDependencies

  enum Op {
    begin @0;                       # cuStreamBeginCapture[_v2]
    beginToGraph @1;                # cuStreamBeginCaptureToGraph
    end @2;                         # cuStreamEndCapture
    isCapturing @3;                 # cuStreamIsCapturing
    getInfo @4;                     # cuStreamGetCaptureInfo (all versions)
    updateDependencies @5;          # cuStreamUpdateCaptureDependencies[_v2]
    exchangeMode @6;                # cuThreadExchangeStreamCaptureMode
  }
}

# Schema 6. An NVTX range or mark the application emitted (docs/format.md, "NVTX"), seen through
# the NVTX injection interface, not a driver call: apiName is the NVTX function the application
# called ("nvtxRangePushA", "nvtxDomainRangeStartEx", ...), threadId its thread, startNs = endNs
# the moment of the call, result 0, context 0. Event payloads are not recorded.
struct NvtxEvent {
  kind @0 :Kind;
  domain @1 :Text;                  # the domain's name (nvtxDomainCreate); empty: default domain
  domainHandle @2 :UInt64;          # the nvtxDomainHandle_t the application used; 0: default
  message @3 :Text;                 # UTF-8 (wide strings converted, registered strings resolved);
                                    # pop / end: the message of the range they close, if known
  category @4 :UInt32;              # 0: none
  color @5 :UInt32;                 # ARGB, valid when hasColor
  hasColor @6 :Bool;
  rangeId @7 :UInt64;               # start / end: the nvtxRangeId_t; push / pop: the range's
                                    # nesting level on its thread in its domain (0: outermost)

  enum Kind {
    push @0;                        # nvtxRangePush*, nvtxDomainRangePushEx
    pop @1;                         # nvtxRangePop, nvtxDomainRangePop
    start @2;                       # nvtxRangeStart*, nvtxDomainRangeStartEx
    end @3;                         # nvtxRangeEnd, nvtxDomainRangeEnd
    mark @4;                        # nvtxMark*, nvtxDomainMarkEx
  }
}

# ------------------------------------------------------------------------------------------------
# CUDA arrays, texture and surface objects (schema 6; docs/format.md, "Arrays and texture
# objects"). Arrays (CUarray), mipmapped arrays (CUmipmappedArray) and objects (CUtexObject,
# CUsurfObject) are the values the application saw. Array contents enter through copies
# (Memcpy kind arrayInvolved) and kernels writing surfaces.

struct ArrayCall {
  op @0 :Op;
  array @1 :UInt64;                 # create, create3d, destroy: the CUarray; getLevel: the level
  mipmapped @2 :UInt64;             # mipmappedCreate/Destroy, getLevel: the CUmipmappedArray
  format @3 :Int32;                 # create*: CUarray_format
  channels @4 :UInt32;              # create*: NumChannels
  width @5 :UInt64;                 # create*: Width, Height, Depth as given (0: dimension absent)
  height @6 :UInt64;
  depth @7 :UInt64;
  flags @8 :UInt32;                 # create3D, mipmappedCreate: CUDA_ARRAY3D_* flags
  levels @9 :UInt32;                # mipmappedCreate: numMipmapLevels
  level @10 :UInt32;                # getLevel: the level asked for

  enum Op {
    create @0;                      # cuArrayCreate (CUDA_ARRAY_DESCRIPTOR: no depth, no flags)
    create3d @1;                    # cuArray3DCreate
    destroy @2;                     # cuArrayDestroy
    mipmappedCreate @3;             # cuMipmappedArrayCreate
    mipmappedGetLevel @4;           # cuMipmappedArrayGetLevel
    mipmappedDestroy @5;            # cuMipmappedArrayDestroy
  }
}

struct ResourceDesc {               # CUDA_RESOURCE_DESC
  type @0 :Int32;                   # CUresourcetype: 0 array, 1 mipmapped, 2 linear, 3 pitch2D
  array @1 :UInt64;                 # array
  mipmapped @2 :UInt64;             # mipmapped array
  devicePointer @3 :UInt64;         # linear, pitch2D
  format @4 :Int32;                 # linear, pitch2D: CUarray_format
  channels @5 :UInt32;
  sizeInBytes @6 :UInt64;           # linear
  width @7 :UInt64;                 # pitch2D
  height @8 :UInt64;
  pitchInBytes @9 :UInt64;
  flags @10 :UInt32;
}

struct TextureDesc {                # CUDA_TEXTURE_DESC
  addressMode @0 :List(Int32);      # 3 CUaddress_mode
  filterMode @1 :Int32;
  flags @2 :UInt32;                 # CU_TRSF_*
  maxAnisotropy @3 :UInt32;
  mipmapFilterMode @4 :Int32;
  mipmapLevelBias @5 :Float32;
  minMipmapLevelClamp @6 :Float32;
  maxMipmapLevelClamp @7 :Float32;
  borderColor @8 :List(Float32);    # 4
}

struct ResourceViewDesc {           # CUDA_RESOURCE_VIEW_DESC
  format @0 :Int32;                 # CUresourceViewFormat
  width @1 :UInt64;
  height @2 :UInt64;
  depth @3 :UInt64;
  firstMipmapLevel @4 :UInt32;
  lastMipmapLevel @5 :UInt32;
  firstLayer @6 :UInt32;
  lastLayer @7 :UInt32;
}

struct TexObjectCall {
  op @0 :Op;
  object @1 :UInt64;                # the CUtexObject / CUsurfObject created or destroyed
  resource @2 :ResourceDesc;        # create
  texture @3 :TextureDesc;          # textureCreate
  hasView @4 :Bool;                 # textureCreate: a resource view was given
  view @5 :ResourceViewDesc;

  enum Op {
    textureCreate @0;               # cuTexObjectCreate
    textureDestroy @1;              # cuTexObjectDestroy
    surfaceCreate @2;               # cuSurfObjectCreate
    surfaceDestroy @3;              # cuSurfObjectDestroy
  }
}

# ------------------------------------------------------------------------------------------------
# Tensor maps (schema 8; docs/format.md, "Tensor maps"). A CUtensorMap is 128 bytes in the
# driver's private encoding; kernels receive it as a parameter (`__grid_constant__`) or read it
# from memory the application copied it to. The record keeps the encode's arguments, so that a
# replay encodes the map again on its own driver, and the bytes the capturing driver produced,
# by which the replay recognises the map in launch parameters and copies.

struct TensorMapCall {
  op @0 :Op;
  encoded @1 :Data;                 # the 128 bytes in the CUtensorMap after the call (empty when
                                    # the call failed or its tensorMap pointer was NULL)
  previous @2 :Data;                # replaceAddress: the 128 bytes before the call
  dataType @3 :Int32;               # CUtensorMapDataType
  rank @4 :UInt32;                  # tensorRank
  globalAddress @5 :UInt64;         # the device address given (replaceAddress: the new one)
  globalDim @6 :List(UInt64);       # rank values
  globalStrides @7 :List(UInt64);   # rank - 1 values (bytes)
  boxDim @8 :List(UInt32);          # tiled: rank values
  elementStrides @9 :List(UInt32);  # rank values
  interleave @10 :Int32;            # CUtensorMapInterleave
  swizzle @11 :Int32;               # CUtensorMapSwizzle
  l2Promotion @12 :Int32;           # CUtensorMapL2promotion
  oobFill @13 :Int32;               # CUtensorMapFloatOOBfill
  pixelBoxLowerCorner @14 :List(Int32);  # im2col: rank - 2 values; im2colWide: one (the width)
  pixelBoxUpperCorner @15 :List(Int32);
  channelsPerPixel @16 :UInt32;     # im2col, im2colWide
  pixelsPerColumn @17 :UInt32;
  wideMode @18 :Int32;              # im2colWide: CUtensorMapIm2ColWideMode
  hostAddress @19 :UInt64;          # the CUtensorMap* the application passed

  enum Op {
    encodeTiled @0;                 # cuTensorMapEncodeTiled
    encodeIm2col @1;                # cuTensorMapEncodeIm2col
    encodeIm2colWide @2;            # cuTensorMapEncodeIm2colWide
    replaceAddress @3;              # cuTensorMapReplaceAddress
  }
}

# Legacy texture and surface references (schema 8; docs/format.md, "Texture references and memory
# pools"). References (CUtexref, CUsurfref) are the values the application saw; a module's
# reference is found by its variable's name, so a replay looks up the same name in the module it
# loaded. Each setter is one record; arrays, mipmapped arrays and device addresses are the
# captured ones (mapped by a replay like those of texture objects).

struct TexRefCall {
  op @0 :Op;
  ref @1 :UInt64;                   # the CUtexref (CUsurfref for getSurfRef, surfSetArray)
  module @2 :UInt64;                # getTexRef, getSurfRef: the CUmodule
  name @3 :Text;                    # getTexRef, getSurfRef: the variable's name
  array @4 :UInt64;                 # setArray, surfSetArray: the CUarray
  mipmapped @5 :UInt64;             # setMipmappedArray: the CUmipmappedArray
  flags @6 :UInt32;                 # setArray, setMipmappedArray, surfSetArray, setFlags: as given
  address @7 :UInt64;               # setAddress, setAddress2d: the device address bound
  bytes @8 :UInt64;                 # setAddress: size in bytes
  byteOffset @9 :UInt64;            # setAddress: the offset the driver returned (what kernels
                                    #   must add to texel indices)
  format @10 :Int32;                # setFormat, setAddress2d: CUarray_format
  channels @11 :UInt32;             # setFormat, setAddress2d: channel count
  width @12 :UInt64;                # setAddress2d: descriptor Width, Height (in elements)
  height @13 :UInt64;
  pitch @14 :UInt64;                # setAddress2d: pitch in bytes
  dim @15 :Int32;                   # setAddressMode: the dimension
  mode @16 :Int32;                  # setAddressMode: CUaddress_mode; setFilterMode,
                                    #   setMipmapFilterMode: CUfilter_mode
  bias @17 :Float32;                # setMipmapLevelBias
  minClamp @18 :Float32;            # setMipmapLevelClamp
  maxClamp @19 :Float32;
  maxAnisotropy @20 :UInt32;        # setMaxAnisotropy
  borderColor @21 :List(Float32);   # setBorderColor: 4 values
  function @22 :UInt64;             # paramSetTexRef: the CUfunction
  texUnit @23 :Int32;               # paramSetTexRef: texunit (CU_PARAM_TR_DEFAULT = -1)

  enum Op {
    getTexRef @0;                   # cuModuleGetTexRef
    getSurfRef @1;                  # cuModuleGetSurfRef
    create @2;                      # cuTexRefCreate (a reference of no module)
    destroy @3;                     # cuTexRefDestroy
    setArray @4;                    # cuTexRefSetArray
    setMipmappedArray @5;           # cuTexRefSetMipmappedArray
    setAddress @6;                  # cuTexRefSetAddress[_v2]
    setAddress2d @7;                # cuTexRefSetAddress2D[_v2/_v3]
    setFormat @8;                   # cuTexRefSetFormat
    setAddressMode @9;              # cuTexRefSetAddressMode
    setFilterMode @10;              # cuTexRefSetFilterMode
    setMipmapFilterMode @11;        # cuTexRefSetMipmapFilterMode
    setMipmapLevelBias @12;         # cuTexRefSetMipmapLevelBias
    setMipmapLevelClamp @13;        # cuTexRefSetMipmapLevelClamp
    setMaxAnisotropy @14;           # cuTexRefSetMaxAnisotropy
    setBorderColor @15;             # cuTexRefSetBorderColor
    setFlags @16;                   # cuTexRefSetFlags
    surfSetArray @17;               # cuSurfRefSetArray
    paramSetTexRef @18;             # cuParamSetTexRef (legacy launches)
  }
}

# Memory pools (schema 8). Pools (CUmemoryPool) are the values the application saw. Allocations
# from a pool are memAlloc records (kind fromPool, with the pool); frees are memFree records.

struct MemPoolCall {
  op @0 :Op;
  pool @1 :UInt64;                  # the pool created / destroyed / changed / returned
  device @2 :Int32;                 # deviceSetMemPool, deviceGetMemPool, deviceGetDefaultMemPool
  allocationType @3 :Int32;         # create: CUmemPoolProps.allocType
  handleTypes @4 :Int32;            # create: handleTypes
  locationType @5 :Int32;           # create: location.type
  locationId @6 :Int32;             # create: location.id
  maxSize @7 :UInt64;               # create: maxSize (0: the driver's default)
  usage @8 :UInt32;                 # create: usage
  attribute @9 :Int32;              # setAttribute, getAttribute: CUmemPool_attribute
  value @10 :UInt64;                # setAttribute: the value given; getAttribute: the value
                                    #   returned (int attributes widened, uint64 ones as they are)
  minBytesToKeep @11 :UInt64;       # trimTo
  accessDescriptors @12 :List(AccessDescriptor);  # setAccess: every descriptor given

  enum Op {
    create @0;                      # cuMemPoolCreate
    destroy @1;                     # cuMemPoolDestroy
    setAttribute @2;                # cuMemPoolSetAttribute
    getAttribute @3;                # cuMemPoolGetAttribute
    trimTo @4;                      # cuMemPoolTrimTo
    setAccess @5;                   # cuMemPoolSetAccess
    deviceSetMemPool @6;            # cuDeviceSetMemPool
    deviceGetMemPool @7;            # cuDeviceGetMemPool
    deviceGetDefaultMemPool @8;     # cuDeviceGetDefaultMemPool
  }
}

# ------------------------------------------------------------------------------------------------
# Index (the index frame, written at close; rebuilt by scanning when absent)

struct CaptureIndex {
  frames @0 :List(FrameEntry);
  blobs @1 :List(BlobEntry);
  launches @2 :List(LaunchEntry);
  callCount @3 :UInt64;
  kindCounts @4 :List(KindCount);
  stats @5 :WriterStats;
}

struct FrameEntry {
  offset @0 :UInt64;                # byte offset of the frame header
  kind @1 :UInt8;                   # FrameKind
  storedSize @2 :UInt64;
  rawSize @3 :UInt64;
  firstSeq @4 :UInt64;              # calls frames
  lastSeq @5 :UInt64;
}

struct BlobEntry {
  id @0 :BlobId;
  size @1 :UInt64;
  chunks @2 :List(BlobChunk);       # in chunkOffset order, covering [0, size) exactly
}

struct BlobChunk {
  frame @0 :UInt32;                 # index into CaptureIndex.frames
  chunkOffset @1 :UInt64;
}

struct LaunchEntry {
  ordinal @0 :UInt64;
  seq @1 :UInt64;
  frame @2 :UInt32;                 # index into CaptureIndex.frames
}

struct KindCount {
  kind @0 :UInt16;                  # CallRecord union discriminant
  count @1 :UInt64;
}

struct WriterStats {
  blobPuts @0 :UInt64;              # put_blob calls
  blobBytesLogical @1 :UInt64;      # sum of sizes over all put_blob calls (dedup hits included)
  blobBytesUnique @2 :UInt64;       # uncompressed bytes of distinct blobs
  blobBytesStored @3 :UInt64;       # blob payload bytes in the file (after compression)
  callBytesRaw @4 :UInt64;          # uncompressed call frame payloads
  callBytesStored @5 :UInt64;
}

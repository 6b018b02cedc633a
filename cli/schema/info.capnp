# The JSON document printed by `cusnap info --json`, described as a Cap'n Proto schema and encoded
# with Cap'n Proto's JSON codec (capnp/compat/json.h). docs/cli.md explains the encoding rules.
#
# Stability: like the capture schema, this file is append-only. Field names and meanings never
# change; new fields may appear in any object, so consumers must ignore names they do not know.
# `infoVersion` is bumped when fields are added.

@0x87d43e1da8c88ef3;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("cusnap::cli::schema");

using Capture = import "/cusnap/format/capture.capnp";

const infoVersion :UInt32 = 5;  # 2: replayMayDiverge, unmodelledCalls; 3: snapshots; 4: nvtx;
                                # 5: kernelFilter

struct InfoReport {
  infoVersion @0 :UInt32;
  file @1 :Text;                     # the path as given on the command line
  fileBytes @2 :UInt64;
  containerVersion @3 :Text;         # "major.minor" from the file header
  header @4 :Capture.CaptureHeader;  # frame 0, field for field
  integrity @5 :Integrity;
  counts @6 :Counts;
  callKinds @7 :List(KindCount);     # non-zero kinds, most frequent first
  kernels @8 :List(Kernel);          # most launched first
  bytes @9 :Bytes;
  callSpanNs @10 :Int64;             # last call's endNs - first call's startNs (0 if no calls)
  replayMayDiverge @11 :Bool;        # infoVersion 2: a successful call the capture does not
                                     # model may have changed device state (unmodelledCalls)
  unmodelledCalls @12 :List(ApiCount);  # infoVersion 2: successful generic records that may
                                     # affect device state, per exported symbol, most frequent
                                     # first (ties by name)
  snapshots @13 :Snapshots;          # infoVersion 3: memory snapshot records (the capture's
                                     # header.extract says whether it is an extracted capture)
  nvtx @14 :Nvtx;                    # infoVersion 4: the application's NVTX ranges and marks
  kernelFilter @15 :KernelFilter;    # infoVersion 5: set for a kernel-filtered capture
                                     # (header.options.kernelFiltered)
}

# A kernel-filtered capture's closing summary (docs/capture.md, "Kernel filters").
struct KernelFilter {
  summarized @0 :Bool;               # false: the capture ended before writing its summary
  launchesSeen @1 :UInt64;           # launches the filter was asked about
  launchesMatched @2 :UInt64;        # of those, whose kernel name matched
  launchesRecorded @3 :UInt64;       # of those, recorded (after --launch-skip, up to --launch-count)
}

struct Nvtx {
  records @0 :UInt64;                # nvtx records
  pushes @1 :UInt64;                 # by kind (NvtxEvent.Kind)
  pops @2 :UInt64;
  starts @3 :UInt64;
  ends @4 :UInt64;
  marks @5 :UInt64;
  threads @6 :UInt64;                # distinct threads that emitted them
  domains @7 :List(NvtxDomain);      # by name; the default domain's name is ""
}

struct NvtxDomain {
  name @0 :Text;
  ranges @1 :UInt64;                 # pushes and starts
  marks @2 :UInt64;
}

struct Snapshots {
  records @0 :UInt64;                # memorySnapshot records holding a snapshot
  launches @1 :UInt64;               # distinct launches (launchSeq) they belong to
  chunks @2 :UInt64;                 # chunks over all of them
  bytes @3 :UInt64;                  # sum of the chunk sizes (memory covered, not file bytes)
  hashOnlyChunks @4 :UInt64;         # chunks recorded by hash only (no bytes in the file)
  chunkBytes @5 :UInt64;             # CaptureOptions.snapshotChunkBytes
  skipped @6 :List(SkippedSnapshot); # records saying no snapshot was taken, in seq order
}

struct SkippedSnapshot {
  seq @0 :UInt64;                    # the memorySnapshot record
  launchSeq @1 :UInt64;
  launchOrdinal @2 :UInt64;
  kernel @3 :Text;                   # the launch's kernel, when its record precedes
  phase @4 :Text;                    # "beforeLaunch", "afterLaunch", "onDemand"
  reason @5 :Text;                   # MemorySnapshot.skippedReason
}

struct ApiCount {
  api @0 :Text;                      # CallRecord.apiName, e.g. "cuGraphLaunch"
  count @1 :UInt64;
}

struct Integrity {
  state @0 :State;
  indexSource @1 :IndexSource;
  summary @2 :Text;                  # one line, as `cusnap info` prints it
  lastGoodSeq @3 :UInt64;            # valid when hasLastGoodSeq
  hasLastGoodSeq @4 :Bool;
  deepChecked @5 :Bool;              # false: only what opening the file checks (run `cusnap verify`)
  incomplete @6 :Text;               # why the writer could not finish (<file>.incomplete); "" if none

  enum State {
    whole @0;
    truncated @1;
    corrupt @2;
  }
  enum IndexSource {
    footer @0;                       # the writer's index, found through the trailer
    scan @1;                         # rebuilt by scanning frames (no valid footer)
  }
}

struct Counts {
  calls @0 :UInt64;
  launches @1 :UInt64;
  frames @2 :UInt64;
  callFrames @3 :UInt64;
  blobFrames @4 :UInt64;
  blobs @5 :UInt64;                  # distinct blobs in the file
  kernels @6 :UInt64;                # distinct kernel names launched
  threads @7 :UInt64;                # distinct threadId values
}

struct KindCount {
  kind @0 :Text;                     # CallRecord union member name ("launch", "memcpy", ...)
  count @1 :UInt64;
}

struct Dim3 {
  x @0 :UInt32;
  y @1 :UInt32;
  z @2 :UInt32;
}

struct LaunchShape {
  grid @0 :Dim3;
  block @1 :Dim3;
  sharedBytes @2 :UInt32;
  launches @3 :UInt64;
}

struct Kernel {
  name @0 :Text;                     # Launch.kernelName, else the name of its functionGet record,
                                     # else "<function 0x...>"
  launches @1 :UInt64;
  shapes @2 :List(LaunchShape);      # distinct (grid, block, sharedBytes), most frequent first
}

struct Bytes {
  callRaw @0 :UInt64;                # call frame payloads, uncompressed
  callStored @1 :UInt64;             # call frame payloads as stored
  blobUnique @2 :UInt64;             # distinct blob contents, uncompressed
  blobStored @3 :UInt64;             # blob frame payloads as stored
  blobReferenced @4 :UInt64;         # sum of blob sizes over every BlobId reference in records
  blobReferences @5 :UInt64;         # number of such references
  dedupSaved @6 :UInt64;             # blobReferenced - blobUnique (0 if negative)
  logical @7 :UInt64;                # callRaw + blobReferenced: an uncompressed, undeduplicated log
  ratio @8 :Float64;                 # logical / fileBytes (0 when the file is empty)
  hasWriterStats @9 :Bool;           # the index carried the writer's own counters:
  writerBlobPuts @10 :UInt64;        #   put_blob calls
  writerBlobBytesLogical @11 :UInt64;#   bytes passed to put_blob, dedup hits included
  blobReferencesMissing @12 :UInt64; # references to ids with no blob in the file (damage)
}

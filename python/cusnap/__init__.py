"""Read cusnap captures and reports from Python (docs/python.md).

    import cusnap
    cap = cusnap.open("run.cusnap")
    for launch in cap.launches():
        print(launch.ordinal, launch.kernel_name, launch.grid, launch.param(3, "i"))
"""
from ._version import __version__
from .capture import (Call, Capture, Launch, Snapshot, SnapshotChunk, blob_id_text,
                      open_capture)
from .container import (CONTAINER_VERSION_MAJOR, CaptureError, CorruptCaptureError, Frame,
                        Integrity, TruncatedCaptureError)
from .reports import (Comparison, ReplayReport, Report, ReportError, read_comparison, read_report,
                      read_replay_report)
from .schema_loader import load_schema, schema_path

open = open_capture  # noqa: A001  (cusnap.open(path), like the CLI's verbs)

__all__ = [
    "__version__", "open", "open_capture", "Capture", "Call", "Launch", "Snapshot",
    "SnapshotChunk", "Frame", "Integrity", "blob_id_text", "CaptureError",
    "CorruptCaptureError", "TruncatedCaptureError", "CONTAINER_VERSION_MAJOR", "Report",
    "ReplayReport", "Comparison", "ReportError", "read_report", "read_replay_report",
    "read_comparison", "load_schema", "schema_path",
]

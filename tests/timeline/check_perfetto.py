#!/usr/bin/env python3
"""`cusnap export --perfetto` on real captures, decoded with Perfetto's own trace protos.

Each sample runs under `cusnap capture` on the emulator, is replayed with `--report`, and is
exported twice (without and with the report). Each trace is decoded with the PyPI `perfetto`
package's perfetto_trace_pb2.Trace (Perfetto's trace-processor binary is downloaded at run time,
which CI cannot do, so the checks are made here on the decoded packets) and checked against the
capture as tests/format/read_capture.py (the independent reader) reads it:
  - every track event refers to a described track; uuids are unique, parents described;
  - per track, timestamps never go back and slice begins and ends pair up;
  - one thread track per captured thread, its API calls by name and count, at their captured
    start and end; cusnap's own records as instants;
  - one track per stream; the device work (copies, memsets, launches, graph launches) by name
    and count; each with a flow from its API call, and a `timing` annotation;
  - with the report: timed launches are slices exactly as long as the report's median, the
    rest instants; graph kernel nodes as many as the report lists.
Without the `perfetto` package the test is skipped (exit 77), except under CI (CI set and not
"false"/"0"), where that is a failure.

Usage: check_perfetto.py --cusnap BIN --emulator LIB --venv PACKAGE_VENV --workdir DIR
                         --sample NAME=PATH [--sample ...]
"""
import argparse
import collections
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "format"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
# The capture is read with the cusnap package (tests/format/read_capture.py), in the venv
# python.package.install made, which also holds tests/requirements.txt's Perfetto protos.
from package_venv import use_package_venv_from_argv  # noqa: E402

use_package_venv_from_argv()


def in_ci():
    value = os.environ.get("CI", "")
    return value not in ("", "false", "0")


try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2
except ImportError as e:
    if in_ci():
        print("FAILED: the perfetto package is missing under CI (tests/requirements.txt): %s" % e)
        sys.exit(1)
    print("SKIPPED: the perfetto package is not installed (scripts/python-env installs "
          "tests/requirements.txt): %s" % e)
    sys.exit(SKIP)

import read_capture  # noqa: E402  the independent reader (the cusnap package)

TOOL_API = "cusnap"
SLICE_BEGIN, SLICE_END, INSTANT = (perfetto_trace_pb2.TrackEvent.TYPE_SLICE_BEGIN,
                                   perfetto_trace_pb2.TrackEvent.TYPE_SLICE_END,
                                   perfetto_trace_pb2.TrackEvent.TYPE_INSTANT)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(cmd), p.returncode, p.stdout))
    return p.stdout


def annotations(event):
    out = {}
    for a in event.debug_annotations:
        out[a.name] = a.uint_value if a.HasField("uint_value") else a.string_value
    return out


def device_work(calls):
    """(seq, name, stream key) of every successful call that enqueues device work."""
    work = []
    for c in calls:
        if c.get("apiName", "") == TOOL_API or c.get("result", 0) != 0:
            continue
        which = c["_which"]
        body = c.get(which, {})
        if which == "launch":
            name = body.get("kernelName") or "kernel 0x%x" % body.get("function", 0)
        elif which == "memcpy":
            name = "memcpy " + body.get("kind", "hostToDevice")
        elif which == "memset":
            name = "memset"
        elif which == "graphExec" and body.get("op") == "launch":
            name = "graph launch 0x%x" % body.get("exec", 0)
        else:
            continue
        handle = body.get("stream", 0)
        api = c.get("apiName", "")
        if handle == 2 or (handle == 0 and api.endswith(("_ptsz", "_ptds"))):
            key = (2, 0, c.get("threadId", 0))
        elif handle in (0, 1):
            key = (handle, c.get("context", 0), 0)
        else:
            key = (handle, 0, 0)
        work.append((c["seq"], name, key))
    return work


def check_trace(path, found, report):
    trace = perfetto_trace_pb2.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    calls = found["calls"]
    assert len(trace.packet) > 0, "no packets"

    tracks = {}
    events = []
    for p in trace.packet:
        assert p.trusted_packet_sequence_id != 0, "packet without a sequence"
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            assert d.uuid not in tracks, "track uuid %d described twice" % d.uuid
            tracks[d.uuid] = d
        elif p.HasField("track_event"):
            events.append((p.timestamp, p.track_event))
        else:
            raise AssertionError("unexpected packet %s" % p)
    for d in tracks.values():
        if d.HasField("parent_uuid"):
            assert d.parent_uuid in tracks, "track %d: parent %d not described" % (
                d.uuid, d.parent_uuid)

    # Every event on a described track; per track, time order and paired slices.
    open_slices = collections.defaultdict(list)
    last_ts = {}
    by_track = collections.defaultdict(list)
    for ts, e in events:
        assert e.track_uuid in tracks, "event on undescribed track %d" % e.track_uuid
        assert ts >= last_ts.get(e.track_uuid, 0), "track %d goes back in time" % e.track_uuid
        last_ts[e.track_uuid] = ts
        if e.type == SLICE_BEGIN:
            open_slices[e.track_uuid].append((ts, e))
        elif e.type == SLICE_END:
            assert open_slices[e.track_uuid], "end without begin on track %d" % e.track_uuid
            begin_ts, begin = open_slices[e.track_uuid].pop()
            by_track[e.track_uuid].append((begin_ts, ts, begin))
        else:
            assert e.type == INSTANT, "unexpected event type %d" % e.type
            by_track[e.track_uuid].append((ts, None, e))
    for uuid, stack in open_slices.items():
        assert not stack, "track %d: %d slices never end" % (uuid, len(stack))

    # Threads: the thread tracks and the overlap tracks under them.
    thread_of = {}
    for d in tracks.values():
        if d.HasField("thread"):
            assert d.thread.pid == found["header"]["pid"], "thread track of another process"
            assert tracks[d.parent_uuid].HasField("process"), "thread track not under process"
            thread_of[d.uuid] = d.thread.tid
    for d in tracks.values():
        if d.HasField("parent_uuid") and d.parent_uuid in thread_of:
            thread_of[d.uuid] = thread_of[d.parent_uuid]
    captured_threads = {c.get("threadId", 0) for c in calls}
    assert set(thread_of[u] for u in thread_of if tracks[u].HasField("thread")) == \
        captured_threads, "thread tracks differ from the captured threads"

    expected_api = collections.Counter()
    by_seq = {c["seq"]: c for c in calls}
    for c in calls:
        api = c.get("apiName", "")
        name = c["_which"] if api == TOOL_API else api
        expected_api[(c.get("threadId", 0), name, api == TOOL_API)] += 1
    seen_api = collections.Counter()
    flow_sources = {}
    for uuid, items in by_track.items():
        if uuid not in thread_of:
            continue
        for begin_ts, end_ts, e in items:
            seq = annotations(e)["call"]
            c = by_seq[seq]
            tool = "cusnap" in e.categories
            seen_api[(thread_of[uuid], e.name, tool)] += 1
            assert thread_of[uuid] == c.get("threadId", 0), "call %d on another thread" % seq
            if end_ts is not None:
                assert (begin_ts, end_ts) == (c.get("startNs", 0), c.get("endNs", 0)), \
                    "call %d: slice %d..%d, captured %d..%d" % (
                        seq, begin_ts, end_ts, c.get("startNs", 0), c.get("endNs", 0))
            for flow in e.flow_ids:
                assert flow not in flow_sources, "flow id %d starts twice" % flow
                flow_sources[flow] = seq
    assert seen_api == expected_api, "API calls differ: missing %s, extra %s" % (
        expected_api - seen_api, seen_api - expected_api)

    # Streams: every other track under the process.
    work = device_work(calls)
    stream_tracks = [u for u in tracks if u not in thread_of and not tracks[u].HasField("process")]
    assert len(stream_tracks) == len({key for _, _, key in work}), "one track per stream"
    report_launch = {}
    report_nodes = collections.defaultdict(list)
    if report:
        for l in report["launches"]:
            if l.get("graph_launch") is None:
                report_launch[l["call"]] = l
            else:
                report_nodes[l["call"]].append(l)
    seen_work = collections.Counter()
    node_count = 0
    for uuid in stream_tracks:
        assert tracks[uuid].name.startswith("stream"), tracks[uuid].name
        assert tracks[uuid].parent_uuid in tracks and \
            tracks[tracks[uuid].parent_uuid].HasField("process"), "stream track not under process"
        for begin_ts, end_ts, e in by_track.get(uuid, []):
            a = annotations(e)
            assert "timing" in a, "device event %s without a timing annotation" % e.name
            if not e.terminating_flow_ids:
                node_count += 1  # a graph kernel node: a child of its graph launch
                continue
            assert len(e.terminating_flow_ids) == 1
            flow = e.terminating_flow_ids[0]
            seq = a["call"]
            assert flow_sources.get(flow) == seq, "flow %d does not come from call %d" % (flow, seq)
            seen_work[(seq, e.name)] += 1
            c = by_seq[seq]
            assert begin_ts >= c.get("startNs", 0), "work of call %d before its call" % seq
            timed = report_launch.get(seq, {}).get("time_ms")
            if timed:
                assert end_ts is not None, "timed launch at call %d is not a slice" % seq
                assert end_ts - begin_ts == round(timed["median"] * 1e6), \
                    "call %d: slice of %d ns, the report's median is %s ms" % (
                        seq, end_ts - begin_ts, timed["median"])
            elif not (report_nodes.get(seq) and all(n["time_ms"] for n in report_nodes[seq])):
                assert end_ts is None, "untimed work at call %d has a duration" % seq
                assert a["timing"].startswith("none"), a["timing"]
    expected_work = collections.Counter((seq, name) for seq, name, _ in work)
    assert seen_work == expected_work, "device work differs: missing %s, extra %s" % (
        expected_work - seen_work, seen_work - expected_work)
    assert len(flow_sources) == len(work), "flows without device work"
    assert node_count == sum(len(v) for v in report_nodes.values()), "graph kernel nodes"
    return {"threads": len(captured_threads), "streams": len(stream_tracks), "work": len(work),
            "calls": len(calls), "nodes": node_count}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cusnap", required=True)
    ap.add_argument("--emulator", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sample", action="append", required=True)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    import json
    seen = collections.Counter()
    for spec in args.sample:
        name, program = spec.split("=", 1)
        cap = os.path.join(args.workdir, name + ".cusnap")
        report = os.path.join(args.workdir, name + ".json")
        for stale in (cap, report):
            if os.path.exists(stale):
                os.remove(stale)
        run([args.cusnap, "capture", "--driver", args.emulator, "-o", cap, "--", program])
        run([args.cusnap, "replay", "--driver", args.emulator, "--progress", "off", "--report",
             report, cap])
        found = read_capture.parse(cap)
        report_doc = json.load(open(report))
        for with_report in (False, True):
            out = os.path.join(args.workdir, name + (".report" if with_report else "") +
                               ".pftrace")
            cmd = [args.cusnap, "export", "--perfetto", out, cap]
            if with_report:
                cmd += ["--report", report]
            run(cmd)
            stats = check_trace(out, found, report_doc if with_report else None)
            print("%s%s: %d calls on %d threads, %d device events on %d streams, "
                  "%d graph kernel nodes: ok" % (name, " (report)" if with_report else "",
                                                 stats["calls"], stats["threads"], stats["work"],
                                                 stats["streams"], stats["nodes"]))
            seen["threads"] = max(seen["threads"], stats["threads"])
            seen["streams"] = max(seen["streams"], stats["streams"])
            seen["nodes"] = max(seen["nodes"], stats["nodes"])
    # The samples are chosen to exercise several threads, several streams and graph nodes.
    assert seen["threads"] > 1 and seen["streams"] > 1 and seen["nodes"] > 0, seen
    print("OK: every trace decodes with perfetto_trace_pb2 and matches its capture")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# samples.gpu_check: scripts/gpu-bundle and `scripts/gpu-check --driver emulator`, the GPU
# machine's flow run on the emulator, so neither script can rot. Checks the bundle (size limit,
# manifest), that the run exits 0 with a valid summary.json in which every check that is not
# skipped passed and every expected check is present (runtime-API parts skipped as needing
# NVIDIA's driver), and that a failing step is caught: a fake
# sample whose output differs under capture must make the run exit 1 with that check FAILED.
#   gpu_check_test.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src="$1" build="$2" python="$3"
work="$(mktemp -d "${TMPDIR:-/tmp}/cusnap-gpu-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "samples.gpu_check: $*" >&2; exit 1; }
# bytes DIR: the bundled files' bytes (what the carry limit counts), the manifest aside.
bytes() { find "$1" -type f ! -name MANIFEST.txt -printf '%s\n' | awk '{n += $1} END {print n + 0}'; }

"$src/scripts/gpu-bundle" "$build" "$work/bundle" 2> "$work/bundle.err" || { cat "$work/bundle.err"; fail "gpu-bundle failed"; }
size=$(bytes "$work/bundle")
(( size <= 64 * 1024 * 1024 )) || fail "bundle is $size bytes, over 64 MiB"
grep -q '^total ' "$work/bundle/MANIFEST.txt" || fail "bundle manifest has no total"
! grep -q '^missing' "$work/bundle/MANIFEST.txt" || fail "bundle misses built files: $(grep '^missing' "$work/bundle/MANIFEST.txt")"
# A tiny limit must skip (and name) what does not fit rather than exceed it.
GPU_BUNDLE_LIMIT_MIB=4 "$src/scripts/gpu-bundle" "$build" "$work/small" 2> /dev/null || fail "gpu-bundle with a 4 MiB limit failed"
(( $(bytes "$work/small") <= 4 * 1024 * 1024 )) || fail "the 4 MiB bundle is larger than 4 MiB"
grep -q '^skipped  samples/bin/' "$work/small/MANIFEST.txt" || fail "a 4 MiB bundle names no skipped sample"

OUT="$work/out" "$src/scripts/gpu-check" --driver emulator --bundle "$work/bundle" > "$work/run.log" 2>&1 ||
  { cat "$work/run.log"; fail "gpu-check --driver emulator exited $?"; }
[[ -s "$work/out/summary.md" ]] || fail "no summary.md"
# The conformance suite runs the tensor-core, async and wgmma cases too, reading the bundle's PTX.
for family in 'wgmma m64nNk16' 'nvcc int8 GEMM' 'cuda::pipeline'; do
  grep -q "$family" "$work/out/questions/conformance/cases.txt" || fail "conformance cases lack '$family'"
done
[[ -s "$work/bundle/conformance/ptx/tensor.sm80.ptx" ]] || fail "the bundle lacks conformance/ptx"
"$python" -m json.tool "$work/out/summary.json" > /dev/null || fail "summary.json is not valid JSON"
"$python" - "$work/out/summary.json" "$work/bundle" "$src/samples/no_replay.txt" <<'PY' || { cat "$work/run.log"; exit 1; }
import json, os, sys
summary = json.load(open(sys.argv[1]))
bundle = sys.argv[2]
checks = {f"{c['section']}/{c['name']}": c for c in summary["checks"]}
errors = [f"{k}: {c['status']} {c['detail']}" for k, c in checks.items() if c["status"] not in ("PASS", "SKIP")]
def expect(key, status, text=""):
    c = checks.get(key)
    if c is None:
        errors.append(f"{key}: missing")
    elif c["status"] != status or text not in c["detail"]:
        errors.append(f"{key}: {c['status']} {c['detail']!r}, expected {status} with {text!r}")
# Samples whose capture cannot replay yet (samples/no_replay.txt, the list the build and
# gpu-check read): run and captured, replay skipped with the reason.
no_replay = {line.split()[0] for line in open(sys.argv[3])
             if line.strip() and not line.startswith("#")}
for name in sorted(os.listdir(os.path.join(bundle, "samples/bin"))):
    if name in no_replay:
        for step in ("native", "capture"):
            expect(f"sample/{name}/{step}", "PASS")
        for step in ("info", "replay"):
            expect(f"sample/{name}/{step}", "SKIP", "replay not yet supported")
        continue
    for step in ("native", "capture", "info", "replay", "emulator-conformance"):
        expect(f"sample/{name}/{step}", "PASS")
runtime = sorted(os.listdir(os.path.join(bundle, "runtime/bin")))
if len(runtime) < 8:
    errors.append(f"only {len(runtime)} runtime-API programs bundled: {runtime}")
for name in runtime:
    expect(f"runtime/{name}/run", "SKIP", "needs NVIDIA's driver")
expect("setup/driver", "PASS", "emulator")
expect("questions/proc-address", "SKIP", "needs NVIDIA's driver")
expect("questions/param-info", "SKIP", "needs NVIDIA's driver")
for key in ("overhead/in-process", "overhead/per-call", "replay-vs-native", "kernel-name",
            "snapshot-throughput", "extract-alone", "conformance"):
    expect(f"questions/{key}", "PASS")
counts = summary["counts"]
statuses = [c["status"] for c in summary["checks"]]
if counts != {"pass": statuses.count("PASS"), "fail": statuses.count("FAIL"), "skip": statuses.count("SKIP")}:
    errors.append(f"counts {counts} do not match the checks")
if errors:
    sys.exit("samples.gpu_check:\n  " + "\n  ".join(errors))
print(f"samples.gpu_check: {counts['pass']} PASS, {counts['skip']} SKIP")
PY

# A failing step is caught: a "sample" whose output depends on which libcuda.so.1 it is given
# (fails natively, differs under capture), with quotes, backslashes and a tab in its error output (JSON escaping).
cp -r "$work/bundle" "$work/bad"
cat > "$work/bad/samples/bin/flaky" <<'SH'
#!/usr/bin/env bash
first="${LD_LIBRARY_PATH%%:*}"
echo "flaky: driver directory $(basename "$(dirname "$first")")"
if [[ "$first" == */emulator/lib ]]; then printf 'flaky: he said "no" \\ and\tleft\n' >&2; exit 3; fi
SH
chmod +x "$work/bad/samples/bin/flaky"
rc=0
GPU_CHECK_SAMPLES="vector_add flaky" OUT="$work/bad-out" "$src/scripts/gpu-check" --driver emulator \
  --bundle "$work/bad" > "$work/bad.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || { cat "$work/bad.log"; fail "a failing step gave exit code $rc, expected 1"; }
"$python" - "$work/bad-out/summary.json" <<'PY'
import json, sys
checks = {f"{c['section']}/{c['name']}": c for c in json.load(open(sys.argv[1]))["checks"]}
assert checks["sample/flaky/native"]["status"] == "FAIL", checks.get("sample/flaky/native")
assert '"no" \\ and left' in checks["sample/flaky/native"]["detail"], checks["sample/flaky/native"]
assert checks["sample/flaky/capture"]["status"] == "FAIL", checks.get("sample/flaky/capture")
assert "native rc=3" in checks["sample/flaky/capture"]["detail"], checks["sample/flaky/capture"]
assert checks["sample/vector_add/replay"]["status"] == "PASS", checks.get("sample/vector_add/replay")
assert not any(k.startswith("sample/") and "/vector_add/" not in k and "/flaky/" not in k for k in checks)
print("samples.gpu_check: the failing fake sample was reported")
PY

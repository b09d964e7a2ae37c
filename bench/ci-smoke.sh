#!/usr/bin/env bash
# CI smoke test of the siftdb-bench workload runner: every workload once on a tiny database,
# with --json, then checks that each workload reported and that the found counts are right.
# All of it twice: keys in one keyspace, then spread over four (--keyspaces=4), where every
# count must come out the same. The main run looks keys up one per batch (--batch_size=1, as
# its writes go); a short second run per keyspace setting checks real batches of the multiread
# workloads (--batch_size=64, a last batch that is not full, keys deleted before).
#
#   bash bench/ci-smoke.sh            # from the workspace root (or anywhere inside it)
#
# SIFTDB_BENCH_PROFILE overrides the cargo profile (default: test-release).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

profile="${SIFTDB_BENCH_PROFILE:-test-release}"
num=2000
benchmarks="fillseq,fillrandom,overwrite,fillsustained,readrandom,readmissing,multireadrandom,multireadmissing,readhot,seekrandom,seekmissing,readseq,readreverse,prefixscan,deleterandom,readwhilewriting,readwhilecompacting,compact,checkpoint,stats"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT

# Runs the runner with the given flags, its JSON into "$out"; a non-zero exit fails the smoke
# test, naming `what` and showing the output.
run_bench() {
    local what="$1"
    shift
    if ! cargo run --quiet --profile "$profile" -p siftdb-bench --bin siftdb-bench -- "$@" >"$out"; then
        echo "siftdb-bench smoke: FAILED: $what exited non-zero" >&2
        cat "$out" >&2
        exit 1
    fi
}

for keyspaces in 1 4; do
echo "siftdb-bench smoke: --num=$num --keyspaces=$keyspaces --benchmarks=$benchmarks (profile $profile)"
run_bench "the runner (--keyspaces=$keyspaces)" \
    --num="$num" --benchmarks="$benchmarks" --threads=2 --keyspaces="$keyspaces" --json \
    --sustained_seconds=0.2 --sustained_trials=2

python3 - "$out" "$num" "$benchmarks" "$keyspaces" <<'PY'
import json
import sys

path, num, names, keyspaces = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4])
errors = []
rows = {}
with open(path) as f:
    for n, line in enumerate(f, 1):
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            errors.append(f"line {n} is not JSON ({e}): {line[:120]}")
            continue
        rows[row.get("benchmark")] = row

for name in names:
    if name not in rows:
        errors.append(f"{name}: no JSON line")
reads = min(num, 200_000)
deletes = num // 10


def check(name, field, want):
    row = rows.get(name)
    if row is None:
        return
    got = row.get(field)
    if got != want:
        errors.append(f"{name}: {field} = {got!r}, expected {want!r}")


for name in names:
    row = rows.get(name)
    if row is not None and row.get("keyspaces") != keyspaces:
        errors.append(f"{name}: keyspaces = {row.get('keyspaces')!r}, expected {keyspaces}")
    if row is None or name == "stats":
        continue
    for field in ("engine", "ops", "micros_per_op", "ops_per_sec", "found", "p50_us", "p99_us"):
        if field not in row:
            errors.append(f"{name}: field {field!r} missing")
    if row.get("ops", 0) <= 0 or row.get("ops_per_sec", 0) <= 0:
        errors.append(f"{name}: no operations measured ({row.get('ops')} ops)")

for name in ("fillseq", "fillrandom", "overwrite"):
    check(name, "ops", num)
    check(name, "keys_written", num)
row = rows.get("fillsustained")
if row is not None:
    trials = row.get("sustained_trials") or []
    if not trials or any(t.get("achieved_ops_per_sec", 0) <= 0 for t in trials):
        errors.append(f"fillsustained: trials {trials!r}")
    if trials and trials[0].get("target_ops_per_sec") is not None:
        errors.append("fillsustained: the first trial is not the unpaced burst")
check("deleterandom", "ops", deletes)
check("deleterandom", "entries", deletes)  # every deleted key existed
check("readrandom", "ops", reads)
check("readrandom", "found", reads)        # every key read was written
check("readmissing", "found", 0)           # never-written keys are never found
# The multiread workloads count keys as ops; with --batch_size=1 every key is a call of its own.
for name in ("multireadrandom", "multireadmissing"):
    check(name, "ops", reads)
    check(name, "calls", reads)
    check(name, "multi_get_calls", reads)
check("multireadrandom", "found", reads)   # every key read was written
check("multireadmissing", "found", 0)
for name in ("readrandom", "readmissing", "multireadrandom", "multireadmissing", "readhot",
             "seekrandom", "seekmissing", "prefixscan", "readwhilewriting", "readwhilecompacting"):
    row = rows.get(name)
    if row is not None and row.get("found") != row.get("expected_found"):
        errors.append(f"{name}: found {row.get('found')} of {row.get('ops')}, "
                      f"expected {row.get('expected_found')}")
row = rows.get("readhot")
if row is not None and not (0 < row.get("found", 0) < row.get("ops", 0)):
    errors.append(f"readhot: found {row.get('found')} of {row.get('ops')}: half the hot set "
                  "should be missing")
check("prefixscan", "found", reads)
for name in ("readseq", "readreverse"):
    row = rows.get(name)
    if row is not None and row.get("entries") != num * 2:  # every key, once per thread (2)
        errors.append(f"{name}: {row.get('entries')} entries, expected {num * 2}")
row = rows.get("prefixscan")
if row is not None and row.get("entries") != row.get("expected_entries"):
    errors.append(f"prefixscan: {row.get('entries')} entries, expected {row.get('expected_entries')}")
row = rows.get("readmissing")
if row is not None and row.get("filter_useful", 0) + row.get("filter_index_useful", 0) <= 0:
    errors.append("readmissing: no filter said no (filter_useful = filter_index_useful = 0)")
row = rows.get("readwhilecompacting")
if row is not None and row.get("writer_ops", 0) < 1:
    errors.append("readwhilecompacting: no full compaction ran beside the readers")
check("stats", "live_keys", num - deletes)
row = rows.get("stats")
if row is not None and "L0" not in row.get("tree", ""):
    errors.append("stats: the siftdb.levels table has no L0 row")
if row is not None and keyspaces > 1 and f"ks{keyspaces - 1}" not in row.get("tree", ""):
    errors.append(f"stats: the tree has no keyspace ks{keyspaces - 1}")
# The checkpoint opens and holds every key that exists, counted by iterating; after `compact`
# there are tables, which it hard-links.
check("checkpoint", "ops", 1)
check("checkpoint", "checkpoint_keys", num - deletes)
check("checkpoint", "source_keys", num - deletes)
row = rows.get("checkpoint")
if row is not None:
    if row.get("found") != row.get("expected_found"):
        errors.append(f"checkpoint: holds {row.get('found')} keys, the source "
                      f"{row.get('expected_found')}")
    if not row.get("checkpoint_files_linked"):
        errors.append("checkpoint: no table file hard-linked")
    if row.get("checkpoint_dir_bytes", 0) <= 0:
        errors.append("checkpoint: empty checkpoint directory")
check("stats", "checkpoints", 1)

if errors:
    print(f"siftdb-bench smoke: FAILED (--keyspaces={keyspaces})", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
for name in names:
    row = rows[name]
    print(f"  {name:<16} ops {row.get('ops', 0):>6}  found {row.get('found', '-')!s:>6}  "
          f"{row.get('micros_per_op', 0):9.3f} micros/op")
print(f"siftdb-bench smoke: OK ({len(names)} workloads, {keyspaces} keyspaces)")
PY

# Real batches: 1000 keys in calls of 64 (15 full, the last 40) after 10% of the keys were
# deleted, so multireadrandom must find exactly the live keys among its lookups and not all.
multi="fillrandom,deleterandom,multireadrandom,multireadmissing"
echo "siftdb-bench smoke: --batch_size=64 --reads=1000 --keyspaces=$keyspaces --benchmarks=$multi"
run_bench "the batched run (--keyspaces=$keyspaces)" \
    --num="$num" --benchmarks="$multi" --batch_size=64 --reads=1000 --threads=2 \
    --keyspaces="$keyspaces" --json

python3 - "$out" "$keyspaces" <<'PY'
import json
import sys

path, keyspaces = sys.argv[1], int(sys.argv[2])
rows = {}
with open(path) as f:
    for line in f:
        if line.strip():
            row = json.loads(line)
            rows[row.get("benchmark")] = row
errors = []
reads, batch = 1000, 64
calls = -(-reads // batch)
for name in ("multireadrandom", "multireadmissing"):
    row = rows.get(name)
    if row is None:
        errors.append(f"{name}: no JSON line")
        continue
    for field, want in (("ops", reads), ("calls", calls), ("batch_size", batch)):
        if row.get(field) != want:
            errors.append(f"{name}: {field} = {row.get(field)!r}, expected {want}")
    if row.get("found") != row.get("expected_found"):
        errors.append(f"{name}: found {row.get('found')} of {reads} keys, expected "
                      f"{row.get('expected_found')}")
    if row.get("gets") != reads:
        errors.append(f"{name}: the engine counted {row.get('gets')} lookups, not {reads}")
    # One multi_get per keyspace a batch's keys fall in: 64 random keys hit all of 4.
    got = row.get("multi_get_calls")
    if keyspaces == 1 and got != calls:
        errors.append(f"{name}: {got} multi_get calls for {calls} batches in one keyspace")
    if keyspaces > 1 and not (calls < got <= calls * keyspaces):
        errors.append(f"{name}: {got} multi_get calls for {calls} batches over {keyspaces} "
                      "keyspaces: the keys were not grouped per keyspace")
    print(f"  {name:<16} ops {row.get('ops', 0):>6}  found {row.get('found', '-')!s:>6}  "
          f"{row.get('calls')} calls, {got} multi_get calls  "
          f"{row.get('micros_per_op', 0):9.3f} micros/op")
row = rows.get("multireadrandom")
if row is not None and not (0 < row.get("found", 0) < reads):
    errors.append(f"multireadrandom: found {row.get('found')} of {reads} after deleterandom: "
                  "some of its keys should be gone")
row = rows.get("multireadmissing")
if row is not None and row.get("found") != 0:
    errors.append(f"multireadmissing: found {row.get('found')}, expected 0")
if errors:
    print(f"siftdb-bench smoke: FAILED (batched, --keyspaces={keyspaces})", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"siftdb-bench smoke: OK (batched multireads, {keyspaces} keyspaces)")
PY

# Range deletes on a filled database (50 ranges of 4 keys: 200 keys go, fewer with several
# keyspaces, where a range stays in its first key's keyspace), then merges on a database of
# their own (U64Add counters): every read must agree with the runner's key model.
for run in "fillrandom,deleterange,readrandom,readseq,stats" "mergerandom,readrandom,compact,readrandom"; do
echo "siftdb-bench smoke: --keyspaces=$keyspaces --benchmarks=$run"
run_bench "the run ($run, --keyspaces=$keyspaces)" \
    --num="$num" --benchmarks="$run" --max_num_range_tombstones=50 --range_tombstone_width=4 \
    --threads=2 --keyspaces="$keyspaces" --json
python3 - "$out" "$num" "$keyspaces" <<'PY'
import json
import sys

path, num, keyspaces = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = []
with open(path) as f:
    rows = [json.loads(line) for line in f if line.strip()]
errors = []
by_name = {r.get("benchmark"): r for r in rows}
for row in rows:
    name = row.get("benchmark")
    if name in ("readrandom",) and row.get("found") != row.get("expected_found"):
        errors.append(f"{name}: found {row.get('found')}, the key model says "
                      f"{row.get('expected_found')}")
dr = by_name.get("deleterange")
if dr is not None:
    removed = dr.get("entries", 0)
    want = 200 if keyspaces == 1 else None
    if dr.get("ops") != 50 or (want is not None and removed != want) or removed <= 0:
        errors.append(f"deleterange: {dr.get('ops')} ranges removed {removed} keys")
    seq = by_name.get("readseq")
    if seq is not None and seq.get("entries") != (num - removed) * 2:
        errors.append(f"readseq: {seq.get('entries')} entries, expected {(num - removed) * 2}")
    stats = by_name.get("stats")
    if stats is not None and stats.get("live_keys") != num - removed:
        errors.append(f"stats: {stats.get('live_keys')} live keys, expected {num - removed}")
mr = by_name.get("mergerandom")
if mr is not None:
    if mr.get("ops") != num:
        errors.append(f"mergerandom: {mr.get('ops')} merges, expected {num}")
    if not any(r.get("benchmark") == "readrandom" and r.get("found", 0) > 0 for r in rows):
        errors.append("mergerandom: no merged counter was found by readrandom")
if errors:
    print(f"siftdb-bench smoke: FAILED (--keyspaces={keyspaces})", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"siftdb-bench smoke: OK ({','.join(r.get('benchmark') for r in rows)}, "
      f"{keyspaces} keyspaces)")
PY
done
done

# YCSB A-F with charts: every workload reports each of its operation types with latency
# quantiles, reads find exactly what the key model says (inserts included), the peak RSS is
# reported, and --plot writes a chart per workload.
ycsb="fillrandom,ycsba,ycsbb,ycsbc,ycsbd,ycsbe,ycsbf"
charts="$(mktemp -d)"
trap 'rm -f "$out"; rm -rf "$charts"' EXIT
echo "siftdb-bench smoke: --benchmarks=$ycsb --plot"
run_bench "the YCSB run" \
    --num="$num" --reads=3000 --benchmarks="$ycsb" --threads=2 --json --plot="$charts"
python3 - "$out" "$charts" <<'PY'
import json
import os
import sys

path, charts = sys.argv[1], sys.argv[2]
rows = {}
with open(path) as f:
    for line in f:
        if line.strip():
            row = json.loads(line)
            rows[row.get("benchmark")] = row
want = {
    "ycsba": {"read", "update"}, "ycsbb": {"read", "update"}, "ycsbc": {"read"},
    "ycsbd": {"read", "insert"}, "ycsbe": {"scan", "insert"},
    "ycsbf": {"read", "read-modify-write"},
}
errors = []
for name, kinds in want.items():
    row = rows.get(name)
    if row is None:
        errors.append(f"{name}: no JSON line")
        continue
    ops = row.get("operations", {})
    if set(ops) != kinds:
        errors.append(f"{name}: operation types {sorted(ops)}, expected {sorted(kinds)}")
    if sum(o.get("ops", 0) for o in ops.values()) != row.get("ops"):
        errors.append(f"{name}: the types' counts do not add up to {row.get('ops')}")
    for kind, o in ops.items():
        if not (0 < o.get("p50_us", 0) <= o.get("p99_us", 0) <= o.get("p999_us", 0)):
            errors.append(f"{name}: {kind} quantiles out of order: {o}")
    if row.get("found") != row.get("expected_found"):
        errors.append(f"{name}: found {row.get('found')}, expected {row.get('expected_found')}")
    if row.get("peak_rss_bytes", 0) <= 0:
        errors.append(f"{name}: no peak RSS")
files = set(os.listdir(charts))
for n, name in enumerate(["fillrandom", *want]):
    if f"latency-{n:02}-{name}.svg" not in files:
        errors.append(f"--plot: no latency chart for {name}")
if "throughput-00-fillrandom.svg" not in files:
    errors.append("--plot: no throughput chart for fillrandom")
if errors:
    print("siftdb-bench smoke: FAILED (YCSB)", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"siftdb-bench smoke: OK (YCSB A-F, {len(files)} charts)")
PY

# randomtransaction in both modes, keys in one keyspace and over four: every attempt either
# committed or aborted, most commit, and each committed transaction wrote its keys.
for mode in --optimistic_transaction_db --transaction_db; do
for keyspaces in 1 4; do
echo "siftdb-bench smoke: --benchmarks=fillrandom,randomtransaction $mode --keyspaces=$keyspaces"
run_bench "randomtransaction ($mode, --keyspaces=$keyspaces)" \
    --num="$num" --reads=1000 --benchmarks=fillrandom,randomtransaction --threads=2 \
    --transaction_sets=4 "$mode" --keyspaces="$keyspaces" --json
python3 - "$out" "$mode" <<'PY'
import json
import sys

path, mode = sys.argv[1], sys.argv[2]
rows = {}
with open(path) as f:
    for line in f:
        if line.strip():
            row = json.loads(line)
            rows[row.get("benchmark")] = row
errors = []
row = rows.get("randomtransaction")
want_mode = "pessimistic" if mode == "--transaction_db" else "optimistic"
if row is None:
    errors.append("randomtransaction: no JSON line")
else:
    committed, aborted = row.get("committed", 0), row.get("aborted", 0)
    if committed + aborted != 1000:
        errors.append(f"randomtransaction: {committed} committed + {aborted} aborted != 1000")
    if committed < 400:  # about 80 % commit in runs of this size; half or fewer is a fault
        errors.append(f"randomtransaction: only {committed} of 1000 committed")
    if row.get("ops") != committed or row.get("entries") != 4 * committed:
        errors.append(f"randomtransaction: ops {row.get('ops')}, entries {row.get('entries')} "
                      f"for {committed} commits of 4 keys")
    if row.get("transaction_mode") != want_mode or row.get("transaction_sets") != 4:
        errors.append(f"randomtransaction: mode {row.get('transaction_mode')}, "
                      f"sets {row.get('transaction_sets')}")
    if not 0 <= row.get("abort_rate", -1) < 1:
        errors.append(f"randomtransaction: abort rate {row.get('abort_rate')}")
if errors:
    print(f"siftdb-bench smoke: FAILED ({mode})", file=sys.stderr)
    for e in errors:
        print("  " + e, file=sys.stderr)
    sys.exit(1)
print(f"siftdb-bench smoke: OK (randomtransaction {want_mode}: {row.get('committed')} "
      f"committed, {row.get('aborted')} aborted)")
PY
done
done

# siftdb through its rust-rocksdb API (--engine=siftdb-rocksdb) beside siftdb's own, one
# keyspace: every workload it has reports, and the found counts agree with siftdb's.
compat_benchmarks="fillrandom,overwrite,readrandom,readmissing,multireadrandom,seekrandom,readseq,readreverse,prefixscan,deleterandom,readrandom,compact,stats"
echo "siftdb-bench smoke: --engine=siftdb,siftdb-rocksdb --benchmarks=$compat_benchmarks"
run_bench "siftdb-rocksdb beside siftdb" \
    --engine=siftdb,siftdb-rocksdb --num="$num" --benchmarks="$compat_benchmarks" --json
python3 - "$out" <<'PY'
import json
import sys

found = {}
with open(sys.argv[1]) as f:
    for line in f:
        if line.strip().startswith("{"):
            row = json.loads(line)
            if "benchmark" in row and "found" in row:
                found.setdefault(row.get("engine", "?"), []).append((row["benchmark"], row["found"]))
sift, compat = found.get("siftdb"), found.get("siftdb-rocksdb")
if not sift or sift != compat:
    sys.exit(f"siftdb-bench smoke: FAILED: found counts differ: siftdb {sift}, siftdb-rocksdb {compat}")
print(f"siftdb-bench smoke: siftdb-rocksdb OK ({len(compat)} workloads with found counts, as siftdb's)")
PY

# readhot over false positives of a deep tree (the hot-false-positive memo's workload): the
# search must find some with the filter index in effect, and the phase must run over them.
run_bench "readhot --hot_false_positives" \
    --num=20000 --benchmarks=fillrandom,readhot --hot_false_positives --hot_keys=100 \
    --reads=20000 --write_buffer_size=65536 --target_file_size_base=65536 \
    --max_bytes_for_level_base=262144 --max_bytes_for_level_multiplier=4 --json
python3 - "$out" <<'PY'
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
hot = [r for r in rows if r.get("benchmark") == "readhot"]
if not hot or hot[0].get("ops", 0) == 0 or hot[0].get("found") != 0:
    sys.exit(f"siftdb-bench smoke: FAILED: readhot --hot_false_positives: {hot}")
print(f"siftdb-bench smoke: readhot --hot_false_positives OK ({hot[0]['ops']} lookups of false positives)")
PY

# An engine this build does not have is a clear error, not a silent success.
if cargo run --quiet --profile "$profile" -p siftdb-bench --bin siftdb-bench -- \
    --num=10 --benchmarks=stats --engine=nosuchengine >/dev/null 2>"$out"; then
    echo "siftdb-bench smoke: FAILED: --engine=nosuchengine succeeded" >&2
    exit 1
fi
if ! grep -q "unknown engine" "$out"; then
    echo "siftdb-bench smoke: FAILED: --engine=nosuchengine gave no clear error:" >&2
    cat "$out" >&2
    exit 1
fi
echo "siftdb-bench smoke: unknown engine rejected: $(cat "$out")"

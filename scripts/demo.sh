#!/usr/bin/env bash
# Starts the demo workloads in the background (a JVM making GCs, a C program that leaks and
# burns CPU) and prints their pids and what to try. Stop them with: scripts/demo.sh --stop
set -euo pipefail
cd "$(dirname "$0")/.."
# In the user's own cache, not a fixed name in /tmp: another user's folder of that name (or a link
# planted there) would stop this one or make it write where that user chose.
out=${EBPF_STUDIO_DEMO_DIR:-${HOME:?HOME is not set}/.cache/ebpf-studio/demo}
if [ "${1:-}" = "--stop" ]; then
  for f in "$out"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; rm -f "$f"; done
  echo "demo workloads stopped"
  exit 0
fi
mkdir -p "$out"
javac -d "$out" scripts/demo/DemoGc.java
gcc -g -O0 -fno-omit-frame-pointer -o "$out/leaky" scripts/demo/leaky.c
for f in "$out"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
nohup java -XX:+UseSerialGC -Xmx128m -XX:+PreserveFramePointer -cp "$out" DemoGc >"$out/java.log" 2>&1 &
echo $! >"$out/java.pid"
nohup "$out/leaky" >"$out/leaky.log" 2>&1 &
echo $! >"$out/leaky.pid"
cat <<MSG
Demo workloads running:
  JVM  (DemoGc)  pid $(cat "$out/java.pid")   → "eBPF: Trace Java GC"      or: sudo bin/ebpf-studio java-gc --pid $(cat "$out/java.pid") --duration 15
  leaky (C)      pid $(cat "$out/leaky.pid")  → "eBPF: Find Memory Leaks"  or: sudo bin/ebpf-studio memleak --pid $(cat "$out/leaky.pid") --duration 10
                                      → "eBPF: Profile CPU"          or: sudo bin/ebpf-studio profile --pid $(cat "$out/leaky.pid") --duration 5
Stop them with: scripts/demo.sh --stop
MSG

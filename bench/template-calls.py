#!/usr/bin/env python3
"""Writes two workflows with the same N tasks: one calling a template N
times (templates-N.yaml), one with every call written out by hand
(by-hand-N.yaml). Used to measure what templates cost to validate, plan and
run (docs/BENCHMARKS.md, "Templates")."""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
folder = sys.argv[2] if len(sys.argv) > 2 else "."
arches = ["amd64", "arm64", "riscv64"]

def call(i):
    return f"  c{i:05d}: {{ uses: build, with: {{ os: os{i:05d}, arch: {arches[i % 3]} }} }}\n"

def by_hand(i):
    os, arch = f"os{i:05d}", arches[i % 3]
    return (f"  c{i:05d}:\n"
            f"    description: build for {os}/{arch}\n"
            f"    env: {{ GOOS: \"{os}\", GOARCH: \"{arch}\" }}\n"
            f"    timeout: 30s\n"
            f"    retries: 1\n"
            f"    run: echo building {os} {arch} \"$GOOS\" level 2 > /dev/null\n")

template = """templates:
  build:
    params: { os: ~, arch: amd64, level: "2" }
    description: build for ${{ params.os }}/${{ params.arch }}
    env: { GOOS: "${{ params.os }}", GOARCH: "${{ params.arch }}" }
    timeout: 30s
    retries: 1
    run: echo building ${{ params.os }} ${{ params.arch }} "$GOOS" level ${{ params.level }} > /dev/null
"""

with open(f"{folder}/templates-{count}.yaml", "w") as out:
    out.write(template + "tasks:\n" + "".join(call(i) for i in range(count)))
with open(f"{folder}/by-hand-{count}.yaml", "w") as out:
    out.write("tasks:\n" + "".join(by_hand(i) for i in range(count)))

#!/usr/bin/env bash
# Fuzzes every reader of devplace's own files (fuzz/*_reader_fuzzer.cc) for RUNS executions each (default 100000),
# seeded from the repository's files: configs/ (topologies, experiments, suites, sharding specs, the pipeline
# strategy), the shipped checkpoint (models/general), and what `devplace` writes from the repository's zoo and
# machines (a graph, plain, partitioned and sharded strategies, a cost table). Needs the clang fuzz build
# (build-fuzz, docs/reliability.md "Fuzzing") and a normal build of devplace (build/apps/devplace, for the seeds).
# Usage: scripts/fuzz_readers.sh [target ...]   (default: all); corpora and logs go to build-fuzz/corpus/ (remove it
# to start again from the seeds; a corpus that grew in earlier runs is kept and fuzzed further).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-100000}
D=${DEVPLACE:-build/apps/devplace}
C=build-fuzz/corpus
T=configs/topologies/v100-2x4-eth.yaml
mkdir -p "$C"/{graph,topology,strategy,sharding,costs,checkpoint,experiment,compare,validate,reshard,gen}
# Seeds written by devplace from the repository's zoo and machines (the strategy fuzzer reads against
# transformer_xl4 at batch 32 on v100-2x4-eth).
if [[ ! -f $C/gen/txl.json ]]; then
  "$D" graph model transformer_xl4 --batch 32 -o "$C/gen/txl.json" >/dev/null
  "$D" graph gen --family nmt --seed 1 --target-ops 120 -o "$C/gen/nmt.json" >/dev/null
  for a in expert round-robin tofu-dp; do
    "$D" search --algo "$a" -g "$C/gen/txl.json" -t "$T" --budget-evals 100 -o "$C/gen/plain-$a.json" >/dev/null
  done
  "$D" shard -g "$C/gen/txl.json" -t "$T" --spec configs/sharding/data-parallel.yaml -o "$C/gen/sharded.json" >/dev/null
  "$D" profile -g "$C/gen/nmt.json" -o "$C/gen/costs.json" >/dev/null
  for f in tests/datasets/onnx_reproducers/*.onnx tests/datasets/onnx_external/model_ext.onnx; do
    "$D" graph import "$f" -o "$C/gen/onnx-$(basename "$f" .onnx).json" >/dev/null
  done
fi
# Graphs: the imports of the repository's small ONNX models (1-9 KB) and the nmt member (66 KB); larger seeds
# (transformer_xl4, 111 KB) slowed the target to 50 executions a second.
cp "$C"/gen/onnx-*.json "$C"/gen/nmt.json "$C/graph/"
cp "$C"/gen/plain-*.json "$C"/gen/sharded.json configs/pipelines/*.json "$C/strategy/"
cp "$C"/gen/costs.json "$C/costs/"
cp configs/topologies/*.yaml "$C/topology/"
cp configs/sharding/*.yaml "$C/sharding/"
cp configs/experiments/*.yaml "$C/experiment/"
cp configs/suites/quick.yaml configs/suites/standard.yaml "$C/compare/"
cp configs/suites/validate-*.yaml "$C/validate/"
cp configs/suites/reshard-*.yaml "$C/reshard/"
# The checkpoint target reads the sidecar, a NUL, then the model file: the shipped sidecar, once with its own
# (539 KB) model file's size and digest and the first 2 KiB of that file, once describing those 2 KiB (verified).
head -c 2048 models/general/model-3000.pt > "$C/gen/head.pt"
{ cat models/general/state.json; printf '\0'; cat "$C/gen/head.pt"; } > "$C/checkpoint/shipped-sidecar"
{ sed -e "s/\"model_bytes\": [0-9]*/\"model_bytes\": 2048/" \
      -e "s/\"model_sha256\": \"[0-9a-f]*\"/\"model_sha256\": \"$(sha256sum "$C/gen/head.pt" | cut -c1-64)\"/" \
      models/general/state.json; printf '\0'; cat "$C/gen/head.pt"; } > "$C/checkpoint/verified"
declare -A corpus=([graph_json_reader_fuzzer]=graph [topology_yaml_reader_fuzzer]=topology
  [strategy_json_reader_fuzzer]=strategy [sharding_spec_reader_fuzzer]=sharding [cost_table_reader_fuzzer]=costs
  [checkpoint_reader_fuzzer]=checkpoint [experiment_yaml_reader_fuzzer]=experiment
  [compare_suite_reader_fuzzer]=compare [validate_suite_reader_fuzzer]=validate [reshard_suite_reader_fuzzer]=reshard)
targets=("$@")
if ((${#targets[@]} == 0)); then targets=("${!corpus[@]}"); fi
for t in "${targets[@]}"; do
  dir=$C/${corpus[$t]}
  echo "== $t ($(ls "$dir" | wc -l) seeds)"
  start=$(date +%s)
  build-fuzz/fuzz/"$t" -runs="$RUNS" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    "$dir" > "$C/$t.log" 2>&1 || { tail -40 "$C/$t.log"; exit 1; }
  echo "$t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$C/$t.log" | grep -o '[0-9]*$') runs in" \
       "$(( $(date +%s) - start )) s, corpus $(ls "$dir" | wc -l) units, no crash"
done

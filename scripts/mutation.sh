#!/usr/bin/env bash
# Mutation testing of the core functions, one module at a time in priority order, so an interrupted run
# still leaves complete per-module results (`mutmut results`; docs/mutation-report.md has the last run).
# Usage: scripts/mutation.sh [MODULE...]   (default: all below); env MUTMUT (the binary), MUTATION_JOBS.
set -u
MUTMUT=${MUTMUT:-mutmut}
JOBS=${MUTATION_JOBS:-2}
declare -A FUNCTIONS=(
  [metrics]="pecan.train.metrics.* pecan.engine.metrics.*"
  [sampler]="pecan.data.sampler.*"
  [graph]="pecan.data.graph.x_validate_atoms* pecan.data.graph.x_crop_pocket* pecan.data.graph.x_pocket_mask*
           pecan.data.graph.x_radius_edges* pecan.data.graph.x_edge_types* pecan.data.graph.x_validate_vdw*
           pecan.data.graph.x_build_graph*"
  [checkpoint]="pecan.train.checkpoint.* pecan.engine.checkpoint.*"
  [trainer]="pecan.train.trainer.xǁTrainerǁtrain_step* pecan.train.trainer.xǁTrainerǁkeep_in_step*
             pecan.train.trainer.xǁTrainerǁforward_loss* pecan.train.trainer.xǁTrainerǁevaluate*
             pecan.train.trainer.xǁTrainerǁmaybe_resume*"
  [egnn]="model.egnn.xǁEGNNLayerǁgeometry* model.egnn.xǁEGNNLayerǁforward* model.egnn.xǁEGNNLayerǁmessage*
          model.egnn.xǁEGNNLayerǁnode_update* model.egnn.xǁGaussianDistanceExpansionǁforward*"
  [packed]="pecan.data.packed.x_gather_batch* pecan.data.packed.x_to_batch*"
  [index]="pecan.data.index_rows.x_assign_labels* pecan.data.index_rows.x_normalise* pecan.data.index_derived.x__pose_row*
           pecan.data.index_derived.x__complex_rows* pecan.data.index.xǁIndexBuilderǁindex* pecan.data.index.xǁIndexBuilderǁ_from_csvs*
           pecan.data.index.xǁIndexBuilderǁ_from_shards* pecan.data.index_rows.x_read_index_csv*"
  [config]="pecan.config.x__coerce* pecan.config.x__build_section* pecan.config.x_build_model_section*
            pecan.config.x_from_dict* pecan.config.x_parse_override* pecan.config.x_env_flag*
            pecan.config.x_env_value* pecan.config.x_apply_env*"
)
ORDER=(metrics sampler graph checkpoint trainer egnn packed index config)
[ $# -gt 0 ] && ORDER=("$@")
export PYTHONPATH= OMP_NUM_THREADS=1
status=0
for module in "${ORDER[@]}"; do
  echo "=== mutation: $module ($(date +%H:%M:%S))"
  # shellcheck disable=SC2086
  "$MUTMUT" run --max-children "$JOBS" ${FUNCTIONS[$module]} || status=1
done
"$MUTMUT" results --all true > mutants/results.txt 2>&1 || true
exit $status

"""Old import path of the shard scoring run: ``pecan.scoring.shards`` (and ``pecan.scoring.checkpoint``)."""

from pecan.scoring.checkpoint import (  # noqa: F401
    build_scoring_model,
    checkpoint_model_section,
    load_model,
    read_checkpoint,
    scoring_config,
)
from pecan.scoring.evaluate import score_share  # noqa: F401
from pecan.scoring.report import metrics, metrics_line, split_metrics, summary_lines  # noqa: F401
from pecan.scoring.shards import (  # noqa: F401
    SCORE_COLUMNS,
    check_unique_poses,
    metrics_path,
    run_predict,
    score_table,
    scores_test_inputs,
    scoring_frame,
    write_outputs,
)

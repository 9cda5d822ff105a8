"""What the `spans` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# exact-match micro F1, as conlleval and seqeval report it; relaxed scores are reported beside it
RANKING = RankingSpec(task="spans", primary="spans/exact/micro/f1", label="exact-match micro F1",
                      tie_breaks=("spans/exact/micro/precision", "spans/exact/micro/recall"), item_prefix="tag/", item_label="tags")

# the per-model interval of the primary metric the result keeps (`models/<model>/ci/exact_micro_f1`): with
# `--cluster-by` it is the cluster bootstrap's
PRIMARY_CI = "exact_micro_f1"

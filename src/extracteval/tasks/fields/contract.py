"""What the `fields` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked, and the option through which it takes its configuration file."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# macro F1 over fields, then precision, recall and field wins
RANKING = RankingSpec(task="fields", primary="overall/f1", label="macro F1 over fields", tie_breaks=("overall/precision", "overall/recall"),
                      item_prefix="field/")

# the option through which the task takes its configuration file (`-P strategies=FILE` in MLproject)
CONFIG_OPTION = "--strategies"

# the per-model interval of the primary metric the result keeps (`models/<model>/ci/overall_f1`): with
# `--cluster-by` it is the cluster bootstrap's
PRIMARY_CI = "overall_f1"

"""What the `entities` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked, and the option through which it takes its configuration file."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# the strict view (unmatched entities count as errors)
RANKING = RankingSpec(task="entities", primary="entities/macro/f1", label="strict-view macro F1 over features",
                      tie_breaks=("entities/macro/precision", "entities/macro/recall"), item_prefix="feature/", item_label="features")

# the option through which the task takes its configuration file (`-P strategies=FILE` in MLproject)
CONFIG_OPTION = "--weights"

"""What the `json` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked, and the option through which it takes its configuration file."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# mean RQS; no item wins among the keys (the per-field winners are reported, not ranked on)
RANKING = RankingSpec(task="json", primary="rqs/mean", label="mean RQS", tie_breaks=("json/accuracy", "json/completeness", "json/hallucination"),
                      lower_is_better=frozenset({"json/hallucination"}), item_wins=False, item_prefix="field/", item_keys=("accuracy",),
                      primary_is_rate=False)

# the option through which the task takes its configuration file (`-P strategies=FILE` in MLproject)
CONFIG_OPTION = "--strategies"

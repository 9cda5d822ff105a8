"""How `records` models are ranked wherever they are ranked."""

from extracteval.core.ranking import RankingSpec

RANKING = RankingSpec(task="records", primary="records/accuracy", label="whole-record accuracy",
                      tie_breaks=(), item_prefix="field/", item_label="fields")

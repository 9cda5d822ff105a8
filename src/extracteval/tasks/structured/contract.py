"""What the `structured` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# field F1 over flattened paths; only paths every model has a score for are won
RANKING = RankingSpec(task="structured", primary="structured/field_f1", label="field F1",
                      tie_breaks=("structured/field_precision", "structured/field_recall"), item_prefix="field/", shared_items_only=True)

"""What the `toolcalls` task declares to the rest of extracteval (read through the registry): how its
models are ranked wherever they are ranked."""

from __future__ import annotations

from extracteval.core.ranking import RankingSpec

# the catch-all row of the per-function tables: calls to names the reference never uses
OTHER_FUNCTIONS = "(other functions)"

# call accuracy; no item wins among the keys (function winners are reported, not ranked on), and the
# catch-all row of calls to names the reference never uses is not a function
RANKING = RankingSpec(task="toolcalls", primary="toolcalls/call_accuracy", label="call accuracy",
                      tie_breaks=("toolcalls/args_f1", "toolcalls/valid_call_rate"), item_wins=False, item_prefix="function/",
                      item_label="functions", item_exclude=frozenset({OTHER_FUNCTIONS}))

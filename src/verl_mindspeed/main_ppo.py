"""``python3 -m verl_mindspeed.main_ppo ARGV...``: ``python3 -m verl.trainer.main_ppo ARGV...``, validated first.

Every launch through this module runs verl-mindspeed's checks and writes the normalized
``override_transformer_config`` into actor, ref and critic before verl's own ``main`` starts Ray;
an invalid configuration exits with status 1 instead. See :mod:`verl_mindspeed.integrations.launcher`.
"""

import sys

from .integrations.launcher import run

if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))

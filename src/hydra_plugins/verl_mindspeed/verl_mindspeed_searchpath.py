"""Puts the ``mindspeed`` preset group on the search path of every Hydra app, verl's ``main_ppo`` included.

Hydra imports this module in every process that starts a Hydra app, so it imports nothing but Hydra.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

PRESETS = "pkg://verl_mindspeed.conf"


class VerlMindSpeedSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="verl-mindspeed", path=PRESETS)

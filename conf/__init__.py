"""Hydra presets of verl-mindspeed, installed as ``verl_mindspeed.conf`` (``pkg://verl_mindspeed.conf``).

Each file in ``mindspeed/`` is one option of the ``mindspeed`` config group: ``+mindspeed=<name>``.
"""

"""Packaging glue pyproject.toml cannot express: src/ packages found automatically, plus the top-level
conf/ directory shipped as the package ``verl_mindspeed.conf`` (Hydra's ``pkg://verl_mindspeed.conf``).

Everything else about the distribution is in pyproject.toml.
"""

from setuptools import find_namespace_packages, setup

setup(packages=find_namespace_packages(where="src", exclude=["*__pycache__*"]) + ["verl_mindspeed.conf"])

"""The project's version, at the bottom of the import layers so that any module may report it."""

__version__ = "0.1.0"

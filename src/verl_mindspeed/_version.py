"""The project's version, at the bottom of the import layers so that any module may report it."""

__version__ = "0.1.0"


def release_tuple(text: object) -> "tuple[int, ...] | None":
    """The release numbers of a version string, as ``packaging`` reads it (PEP 440): ``"0.9.1"`` -> ``(0, 9, 1)``,
    ``"v0.8.0.dev0"`` and ``"0.9.1+npu"`` -> their release numbers; ``None`` when it is not a version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(str(text).strip()).release
    except InvalidVersion:
        return None

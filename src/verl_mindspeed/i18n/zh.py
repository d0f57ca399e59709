"""The Chinese message catalogue: English template -> Chinese template (same ``{placeholders}``).

Keep it complete: ``tests/core/test_i18n.py`` fails when a template passed to ``tr`` has no entry,
when an entry's placeholders differ from the English ones, or when an entry is no longer used.
"""

MESSAGES: dict[str, str] = {
}

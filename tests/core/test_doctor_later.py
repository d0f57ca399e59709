"""A failure a later release stops: the index's calls made inside a try, and the doctor's version-skew verdict."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from verl_mindspeed.doctor import diagnose

ROOT = Path(__file__).resolve().parents[2]


def _caught():
    spec = importlib.util.spec_from_file_location("_caught", ROOT / "tools" / "_caught.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.caught_of


SOURCE = '''
def get_full_args():
    try:
        full_args = get_args()
    except ImportError:
        full_args = fallback()
    except AssertionError as e:
        if 'args is not initialized.' in str(e):
            full_args = fallback()
        else:
            raise e
    return full_args


def negated():
    try:
        run()
    except AssertionError as e:
        if 'not initialized' not in str(e):
            raise
        x = 1


def returns():
    try:
        run()
    except ValueError as e:
        if 'bad size' in str(e):
            return None
        raise


def logged():
    try:
        run()
    except ValueError:
        log()
        if strict:
            raise


def broad():
    try:
        run()
    except Exception:
        pass


def once_outside():
    run()
    try:
        run()
    except KeyError:
        pass
'''


def test_the_index_keeps_calls_made_inside_a_try_that_keeps_a_named_type():
    handlers = {(c["fn"], c["call"]): c["handlers"] for c in _caught()(SOURCE)}
    assert handlers["get_full_args", "get_args"] == [[("ImportError",), ""],
                                                     [("AssertionError",), "args is not initialized."]]
    assert handlers["negated", "run"] == [[("AssertionError",), "not initialized"]]
    assert handlers["returns", "run"] == [[("ValueError",), "bad size"]]
    # a handler that may raise again, one that keeps anything, a call also made outside the try: nothing kept
    assert handlers["logged", "run"] == handlers["broad", "run"] == handlers["once_outside", "run"] == []


def test_the_first_handler_that_matches_decides_and_ending_the_process_keeps_nothing():
    source = """
def shadowed():
    try:
        import_module(name)
    except ModuleNotFoundError:
        raise
    except ImportError:
        pass


def exits():
    try:
        setup()
    except ImportError:
        print("no backend")
        sys.exit(1)
"""
    handlers = {(c["fn"], c["call"]): c["handlers"] for c in _caught()(source)}
    assert handlers["shadowed", "import_module"] == [[("ModuleNotFoundError",), None], [("ImportError",), ""]]
    assert handlers["exits", "setup"] == []
    from verl_mindspeed.doctor._later import _kept

    shadow = handlers["shadowed", "import_module"]
    assert not _kept(shadow, {"ModuleNotFoundError", "ImportError"}, "No module named 'x'")
    assert _kept(shadow, {"ImportError"}, "cannot import name 'y'")


#: verl#2932: verl's Megatron worker calls MindSpeed's repatch before Megatron's arguments exist.
FRAMES = ('Traceback (most recent call last):\n'
          '  File "/verl/verl/workers/megatron_workers.py", line 180, in __init__\n'
          '    repatch(self.config.actor.megatron.get("override_transformer_config", {}))\n'
          '  File "/workspace/MindSpeed/mindspeed/megatron_adaptor.py", line 63, in repatch\n'
          '    full_args = get_full_args()\n'
          '  File "/workspace/MindSpeed/mindspeed/args_utils.py", line 58, in get_full_args\n'
          '    full_args = get_args()\n'
          '  File "/env/megatron/training/global_vars.py", line 25, in get_args\n'
          "    _ensure_var_is_initialized(_GLOBAL_ARGS, 'args')\n"
          '  File "/env/megatron/training/global_vars.py", line 247, in _ensure_var_is_initialized\n'
          "    assert var is not None, '{} is not initialized.'.format(name)\n")


def test_a_raise_later_releases_keep_at_a_call_it_passed_through_is_the_installed_releases():
    (failure,) = diagnose(FRAMES + "AssertionError: args is not initialized.\n").failures
    what = str(failure.verdict.what)
    assert failure.verdict.kind == "version-skew" and not failure.verdict.causes
    assert "get_full_args" in what and "26.1.0_core_r0.12.1" in what and "master" in what
    # their handler keeps only that message: another one passes through them too
    (other,) = diagnose(FRAMES + "AssertionError: timers is not initialized.\n").failures
    assert other.verdict.kind != "version-skew"
    # a type they do not keep there
    (typed,) = diagnose(FRAMES + "RuntimeError: args is not initialized.\n").failures
    assert typed.verdict.kind != "version-skew"
    # the release that ran is one of them (--mindspeed-release, in any of its forms): not this
    for release in ("26.1.0_core_r0.12.1", "26.1", "core_r0.16.0"):
        (given,) = diagnose(FRAMES + "AssertionError: args is not initialized.\n", release=release).failures
        assert given.verdict.kind != "version-skew", release
    # another package's release says nothing of MindSpeed's
    (core,) = diagnose(FRAMES + "AssertionError: args is not initialized.\n", megatron_core="0.12.1").failures
    assert core.verdict.kind == "version-skew"


def test_a_raise_another_followed_was_caught_and_is_no_version_skew():
    """Their handler caught it and raised another while handling it: what the log shows is not a release that lets
    the first through."""
    log = (FRAMES + "AssertionError: args is not initialized.\n\nDuring handling of the above exception, another "
           "exception occurred:\n\nTraceback (most recent call last):\n"
           '  File "/workspace/MindSpeed/mindspeed/args_utils.py", line 60, in get_full_args\n'
           "    full_args = get_mindspeed_args()\n"
           "ValueError: no MindSpeed arguments\n")
    kinds = [f.verdict.kind for f in diagnose(log).failures]
    assert kinds and "version-skew" not in kinds

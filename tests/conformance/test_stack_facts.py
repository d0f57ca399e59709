"""The stack facts read from upstream's sources agree with the reference catalogue where it has the branch, so the
branches it lacks (MindSpeed core_r0.17.0 and core_r0.18.0) are read the same way."""

from __future__ import annotations

import json
import sys

import pytest
import sources

from helpers import ROOT
from verl_mindspeed.catalog import universe

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def upstream_dir():

    where = sources.upstream_dir()
    needed = ["mindspeed-core_r0.17.0.tar.gz", "mindspeed-core_r0.18.0.tar.gz"]
    if where is None or not all((where / n).is_file() for n in needed) \
            or not (where.parent / "reference" / "mindspeed_args.json").is_file():
        message = f"the MindSpeed archives and the reference catalogue are not beside {where}"
        pytest.fail(message) if sources.required() else pytest.skip(message)
    return where


@pytest.fixture(scope="module")
def extract():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        from extract_upstream_args import extract
    finally:
        sys.path.remove(str(ROOT / "tools"))
    return extract


def test_the_extractor_gives_the_reference_catalogue_on_every_branch_it_has(upstream_dir, extract):
    reference = json.loads((upstream_dir.parent / "reference" / "mindspeed_args.json").read_text())
    for release, entry in reference.items():
        assert extract(upstream_dir / f"mindspeed-{release}.tar.gz", "mindspeed") == entry["args"], release


def test_the_shipped_arguments_of_core_r0_17_and_0_18_are_the_extracted_ones(upstream_dir, extract):
    for release in ("core_r0.17.0", "core_r0.18.0"):
        shipped = universe.mindspeed_args(release)
        extracted = extract(upstream_dir / f"mindspeed-{release}.tar.gz", "mindspeed")
        keep = ("type", "default", "choices", "action")
        assert shipped == {k: {f: v[f] for f in keep if f in v} for k, v in extracted.items()}, release

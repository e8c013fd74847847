"""Every exercise in the catalog passes ``check_exercise``: metadata, statement, reference passes
(hidden and public cases, CPU), stub fails, every known-wrong variant fails."""

import pytest

from inferprep import catalog
from inferprep.check import check_exercise

SLUGS = [e.slug for e in catalog.all_exercises()]


@pytest.mark.slow
@pytest.mark.parametrize("slug", SLUGS)
def test_exercise_is_shippable(slug):
    why = catalog.get(slug).unavailable
    if why:
        pytest.skip(f"{slug} is unavailable on this install ({why})")
    report = check_exercise(slug, device="cpu")
    bad = [f"{f.what}: {f.detail}" for f in report.findings if not f.ok]
    assert report.ok, "\n".join(bad)


def test_catalog_is_not_empty():
    assert SLUGS, "no exercises found"

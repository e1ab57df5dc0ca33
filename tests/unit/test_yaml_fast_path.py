"""The libyaml fast path of goalsui.kb.yamlio: the same data as the strict pure-Python
loader for every document, and anything unusual left to the strict loader's checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from goalsui.errors import KBError
from goalsui.kb import yamlio

ROOT = Path(__file__).resolve().parent.parent.parent
FILES = sorted([*(ROOT / "sample_kb").rglob("*.yaml"), *(ROOT / "themes").rglob("*.yaml")])


def test_pyyaml_has_libyaml_so_the_fast_path_is_on() -> None:
    """PyYAML's wheels bundle libyaml; without it every KB sync parses in pure Python."""
    assert yamlio.LIBYAML, "PyYAML was built without libyaml"


def strict(text: str) -> object:
    return yaml.load(text, Loader=yamlio._StrictLoader)  # the strict loader


def test_the_sample_kb_and_themes_load_the_same_both_ways() -> None:
    assert len(FILES) > 20
    for path in FILES:
        text = path.read_text()
        done, data = yamlio._fast_load(text)
        assert done, path
        assert data == strict(text), path


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("a: &x [1]\nb: *x\n", "aliases (*name) are not allowed"),
        ("x: " + "[" * 40 + "]" * 40 + "\n", "nested deeper than 32"),
        ("a: 1\nb: 2\na: 3\n", "key 'a' is given twice"),
        ("a: [1, 2\nb: 3\n", "expected ',' or ']'"),
    ],
)
def test_what_the_fast_path_declines_the_strict_loader_refuses(text: str, reason: str) -> None:
    assert yamlio._fast_load(text) == (False, None)
    with pytest.raises(KBError) as err:
        yamlio.parse_yaml(text, "x.yaml")
    assert reason in str(err.value)


def test_nesting_just_inside_the_limit_is_loaded_by_the_fast_path() -> None:
    text = "x: " + "[" * 29 + "1" + "]" * 29 + "\n"
    done, data = yamlio._fast_load(text)
    assert done and data == strict(text)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.datetimes().map(lambda d: d.isoformat()),
)
DOCS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(doc=DOCS, style=st.sampled_from([None, False, True]), cut=st.integers(0, 400))
def test_both_loaders_agree_on_any_document(doc: object, style: bool | None, cut: int) -> None:
    text = yaml.safe_dump(doc, default_flow_style=style, allow_unicode=True)
    for candidate in (text, text[:cut]):
        done, data = yamlio._fast_load(candidate)
        if done:
            assert data == strict(candidate)

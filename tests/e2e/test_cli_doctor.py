"""``goalsui doctor``: exit 0 on the sample KB, exit 1 listing every problem on a broken copy."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.base_kit import cli_popen
from tests.unit.test_kb_files import BROKEN_FILES, break_kb


def doctor(kb: Path, state: Path, *extra: str) -> subprocess.Popen:
    return cli_popen(
        "doctor", *extra, kb=kb, state=state, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_doctor_passes_on_the_sample_and_lists_every_problem_of_a_broken_copy(
    sample_kb: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    import shutil

    shutil.copytree(sample_kb, broken / "kb")
    saved = break_kb(broken / "kb")
    procs = [
        doctor(sample_kb, tmp_path / "s1", "--json"),
        doctor(broken / "kb", tmp_path / "s2", "--json"),
        doctor(broken / "kb", tmp_path / "s3"),
    ]
    (ok_rc, ok_out, ok_err), (bad_rc, bad_out, bad_err), (txt_rc, txt_out, txt_err) = (
        (p.wait(timeout=120), *p.communicate()) for p in procs
    )
    assert (ok_rc, ok_err) == (0, "")
    healthy = json.loads(ok_out)
    assert (healthy["ok"], healthy["problems"]) == (True, [])
    assert healthy["warnings"] == []  # the sample grants no tools to plain commands

    assert bad_rc == 1 and bad_err == ""
    report = json.loads(bad_out)
    assert set(report) == {"ok", "problems", "warnings"} and report["ok"] is False
    for problem in report["problems"]:
        assert set(problem) == {"path", "line", "message"}
    by_path = {p["path"]: p for p in report["problems"]}
    assert set(by_path) == set(BROKEN_FILES)  # every broken file, nothing else
    for rel, (_, line, words) in BROKEN_FILES.items():
        assert by_path[rel]["line"] == line and words in by_path[rel]["message"]

    assert txt_rc == 1 and txt_err == ""
    lines = [line for line in txt_out.strip().splitlines() if ": warning: " not in line]
    assert len(lines) == len(BROKEN_FILES)
    for rel, (_, line, _) in BROKEN_FILES.items():
        assert any(entry.startswith(f"{rel}:{line}: ") for entry in lines), rel
    # doctor never rewrites what it checks
    assert {rel: (broken / "kb" / rel).read_bytes() for rel in BROKEN_FILES} == saved

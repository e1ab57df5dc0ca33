"""Git operations on a nightshift's repository, each a fixed argv run with ``protocol.allow=never``
(no fetch, clone or push) and no credential prompts."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from goalsui.errors import GoalsuiError

#: Options given to every git call: no network transport at all, no prompts.
SAFE_OPTIONS = ("-c", "protocol.allow=never", "-c", "core.hooksPath=/dev/null")
GIT_TIMEOUT_S = 60.0


class GitError(GoalsuiError):
    """A git command failed; the message is one line."""


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str


def _env() -> dict[str, str]:
    """This environment without the caller's repository, prompts or locale."""
    own = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
    env = {key: value for key, value in os.environ.items() if key not in own}
    env.update(
        GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="/bin/false", GIT_SSH_COMMAND="/bin/false", LC_ALL="C"
    )
    return env


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


class Repo:
    """One git repository, addressed by a path inside its main work tree."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def git(self, *args: str, cwd: Path | None = None, check: bool = True) -> str:
        """Run ``git ARGS`` in the repository (or ``cwd``); return stdout."""
        return self.run(*args, cwd=cwd, check=check).stdout

    def run(
        self, *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``git ARGS``; raise :class:`GitError` on failure when ``check``."""
        try:
            proc = subprocess.run(
                ["git", *SAFE_OPTIONS, *args],
                cwd=cwd or self.path,
                env=_env(),
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise GitError("git is not installed (no 'git' on PATH)") from exc
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git {args[0]} did not finish in {GIT_TIMEOUT_S:.0f} s") from exc
        if check and proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {_one_line(proc.stderr or proc.stdout)}")
        return proc

    # --- facts ---------------------------------------------------------------------
    def is_work_tree(self) -> bool:
        """True when the path is the top of a git work tree (not a bare repo, not a subdir)."""
        if not self.path.is_dir():
            return False
        try:
            top = self.git("rev-parse", "--show-toplevel").strip()
        except GitError:
            return False
        return Path(top).resolve() == self.path.resolve()

    def _verify(self, rev: str) -> str:
        """The full sha ``rev`` names ("" when it names nothing)."""
        return self.git("rev-parse", "--verify", "--quiet", rev, check=False).strip()

    def branch_exists(self, branch: str) -> bool:
        return bool(self._verify(f"refs/heads/{branch}"))

    def head_of(self, branch: str) -> str:
        return self.git("rev-parse", "--verify", f"refs/heads/{branch}").strip()

    def has_commit(self, rev: str) -> bool:
        return bool(self._verify(f"{rev}^{{commit}}"))

    def resolve_commit(self, rev: str) -> str:
        """The full sha of a commit named by ``rev`` (a sha or a prefix of one)."""
        if rev.startswith("-") or not rev.strip():
            raise GitError(f"not a commit: {rev!r}")
        sha = self._verify(f"{rev}^{{commit}}")
        if not sha:
            raise GitError(f"no commit {rev!r} in {self.path}")
        return sha

    def refs(self) -> dict[str, str]:
        """Every local branch and tag: full ref name -> the commit it points at."""
        out = self.git(
            "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"
        )
        return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = self.run("merge-base", "--is-ancestor", older, newer, check=False)
        return proc.returncode == 0

    def committers(self, tip: str, *excluded: str) -> list[str]:
        """Committer e-mails of commits in ``tip`` but not ``excluded``, newest first."""
        args = ["log", "--format=%ce", tip]
        if excluded:
            args += ["--not", *excluded]
        return self.git(*args).splitlines()

    def is_clean(self, work_tree: Path) -> bool:
        return not self.git("status", "--porcelain", cwd=work_tree).strip()

    def set_ref(self, ref: str, new: str, old: str) -> None:
        """Point ``ref`` at ``new`` only if it still points at ``old`` ("" = absent)."""
        self.git("update-ref", ref, new, old or "0" * len(new))

    def delete_ref(self, ref: str, old: str) -> None:
        """Delete ``ref`` only if it still points at ``old``."""
        self.git("update-ref", "-d", ref, old)

    def reset_work_tree(self, work_tree: Path, commit: str) -> None:
        """Reset ``work_tree``'s branch to ``commit`` (``reset --keep``: never loses a change)."""
        self.git("reset", "-q", "--keep", commit, cwd=work_tree)

    def current_branch(self) -> str | None:
        out = self.git("symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
        return out or None

    def branches(self, prefix: str) -> list[str]:
        out = self.git("for-each-ref", "--format=%(refname:short)", f"refs/heads/{prefix}")
        return sorted(line for line in out.splitlines() if line)

    def commits(self, base: str, branch: str) -> list[Commit]:
        """Commits on ``branch`` that ``base`` does not have, oldest first."""
        out = self.git("log", "--reverse", "--format=%H%x09%s", f"{base}..{branch}")
        return [Commit(*line.split("\t", 1)) for line in out.splitlines()]

    def diffstat(self, base: str, branch: str) -> str:
        """``git diff --stat`` of what ``branch`` adds since it left ``base``."""
        return self.git("diff", "--stat", f"{base}...{branch}").rstrip()

    def diff(self, base: str, branch: str) -> str:
        return self.git("diff", f"{base}...{branch}")

    def worktree_for(self, branch: str) -> Path | None:
        """The work tree that has ``branch`` checked out, if any."""
        out = self.git("worktree", "list", "--porcelain")
        path: Path | None = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                path = Path(line[len("worktree ") :])
            elif line == f"branch refs/heads/{branch}" and path is not None:
                return path
        return None

    # --- changes ---------------------------------------------------------------------
    def add_worktree(self, path: Path, branch: str, base: str) -> None:
        """Create ``branch`` from ``base`` checked out in a new work tree at ``path``."""
        if self.branch_exists(branch):
            raise GitError(f"branch {branch} already exists")
        path.parent.mkdir(parents=True, exist_ok=True)
        self.git("worktree", "add", "-b", branch, str(path), base)

    def remove_worktree(self, path: Path) -> None:
        """Remove the work tree (its branch stays) and forget it."""
        self.git("worktree", "remove", "--force", str(path), check=False)
        self.git("worktree", "prune")

    def delete_branch(self, branch: str, *, expected: str | None = None) -> None:
        """Delete ``branch``; with ``expected``, only while it still points there."""
        if expected is None:
            self.git("branch", "-D", branch)
            return
        proc = self.run("update-ref", "-d", f"refs/heads/{branch}", expected, check=False)
        if proc.returncode != 0:
            raise GitError(f"{branch} moved meanwhile; it was kept")

    def merge(self, branch: str, base: str, message: str, *, tip: str | None = None) -> str:
        """Merge ``branch`` (``tip`` if given) into ``base`` with a merge commit, or refuse;
        returns what was done, in one line."""
        where = self.worktree_for(base)
        if where is not None:
            if not self.is_clean(where):
                raise GitError(
                    f"{base} is checked out in {where} with uncommitted changes; "
                    "commit or stash them, then approve again"
                )
            proc_out = self.git(
                "merge", "--no-ff", "-m", message, tip or branch, cwd=where, check=False
            )
            if self.git("rev-parse", "-q", "--verify", "MERGE_HEAD", cwd=where, check=False):
                self.git("merge", "--abort", cwd=where, check=False)
                raise GitError(f"{branch} does not merge cleanly into {base}; nothing was changed")
            if "Already up to date" in proc_out:
                return f"{branch} has nothing {base} lacks"
            return f"merged {branch} into {base}"
        old = self.head_of(base)
        tip = tip or self.head_of(branch)
        proc = self.run("merge-tree", "--write-tree", old, tip, check=False)
        first = proc.stdout.splitlines()[0].strip() if proc.stdout.strip() else ""
        if proc.returncode != 0 or len(first) not in (40, 64):
            raise GitError(f"{branch} does not merge cleanly into {base}; nothing was changed")
        commit = self.git("commit-tree", first, "-p", old, "-p", tip, "-m", message).strip()
        self.git("update-ref", f"refs/heads/{base}", commit, old)
        return f"merged {branch} into {base}"

"""Every code block in README.md and docs/*.md runs as shown.

The convention, for whoever writes those pages:

- A ```python block runs. A page's python blocks run in order in one fresh namespace (a
  module of its own), so a later block may use what an earlier one defined.
- A ```bash block runs too, on its own: `bash -euo pipefail` from the repository root, with
  `python` (and `python3`) on PATH being the interpreter that runs these tests, in its
  environment (a virtual environment's included).
- An HTML comment on the last non-blank line before a block's opening fence changes that:

      <!-- test: skip: REASON -->    never run here (the set-up itself, the test command,
                                     benchmarks, anything that needs a running server);
                                     reported as a skipped test with REASON
      <!-- test: model -->           needs the real default model: the test is marked
                                     `model` and skips unless llama_cpp and the default
                                     model package are installed
      <!-- test: shared -->          needs the external corpus (`$AGENTKIT_CORPUS`, default
                                     ../shared/corpus beside the repository); skips when
                                     it is absent

  `model` and `shared` combine: `<!-- test: model shared -->`.
- Blocks of other languages (text, json, gbnf) are output or data, not code: not run.
- Fences start at the beginning of a line: an indented ```python or ```bash fence is an error
  here, so no block is left out unnoticed.

Tests: `test_page_blocks[page]` runs the page's python blocks that need nothing extra, in
order (so a `model` block must not define what such a block uses);
`test_page_blocks_with_extras[page]` (only for pages with `model` or `shared` blocks) runs
every python block of the page in order. Each bash block is a test of its own
(`test_bash_block[page:line]`), and each python block marked skip is reported as a skipped
`test_python_block_not_run[page:line]`. Two more checks: every marker precedes a block, and
every relative link between the pages names an existing file and heading.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# What `shared` blocks read: the external corpus, found as the other tests find it.
CORPUS = Path(os.environ.get("AGENTKIT_CORPUS", REPO.parent / "shared" / "corpus"))

_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*test:\s*(.*?)\s*-->$")
_REQUIREMENTS = {"model", "shared"}
BASH_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    language: str
    source: str
    skip: str | None  # the reason, for a block never run here
    needs: frozenset[str]

    @property
    def label(self) -> str:
        return f"{self.page}:{self.line}"


def read_blocks(path: Path) -> list[Block]:
    page = path.relative_to(REPO).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        indent, language = fence.groups()
        start = i
        i += 1
        body = []
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{page}:{start + 1}: a code block is never closed")
        i += 1  # the closing fence
        if language not in ("python", "bash"):
            continue
        if indent:
            raise ValueError(f"{page}:{start + 1}: an indented ```{language} fence; start it at the line's beginning")
        skip, needs = None, frozenset()
        before = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        if marker:
            words = marker.group(1)
            if words.startswith("skip"):
                skip = words[len("skip"):].lstrip(": ").strip() or "marked skip"
            else:
                needs = frozenset(words.replace(",", " ").split())
                unknown = needs - _REQUIREMENTS
                if unknown:
                    raise ValueError(f"{page}:{start + 1}: unknown test marker {sorted(unknown)}")
        blocks.append(Block(page, start + 1, language, "\n".join(body) + "\n", skip, needs))
    return blocks


BLOCKS = {path.relative_to(REPO).as_posix(): read_blocks(path) for path in PAGES}


def missing(needs: frozenset[str]) -> str | None:
    """Why a block with these needs cannot run here, or None."""
    if "model" in needs:
        if importlib.util.find_spec("llama_cpp") is None:
            return "needs the default model: llama-cpp-python is not installed (bash scripts/setup.sh)"
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            return f"needs the default model: llama_cpp does not import ({exc})"
        from runtimes import RuntimeUnavailable, default_model_path

        try:
            default_model_path()
        except RuntimeUnavailable as exc:
            return f"needs the default model: {exc}"
    if "shared" in needs and not CORPUS.is_dir():
        return f"needs the external corpus at {CORPUS} (../shared/corpus beside the repository, or $AGENTKIT_CORPUS)"
    return None


def run_python(page: str, blocks: list[Block]) -> None:
    name = "docs_" + re.sub(r"\W", "_", page)
    module = types.ModuleType(name)
    module.__file__ = str(REPO / page)
    sys.modules[name] = module
    try:
        for block in blocks:
            code = compile(block.source, block.label, "exec")
            try:
                exec(code, module.__dict__)
            except Exception as exc:
                raise AssertionError(f"the python block at {block.label} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        del sys.modules[name]


def _marks(needs: frozenset[str]) -> list[pytest.MarkDecorator]:
    return [pytest.mark.model] if "model" in needs else []


def _page_cases(with_extras: bool) -> list:
    cases = []
    for page, blocks in BLOCKS.items():
        runnable = [b for b in blocks if b.language == "python" and b.skip is None]
        needs = frozenset().union(*(b.needs for b in runnable))
        if with_extras and not needs:
            continue
        if not with_extras and not any(not b.needs for b in runnable):
            continue
        cases.append(pytest.param(page, id=page, marks=_marks(needs) if with_extras else []))
    return cases


@pytest.mark.parametrize("page", _page_cases(with_extras=False))
def test_page_blocks(page: str) -> None:
    run_python(page, [b for b in BLOCKS[page] if b.language == "python" and b.skip is None and not b.needs])


@pytest.mark.parametrize("page", _page_cases(with_extras=True))
def test_page_blocks_with_extras(page: str) -> None:
    blocks = [b for b in BLOCKS[page] if b.language == "python" and b.skip is None]
    reason = missing(frozenset().union(*(b.needs for b in blocks)))
    if reason:
        pytest.skip(reason)
    if any("model" in b.needs for b in blocks):
        fresh_default_runtime()
    run_python(page, blocks)


def fresh_default_runtime() -> None:
    """Empty the shared default runtime's cache, so the page's blocks start from what a
    reader's fresh interpreter starts from. What earlier tests left there changes how a
    prompt's prefix is split into forward passes, and with it the logits' last digits, which
    can turn a greedy run down another path than the page was written from."""
    from runtimes import default

    default().forget_caches()


def _bash_cases() -> list:
    return [
        pytest.param(block, id=block.label, marks=_marks(block.needs))
        for blocks in BLOCKS.values()
        for block in blocks
        if block.language == "bash"
    ]


def run_bash(source: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run a bash block from the repository root, `python` being the interpreter of these tests.

    `python` (and `python3`) on PATH is a script that execs `sys.executable` by its own path:
    a symlink to it would not do, since a virtual environment's interpreter finds its
    environment from the `pyvenv.cfg` beside the path it was started by, so a link elsewhere
    would start the base interpreter without the environment's packages.
    """
    for name in ("python", "python3"):
        wrapper = tmp_path / name
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        wrapper.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", source],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=BASH_TIMEOUT_S,
    )


@pytest.mark.parametrize("block", _bash_cases())
def test_bash_block(block: Block, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.label}: not run by the tests: {block.skip}")
    reason = missing(block.needs)
    if reason:
        pytest.skip(reason)
    done = run_bash(block.source, tmp_path)
    sys.stdout.write(done.stdout)
    assert done.returncode == 0, (
        f"the bash block at {block.label} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


def test_bash_blocks_run_in_the_suites_environment(tmp_path: Path) -> None:
    """A block's `python` is this interpreter with its environment: same prefix, same packages."""
    probe = (
        "import importlib.util, json, sys; "
        "print(json.dumps([sys.prefix, sys.executable, importlib.util.find_spec('httpx') is not None]))"
    )
    done = run_bash(f"python -c \"{probe}\"\npython3 -c \"{probe}\"\n", tmp_path)
    assert done.returncode == 0, done.stderr
    expected = [sys.prefix, sys.executable, importlib.util.find_spec("httpx") is not None]
    assert [json.loads(line) for line in done.stdout.splitlines()] == [expected, expected]


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, id=b.label) for bs in BLOCKS.values() for b in bs if b.language == "python" and b.skip is not None],
)
def test_python_block_not_run(block: Block) -> None:
    pytest.skip(f"{block.label}: not run by the tests: {block.skip}")


def test_markers_precede_blocks() -> None:
    """A marker comment that no block follows is a mistake (it would mark the wrong block)."""
    for path in PAGES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            if _MARKER.match(line.strip()):
                after = next((l for l in lines[n + 1:] if l.strip()), "")
                assert re.match(r"^```(python|bash)\s*$", after), (
                    f"{path.relative_to(REPO)}:{n + 1}: a test marker not followed by a python or bash block"
                )


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_links_between_pages_resolve() -> None:
    """Every relative link in README.md and docs/ names a file that exists, and a heading in it."""
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue  # an absolute URL
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            assert linked.exists(), f"{path.relative_to(REPO)}: link to missing {target}"
            if anchor and linked.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), flags=re.M)
                assert anchor in {_anchor(h) for h in headings}, f"{path.relative_to(REPO)}: no heading for #{anchor} in {file_part or path.name}"


def test_readme_opens_with_its_commands_and_keeps_its_lines_readable() -> None:
    """A newcomer's first screen: the set-up and test commands within the first 30 lines, the
    quickstart next; and no line a reader must scroll sideways through (tables included)."""
    blocks = read_blocks(REPO / "README.md")
    first_bash = next(b for b in blocks if b.language == "bash")
    assert first_bash.line <= 30, f"README's first bash block starts at line {first_bash.line}"
    assert "scripts/setup.sh" in first_bash.source and "pytest" in first_bash.source
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    long = [(n, len(line)) for n, line in enumerate(lines, 1) if len(line) > 300]
    assert not long, f"README lines over 300 characters (line, length): {long}"
    table_start = next(i for i in range(lines.index("## Headline figures"), len(lines)) if lines[i].startswith("|"))
    table_end = next((i for i in range(table_start, len(lines)) if not lines[i].startswith("|")), len(lines))
    rows = table_end - table_start - 2  # less the header and its rule
    assert rows <= 10, f"README's headline table has {rows} rows; past 10 they go to docs/performance.md"

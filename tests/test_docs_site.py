"""The docs site draws its diagrams with no network: it ships Mermaid, no page loads a script
from anywhere else, and every page that holds a diagram, opened from disk in headless
Chromium that can reach no server, shows each diagram drawn as an ``<svg>``.

The site is built here, into a temporary directory. Chromium is Debian's ``chromium``: CI's
test command installs it where it is missing, and without it these tests fail, not skip.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
VENDORED_MERMAID = DOCS / "_static" / "mermaid" / "mermaid.min.js"
#: A diagram in a page's source: a mermaid block, or the rooms of the layout page, which the
#: docs extension draws as one mermaid diagram.
MERMAID_FENCE = re.compile(r"^```\{(?:mermaid|rooms)\}", re.MULTILINE)
#: Generous: a page is drawn in about one second.
CHROMIUM_TIMEOUT_SECONDS = 60
BUILD_TIMEOUT_SECONDS = 300


def _pages_with_diagrams_in_the_sources() -> list[str]:
    return sorted(
        path.relative_to(DOCS).with_suffix("").as_posix()
        for path in DOCS.rglob("*.md")
        if not {"_build", "_generated"} & set(path.relative_to(DOCS).parts)
        and MERMAID_FENCE.search(path.read_text())
    )


class _Page(HTMLParser):
    """What a page loads (its scripts and style sheets) and its diagrams: each element of
    class ``mermaid``, with the attributes of every ``<svg>`` inside it."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.script_sources: list[str] = []
        self.inline_scripts: list[str] = []
        self.style_sheets: list[str] = []
        self.diagrams: list[list[dict[str, str | None]]] = []
        # The current diagram's tag, and how many of that tag are open: it ends at zero.
        self._diagram_tag: str | None = None
        self._diagram_tags_open = 0
        self._in_script = False
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "script":
            self._in_script = True
            if attributes.get("src"):
                self.script_sources.append(attributes["src"] or "")
            else:
                self.inline_scripts.append("")
        if tag == "link" and "stylesheet" in (attributes.get("rel") or "").split():
            self.style_sheets.append(attributes.get("href") or "")
        if self._diagram_tag is not None:
            if tag == "svg":
                self.diagrams[-1].append(attributes)
            if tag == self._diagram_tag:
                self._diagram_tags_open += 1
        elif "mermaid" in (attributes.get("class") or "").split():
            self.diagrams.append([])
            self._diagram_tag, self._diagram_tags_open = tag, 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if tag == self._diagram_tag:
            self._diagram_tags_open -= 1
            if not self._diagram_tags_open:
                self._diagram_tag = None

    def handle_data(self, data: str) -> None:
        if self._in_script and self.inline_scripts:
            self.inline_scripts[-1] += data


def _from_the_network(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.netloc) or parts.scheme in ("http", "https")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site, built as CI builds it (warnings are errors)."""
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q", "-b", "html"]
    build = subprocess.run(
        [*command, str(DOCS), str(out)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    assert build.returncode == 0, f"sphinx-build failed:\n{build.stdout}\n{build.stderr}"
    return out


def _rendered_dom(page: Path, scratch: Path) -> str:
    """The page's DOM once its scripts have run, in headless Chromium with no network.
    Chromium's profile, crash reports and caches go to ``scratch``, not the user's home."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "chromium is not installed: apt-get install -y chromium (CI's test command installs "
            "it where it is missing)"
        )
    command = [
        chromium,
        "--headless",
        "--disable-gpu",
        "--no-sandbox",  # the tests may run as root, where Chromium's sandbox refuses to start
        f"--user-data-dir={scratch / 'profile'}",
        # Every http(s) request, loopback's too, goes to a proxy that is not there.
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        # The page's timers (Mermaid waits in steps of 200 ms) run in virtual time, not real.
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    # Chromium's socket lives in $TMPDIR, whose path a Unix socket's 108 bytes must hold: the
    # suite's nested temp dirs do not fit.
    socket_dir = tempfile.mkdtemp(prefix="ido-chromium-", dir="/tmp")
    # A session of its own: Chromium's helper processes join its group, and all go together.
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "HOME": str(scratch),
            "XDG_CONFIG_HOME": str(scratch / "config"),
            "XDG_CACHE_HOME": str(scratch / "cache"),
            "TMPDIR": socket_dir,
        },
        start_new_session=True,
    )
    try:
        dom, errors = process.communicate(timeout=CHROMIUM_TIMEOUT_SECONDS)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
    assert process.returncode == 0, f"chromium exited with {process.returncode}:\n{errors}"
    return dom


def test_no_page_loads_a_script_or_style_sheet_from_the_network(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    assert pages
    for path in pages:
        page = _Page(path.read_text())
        name = path.relative_to(site).as_posix()
        assert not [url for url in page.script_sources if _from_the_network(url)], name
        assert not [url for url in page.style_sheets if _from_the_network(url)], name
        assert not [body for body in page.inline_scripts if re.search(r"https?://", body)], name


def test_the_pages_with_diagrams_are_those_of_the_sources(site: Path) -> None:
    built = sorted(
        path.relative_to(site).with_suffix("").as_posix()
        for path in site.rglob("*.html")
        if _Page(path.read_text()).diagrams
    )
    assert built == _pages_with_diagrams_in_the_sources()


@pytest.mark.parametrize("page", _pages_with_diagrams_in_the_sources())
def test_every_diagram_is_drawn_offline(site: Path, page: str, tmp_path: Path) -> None:
    built = site / f"{page}.html"
    diagrams = len(_Page(built.read_text()).diagrams)
    assert diagrams == len(MERMAID_FENCE.findall((DOCS / f"{page}.md").read_text()))

    drawn = _Page(_rendered_dom(built, tmp_path)).diagrams
    assert len(drawn) == diagrams
    for number, svgs in enumerate(drawn, start=1):
        assert svgs, f"{page}: diagram {number} was not drawn (no <svg> in it)"
        # Mermaid draws a syntax error as an <svg> too.
        assert svgs[0].get("aria-roledescription") != "error", f"{page}: diagram {number}"


def test_the_vendored_mermaid_is_the_release_the_docs_name() -> None:
    release = re.search(r'name:"mermaid",version:"([0-9.]+)"', VENDORED_MERMAID.read_text())
    assert release is not None
    assert (VENDORED_MERMAID.parent / "LICENSE").read_text().startswith("The MIT License")
    page = " ".join((DOCS / "development" / "docs.md").read_text().split())
    assert f"Mermaid {release.group(1)}" in page

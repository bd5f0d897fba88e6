"""A real browser for the console tests: Playwright driving Debian's chromium (installed by
scripts/bootstrap.sh; no browser is ever downloaded), and where the tests leave screenshots."""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
# Screenshots go here when set (e.g. to keep them), else into the session's temporary directory.
SCREENSHOT_DIR_VARIABLE = "SAGEPORT_SCREENSHOT_DIR"


# Per module, not per session: while Playwright's sync API is open, the main thread has an asyncio
# loop marked running, so every later test's asyncio.run() and Django ORM call (its async-safety
# check) would fail.
@pytest.fixture(scope="module")
def chromium():
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing: scripts/bootstrap.sh installs Debian's chromium for these tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory) -> Path:
    wanted = os.environ.get(SCREENSHOT_DIR_VARIABLE)
    directory = Path(wanted) if wanted else tmp_path_factory.mktemp("console-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def browser_context(chromium):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    yield context
    context.close()

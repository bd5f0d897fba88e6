"""The documentation site (mkdocs.yml over docs/) builds without a warning: `--strict` turns a
broken link, a missing anchor, a page left out of the nav or a nav entry without its page into a
failed build. The home page includes the quick start's scripts themselves."""
import os
import shutil
import subprocess
import sys

from devstack.stack import PROJECT_DIR

DOCS = PROJECT_DIR / "docs"


def build(project_dir, site_dir) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=project_dir, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True, text=True, timeout=120,
    )


def test_the_site_builds_without_a_warning(tmp_path):
    result = build(PROJECT_DIR, tmp_path / "site")

    assert result.returncode == 0, result.stderr
    pages = {path.stem for path in DOCS.glob("*.md")}
    built = {path.parent.name for path in (tmp_path / "site").glob("*/index.html")} | {"index"}
    assert pages <= built


def test_the_home_page_shows_both_quick_starts_from_the_examples(tmp_path):
    result = build(PROJECT_DIR, tmp_path / "site")

    assert result.returncode == 0, result.stderr
    home = (tmp_path / "site" / "index.html").read_text()
    assert "create_training_job" in home  # examples/quickstart.py, included by pymdownx.snippets
    assert "invoke_endpoint" in home  # examples/quickstart_endpoint.py


def test_a_broken_link_fails_the_build(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(DOCS, project / "docs")
    shutil.copytree(PROJECT_DIR / "examples", project / "examples")
    shutil.copy(PROJECT_DIR / "mkdocs.yml", project / "mkdocs.yml")
    with (project / "docs" / "api.md").open("a") as page:
        page.write("\nSee [the hosting page](hosting.md#no-such-section).\n")

    result = build(project, tmp_path / "site")

    assert result.returncode != 0
    assert "does not contain an anchor '#no-such-section'" in result.stderr
